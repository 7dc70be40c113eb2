//! What a Redis URL names: one server, a cluster, or a master found through Sentinel, with
//! credentials and TLS settings. Parsed here so the rest of the backend never sees a URL.
//!
//! ```text
//! redis://[user:password@]host[:port][/db]
//! rediss://[user:password@]host[:port][/db][?ca=/path/ca.pem&cert=/path/client.pem&key=/path/client.key]
//! redis+cluster://[user:password@]host:port,host:port
//! redis+sentinel://[user:password@]host:port,host:port/master-name[/db][?sentinel_password=...]
//! ```
//!
//! `rediss+cluster://` and `rediss+sentinel://` are the same over TLS: every connection (to
//! each cluster node; to the sentinels and to the master they name) checks the server's
//! certificate against `ca` (default: the system's roots) and its name, and presents the
//! client certificate `cert`/`key` when they are given.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::url::{percent_decode, ConnectUrl, TlsFiles};

pub(super) const DEFAULT_PORT: u16 = 6379;
pub(super) const DEFAULT_SENTINEL_PORT: u16 = 26379;

#[derive(Clone, PartialEq, Eq)]
pub(super) enum Topology {
    Single { host: String, port: u16 },
    Cluster { nodes: Vec<(String, u16)> },
    Sentinel { sentinels: Vec<(String, u16)>, master: String, sentinel_password: Option<String> },
}

/// Written by hand: the Sentinel password never shows.
impl std::fmt::Debug for Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Topology::Single { host, port } => {
                f.debug_struct("Single").field("host", host).field("port", port).finish()
            }
            Topology::Cluster { nodes } => f.debug_struct("Cluster").field("nodes", nodes).finish(),
            Topology::Sentinel { sentinels, master, sentinel_password } => f
                .debug_struct("Sentinel")
                .field("sentinels", sentinels)
                .field("master", master)
                .field("sentinel_password", &sentinel_password.as_ref().map(|_| "***"))
                .finish(),
        }
    }
}

/// Written by hand: only the redacted URL is shown, never the password.
impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint").field("topology", &self.topology).field("url", &self.redacted).finish()
    }
}

#[derive(Clone)]
pub(super) struct Endpoint {
    pub topology: Topology,
    /// `Some` over TLS (`rediss`, `rediss+cluster`, `rediss+sentinel`): the CA and client
    /// certificate files, if the URL names them.
    pub tls: Option<TlsFiles>,
    pub username: Option<String>,
    pub password: Option<String>,
    pub db: i64,
    /// Limit for connecting and for each command, so a dead server never hangs a caller.
    pub timeout: Duration,
    /// The URL with its password hidden, for messages.
    pub redacted: String,
}

impl Endpoint {
    pub fn parse(url: &mut ConnectUrl) -> Result<Self> {
        let tls = url.scheme().starts_with("rediss");
        // The topology, whether over TLS or not.
        let scheme = url.scheme().replacen("rediss", "redis", 1);
        let redacted = url.redacted().to_string();
        let tls = TlsFiles::take(url, tls, &scheme.replacen("redis", "rediss", 1))?;
        let sentinel_password = url.take_option("sentinel_password");
        let timeout = url.take_duration("timeout")?.unwrap_or(Duration::from_secs(5));
        if timeout.is_zero() {
            return Err(Error::invalid_argument("URL option 'timeout' must be positive"));
        }
        let bad = |why: &str| Error::invalid_argument(format!("{why} in {redacted}"));

        let target = url.target().to_string();
        // The user info runs to the last '@', as redaction reads it (url::redact): a password
        // may hold a raw '/' or '@', and must never be taken for the path or the host.
        let (userinfo, after_userinfo) = match target.rsplit_once('@') {
            Some((userinfo, rest)) => (Some(userinfo), rest),
            None => (None, target.as_str()),
        };
        let (hosts, path) = match after_userinfo.find('/') {
            Some(i) => (&after_userinfo[..i], &after_userinfo[i + 1..]),
            None => (after_userinfo, ""),
        };
        let (username, password) = match userinfo {
            None => (None, None),
            Some(info) => {
                let (user, pass) = match info.split_once(':') {
                    Some((user, pass)) => (user, Some(pass)),
                    None => (info, None),
                };
                let user = Some(percent_decode(user)).filter(|u| !u.is_empty());
                (user, pass.map(percent_decode).filter(|p| !p.is_empty()))
            }
        };
        let default_port = if scheme == "redis+sentinel" { DEFAULT_SENTINEL_PORT } else { DEFAULT_PORT };
        let hosts = parse_hosts(hosts, default_port).map_err(|why| bad(&why))?;
        let mut segments = path.split('/').filter(|s| !s.is_empty());
        if scheme != "redis+sentinel" && sentinel_password.is_some() {
            return Err(bad("option 'sentinel_password' belongs to redis+sentinel:// URLs"));
        }
        let topology = match scheme.as_str() {
            "redis" => {
                let [(host, port)] = <[_; 1]>::try_from(hosts)
                    .map_err(|_| bad("a redis:// URL names one server; use redis+cluster:// for several"))?;
                Topology::Single { host, port }
            }
            "redis+cluster" => Topology::Cluster { nodes: hosts },
            "redis+sentinel" => {
                let master = segments
                    .next()
                    .ok_or_else(|| bad("a redis+sentinel:// URL needs the master name as its path (/mymaster)"))?;
                Topology::Sentinel { sentinels: hosts, master: percent_decode(master), sentinel_password }
            }
            other => return Err(Error::invalid_argument(format!("'{other}' is not a Redis scheme"))),
        };
        let db = match segments.next() {
            None => 0,
            Some(db) => db.parse().map_err(|_| bad(&format!("'{db}' is not a database number")))?,
        };
        if segments.next().is_some() {
            return Err(bad("unexpected path segments"));
        }
        if db != 0 && matches!(topology, Topology::Cluster { .. }) {
            return Err(bad("Redis Cluster has only database 0"));
        }
        Ok(Endpoint { topology, tls, username, password, db, timeout, redacted })
    }
}

impl Endpoint {
    /// The user name and password, as decoded.
    pub fn credentials(&self) -> super::link::Credentials<'_> {
        super::link::Credentials { username: self.username.as_deref(), password: self.password.as_deref() }
    }

    /// The hosts the password goes to: the server, the cluster's seeds, or the sentinels
    /// (the master they name is found at connect time).
    fn hosts(&self) -> Vec<&str> {
        match &self.topology {
            Topology::Single { host, .. } => vec![host.as_str()],
            Topology::Cluster { nodes: hosts } | Topology::Sentinel { sentinels: hosts, .. } => {
                hosts.iter().map(|(host, _)| host.as_str()).collect()
            }
        }
    }

    /// Log the one warning of `url::warn_unverified_password` if a password leaves this
    /// machine in plain text (redis://; rediss:// always checks the certificate).
    pub fn warn_if_password_exposed(&self) -> bool {
        let sentinel_password = matches!(&self.topology, Topology::Sentinel { sentinel_password: Some(_), .. });
        crate::url::warn_unverified_password(
            "redis",
            &self.redacted,
            self.hosts(),
            self.password.is_some() || sentinel_password,
            self.tls.is_some(),
            "use rediss://, rediss+cluster:// or rediss+sentinel:// (TLS, the certificate checked against the \
             system's roots or ?ca=/path/ca.pem)",
        )
    }
}

fn parse_hosts(hosts: &str, default_port: u16) -> std::result::Result<Vec<(String, u16)>, String> {
    if hosts.is_empty() {
        return Err("no host".into());
    }
    hosts
        .split(',')
        .map(|host| {
            let host = host.trim();
            // [v6]:port, host:port, or host
            let (name, port) = if let Some(rest) = host.strip_prefix('[') {
                let (name, after) = rest.split_once(']').ok_or(format!("unclosed '[' in host '{host}'"))?;
                (name, after.strip_prefix(':'))
            } else {
                match host.rsplit_once(':') {
                    Some((name, port)) => (name, Some(port)),
                    None => (host, None),
                }
            };
            if name.is_empty() {
                return Err(format!("empty host in '{hosts}'"));
            }
            let port = match port {
                None => default_port,
                Some(port) => port.parse().map_err(|_| format!("'{port}' is not a port number"))?,
            };
            Ok((name.to_string(), port))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(url: &str) -> Result<Endpoint> {
        let mut url = ConnectUrl::parse(url)?;
        let endpoint = Endpoint::parse(&mut url)?;
        url.ensure_no_options_left()?;
        Ok(endpoint)
    }

    #[test]
    fn a_raw_slash_or_at_sign_in_the_password_stays_in_the_password() {
        let e = parse("redis://app:pa/ss@word@cache.local:6380/3").unwrap();
        assert_eq!(e.topology, Topology::Single { host: "cache.local".into(), port: 6380 });
        assert_eq!((e.password.as_deref(), e.db), (Some("pa/ss@word"), 3));
        let e = parse("redis+sentinel://:s/cret@127.0.0.1:26379/mymaster/1").unwrap();
        assert_eq!(e.password.as_deref(), Some("s/cret"));
        assert!(matches!(e.topology, Topology::Sentinel { ref master, .. } if master == "mymaster"));
        assert_eq!(e.db, 1);
    }

    #[test]
    fn a_question_mark_in_the_password_stays_in_the_password_and_out_of_debug() {
        let e = parse("redis://u:pa?ss@127.0.0.1:16379").unwrap();
        assert_eq!(e.topology, Topology::Single { host: "127.0.0.1".into(), port: 16379 });
        assert_eq!(e.password.as_deref(), Some("pa?ss"));
        let e = parse("redis+sentinel://:pa?ss@127.0.0.1:26379/m?sentinel_password=hunter22").unwrap();
        let shown = format!("{e:?}");
        assert!(!shown.contains("pa?ss") && !shown.contains("hunter22"), "{shown}");
    }

    #[test]
    fn single_server_with_credentials_and_db() {
        let e = parse("redis://app:p%40ss@cache.local:6380/2").unwrap();
        assert_eq!(e.topology, Topology::Single { host: "cache.local".into(), port: 6380 });
        assert_eq!((e.username.as_deref(), e.password.as_deref(), e.db), (Some("app"), Some("p@ss"), 2));
        assert!(e.tls.is_none());
        assert!(!e.redacted.contains("p%40ss"));
        let e = parse("redis://:secret@localhost").unwrap();
        assert_eq!((e.username, e.password.as_deref()), (None, Some("secret")));
        assert_eq!(e.topology, Topology::Single { host: "localhost".into(), port: 6379 });
    }

    #[test]
    fn tls_cluster_and_sentinel() {
        let e = parse("rediss://h:1?ca=/etc/ca.pem&timeout=2s").unwrap();
        assert_eq!(e.tls.unwrap().ca.as_deref(), Some("/etc/ca.pem"));
        assert_eq!(e.timeout, Duration::from_secs(2));
        let e = parse("redis+cluster://a:7001,b:7002,[::1]:7003").unwrap();
        assert_eq!(
            e.topology,
            Topology::Cluster { nodes: vec![("a".into(), 7001), ("b".into(), 7002), ("::1".into(), 7003)] }
        );
        let e = parse("redis+sentinel://s1,s2:26380/mymaster/3?sentinel_password=x").unwrap();
        assert_eq!(
            e.topology,
            Topology::Sentinel {
                sentinels: vec![("s1".into(), 26379), ("s2".into(), 26380)],
                master: "mymaster".into(),
                sentinel_password: Some("x".into())
            }
        );
        assert_eq!(e.db, 3);
    }

    #[test]
    fn a_password_in_plain_text_to_another_host_is_warned_of() {
        assert!(parse("redis://:pw@cache.internal:6379").unwrap().warn_if_password_exposed());
        assert!(parse("redis+sentinel://s1.internal/m?sentinel_password=x").unwrap().warn_if_password_exposed());
        assert!(parse("redis+cluster://:pw@127.0.0.1:1,10.1.2.3:2").unwrap().warn_if_password_exposed());
        assert!(!parse("rediss://:pw@cache.internal:6379").unwrap().warn_if_password_exposed());
        assert!(!parse("redis://:pw@127.0.0.1:6379").unwrap().warn_if_password_exposed());
        assert!(!parse("redis://cache.internal:6379").unwrap().warn_if_password_exposed());
    }

    #[test]
    fn tls_cluster_and_sentinel_schemes() {
        let e = parse("rediss+cluster://:pw@a:7001,b:7002?ca=/ca.pem").unwrap();
        assert!(matches!(e.topology, Topology::Cluster { ref nodes } if nodes.len() == 2));
        assert_eq!(e.tls.unwrap().ca.as_deref(), Some("/ca.pem"));
        let e = parse("rediss+sentinel://s1:26390/m/2?ca=/ca.pem&cert=/c.pem&key=/k.pem&sentinel_password=x").unwrap();
        assert!(matches!(e.topology, Topology::Sentinel { ref sentinels, .. } if sentinels[0] == ("s1".into(), 26390)));
        let files = e.tls.unwrap();
        assert_eq!((files.cert.as_deref(), files.key.as_deref(), e.db), (Some("/c.pem"), Some("/k.pem"), 2));
        assert_eq!(parse("rediss+sentinel://s1/m").unwrap().topology, parse("redis+sentinel://s1/m").unwrap().topology);
        assert!(!parse("rediss+cluster://:pw@cache.internal:1").unwrap().warn_if_password_exposed());
    }

    #[test]
    fn mistakes_are_named() {
        for (url, needle) in [
            ("redis://a:1,b:2", "names one server"),
            ("redis+sentinel://s1:26379", "master name"),
            ("redis://h:port", "not a port number"),
            ("redis://h/x", "not a database number"),
            ("redis://h?ca=/x", "need a rediss:// URL"),
            ("redis+cluster://h:1?ca=/x", "need a rediss+cluster:// URL"),
            ("rediss://h?cert=/x", "go together"),
            ("redis+cluster://a:1/2", "only database 0"),
            ("redis://", "no host"),
        ] {
            let err = parse(url).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument, "{url}");
            assert!(err.to_string().contains(needle), "{url}: {err}");
        }
    }
}
