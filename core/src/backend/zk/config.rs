//! What a ZooKeeper URL names, parsed once so the rest of the backend never sees a URL.
//!
//! ```text
//! zk://[user:password@]host[:port][,host[:port]...][/chroot][?session_timeout=30s&connect_timeout=10s]
//! ```
//!
//! `user:password` is a `digest` identity (ZooKeeper's `addauth digest user:password`); with
//! one, the nodes polylock creates carry the CREATOR_ALL ACL, so only that identity can touch
//! them. The chroot is created (as persistent nodes) if it does not exist yet, as Curator does
//! for its namespace.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::url::{percent_decode, ConnectUrl};

pub(super) const DEFAULT_PORT: u16 = 2181;

/// Asked of the server, which clamps it to its [2, 20] tick range (defaults: 4 s to 40 s).
/// Curator's default is 60 s; 30 s matches polylock's watchdog lease.
pub(super) const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(30);

/// How long connecting may take before the URL is reported unreachable.
pub(super) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Written by hand: only the redacted URL is shown, never the digest's password.
impl std::fmt::Debug for ZkConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkConfig").field("hosts", &self.hosts).field("url", &self.redacted).finish()
    }
}

#[derive(Clone)]
pub(super) struct ZkConfig {
    /// `host:port,host:port` for the client library.
    pub hosts: String,
    /// `/a/b`, or empty for none.
    pub chroot: String,
    /// `user:password` for the digest scheme.
    pub digest: Option<String>,
    pub session_timeout: Duration,
    pub connect_timeout: Duration,
    /// The URL with its password hidden, for messages.
    pub redacted: String,
}

impl ZkConfig {
    pub fn parse(url: &mut ConnectUrl) -> Result<Self> {
        let redacted = url.redacted().to_string();
        let bad = |why: &str| Error::invalid_argument(format!("{why} in {redacted}"));
        let session_timeout = url.take_duration("session_timeout")?.unwrap_or(DEFAULT_SESSION_TIMEOUT);
        let connect_timeout = url.take_duration("connect_timeout")?.unwrap_or(DEFAULT_CONNECT_TIMEOUT);
        if session_timeout < Duration::from_millis(100) || connect_timeout.is_zero() {
            return Err(bad("'session_timeout' must be at least 100ms and 'connect_timeout' positive"));
        }

        // The user info runs to the last '@', as `url::redact` hides it: a '/' in a password
        // must not start the chroot, which messages quote.
        let target = url.target();
        let (userinfo, rest) = match target.rsplit_once('@') {
            Some((userinfo, rest)) => (Some(userinfo), rest),
            None => (None, target),
        };
        let (hosts, chroot) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let chroot = chroot.trim_end_matches('/');
        if !chroot.is_empty() {
            super::path::check_path(chroot).map_err(|why| bad(&format!("the chroot '{chroot}' {why}")))?;
        }
        let (digest, hosts) = match userinfo {
            Some(userinfo) => {
                let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                let user = percent_decode(user);
                if user.is_empty() {
                    return Err(bad("a ZooKeeper digest identity needs a user name (zk://user:password@host)"));
                }
                (Some(format!("{user}:{}", percent_decode(password))), hosts)
            }
            None => (None, hosts),
        };
        if hosts.is_empty() {
            return Err(bad("zk:// needs at least one host, such as zk://127.0.0.1:2181"));
        }
        let mut host_list = Vec::new();
        for host in hosts.split(',') {
            let (name, port) = match host.rsplit_once(':') {
                Some((name, port)) => {
                    let port: u16 = port.parse().map_err(|_| bad(&format!("'{port}' is not a port number")))?;
                    (name, port)
                }
                None => (host, DEFAULT_PORT),
            };
            if name.is_empty() {
                return Err(bad("an empty host name"));
            }
            host_list.push(format!("{name}:{port}"));
        }
        let config = ZkConfig {
            hosts: host_list.join(","),
            chroot: chroot.to_string(),
            digest,
            session_timeout,
            connect_timeout,
            redacted,
        };
        // Parsed once per client: the one warning of a connect.
        config.warn_if_password_exposed();
        Ok(config)
    }

    /// Log the one warning of `url::warn_unverified_password` if the digest's password
    /// (which `addauth digest` sends as it is) leaves this machine without verified TLS.
    pub fn warn_if_password_exposed(&self) -> bool {
        let hosts = self.hosts.split(',').map(|host| host.rsplit_once(':').map_or(host, |(name, _)| name));
        crate::url::warn_unverified_password(
            "zk",
            &self.redacted,
            hosts,
            self.digest.is_some(),
            false,
            "ZooKeeper's digest password travels as it is: keep the servers on a private network",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(url: &str) -> Result<ZkConfig> {
        let mut url = ConnectUrl::parse(url)?;
        let config = ZkConfig::parse(&mut url)?;
        url.ensure_no_options_left()?;
        Ok(config)
    }

    #[test]
    fn hosts_chroot_credentials_and_options() {
        let c = parse("zk://app:p%40ss@h1:2182,h2/apps/locks?session_timeout=5s").unwrap();
        assert_eq!(c.hosts, "h1:2182,h2:2181");
        assert_eq!(c.chroot, "/apps/locks");
        assert_eq!(c.digest.as_deref(), Some("app:p@ss"));
        assert_eq!(c.session_timeout, Duration::from_secs(5));
        assert!(!c.redacted.contains("p%40ss"));
        let c = parse("zk://127.0.0.1:12181").unwrap();
        assert_eq!((c.hosts.as_str(), c.chroot.as_str(), c.digest), ("127.0.0.1:12181", "", None));
        assert_eq!(c.session_timeout, DEFAULT_SESSION_TIMEOUT);
        // A raw '/' in a password (base64) stays in the password, as redaction hides it.
        let c = parse("zk://app:ab/cd//1234@h1:2182/apps").unwrap();
        assert_eq!((c.digest.as_deref(), c.chroot.as_str()), (Some("app:ab/cd//1234"), "/apps"));
        assert!(!c.redacted.contains("cd//1234"), "{}", c.redacted);
    }

    #[test]
    fn a_digest_password_to_another_host_is_warned_of() {
        assert!(parse("zk://app:pw@zk-1.internal:2181,127.0.0.1").unwrap().warn_if_password_exposed());
        assert!(!parse("zk://app:pw@127.0.0.1:2181,localhost").unwrap().warn_if_password_exposed());
        assert!(!parse("zk://zk-1.internal:2181").unwrap().warn_if_password_exposed());
    }

    #[test]
    fn bad_urls_are_invalid_arguments() {
        for url in ["zk://", "zk://h:notaport", "zk://h/a//b", "zk://:pw@h", "zk://h?session_timeout=0s", "zk://,h"] {
            let err = parse(url).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument, "{url}: {err}");
        }
        let err = parse("zk://u:hunter2@h:notaport").unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }
}
