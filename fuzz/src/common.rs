//! What every target shares: one runtime, a scratch folder for SQLite files, the check that
//! no network but loopback is reachable, a byte reader, and the password-leak check.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The kit's runtime (the one every binding uses), made once per process.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        polylock::kit::runtime::new_runtime(polylock::kit::runtime::Workers::Light, None)
            .expect("the fuzz runtime starts")
    })
}

/// Whether this process sits in a network namespace with loopback only (`run.sh` starts the
/// targets under `unshare -rn` where it can). Only then do URLs of network backends get
/// connected to: a fuzzed host name must never be looked up or reached outside the machine.
/// `/proc/self/net/dev` lists the devices of this process's own namespace.
pub fn network_isolated() -> bool {
    static ISOLATED: OnceLock<bool> = OnceLock::new();
    *ISOLATED.get_or_init(|| match std::fs::read_to_string("/proc/self/net/dev") {
        Ok(text) => text.lines().skip(2).filter_map(|l| l.split(':').next()).all(|dev| dev.trim() == "lo"),
        Err(_) => false,
    })
}

/// A private folder for the SQLite databases the targets create; emptied by [`clear_scratch`].
pub fn scratch_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("polylock-fuzz-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the scratch folder can be made");
        dir
    })
}

/// Remove whatever a run left in the scratch folder (databases and their `-locks` folders).
pub fn clear_scratch() {
    if let Ok(entries) = std::fs::read_dir(scratch_dir()) {
        for entry in entries.flatten() {
            let path = entry.path();
            let _ = if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
        }
    }
}

/// Reads choices out of the fuzzer's bytes; past the end every read is zero or empty, so any
/// input is a complete program.
pub struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data }
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((first, rest)) => {
                self.data = rest;
                *first
            }
            None => 0,
        }
    }

    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    pub fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }

    pub fn i64(&mut self) -> i64 {
        self.u64() as i64
    }

    /// `n` bytes, or fewer at the end.
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.data.len());
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        head
    }

    /// A length-prefixed byte string of at most `max` bytes.
    pub fn chunk(&mut self, max: usize) -> &'a [u8] {
        let n = usize::from(self.u8()) % (max + 1);
        self.bytes(n)
    }

    /// A length-prefixed string of at most `max` bytes, lossily UTF-8.
    pub fn text(&mut self, max: usize) -> String {
        String::from_utf8_lossy(self.chunk(max)).into_owned()
    }

    /// One of `choices`.
    pub fn pick<T: Copy>(&mut self, choices: &[T]) -> T {
        choices[usize::from(self.u8()) % choices.len()]
    }

    /// Everything not read yet.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.data)
    }
}

/// `text` with every ASCII letter and digit moved one place on (z to a, 9 to 0): the same
/// shape, other characters. `None` if it has no letter or digit to change.
pub fn shifted(text: &str) -> Option<String> {
    let out: String = text
        .chars()
        .map(|c| match c {
            'z' => 'a',
            'Z' => 'A',
            '9' => '0',
            'a'..='y' | 'A'..='Y' | '0'..='8' => char::from(c as u8 + 1),
            other => other,
        })
        .collect();
    (out != text).then_some(out)
}

/// Percent-decode a URL's user or password part as the backends do (a '+' stays a '+').
pub fn percent_decoded(text: &str) -> String {
    form_urlencoded::parse(format!("x={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// Panic if `secret`, which occurs in `url` exactly once, shows in a message about `url`.
/// `messages` returns every message polylock gives for a URL (errors, the redacted form).
/// A secret that also shows when the URL carries another secret of the same shape is a
/// coincidence (a password that happens to be a word of the message), not a leak.
pub fn assert_secret_hidden(url: &str, secret: &str, messages: &dyn Fn(&str) -> Vec<String>) {
    if secret.chars().count() < 4 || url.matches(secret).count() != 1 {
        return;
    }
    let Some(other) = shifted(secret) else { return };
    let decoded = percent_decoded(secret);
    let forms: Vec<&str> =
        if decoded != secret && decoded.chars().count() >= 4 { vec![secret, &decoded] } else { vec![secret] };
    let shown = messages(url);
    for form in forms {
        let Some(leak) = shown.iter().find(|m| m.contains(form)) else { continue };
        let control = messages(&url.replacen(secret, &other, 1));
        if control.iter().any(|m| m.contains(form)) {
            continue;
        }
        panic!("the password {form:?} given in {url:?} shows in a message: {leak:?}");
    }
}
