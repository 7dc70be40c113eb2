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
#[derive(Debug, Clone)]
pub struct ConnectUrl {
    scheme: String,
    target: String,
    options: Vec<(String, String)>,
    redacted: String,
}

impl ConnectUrl {
    pub fn parse(text: &str) -> Result<Self> {
        let text = text.trim();
        let (scheme, rest) = text.split_once("://").ok_or_else(|| {
            Error::invalid_argument(format!(
                "'{}' is not a polylock URL; expected scheme://..., such as sqlite://polylock.db or redis://localhost:6379",
                redact(text)
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
                redact(text)
            )));
        }
        let (target, query) = match rest.split_once('?') {
            Some((target, query)) => (target, query),
            None => (rest, ""),
        };
        let options = form_urlencoded::parse(query.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        Ok(ConnectUrl {
            scheme: scheme.to_ascii_lowercase(),
            target: target.to_string(),
            options,
            redacted: redact(text),
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
        self.take_option(key).map(|v| parse_duration(&format!("URL option '{key}'"), &v)).transpose()
    }

    /// Fail if any option was not taken by the backend or the client.
    pub fn ensure_no_options_left(&self) -> Result<()> {
        match self.options.first() {
            None => Ok(()),
            Some((key, _)) => Err(Error::invalid_argument(format!(
                "unknown option '{key}' in {}; check its spelling against the backend's documented options",
                self.redacted
            ))),
        }
    }
}

/// Decode the percent-escapes of a URL's user, password or path part (a literal '+' stays
/// a '+', as it does outside a query string).
#[cfg(any(feature = "redis", feature = "etcd", feature = "zookeeper"))]
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

/// Hide the password of a `user:password@host` authority, and the value of any option whose
/// name says it is a secret.
pub fn redact(url: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (url, None),
    };
    let mut out = match head.split_once("://") {
        // The user info runs to the last '@' before the query, as the backends read it, even
        // across a '/': a raw '/' in a password (base64 has them) must not end the authority
        // here while the backend still takes it as part of the password. A path holding an
        // '@' after a ':' is over-hidden, the safe direction.
        Some((scheme, rest)) => match rest.rsplit_once('@') {
            Some((userinfo, after)) => match userinfo.split_once(':') {
                Some((user, _password)) => format!("{scheme}://{user}:***@{after}"),
                None => format!("{scheme}://{userinfo}@{after}"),
            },
            None => format!("{scheme}://{rest}"),
        },
        // Not a URL at all; still never echo what might be a password.
        None => match head.rsplit_once('@') {
            Some((_, hosts)) => format!("***@{hosts}"),
            None => head.to_string(),
        },
    };
    if let Some(query) = query {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) if is_secret_option(k) => format!("{k}=***"),
                _ => pair.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&pairs.join("&"));
    }
    out
}

/// What `redact` hides in `url`, as written and percent-decoded: the password (up to the
/// last '@'), or all before the '@' of a text that is no URL, and secret options' values.
pub(crate) fn secrets(url: &str) -> Vec<String> {
    let (head, query) = url.split_once('?').unwrap_or((url, ""));
    let mut found = Vec::new();
    let hidden = match head.split_once("://") {
        Some((_, rest)) => rest.rsplit_once('@').and_then(|(userinfo, _)| userinfo.split_once(':')).map(|(_, p)| p),
        None => head.rsplit_once('@').map(|(before, _)| before),
    };
    found.extend(hidden.map(str::to_string));
    for pair in query.split('&') {
        if let Some((key, value)) = pair.split_once('=') {
            if is_secret_option(key) {
                found.push(value.to_string());
            }
        }
    }
    let decoded: Vec<String> = found
        .iter()
        .filter_map(|text| {
            let query = format!("x={}", text.replace('+', "%2B"));
            form_urlencoded::parse(query.as_bytes()).next().map(|(_, value)| value.into_owned())
        })
        .collect();
    found.extend(decoded);
    found.retain(|secret| !secret.is_empty());
    found
}

fn is_secret_option(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    ["password", "passwd", "pass", "secret", "token", "auth"].iter().any(|s| key.contains(s))
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
