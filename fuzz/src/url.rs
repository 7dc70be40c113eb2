//! Target `url`: the connection URL as `Client::connect` takes it (`polylock::url` and each
//! backend's own reading of the target), for every scheme. Promises checked:
//! - nothing panics;
//! - a URL polylock cannot use is refused with `InvalidArgument` (a backend that was reached
//!   may also answer `Connection`, `Timeout` or `Backend`; never `Internal`);
//! - no message (error, redacted URL) shows the password given in the URL, nor the value of
//!   a secret option such as `sentinel_password`;
//! - `mem://` accepts exactly the URLs its rule accepts (options `namespace` and `lease`,
//!   `lease` between 30 ms and 365 days).
//!
//! Half the inputs are raw text; the other half build a URL from parts (scheme, user,
//! password, hosts, path, options) so that passwords of every shape are tried. Network
//! backends are only connected to inside a loopback-only network namespace (`run.sh`);
//! elsewhere their URLs are checked as far as `polylock::url` reads them.

use std::time::Duration;

use polylock::url::{redact, ConnectUrl};
use polylock::{Client, ErrorKind};

use crate::common::{self, assert_secret_hidden, Reader};

const SCHEMES: [&str; 17] = [
    "mem",
    "sqlite",
    "redis",
    "rediss",
    "redis+cluster",
    "redis+sentinel",
    "redlock",
    "etcd",
    "etcds",
    "etcd+tls",
    "zk",
    "postgres",
    "postgresql",
    "mysql",
    "mariadb",
    "bogus",
    "",
];

/// Hosts on loopback only (ports nothing listens on inside the namespace), and broken ones.
const HOSTS: [&str; 12] = [
    "127.0.0.1:1",
    "127.0.0.1:9",
    "127.0.0.1",
    "127.0.0.1:",
    "127.0.0.1:65536",
    "127.0.0.1:x",
    "[127.0.0.1]:1",
    "[127.0.0.1",
    ":1",
    "",
    " 127.0.0.1:1 ",
    "127.0.0.2:1",
];

const OPTION_KEYS: [&str; 22] = [
    "lease",
    "namespace",
    "timeout",
    "ttl",
    "session_timeout",
    "connect_timeout",
    "node_timeout",
    "session_check",
    "pool_size",
    "max_sessions",
    "table",
    "ca",
    "cert",
    "key",
    "sentinel_password",
    "password",
    "rw_preference",
    "sslmode",
    "auth_token",
    "leese",
    "",
    "LEASE",
];

const DURATIONS: [&str; 12] =
    ["5s", "0", "10ms", "29ms", "30ms", "1h30m", "365d", "366d", "18446744073709551615", "1.5s", "-1s", ""];

const WORD: &str = "abcxyzABCXYZ0123456789-._~";
/// Every character a password may hold in a URL people write, '@', '?' and '#' included: the
/// user info runs to the last '@' before the host.
const PASSWORD: &str = "abcxyzQRS0189/:,%+ =&;.-_~!$'()*[]é€@?#";

pub fn run(data: &[u8]) {
    let mut r = Reader::new(data);
    let (text, secrets) = if r.u8() < 128 {
        let text = String::from_utf8_lossy(r.rest()).into_owned();
        let secrets = secrets_in(&text);
        (text, secrets)
    } else {
        build(&mut r)
    };
    messages(&text);
    for secret in &secrets {
        assert_secret_hidden(&text, secret, &messages);
    }
}

/// A URL from parts, and the secrets it carries.
fn build(r: &mut Reader) -> (String, Vec<String>) {
    let mut secrets = Vec::new();
    let mut text = r.pick(&SCHEMES).to_string();
    if r.bool() {
        text = text.to_ascii_uppercase();
    }
    text.push_str("://");
    let user = word(r, WORD);
    match r.u8() % 4 {
        0 => {}
        1 => text.push_str(&format!("{user}@")),
        mode => {
            let password = word(r, PASSWORD);
            let user = if mode == 2 { user } else { String::new() };
            text.push_str(&format!("{user}:{password}@"));
            secrets.push(password);
        }
    }
    let hosts: Vec<&str> = (0..1 + r.u8() % 3).map(|_| r.pick(&HOSTS)).collect();
    text.push_str(&hosts.join(","));
    match r.u8() % 4 {
        0 => {}
        1 => text.push('/'),
        2 => text.push_str(&format!("/{}", word(r, WORD))),
        _ => text.push_str(&format!("/{}/{}", word(r, WORD), r.u8() % 20)),
    }
    let options = r.u8() % 4;
    for i in 0..options {
        text.push(if i == 0 { '?' } else { '&' });
        let key = r.pick(&OPTION_KEYS);
        let value = match r.u8() % 3 {
            0 => r.pick(&DURATIONS).to_string(),
            1 => word(r, WORD),
            _ => word(r, PASSWORD),
        };
        // A secret's value as a careful user writes it: percent-encoded, so that a '&' in it
        // does not start another option.
        let value = if is_secret_option(key) {
            let encoded: String = form_urlencoded::byte_serialize(value.as_bytes()).collect();
            secrets.push(encoded.clone());
            encoded
        } else {
            value
        };
        text.push_str(&format!("{key}={value}"));
    }
    (text, secrets)
}

fn word(r: &mut Reader, alphabet: &str) -> String {
    let chars: Vec<char> = alphabet.chars().collect();
    (0..r.u8() % 24).map(|_| chars[usize::from(r.u8()) % chars.len()]).collect()
}

fn is_secret_option(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    ["password", "passwd", "pass", "secret", "token", "auth"].iter().any(|s| key.contains(s))
}

/// The secrets a raw URL carries, read generously: the password is whatever lies between
/// the user's ':' and the last '@' of the text (a password with a '/', ',', '?' or '@' in it
/// is still the password its owner typed), plus the values of secret-named options after it.
fn secrets_in(text: &str) -> Vec<String> {
    let text = text.trim();
    let mut secrets = Vec::new();
    let rest = text.split_once("://").map_or(text, |(_, rest)| rest);
    let after_userinfo = match rest.rsplit_once('@') {
        Some((userinfo, after)) => {
            if let Some((_, password)) = userinfo.split_once(':') {
                secrets.push(password.to_string());
            }
            after
        }
        None => rest,
    };
    let query = after_userinfo.split_once('?').map_or("", |(_, query)| query);
    for pair in query.split('&') {
        if let Some((key, value)) = pair.split_once('=') {
            if is_secret_option(key) {
                secrets.push(value.to_string());
            }
        }
    }
    secrets
}

/// Everything polylock says about `text` (errors, redacted forms), checking on the way that
/// nothing panics and that every refusal has the right kind.
fn messages(text: &str) -> Vec<String> {
    let mut shown = vec![redact(text)];
    let trimmed = text.trim();
    match ConnectUrl::parse(text) {
        Err(err) => {
            assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{text:?}: {err}");
            // Refused only for want of a scheme: no '://', or letters, digits, '+', '-', '.'
            // (RFC 3986) not what stands before it.
            let scheme = trimmed.split_once("://").map(|(s, _)| s);
            let valid = scheme.is_some_and(|s| {
                s.starts_with(|c: char| c.is_ascii_alphabetic())
                    && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            });
            assert!(!valid, "{text:?} has a scheme but was refused: {err}");
            shown.push(err.to_string());
        }
        Ok(mut url) => {
            let scheme = trimmed.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
            assert_eq!(Some(url.scheme()), scheme.as_deref(), "{text:?}");
            // A '?' may be the password's, never the hosts' or the path's.
            assert!(!url.target().rsplit('@').next().unwrap_or("").contains('?'), "{text:?}");
            assert_eq!(url.redacted(), redact(trimmed), "{text:?}");
            shown.push(url.redacted().to_string());
            url.take_option("namespace");
            if let Err(err) = url.take_duration("lease") {
                assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{text:?}: {err}");
                shown.push(err.to_string());
            }
            if let Err(err) = url.ensure_no_options_left() {
                assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{text:?}: {err}");
                shown.push(err.to_string());
            }
            shown.extend(connect(text, url.scheme()));
        }
    }
    shown
}

/// Connect where that is safe, and check the outcome; the messages it gave.
fn connect(text: &str, scheme: &str) -> Vec<String> {
    let trimmed = text.trim();
    let rest = trimmed.split_once("://").map_or("", |(_, rest)| rest);
    // The options start where the parser says the target ends (a '?' may be the password's).
    let target_len = ConnectUrl::parse(trimmed).map_or(rest.len(), |url| url.target().len());
    let (target, query) = (&rest[..target_len], rest.get(target_len + 1..));
    let with_query = |base: String| match query {
        Some(query) => format!("{base}?{query}"),
        None => base,
    };
    let network = !matches!(scheme, "mem" | "sqlite") && SCHEMES[..15].contains(&scheme);
    let (url, allowed): (String, &[ErrorKind]) = match scheme {
        // One in-process store for every input: mem stores live as long as the process.
        "mem" => (with_query("mem://fuzz-url".into()), &[ErrorKind::InvalidArgument]),
        // The database goes to the scratch folder, under a name made of the fuzzed path.
        "sqlite" => {
            // Without anything up to an '@': a SQLite path holds no credentials, and moved
            // into the scratch folder they would no longer be where `redact` looks.
            let file = target.rsplit_once('@').map_or(target, |(_, file)| file);
            let name: String = file.chars().filter(|c| *c != '/' && *c != '\0').take(120).collect();
            let path = match name.as_str() {
                "" if target.is_empty() => String::new(),
                "" | "." | ".." => common::scratch_dir().join(format!("x{name}")).display().to_string(),
                _ => common::scratch_dir().join(&name).display().to_string(),
            };
            (with_query(format!("sqlite://{path}")), &[ErrorKind::InvalidArgument, ErrorKind::Backend])
        }
        "redis" | "rediss" | "redis+cluster" | "redis+sentinel" | "redlock" | "etcd" | "etcds" | "etcd+tls" | "zk"
        | "postgres" | "postgresql" | "mysql" | "mariadb" => {
            if !common::network_isolated() {
                return Vec::new();
            }
            (
                trimmed.to_string(),
                &[ErrorKind::InvalidArgument, ErrorKind::Connection, ErrorKind::Timeout, ErrorKind::Backend],
            )
        }
        // Unknown schemes never reach a backend.
        _ => (trimmed.to_string(), &[ErrorKind::InvalidArgument]),
    };
    let expected_mem = (scheme == "mem").then(|| mem_accepts(query.unwrap_or("")));
    let limit = Duration::from_millis(if network { 100 } else { 10_000 });
    let outcome = common::runtime().block_on(async {
        let outcome = tokio::time::timeout(limit, Client::connect(&url)).await;
        match outcome {
            Ok(Ok(client)) => {
                let shown = client.url().to_string();
                let lease = client.watchdog_lease();
                client.close().await;
                Some(Ok((shown, lease)))
            }
            Ok(Err(err)) => Some(Err(err)),
            Err(_elapsed) => None,
        }
    });
    if scheme == "sqlite" {
        common::clear_scratch();
    }
    match outcome {
        None => {
            assert!(network, "connecting to {url:?} did not end within {limit:?}");
            Vec::new()
        }
        Some(Ok((shown, lease))) => {
            if let Some(expected) = expected_mem {
                assert_eq!(expected, Ok(lease), "{url:?} was accepted");
            }
            vec![shown]
        }
        Some(Err(err)) => {
            assert!(allowed.contains(&err.kind()), "{url:?}: refused with {:?}: {err}", err.kind());
            if let Some(Ok(lease)) = expected_mem {
                panic!("{url:?} should connect with a {lease:?} lease, got {err}");
            }
            vec![err.to_string()]
        }
    }
}

/// The rule for `mem://` URLs: only `namespace` and `lease` options; `namespace` without ':'
/// or NUL, at most 512 bytes; `lease` (the last one given) a duration between 30 ms and 365
/// days. `Ok(watchdog lease)` or `Err(())`.
fn mem_accepts(query: &str) -> Result<Duration, ()> {
    let (mut lease_text, mut namespace) = (None, String::new());
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "namespace" => namespace = value.into_owned(),
            "lease" => lease_text = Some(value.into_owned()),
            _ => return Err(()),
        }
    }
    // A namespace (the last one given; empty is none) is joined as `<namespace>:<name>`: no
    // ':' in it, and a name's rule (no NUL, at most 512 bytes).
    if !namespace.is_empty() && (namespace.contains([':', '\0']) || namespace.len() > polylock::MAX_NAME_LEN) {
        return Err(());
    }
    let lease = match lease_text {
        None => polylock::DEFAULT_WATCHDOG_LEASE,
        Some(text) => polylock::duration::parse_duration("lease", &text).map_err(|_| ())?,
    };
    if lease < Duration::from_millis(30) || lease > polylock::duration::MAX_LEASE {
        return Err(());
    }
    Ok(lease)
}
