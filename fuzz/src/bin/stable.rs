//! The fuzz targets on stable Rust, without libFuzzer: every seed in `corpus/<target>/` and
//! every committed crash case in `crashes/<target>/` (each must pass now), then a bounded
//! number of deterministic pseudo-random mutations of them (the same seed gives the same
//! inputs). No coverage guidance: this is the CI run; `cargo fuzz` is the long local one.
//!
//! ```text
//! stable [--execs N] [--seconds S] [--seed N] [--dir FUZZ_DIR] [TARGET...]
//! ```
//! Prints one line per target; exits 1 if any input broke a promise (the input is written to
//! `artifacts/<target>/crash-<hash>` and shown).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use polylock_fuzz::TARGETS;

/// Set by the panic hook on any thread: a panic in a runtime worker is a failure too.
static PANICKED: AtomicBool = AtomicBool::new(false);
static PANIC_MESSAGE: Mutex<String> = Mutex::new(String::new());

const MAX_LEN: usize = 4096;

fn tokens(target: &str) -> &'static [&'static [u8]] {
    match target {
        "url" => &[
            b"://",
            b"@",
            b":",
            b"?",
            b"&",
            b"=",
            b"/",
            b",",
            b"%",
            b"%2F",
            b"%40",
            b"+",
            b"#",
            b"[",
            b"]",
            b"lease=",
            b"namespace=",
            b"timeout=",
            b"sentinel_password=",
            b"password=",
            b"ttl=",
            b"mem",
            b"sqlite",
            b"redis",
            b"rediss",
            b"redis+cluster",
            b"redis+sentinel",
            b"redlock",
            b"etcd",
            b"etcds",
            b"zk",
            b"postgres",
            b"mysql",
            b"127.0.0.1:1",
            b"ms",
            b"1h30m",
            b"user:pa/ss@",
        ],
        "duration" => &[
            b"ms",
            b"s",
            b"m",
            b"h",
            b"d",
            b"+",
            b"0",
            b"9",
            b"18446744073709551615",
            b"1h30m",
            b" ",
            b"&",
            b"=",
            b"%",
            b"%20",
            b"lease=",
            b"namespace=",
            b"\xc2\xa0",
        ],
        _ => &[
            b"\0",
            b"\xff\xff\xff\xff\xff\xff\xff\xff",
            b"\x80",
            b"a",
            b"orders:42",
            b"\xff\xfe",
            b"mem://",
            b"lease=1",
        ],
    }
}

/// SplitMix64: small, deterministic, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn mutate(rng: &mut Rng, input: &mut Vec<u8>, pool: &[Vec<u8>], dict: &[&[u8]]) {
    const INTERESTING: [u8; 12] = [0, 0xff, 0x7f, 0x80, b'/', b'@', b':', b'?', b'&', b'=', b'%', b','];
    for _ in 0..1 + rng.below(4) {
        let len = input.len();
        let at = rng.below(len + 1);
        match rng.below(11) {
            0 if len > 0 => input[at.min(len - 1)] ^= 1 << rng.below(8),
            1 if len > 0 => input[at.min(len - 1)] = rng.next() as u8,
            2 if len > 0 => input[at.min(len - 1)] = INTERESTING[rng.below(INTERESTING.len())],
            3 => input.insert(at, rng.next() as u8),
            4 if len > 0 => {
                let end = (at + 1 + rng.below(8)).min(len);
                input.drain(at.min(len - 1)..end);
            }
            5 if len > 0 => {
                let start = rng.below(len);
                let end = (start + 1 + rng.below(16)).min(len);
                let piece = input[start..end].to_vec();
                input.splice(at..at, piece);
            }
            6 | 7 => {
                let token = dict[rng.below(dict.len())];
                input.splice(at..at, token.iter().copied());
            }
            8 if len > 0 => {
                let token = dict[rng.below(dict.len())];
                let end = (at + token.len()).min(len);
                input.splice(at.min(len)..end, token.iter().copied());
            }
            9 if !pool.is_empty() => {
                let other = &pool[rng.below(pool.len())];
                let start = rng.below(other.len() + 1);
                let end = (start + rng.below(64)).min(other.len());
                input.splice(at..at, other[start..end].iter().copied());
            }
            10 if len > 8 => {
                let value: i64 = [0, -1, i64::MIN, i64::MAX, 1, 10, 29, 30][rng.below(8)];
                let at = rng.below(len - 8);
                input[at..at + 8].copy_from_slice(&value.to_le_bytes());
            }
            _ => input.truncate(at),
        }
    }
    input.truncate(MAX_LEN);
}

fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect(),
        Err(_) => Vec::new(),
    };
    paths.sort();
    paths.into_iter().filter_map(|p| std::fs::read(&p).ok().map(|data| (p, data))).collect()
}

/// Run one input; the panic message if it broke a promise.
fn exec(run: fn(&[u8]), input: &[u8]) -> Option<String> {
    let outcome = catch_unwind(AssertUnwindSafe(|| run(input)));
    let panicked = PANICKED.swap(false, Ordering::SeqCst);
    if outcome.is_err() || panicked {
        let message = std::mem::take(&mut *PANIC_MESSAGE.lock().unwrap_or_else(|e| e.into_inner()));
        return Some(message);
    }
    None
}

fn report_crash(dir: &Path, target: &str, input: &[u8], message: &str) -> PathBuf {
    let mut hasher = DefaultHasher::new();
    input.hash(&mut hasher);
    let folder = dir.join("artifacts").join(target);
    let _ = std::fs::create_dir_all(&folder);
    let path = folder.join(format!("crash-{:016x}", hasher.finish()));
    let _ = std::fs::write(&path, input);
    eprintln!("--- {target}: {message}");
    eprintln!("--- input ({} bytes): {:?}", input.len(), String::from_utf8_lossy(input));
    eprintln!("--- saved as {}", path.display());
    path
}

fn main() {
    let mut execs: u64 = 20_000;
    let mut seconds: f64 = 25.0;
    let mut seed: u64 = 23;
    let mut dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut chosen: Vec<String> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--execs" => execs = value().parse().expect("--execs N"),
            "--seconds" => seconds = value().parse().expect("--seconds S"),
            "--seed" => seed = value().parse().expect("--seed N"),
            "--dir" => dir = PathBuf::from(value()),
            "-h" | "--help" => {
                println!("stable [--execs N] [--seconds S] [--seed N] [--dir FUZZ_DIR] [TARGET...]");
                return;
            }
            name => chosen.push(name.to_string()),
        }
    }
    for name in &chosen {
        assert!(TARGETS.iter().any(|(t, _)| t == name), "no target named {name}");
    }
    std::panic::set_hook(Box::new(|info| {
        let thread = std::thread::current();
        let text = format!("{info} (thread {})", thread.name().unwrap_or("unnamed"));
        let mut message = PANIC_MESSAGE.lock().unwrap_or_else(|e| e.into_inner());
        if message.is_empty() {
            *message = text;
        } else {
            eprintln!("--- another panic: {text}");
        }
        PANICKED.store(true, Ordering::SeqCst);
    }));

    let mut failed = false;
    for (target, run) in TARGETS {
        if !chosen.is_empty() && !chosen.iter().any(|c| c == target) {
            continue;
        }
        let started = Instant::now();
        let limit = Duration::from_secs_f64(seconds);
        let corpus = files(&dir.join("corpus").join(target));
        let crashes = files(&dir.join("crashes").join(target));
        let mut count: u64 = 0;
        let mut crash = None;
        for (path, input) in crashes.iter().chain(corpus.iter()) {
            count += 1;
            if let Some(message) = exec(run, input) {
                eprintln!("--- {target}: {} fails", path.display());
                crash = Some(report_crash(&dir, target, input, &message));
                break;
            }
        }
        let mut pool: Vec<Vec<u8>> = crashes.iter().chain(corpus.iter()).map(|(_, d)| d.clone()).collect();
        if pool.is_empty() {
            pool.push(Vec::new());
        }
        let mut hasher = DefaultHasher::new();
        target.hash(&mut hasher);
        let mut rng = Rng(seed ^ hasher.finish());
        let dict = tokens(target);
        while crash.is_none() && count < execs && started.elapsed() < limit {
            let mut input = pool[rng.below(pool.len())].clone();
            mutate(&mut rng, &mut input, &pool, dict);
            count += 1;
            if let Some(message) = exec(run, &input) {
                crash = Some(report_crash(&dir, target, &input, &message));
                break;
            }
            // Keep some mutants as parents, so that mutations stack up.
            if rng.below(16) == 0 && pool.len() < 2000 {
                pool.push(input);
            }
        }
        let elapsed = started.elapsed().as_secs_f64();
        let outcome = match &crash {
            None => "ok".to_string(),
            Some(path) => format!("CRASH {}", path.display()),
        };
        println!(
            "fuzz {target}: {count} execs in {elapsed:.1}s ({:.0}/s), {} seeds, {} crash cases: {outcome}",
            count as f64 / elapsed.max(1e-9),
            corpus.len(),
            crashes.len()
        );
        failed |= crash.is_some();
    }
    std::process::exit(i32::from(failed));
}
