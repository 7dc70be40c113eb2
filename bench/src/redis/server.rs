//! The redis-server under test: its URL, and the bench's own errands on it through the
//! `redis` crate (seeing whether it answers, loading the ceiling's script, deleting the keys
//! a run left behind). No measured traffic goes through here.

use std::time::Duration;

use ::redis::{
    Client, Commands, Connection, ConnectionAddr, ConnectionInfo, IntoConnectionInfo, RedisResult, ScanOptions,
};

use crate::Result;

/// Where the server is, from a `redis://[[user]:password@]host[:port][/db]` URL.
#[derive(Debug, Clone)]
pub struct RedisTarget {
    url: String,
    info: ConnectionInfo,
    host: String,
    port: u16,
}

impl RedisTarget {
    pub fn parse(url: &str) -> std::result::Result<Self, String> {
        let shown = polylock::url::redact(url);
        if !url.starts_with("redis://") {
            return Err(format!("'{shown}' is not a redis:// URL (the redis section runs on plain redis://)"));
        }
        // redis-benchmark and the peers get the server from host, port, db and credentials
        // only, so every side would not see the same options.
        if url.contains('?') {
            return Err(format!("'{shown}': the redis section takes no URL options"));
        }
        let info = url.into_connection_info().map_err(|err| format!("'{shown}': {err}"))?;
        let (host, port) = match info.addr() {
            ConnectionAddr::Tcp(host, port) => (host.clone(), *port),
            other => return Err(format!("'{shown}': expected a TCP address, got {other}")),
        };
        Ok(RedisTarget { url: url.to_string(), info, host, port })
    }

    /// The URL as given: for the clients under test, never for printing.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The URL with any password hidden.
    pub fn shown(&self) -> String {
        polylock::url::redact(&self.url)
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn db(&self) -> i64 {
        self.info.redis_settings().db()
    }

    pub fn username(&self) -> Option<&str> {
        self.info.redis_settings().username()
    }

    pub fn password(&self) -> Option<&str> {
        self.info.redis_settings().password()
    }

    /// Connect, authenticate and select the database, then PING; every step gives up after
    /// `timeout`.
    pub fn connect(&self, timeout: Duration) -> Result<Connection> {
        let mut connection = Client::open(self.info.clone())?.get_connection_with_timeout(timeout)?;
        connection.set_read_timeout(Some(timeout))?;
        connection.set_write_timeout(Some(timeout))?;
        let _: String = connection.ping()?;
        Ok(connection)
    }
}

/// Delete every key matching `pattern` (SCAN, then UNLINK).
pub fn delete_matching(connection: &mut Connection, pattern: &str) -> Result<()> {
    let keys: Vec<String> = connection
        .scan_options(ScanOptions::default().with_pattern(pattern).with_count(1000))?
        .collect::<RedisResult<_>>()?;
    for batch in keys.chunks(1000) {
        let _: usize = connection.unlink(batch)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse() {
        let plain = RedisTarget::parse("redis://127.0.0.1:16379").unwrap();
        assert_eq!((plain.host(), plain.port(), plain.db(), plain.password()), ("127.0.0.1", 16379, 0, None));
        let full = RedisTarget::parse("redis://me:s3cret@[::1]:7000/2").unwrap();
        assert_eq!((full.host(), full.port(), full.db()), ("::1", 7000, 2));
        assert_eq!((full.username(), full.password()), (Some("me"), Some("s3cret")));
        assert!(!full.shown().contains("s3cret"));
        assert_eq!(full.url(), "redis://me:s3cret@[::1]:7000/2");
        let password_only = RedisTarget::parse("redis://:pw@localhost").unwrap();
        assert_eq!(
            (password_only.username(), password_only.password(), password_only.port()),
            (None, Some("pw"), 6379)
        );
        assert!(RedisTarget::parse("rediss://localhost").is_err());
        for bad in ["redis://u:s3cret@h:x", "redis://u:s3cret@h:1/x", "redis://u:s3cret@h:1?x=1"] {
            let err = RedisTarget::parse(bad).unwrap_err();
            assert!(err.contains("redis://u:***@h"), "{err}");
            assert!(!err.contains("s3cret"), "{err}");
        }
    }
}
