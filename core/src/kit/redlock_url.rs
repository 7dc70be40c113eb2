//! The `redlock://` URL of a list of independent Redis servers, for bindings whose RedLock
//! entry point takes a list (`Polylock.redlock(urls, name)` in Java, `polylock.redlock([...])`
//! elsewhere): written once here, so that every language accepts the same entries and refuses
//! the same mistakes with the same words.

use crate::error::{Error, Result};
use crate::url::redact;

/// `redlock://[user:password@]h1:p1,h2:p2,...` from entries that are each `host:port` or
/// `redis://[user:password@]host:port[/]`. The RedLock backend takes one set of credentials
/// for every server, so entries with different credentials are refused, as are an empty
/// list, an entry without a port, a database, path or query (each server is used whole),
/// `rediss://` (a list joins into a plain `redlock://` URL; TLS is a `redlocks://` URL of its
/// own, with its `ca=`) and other schemes. Messages show
/// entries redacted.
pub fn redlock_url<S: AsRef<str>>(nodes: &[S]) -> Result<String> {
    if nodes.is_empty() {
        return Err(Error::invalid_argument(
            "RedLock needs at least one Redis server (host:port or redis://host:port)",
        ));
    }
    let mut userinfo: Option<Option<String>> = None;
    let mut hosts = Vec::with_capacity(nodes.len());
    for entry in nodes {
        let (auth, host) = split_entry(entry.as_ref())?;
        match &userinfo {
            None => userinfo = Some(auth),
            Some(first) if *first == auth => {}
            Some(_) => {
                return Err(Error::invalid_argument(format!(
                    "RedLock servers must share one set of credentials, and '{}' has others than the first",
                    redact(entry.as_ref())
                )))
            }
        }
        hosts.push(host);
    }
    let auth = userinfo.flatten().map(|info| format!("{info}@")).unwrap_or_default();
    Ok(format!("redlock://{auth}{}", hosts.join(",")))
}

/// An entry's credentials (if any) and its `host:port`.
fn split_entry(entry: &str) -> Result<(Option<String>, String)> {
    let trimmed = entry.trim();
    let bad = |why: &str| Error::invalid_argument(format!("RedLock server '{}': {why}", redact(trimmed)));
    let rest = match trimmed.split_once("://") {
        None => trimmed,
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("redis") => rest,
        Some((scheme, _)) if scheme.eq_ignore_ascii_case("rediss") => {
            return Err(bad("a list of servers joins into a plain redlock:// URL; for TLS, connect with a URL \
                 redlocks://h1:p1,h2:p2,h3:p3?ca=/path/ca.pem instead"))
        }
        Some(_) => return Err(bad("expected host:port or redis://host:port")),
    };
    if rest.contains('?') {
        return Err(bad("options are not taken per server; put them on the redlock:// URL"));
    }
    let (auth, host) = match rest.rsplit_once('@') {
        Some((auth, host)) => (Some(auth.to_string()), host),
        None => (None, rest),
    };
    let host = host.strip_suffix('/').unwrap_or(host);
    if host.contains('/') {
        return Err(bad("a RedLock server is used whole: no database number or path"));
    }
    if host.contains(',') || host.contains('@') {
        return Err(bad("one server per entry"));
    }
    let (name, port) = host.rsplit_once(':').ok_or_else(|| bad("needs a port (host:port)"))?;
    if name.is_empty() {
        return Err(bad("empty host"));
    }
    if port.parse::<u16>().is_err() {
        return Err(bad("the port is not a number from 0 to 65535"));
    }
    Ok((auth.filter(|auth| !auth.is_empty()), host.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn joins_hosts_and_plain_entries() {
        let url = redlock_url(&["redis://127.0.0.1:30001", "127.0.0.1:30002", " redis://h3:6379/ "]).unwrap();
        assert_eq!(url, "redlock://127.0.0.1:30001,127.0.0.1:30002,h3:6379");
    }

    #[test]
    fn one_set_of_credentials_for_all() {
        let url = redlock_url(&["redis://:pw@a:1", "redis://:pw@b:2"]).unwrap();
        assert_eq!(url, "redlock://:pw@a:1,b:2");
        let mixed = redlock_url(&["redis://:secret1@a:1", "redis://:secret2@b:2"]).unwrap_err();
        assert_eq!(mixed.kind(), ErrorKind::InvalidArgument);
        assert!(!mixed.to_string().contains("secret"), "{mixed}");
        assert!(redlock_url(&["redis://:pw@a:1", "b:2"]).is_err());
    }

    #[test]
    fn refuses_what_the_backend_cannot_use() {
        let empty: [&str; 0] = [];
        for bad in [
            &["a"][..],
            &["rediss://a:1"],
            &["etcd://a:1"],
            &["redis://a:1/2"],
            &["redis://a:1?db=2"],
            &["a:1,b:2"],
            &[":1"],
            &["a:port"],
            &empty,
        ] {
            let err = redlock_url(bad).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{bad:?}");
        }
    }
}
