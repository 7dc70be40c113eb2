//! What an etcd URL names: the members to talk to, credentials, TLS and the session TTL.
//! Parsed here so the rest of the backend never sees a URL.
//!
//! ```text
//! etcd://[user:password@]host[:port][,host[:port]...][?ttl=30s&timeout=5s]
//! etcds://[user:password@]host[:port][,...][?ca=/path/ca.pem&cert=/path/c.pem&key=/path/k.pem]
//! ```
//! `etcd+tls://` is a synonym of `etcds://`.

use std::time::Duration;

use etcd_client::{Certificate, ConnectOptions, Identity, TlsOptions};

use crate::error::{Error, Result};
use crate::url::{percent_decode, ConnectUrl};

pub(super) const DEFAULT_PORT: u16 = 2379;

/// The session lease's TTL when the URL sets none: etcd's concurrency.Session default is 60 s;
/// 30 s matches polylock's watchdog lease, so a crashed client frees its locks as soon.
pub(super) const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(30);

/// Written by hand: only the redacted URL is shown, never the password.
impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint").field("members", &self.members).field("url", &self.redacted).finish()
    }
}

#[derive(Clone)]
pub(super) struct Endpoint {
    /// `http://host:port` or `https://host:port`, one per member.
    pub members: Vec<String>,
    pub user: Option<(String, String)>,
    pub tls: Option<TlsFiles>,
    /// The session lease's TTL, in whole seconds as etcd grants them.
    pub session_ttl_secs: i64,
    /// Limit for connecting and for each unary call, so a dead member never hangs a caller.
    pub timeout: Duration,
    /// The URL with its password hidden, for messages.
    pub redacted: String,
}

#[derive(Debug, Clone, Default)]
pub(super) struct TlsFiles {
    pub ca: Option<String>,
    pub cert: Option<String>,
    pub key: Option<String>,
}

impl Endpoint {
    pub fn parse(url: &mut ConnectUrl) -> Result<Self> {
        let redacted = url.redacted().to_string();
        let tls = matches!(url.scheme(), "etcds" | "etcd+tls");
        let bad = |why: String| Error::invalid_argument(format!("{why} in {redacted}"));
        let ttl = url.take_duration("ttl")?.unwrap_or(DEFAULT_SESSION_TTL);
        if ttl < Duration::from_secs(1) {
            return Err(bad(format!(
                "URL option 'ttl' must be at least 1s (etcd leases count whole seconds), got {}ms",
                ttl.as_millis()
            )));
        }
        let timeout = url.take_duration("timeout")?.unwrap_or(Duration::from_secs(5));
        if timeout.is_zero() {
            return Err(bad("URL option 'timeout' must be positive".into()));
        }
        let files = TlsFiles { ca: url.take_option("ca"), cert: url.take_option("cert"), key: url.take_option("key") };
        let has_files = files.ca.is_some() || files.cert.is_some() || files.key.is_some();
        if has_files && !tls {
            return Err(bad("options 'ca', 'cert' and 'key' need an etcds:// URL (TLS)".into()));
        }
        if files.cert.is_some() != files.key.is_some() {
            return Err(bad("options 'cert' and 'key' go together (a client certificate and its key)".into()));
        }

        let target = url.target().trim_end_matches('/');
        if target.contains('/') {
            return Err(bad("an etcd URL has no path; use ?namespace= to separate applications".into()));
        }
        let (userinfo, hosts) = match target.rsplit_once('@') {
            Some((userinfo, hosts)) => (Some(userinfo), hosts),
            None => (None, target),
        };
        let user = match userinfo {
            None => None,
            Some(userinfo) => {
                let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                let user = percent_decode(user);
                if user.is_empty() {
                    return Err(bad("etcd authentication needs a user name before ':'".into()));
                }
                Some((user, percent_decode(password)))
            }
        };
        let scheme = if tls { "https" } else { "http" };
        let mut members = Vec::new();
        for host in hosts.split(',').map(str::trim) {
            if host.is_empty() {
                return Err(bad("an empty host in the member list".into()));
            }
            let (name, port) = split_host_port(host).map_err(&bad)?;
            members.push(format!("{scheme}://{name}:{port}"));
        }
        let session_ttl_secs = i64::try_from(ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0))
            .map_err(|_| bad("URL option 'ttl' is too long".into()))?;
        Ok(Endpoint { members, user, tls: tls.then_some(files), session_ttl_secs, timeout, redacted })
    }

    /// The etcd-client options: credentials, TLS, timeouts and HTTP/2 keep-alive (so a member
    /// that dies without closing its connections is noticed).
    pub fn connect_options(&self) -> Result<ConnectOptions> {
        self.warn_if_password_exposed();
        let mut options = ConnectOptions::new()
            .with_connect_timeout(self.timeout)
            .with_keep_alive(Duration::from_secs(2), self.timeout)
            // A watch on a member cut off from the leader is cancelled instead of going quiet.
            .with_require_leader(true)
            .with_auto_token_refresh(true);
        if let Some((user, password)) = &self.user {
            options = options.with_user(user.clone(), password.clone());
        }
        if let Some(files) = &self.tls {
            let mut tls = TlsOptions::new();
            if let Some(ca) = &files.ca {
                tls = tls.ca_certificate(Certificate::from_pem(read_file("ca", ca)?));
            } else {
                tls = tls.with_webpki_roots();
            }
            if let (Some(cert), Some(key)) = (&files.cert, &files.key) {
                tls = tls.identity(Identity::from_pem(read_file("cert", cert)?, read_file("key", key)?));
            }
            options = options.with_tls(tls);
        }
        Ok(options)
    }
}

impl Endpoint {
    /// Log the one warning of `url::warn_unverified_password` if the password leaves this
    /// machine over plain http (etcd://; etcds:// always checks the certificate).
    pub fn warn_if_password_exposed(&self) -> bool {
        // "http://host:port" -> "host" ("[v6]" keeps its brackets).
        let hosts = self.members.iter().map(|member| {
            let authority = member.split_once("://").map_or(member.as_str(), |(_, rest)| rest);
            authority.rsplit_once(':').map_or(authority, |(host, _)| host)
        });
        crate::url::warn_unverified_password(
            "etcd",
            &self.redacted,
            hosts,
            self.user.is_some(),
            self.tls.is_some(),
            "use etcds:// (TLS, the certificate checked against the web's roots or ?ca=/path/ca.pem)",
        )
    }
}

fn read_file(option: &str, path: &str) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        Error::invalid_argument(format!("cannot read the file of URL option '{option}' ({path})")).with_source(e)
    })
}

fn split_host_port(host: &str) -> std::result::Result<(String, u16), String> {
    // [v6]:port, [v6], host:port, host
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let (name, after) = rest.split_once(']').ok_or_else(|| format!("unclosed '[' in host '{host}'"))?;
        (format!("[{name}]"), after.strip_prefix(':'))
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) => (name.to_string(), Some(port)),
            None => (host.to_string(), None),
        }
    };
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => p.parse().map_err(|_| format!("'{p}' is not a port number"))?,
    };
    Ok((name, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Endpoint> {
        let mut url = ConnectUrl::parse(text).unwrap();
        let endpoint = Endpoint::parse(&mut url)?;
        url.ensure_no_options_left()?;
        Ok(endpoint)
    }

    #[test]
    fn members_credentials_and_options() {
        let e = parse("etcd://app:p%40ss@h1:2379,h2,[::1]:3000?ttl=10s&timeout=2s").unwrap();
        assert_eq!(e.members, ["http://h1:2379", "http://h2:2379", "http://[::1]:3000"]);
        assert_eq!(e.user, Some(("app".to_string(), "p@ss".to_string())));
        assert_eq!(e.session_ttl_secs, 10);
        assert_eq!(e.timeout, Duration::from_secs(2));
        assert!(e.tls.is_none());
        assert_eq!(parse("etcd://h").unwrap().session_ttl_secs, 30);
        assert_eq!(parse("etcd://h?ttl=1500ms").unwrap().session_ttl_secs, 2, "rounded up to whole seconds");
    }

    #[test]
    fn a_password_over_plain_http_to_another_host_is_warned_of() {
        assert!(parse("etcd://u:p@127.0.0.1:2379,etcd-2.internal:2379").unwrap().warn_if_password_exposed());
        assert!(parse("etcd://u:p@[2001:db8::2]:2379").unwrap().warn_if_password_exposed());
        assert!(!parse("etcd://u:p@127.0.0.1:2379,[::1]:2380,localhost").unwrap().warn_if_password_exposed());
        assert!(!parse("etcds://u:p@etcd-2.internal:2379").unwrap().warn_if_password_exposed());
        assert!(!parse("etcd://etcd-2.internal:2379").unwrap().warn_if_password_exposed());
    }

    #[test]
    fn tls_schemes() {
        let e = parse("etcds://h:2379?ca=/tmp/ca.pem").unwrap();
        assert_eq!(e.members, ["https://h:2379"]);
        assert_eq!(e.tls.unwrap().ca.as_deref(), Some("/tmp/ca.pem"));
        assert!(parse("etcd+tls://h").unwrap().tls.is_some());
    }

    #[test]
    fn bad_urls_say_why() {
        for (url, needle) in [
            ("etcd://h?ttl=500ms", "at least 1s"),
            ("etcd://h?ca=/x", "need an etcds://"),
            ("etcds://h?cert=/x", "go together"),
            ("etcd://h:notaport", "not a port"),
            ("etcd://h1,,h2", "empty host"),
            ("etcd://h/path", "no path"),
            ("etcd://:secret@h", "user name"),
        ] {
            let err = parse(url).unwrap_err();
            assert!(err.to_string().contains(needle), "{url}: {err}");
            assert!(!err.to_string().contains("secret"), "{url}: {err}");
        }
    }
}
