//! Connection URLs: `scheme://target?option=value&...`. The scheme picks the backend; the
//! options ride in the query string. A URL is only ever shown in its redacted form.

use std::time::Duration;

use crate::duration::parse_duration;
use crate::error::{Error, Result};

/// Used when neither the caller nor `$POLYLOCK_URL` names a backend: the embedded default.
pub const DEFAULT_URL: &str = "sqlite://polylock.db";

/// The environment variable that names the default backend.
pub const URL_ENV: &str = "POLYLOCK_URL";

/// The URL `Client::connect_default` uses: `$POLYLOCK_URL`, else [`DEFAULT_URL`].
pub fn default_url() -> String {
    std::env::var(URL_ENV).ok().filter(|u| !u.trim().is_empty()).unwrap_or_else(|| DEFAULT_URL.to_string())
}

/// A parsed connection URL. Backends take the options they know; any option left over when
/// the backend is done is an error, so a misspelt option never goes unnoticed.
#[derive(Clone)]
pub struct ConnectUrl {
    scheme: String,
    target: String,
    options: Vec<(String, String)>,
    redacted: String,
    /// What `redact` hides, kept out of the messages of `take_duration` and
    /// `ensure_no_options_left`, whose value or key may be a password's tail when the query
    /// holds an '@' (fuzz cases).
    secrets: Vec<String>,
}

/// Written by hand: the target and the options may hold a password, so only the redacted
/// URL is shown.
impl std::fmt::Debug for ConnectUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectUrl").field("scheme", &self.scheme).field("url", &self.redacted).finish()
    }
}

impl ConnectUrl {
    pub fn parse(text: &str) -> Result<Self> {
        let text = text.trim();
        let (scheme, rest) = text.split_once("://").ok_or_else(|| {
            Error::invalid_argument(format!(
                "'{}' is not a polylock URL; expected scheme://..., such as sqlite://polylock.db or redis://localhost:6379",
                redact_unparsed(text)
            ))
        })?;
        // RFC 3986's scheme characters: a '://' inside an option's value (`?ca=file:///…`) of a
        // text without a scheme must not turn user info and password into a "scheme" that an
        // error message would then quote.
        let is_scheme = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if !is_scheme {
            return Err(Error::invalid_argument(format!(
                "'{}' is not a polylock URL; expected scheme://..., such as sqlite://polylock.db or redis://localhost:6379",
                redact_unparsed(text)
            )));
        }
        let (target, query) = split_query(rest);
        let query = query.unwrap_or("");
        let options = form_urlencoded::parse(query.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        Ok(ConnectUrl {
            scheme: scheme.to_ascii_lowercase(),
            target: target.to_string(),
            options,
            redacted: redact(text),
            secrets: secrets(text),
        })
    }

    pub fn scheme(&self) -> &str {
        &self.scheme
    }

    /// Everything between `://` and `?`: host list, credentials, path.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The URL with any password replaced by `***`: the only form fit for messages and logs.
    pub fn redacted(&self) -> &str {
        &self.redacted
    }

    /// Remove and return an option's value; the last one wins if it is repeated.
    pub fn take_option(&mut self, key: &str) -> Option<String> {
        let mut found = None;
        self.options.retain(|(k, v)| {
            if k == key {
                found = Some(v.clone());
                false
            } else {
                true
            }
        });
        found
    }

    pub fn take_duration(&mut self, key: &str) -> Result<Option<Duration>> {
        self.take_option(key)
            .map(|v| {
                parse_duration(&format!("URL option '{key}'"), &v).map_err(|err| err.without_secrets(&self.secrets))
            })
            .transpose()
    }

    /// Fail if any option was not taken by the backend or the client.
    pub fn ensure_no_options_left(&self) -> Result<()> {
        match self.options.first() {
            None => Ok(()),
            // The key may hold a password's tail when the query holds an '@' (a fuzz case).
            Some((key, _)) => Err(Error::invalid_argument(format!(
                "unknown option '{key}' in {}; check its spelling against the backend's documented options",
                self.redacted
            ))
            .without_secrets(&self.secrets)),
        }
    }
}

/// The TLS options of a URL whose scheme asks for TLS (`rediss`, `redlocks`, `zks`...): `ca`,
/// the PEM file of the CA that signed the server's certificate (default: the system's or the
/// web's roots), and `cert` with `key`, a client certificate for a server that asks for one.
/// TLS here always checks the server's certificate and name; there is no option to skip it.
#[cfg(any(feature = "redis", feature = "etcd", feature = "zookeeper", feature = "postgres", feature = "mysql"))]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TlsFiles {
    pub ca: Option<String>,
    pub cert: Option<String>,
    pub key: Option<String>,
}

/// What [`TlsFiles::read`] read: PEM bytes.
#[cfg(any(feature = "redis", feature = "etcd", feature = "zookeeper", feature = "postgres", feature = "mysql"))]
pub(crate) struct TlsPem {
    pub ca: Option<Vec<u8>>,
    /// The client certificate and its key.
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
}

#[cfg(any(feature = "redis", feature = "etcd", feature = "zookeeper", feature = "postgres", feature = "mysql"))]
impl TlsFiles {
    /// Take `ca`, `cert` and `key` from `url`: `Some` when `tls` (the scheme asks for TLS),
    /// an error naming `tls_scheme` when the options come without it, or when `cert` and
    /// `key` do not come together.
    pub fn take(url: &mut ConnectUrl, tls: bool, tls_scheme: &str) -> Result<Option<TlsFiles>> {
        let files = TlsFiles { ca: url.take_option("ca"), cert: url.take_option("cert"), key: url.take_option("key") };
        if files != TlsFiles::default() && !tls {
            return Err(Error::invalid_argument(format!(
                "options 'ca', 'cert' and 'key' need a {tls_scheme}:// URL (TLS): {}",
                url.redacted()
            )));
        }
        if files.cert.is_some() != files.key.is_some() {
            return Err(Error::invalid_argument(format!(
                "options 'cert' and 'key' go together (a client certificate and its key): {}",
                url.redacted()
            )));
        }
        Ok(tls.then_some(files))
    }

    /// Read the files now, so a wrong path is an `InvalidArgument` at connect time.
    pub fn read(&self) -> Result<TlsPem> {
        let read = |option: &str, path: &str| {
            std::fs::read(path).map_err(|e| {
                Error::invalid_argument(format!("cannot read the file of URL option '{option}' ({path})"))
                    .with_source(e)
            })
        };
        let ca = self.ca.as_deref().map(|path| read("ca", path)).transpose()?;
        let identity = match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => Some((read("cert", cert)?, read("key", key)?)),
            _ => None,
        };
        Ok(TlsPem { ca, identity })
    }
}

/// Whether `host` (a name, an IP address, bracketed or not, or a Unix socket's path) is
/// this machine: `localhost` (and `*.localhost`), 127.0.0.0/8, `::1`. Names are not
/// resolved: a name that is not `localhost` counts as another machine.
#[cfg(any(feature = "redis", feature = "etcd", feature = "zookeeper", feature = "postgres", feature = "mysql"))]
pub(crate) fn is_loopback(host: &str) -> bool {
    let host = host.trim().trim_start_matches('[').trim_end_matches(']').trim_end_matches('.');
    let lower = host.to_ascii_lowercase();
    host.starts_with('/')
        || lower == "localhost"
        || lower.ends_with(".localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.to_canonical().is_loopback())
}

/// The decision behind [`warn_unverified_password`]: a password is exposed when it is sent
/// (`password`) without verified TLS (`verified`: the server's certificate checked against
/// trusted roots) to at least one host that is not this machine. Returns that host.
#[cfg(any(feature = "redis", feature = "etcd", feature = "zookeeper", feature = "postgres", feature = "mysql"))]
pub(crate) fn exposed_host<'a>(
    hosts: impl IntoIterator<Item = &'a str>,
    password: bool,
    verified: bool,
) -> Option<&'a str> {
    if !password || verified {
        return None;
    }
    hosts.into_iter().find(|host| !is_loopback(host))
}

/// Called by every backend's connect: when a password goes to a host that is not this
/// machine without verified TLS, log one warning naming the host, the backend and `how` to
/// turn verification on. Returns whether it warned. Never fails the connect: libpq's and the
/// servers' own meanings of the URL are kept.
#[cfg(any(feature = "redis", feature = "etcd", feature = "zookeeper", feature = "postgres", feature = "mysql"))]
pub(crate) fn warn_unverified_password<'a>(
    backend: &'static str,
    redacted: &str,
    hosts: impl IntoIterator<Item = &'a str>,
    password: bool,
    verified: bool,
    how: &str,
) -> bool {
    let Some(host) = exposed_host(hosts, password, verified) else { return false };
    tracing::warn!(op = "connect", backend, url = %redacted, host = %host,
        "the password in the URL goes to {host} without verified TLS, so whoever is on the network path can read or \
         replay it (a server whose certificate is not checked may be anyone); {how}");
    true
}

/// Decode the percent-escapes of a URL's user, password or path part (a literal '+' stays
/// a '+', as it does outside a query string).
pub(crate) fn percent_decode(text: &str) -> String {
    form_urlencoded::parse(format!("x={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// `target` (`user:password@host:port/path`) with the raw '/', '?', '#' and '@' of its user
/// info percent-escaped, for a backend whose own URL parser ends the user info at the first
/// of them (sqlx, through the `url` crate): the user info runs to the last '@', as [`redact`]
/// and every other backend read it, so a base64 password with a '/' connects instead of
/// being taken for a host and a path.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn escape_userinfo(target: &str) -> String {
    match target.rsplit_once('@') {
        None => target.to_string(),
        Some((userinfo, rest)) => {
            let mut escaped = String::with_capacity(target.len() + 8);
            for c in userinfo.chars() {
                match c {
                    '/' => escaped.push_str("%2F"),
                    '?' => escaped.push_str("%3F"),
                    '#' => escaped.push_str("%23"),
                    '@' => escaped.push_str("%40"),
                    c => escaped.push(c),
                }
            }
            format!("{escaped}@{rest}")
        }
    }
}

/// Where the user info of `rest` (a URL's text after `://`) ends: the index of its '@', if it
/// has one. The user info runs to the last '@' before the host, across any '/', '?' or '#'
/// a password holds (random passwords have them): a '?' starts the query only if no '@'
/// follows it, or if what follows it reads as an option (`name=`) and the part before it
/// has an '@' or none at all. An '@' in an option's value is best written `%40`.
pub(crate) fn userinfo_end(rest: &str) -> Option<usize> {
    let Some(question) = rest.find('?') else { return rest.rfind('@') };
    let after = &rest[question + 1..];
    if after.contains('@') && !reads_as_option(after) {
        return rest.rfind('@');
    }
    rest[..question].rfind('@')
}

/// `name=` at the start of `text`: an option's name is letters, digits and `_.-%`.
fn reads_as_option(text: &str) -> bool {
    match text.split_once('=') {
        Some((name, _)) => {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '%'))
        }
        None => false,
    }
}

/// `rest` (after `://`) split into its target (user info, hosts, path) and its query, which
/// starts at the first '?' after the user info.
pub(crate) fn split_query(rest: &str) -> (&str, Option<&str>) {
    let from = userinfo_end(rest).unwrap_or(0);
    match rest[from..].find('?') {
        Some(at) => (&rest[..from + at], Some(&rest[from + at + 1..])),
        None => (rest, None),
    }
}

/// A text that is no URL, for a message: everything between `//` and the last '@' (or, with
/// no `//` before it, everything before the last '@') replaced, so no password it may hold
/// shows; secret options after it are hidden as [`redact`] hides them.
pub(crate) fn redact_unparsed(text: &str) -> String {
    let (_, mut out, tail, query) = unparsed_parts(text);
    push_masked(&mut out, tail);
    if let Some(query) = query {
        out.push('?');
        push_masked(&mut out, query);
    }
    out
}

/// `text` read as no URL: the part hidden (to the last '@'), the head shown in its place, the
/// text from the last '@' to the query, and the query. That middle text is read for options
/// too: an '@' in an earlier option's value (`?a=x@y&password=...`) leaves later options
/// after the last '@' with no '?' of their own.
fn unparsed_parts(text: &str) -> (Option<&str>, String, &str, Option<&str>) {
    let from = text.rfind('@').unwrap_or(0);
    let (head, query) = match text[from..].find('?') {
        Some(q) => (&text[..from + q], Some(&text[from + q + 1..])),
        None => (text, None),
    };
    let Some(at) = head.rfind('@') else { return (None, String::new(), head, query) };
    // Only a scheme that is one (letters, digits, `+-.`) stays in sight: anything else before
    // a "//" may be user info too (`redis:pw@...//...@host`, `:pw...//...@host`).
    match head[..at].split_once("://") {
        Some((scheme, _)) if is_scheme(scheme) => {
            (Some(&head[scheme.len() + 3..at]), format!("{scheme}://***"), &head[at..], query)
        }
        _ => (Some(&head[..at]), "***".to_string(), &head[at..], query),
    }
}

/// Letters, digits, '+', '-' and '.', at least one: what may stand before "://" in sight.
fn is_scheme(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// `?` and the options of `query`, the values of secret-named ones hidden.
fn push_options(out: &mut String, query: Option<&str>) {
    if let Some(query) = query {
        out.push('?');
        push_masked(out, query);
    }
}

/// `text` read as options, the values of secret-named ones hidden.
fn push_masked(out: &mut String, text: &str) {
    let mut shown = 0;
    for (start, end) in secret_values(text) {
        out.push_str(&text[shown..start]);
        out.push_str("***");
        shown = end;
    }
    out.push_str(&text[shown..]);
}

/// The byte ranges of `query` that hold a secret option's value, in order. Read generously,
/// so that every way of splitting a malformed query is covered: the value after an '=' runs
/// to the next '&', and it is a secret's if the text before that '=', back to the '=' or
/// '&' before it, names a secret. So `password=x`, `ca=1?password=x` (in a text that is no
/// URL a '?' inside a value may start options too) and `passw/?y=x` all hide `x`.
fn secret_values(query: &str) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut key_start = 0;
    let mut at = 0;
    while let Some(offset) = query[at..].find(['=', '&']) {
        let sign = at + offset;
        if query.as_bytes()[sign] == b'=' && is_secret_option(&query[key_start..sign]) {
            let end = query[sign..].find('&').map_or(query.len(), |amp| sign + amp);
            found.push((sign + 1, end));
            at = end;
            key_start = end;
            continue;
        }
        at = sign + 1;
        key_start = at;
    }
    found
}

/// Hide the password of a `user:password@host` authority, and the value of any option whose
/// name (percent-decoded) says it is a secret. An '@' left in the query after the user info
/// is ambiguous (a password with `?name=` in it reads as an option): then everything between
/// `//` and the last '@' is hidden, the safe direction.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        // Not a URL at all; still never echo what might be a password.
        return redact_unparsed(url);
    };
    let (target, query) = split_query(rest);
    if query.is_some_and(|q| q.contains('@')) {
        return redact_unparsed(url);
    }
    let mut out = match target.rsplit_once('@') {
        Some((userinfo, after)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:***@{after}"),
            None => format!("{scheme}://{userinfo}@{after}"),
        },
        None => format!("{scheme}://{target}"),
    };
    push_options(&mut out, query);
    out
}

/// What `redact` hides in `url`, as written and percent-decoded: the password (up to the
/// last '@'), or all before the last '@' of a text that is no URL, and secret options' values.
pub(crate) fn secrets(url: &str) -> Vec<String> {
    let mut found = Vec::new();
    let parsed = url.split_once("://").map(|(_, rest)| split_query(rest));
    let query = match parsed {
        Some((target, query)) if !query.is_some_and(|q| q.contains('@')) => {
            found
                .extend(target.rsplit_once('@').and_then(|(info, _)| info.split_once(':')).map(|(_, p)| p.to_string()));
            query
        }
        _ => {
            let (hidden, _, tail, query) = unparsed_parts(url);
            found.extend(hidden.map(str::to_string));
            // The password inside what is hidden, which a backend may quote alone.
            found.extend(hidden.and_then(|h| h.split_once(':')).map(|(_, p)| p.to_string()));
            found.extend(secret_values(tail).into_iter().map(|(start, end)| tail[start..end].to_string()));
            query
        }
    };
    let query = query.unwrap_or("");
    found.extend(secret_values(query).into_iter().map(|(start, end)| query[start..end].to_string()));
    let decoded: Vec<String> = found.iter().map(|text| percent_decode(text)).collect();
    found.extend(decoded);
    found.retain(|secret| !secret.is_empty());
    found
}

/// An option whose name, as written or percent-decoded as `take_option` sees it, names a
/// secret (both: decoding can join or split a word, as `%3auth` does).
fn is_secret_option(key: &str) -> bool {
    let decoded = form_urlencoded::parse(format!("{key}=").as_bytes())
        .next()
        .map_or_else(|| key.to_string(), |(k, _)| k.into_owned());
    [key, decoded.as_str()].iter().any(|key| {
        let key = key.to_ascii_lowercase();
        ["password", "passwd", "pass", "secret", "token", "auth"].iter().any(|s| key.contains(s))
    })
}

#[cfg(test)]
mod tests {

    #[cfg(any(feature = "postgres", feature = "mysql"))]
    #[test]
    fn a_userinfo_is_escaped_up_to_its_last_at_sign() {
        assert_eq!(escape_userinfo("u:pa/ss@word@db:5432/app"), "u:pa%2Fss%40word@db:5432/app");
        assert_eq!(escape_userinfo("u:p%2F@db/app"), "u:p%2F@db/app");
        assert_eq!(escape_userinfo("db:5432/app"), "db:5432/app");
    }

    use super::*;

    #[test]
    fn a_password_to_another_host_without_verified_tls_is_exposed() {
        for host in ["db.example.com", "10.0.0.5", "[2001:db8::1]", "localhost.example.com", "128.0.0.1"] {
            assert_eq!(exposed_host([host], true, false), Some(host), "{host}");
            assert_eq!(exposed_host([host], true, true), None, "{host} verified");
            assert_eq!(exposed_host([host], false, false), None, "{host} without a password");
        }
        for host in
            ["127.0.0.1", "127.8.9.10", "localhost", "LOCALHOST.", "api.localhost", "::1", "[::1]", "/run/db.sock"]
        {
            assert_eq!(exposed_host([host], true, false), None, "{host}");
        }
        // Any host of several that leaves this machine is named.
        assert_eq!(exposed_host(["127.0.0.1", "cache-2.internal", "::1"], true, false), Some("cache-2.internal"));
        assert!(warn_unverified_password("redis", "redis://:***@cache.internal", ["cache.internal"], true, false, "x"));
        assert!(!warn_unverified_password("redis", "redis://:***@127.0.0.1", ["127.0.0.1"], true, false, "x"));
    }

    #[test]
    fn secrets_are_what_redaction_hides() {
        let found = secrets("redis://app:ab%2Fcd1@h:1/0?auth_token=t0k3n&lease=5s");
        assert!(found.contains(&"ab%2Fcd1".to_string()) && found.contains(&"ab/cd1".to_string()), "{found:?}");
        assert!(found.contains(&"t0k3n".to_string()) && !found.iter().any(|s| s == "5s"), "{found:?}");
        // A backend that splits at the first '/' may quote the password in a part it names.
        let found = secrets("rediss://s/ser:pw4321@127.0.0.1:1");
        let err = Error::invalid_argument("'ser:pw4321@127.0.0.1:1' is not a database number").without_secrets(&found);
        assert_eq!(err.to_string(), "'ser:***@127.0.0.1:1' is not a database number");
    }

    #[test]
    fn a_slash_in_a_password_is_hidden_too() {
        for url in ["redis://app:ab/cd1234@127.0.0.1:1/0", "etcd://u:x/y/z@127.0.0.1:2379,127.0.0.1:2380"] {
            let shown = redact(url);
            assert!(!shown.contains("cd1234") && !shown.contains("x/y/z"), "{shown}");
            assert!(shown.contains(":***@127.0.0.1"), "{shown}");
        }
        assert_eq!(redact("sqlite:///tmp/a@b.db"), "sqlite:///tmp/a@b.db");
    }

    #[test]
    fn a_question_mark_in_a_password_stays_in_the_password() {
        let mut url = ConnectUrl::parse("redis://u:pa?ss@127.0.0.1:16379/0?timeout=1s").unwrap();
        assert_eq!(url.target(), "u:pa?ss@127.0.0.1:16379/0");
        assert_eq!(url.redacted(), "redis://u:***@127.0.0.1:16379/0?timeout=1s");
        assert_eq!(url.take_option("timeout").as_deref(), Some("1s"));
        url.ensure_no_options_left().unwrap();
        let url = ConnectUrl::parse("postgres://app:x?y/z#w@db:5432/locks").unwrap();
        assert_eq!(url.target(), "app:x?y/z#w@db:5432/locks");
        assert_eq!(url.redacted(), "postgres://app:***@db:5432/locks");
        // An '@' in an option's value after a host is still an option.
        let mut url = ConnectUrl::parse("redis://h:1?client_name=a@b").unwrap();
        assert_eq!(url.target(), "h:1");
        assert_eq!(url.take_option("client_name").as_deref(), Some("a@b"));
        // A password that reads as `?name=` is ambiguous: redaction hides up to the last '@'.
        let shown = redact("redis://u:pw?x=1@h:1");
        assert!(!shown.contains("pw") && !shown.contains("x=1"), "{shown}");
        assert!(secrets("redis://u:pw?x=1@h:1").iter().any(|s| s.contains("pw")));
        assert_eq!(redact("redis://u:p?a=b@h:1?password=hunter22"), "redis://***@h:1?password=***");
        assert!(secrets("redis://u:p?a=b@h:1?password=hunter22").contains(&"hunter22".to_string()));
    }

    #[test]
    fn a_url_that_does_not_parse_is_shown_without_its_user_info() {
        for text in ["bogus:u:pa?ss@h:1", "1x://u:pa?ss@h:1", "u:pa/ss@h:1?ca=file:///x"] {
            let err = ConnectUrl::parse(text).unwrap_err();
            assert!(!err.to_string().contains("pa?ss") && !err.to_string().contains("pa/ss"), "{err}");
        }
        assert_eq!(redact_unparsed("1x://u:pa?ss@h:1"), "1x://***@h:1");
        assert_eq!(redact_unparsed("u:p@h"), "***@h");
        // A secret option after a '?' inside another option's value (a fuzz case).
        assert_eq!(
            redact_unparsed("app:s3t@db?ca=file:///1?password=s3cret&x=1"),
            "***@db?ca=file:///1?password=***&x=1"
        );
        // Options after the last '@' with no '?' of their own (an '@' in an earlier value).
        assert_eq!(
            redact("zk://h:1/?ttl=1?&x-@'9]&sentinel_password=B45Bcb&c#1"),
            "zk://***@'9]&sentinel_password=***&c#1"
        );
        // A key with a '?' in it that names a secret: its value is hidden (fuzz cases).
        assert_eq!(
            redact_unparsed("a@b?ca=file:///1?passwo/[/?leeserd=s3cret4&x=1"),
            "***@b?ca=file:///1?passwo/[/?leeserd=***&x=1"
        );
        assert_eq!(
            redact_unparsed("h:1?passwob:5432/ls://h:1?ockA?ca=file:///ca.pemrd=s3cre&x=1"),
            "h:1?passwob:5432/ls://h:1?ockA?ca=***&x=1"
        );
        // A ':' before a "//" that follows no scheme: all up to the last '@' is hidden (a fuzz case).
        assert_eq!(redact_unparsed(":s3cret.x?a=b&c mysql:1;0m//root:pw@h:1/db"), "***@h:1/db");
        assert_eq!(redact_unparsed("redis://h?x=%3auth@h2"), "redis://***@h2");
        assert!(is_secret_option("x%3auth") && is_secret_option("p%61ss"));
        // User info before a later "//...@": hidden with it (a fuzz case).
        assert_eq!(redact_unparsed("p:s3cret@h:1/x?a=b&c:d//root:pw@h2:1/db"), "***@h2:1/db");
    }

    #[test]
    fn percent_encoded_secret_options_are_hidden() {
        let shown = redact("redis+sentinel://h:1/m?sentinel_p%61ssword=hunter22&db=1");
        assert_eq!(shown, "redis+sentinel://h:1/m?sentinel_p%61ssword=***&db=1");
        assert!(secrets("redis://h:1?p%61ss=hunter22").contains(&"hunter22".to_string()));
    }

    #[test]
    fn debug_shows_the_redacted_url_only() {
        let url = ConnectUrl::parse("redis://u:hunter22@h:1?sentinel_password=swordfish").unwrap();
        let shown = format!("{url:?}");
        assert!(!shown.contains("hunter22") && !shown.contains("swordfish"), "{shown}");
        assert!(shown.contains("u:***@h:1"), "{shown}");
    }

    #[test]
    fn a_scheme_is_letters_digits_and_plus_minus_dot() {
        let err = ConnectUrl::parse("app:s3cret@db:5432/locks?ca=file:///etc/ca.pem").unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
        assert!(!err.to_string().contains("s3cret"), "{err}");
        assert_eq!(ConnectUrl::parse("redis+sentinel://h:1/m").unwrap().scheme(), "redis+sentinel");
    }

    #[test]
    fn splits_scheme_target_and_options() {
        let mut url = ConnectUrl::parse("SQLITE:///tmp/x.db?namespace=orders&lease=10s").unwrap();
        assert_eq!(url.scheme(), "sqlite");
        assert_eq!(url.target(), "/tmp/x.db");
        assert_eq!(url.take_option("namespace").as_deref(), Some("orders"));
        assert_eq!(url.take_duration("lease").unwrap(), Some(Duration::from_secs(10)));
        url.ensure_no_options_left().unwrap();
    }

    #[test]
    fn an_unknown_option_holding_a_password_is_not_quoted_with_it() {
        let url = ConnectUrl::parse("mem://x?namespace=o&/Y@127.0.0.1:1w43sqlite21@127.lease").unwrap();
        let err = url.ensure_no_options_left().unwrap_err().to_string();
        assert!(!err.contains("1w43sqlite21"), "{err}");
    }

    #[test]
    fn leftover_option_is_an_error() {
        let url = ConnectUrl::parse("mem://?leese=10s").unwrap();
        let err = url.ensure_no_options_left().unwrap_err();
        assert!(err.to_string().contains("leese"), "{err}");
    }

    #[test]
    fn passwords_never_survive_redaction() {
        assert_eq!(
            redact("postgres://app:s3cret@db:5432/locks?sslmode=require"),
            "postgres://app:***@db:5432/locks?sslmode=require"
        );
        assert_eq!(redact("redis://:s3cret@h:6379/0"), "redis://:***@h:6379/0");
        assert_eq!(redact("redis://h:6379?password=s3cret&db=1"), "redis://h:6379?password=***&db=1");
        let err = ConnectUrl::parse("bogus:app:s3cret@host").unwrap_err();
        assert!(!err.to_string().contains("s3cret"), "{err}");
    }
}
