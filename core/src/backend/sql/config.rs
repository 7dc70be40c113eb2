//! The options every SQL backend reads from its URL, and the first connection that checks them.

use std::time::Duration;

use super::errors::map_error;
use crate::error::{Error, Result};
use crate::url::ConnectUrl;

/// The options every SQL backend reads from its URL.
pub(crate) struct SqlConfig {
    /// The URL sqlx connects with: scheme, credentials, host, database and sqlx's options.
    pub sqlx_url: String,
    /// The same, redacted, for messages.
    pub shown_url: String,
    pub pool_size: u32,
    pub max_sessions: u32,
    pub session_check: Duration,
    pub connect_timeout: Duration,
    pub table: String,
}

impl SqlConfig {
    pub fn from_url(url: &mut ConnectUrl, sqlx_scheme: &str, sqlx_options: &[&str]) -> Result<SqlConfig> {
        let count = |url: &mut ConnectUrl, key: &str, default: u32| -> Result<u32> {
            match url.take_option(key) {
                None => Ok(default),
                Some(text) => text.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    Error::invalid_argument(format!("URL option '{key}' must be a positive whole number, got '{text}'"))
                }),
            }
        };
        let pool_size = count(url, "pool_size", 4)?;
        let max_sessions = count(url, "max_sessions", 64)?;
        let session_check = url.take_duration("session_check")?.unwrap_or(Duration::from_secs(1));
        let connect_timeout = url.take_duration("connect_timeout")?.unwrap_or(Duration::from_secs(10));
        for (key, value) in [("session_check", session_check), ("connect_timeout", connect_timeout)] {
            if value.is_zero() {
                return Err(Error::invalid_argument(format!("URL option '{key}' must be longer than zero")));
            }
        }
        let table = url.take_option("table").unwrap_or_else(|| "shedlock".to_string());
        let valid_table = !table.is_empty()
            && table.len() <= 63
            && table.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid_table {
            return Err(Error::invalid_argument(format!(
                "URL option 'table' must be a plain SQL identifier (letters, digits, _), got '{table}'"
            )));
        }
        let mut passed = form_urlencoded::Serializer::new(String::new());
        let mut any = false;
        for key in sqlx_options {
            if let Some(value) = url.take_option(key) {
                passed.append_pair(key, &value);
                any = true;
            }
        }
        let target = url.target();
        if target.is_empty() || target.starts_with('/') {
            return Err(Error::invalid_argument(format!(
                "{} needs a server, such as {}://user:password@host:port/database",
                url.redacted(),
                url.scheme()
            )));
        }
        let query = if any { format!("?{}", passed.finish()) } else { String::new() };
        Ok(SqlConfig {
            sqlx_url: format!("{sqlx_scheme}://{}{query}", crate::url::escape_userinfo(target)),
            shown_url: crate::url::redact(&format!("{}://{target}", url.scheme())),
            pool_size,
            max_sessions,
            session_check,
            connect_timeout,
            table,
        })
    }
}

/// Open and close one connection, so a bad host, password or database is reported at
/// connect time with the server's own reason (a pool would only time out).
pub(crate) async fn probe<O>(options: &O, config: &SqlConfig) -> Result<()>
where
    O: sqlx::ConnectOptions,
    O::Connection: Sized,
{
    use sqlx::Connection;
    match tokio::time::timeout(config.connect_timeout, options.connect()).await {
        Ok(Ok(conn)) => {
            let _ = conn.close().await;
            Ok(())
        }
        Ok(Err(err)) => Err(map_error(&config.shown_url, err)),
        Err(_) => Err(Error::connection(format!(
            "cannot reach the database at {} within {}ms (connect_timeout)",
            config.shown_url,
            config.connect_timeout.as_millis()
        ))),
    }
}
