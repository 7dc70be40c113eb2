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
        // What decides whether the password is sent over verified TLS (`password_exposed`).
        let (mut tls_mode, mut socket) = (None, false);
        for key in sqlx_options {
            if let Some(value) = url.take_option(key) {
                match *key {
                    "sslmode" | "ssl-mode" => tls_mode = Some(value.clone()),
                    "socket" => socket = true,
                    _ => {}
                }
                passed.append_pair(key, &value);
                any = true;
            }
        }
        // Every option is taken by now: an unknown one is refused before any connection.
        url.ensure_no_options_left()?;
        let target = url.target();
        if target.is_empty() || target.starts_with('/') {
            return Err(Error::invalid_argument(format!(
                "{} needs a server, such as {}://user:password@host:port/database",
                url.redacted(),
                url.scheme()
            )));
        }
        let query = if any { format!("?{}", passed.finish()) } else { String::new() };
        let shown_url = crate::url::redact(&format!("{}://{target}", url.scheme()));
        // Once per client: the one warning of a connect.
        password_exposed(sqlx_scheme, &shown_url, target, tls_mode.as_deref(), socket);
        Ok(SqlConfig {
            sqlx_url: format!("{sqlx_scheme}://{}{query}", crate::url::escape_userinfo(target)),
            shown_url,
            pool_size,
            max_sessions,
            session_check,
            connect_timeout,
            table,
        })
    }
}

/// Log the one warning of `url::warn_unverified_password` if the password of `target`
/// (`user:password@host:port/database`) goes to another machine without a verified
/// certificate: libpq's `sslmode` other than `verify-ca`/`verify-full`, MySQL's `ssl-mode`
/// other than `VERIFY_CA`/`VERIFY_IDENTITY` (sqlx's default when the URL says nothing is
/// `prefer`/`PREFERRED`: TLS if the server offers it, its certificate unchecked). A MySQL
/// `socket=` never leaves the machine.
pub(crate) fn password_exposed(
    sqlx_scheme: &str,
    shown_url: &str,
    target: &str,
    tls_mode: Option<&str>,
    socket: bool,
) -> bool {
    let (userinfo, rest) = target.rsplit_once('@').unwrap_or(("", target));
    let password = userinfo.split_once(':').is_some_and(|(_, password)| !password.is_empty());
    let authority = rest.split('/').next().unwrap_or(rest);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => authority.rsplit_once(':').map_or(authority, |(host, _)| host),
    };
    let mode = tls_mode.unwrap_or_default().to_ascii_lowercase().replace('_', "-");
    let verified = socket || matches!(mode.as_str(), "verify-ca" | "verify-full" | "verify-identity");
    let how = if sqlx_scheme == "postgres" {
        "add ?sslmode=verify-full&sslrootcert=/path/ca.pem (without sslmode, sqlx takes prefer: the certificate is not \
         checked, and it falls back to plain text when the server offers no TLS)"
    } else {
        "add ?ssl-mode=VERIFY_IDENTITY&ssl-ca=/path/ca.pem (without ssl-mode, sqlx takes PREFERRED: the certificate is \
         not checked, and it falls back to plain text when the server offers no TLS)"
    };
    let backend = if sqlx_scheme == "postgres" { "postgres" } else { "mysql" };
    crate::url::warn_unverified_password(backend, shown_url, [host], password, verified, how)
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

#[cfg(test)]
mod tests {
    use super::password_exposed;

    #[test]
    fn a_password_to_another_host_without_a_verified_certificate_is_warned_of() {
        let warned = |scheme, target, mode, socket| password_exposed(scheme, "shown", target, mode, socket);
        assert!(warned("postgres", "app:pw@db.internal:5432/locks", None, false));
        assert!(warned("postgres", "app:pw@db.internal/locks", Some("require"), false));
        assert!(warned("postgres", "app:pw@[2001:db8::3]:5432/locks", Some("prefer"), false));
        assert!(!warned("postgres", "app:pw@db.internal:5432/locks", Some("verify-full"), false));
        assert!(!warned("postgres", "app:pw@db.internal:5432/locks", Some("verify-ca"), false));
        assert!(!warned("postgres", "app:pw@127.0.0.1:5432/locks", None, false));
        assert!(!warned("postgres", "app:pw@[::1]:5432/locks", None, false));
        assert!(!warned("postgres", "app@db.internal:5432/locks", None, false));
        assert!(warned("mysql", "app:pw@db.internal:3306/locks", Some("REQUIRED"), false));
        assert!(!warned("mysql", "app:pw@db.internal:3306/locks", Some("VERIFY_IDENTITY"), false));
        assert!(!warned("mysql", "app:pw@db.internal:3306/locks", Some("verify_ca"), false));
        assert!(!warned("mysql", "app:pw@localhost/locks", None, false));
        assert!(!warned("mysql", "app:pw@db.internal/locks", None, true));
    }
}
