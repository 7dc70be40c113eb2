//! sqlx errors in polylock's terms: what went wrong and what to check, never a password.

use crate::error::Error;

/// Map an error met while talking to `shown_url` (already redacted).
pub(crate) fn map_error(shown_url: &str, err: sqlx::Error) -> Error {
    let message = match &err {
        sqlx::Error::Io(io) if is_tls_failure(io) => {
            format!("the TLS handshake with {shown_url} failed; check sslmode and the CA certificate")
        }
        sqlx::Error::Io(_) => {
            format!("cannot reach the database at {shown_url}; check the host, port and that the server runs")
        }
        sqlx::Error::Tls(_) => {
            format!("the TLS handshake with {shown_url} failed; check sslmode and the CA certificate")
        }
        sqlx::Error::PoolTimedOut => {
            format!("no connection to {shown_url} became available in time; the server may be down or overloaded")
        }
        sqlx::Error::PoolClosed => return Error::connection(format!("the client for {shown_url} is closed")),
        sqlx::Error::Configuration(_) => {
            return Error::invalid_argument(format!("bad database URL {shown_url}")).with_source(err)
        }
        sqlx::Error::Database(db) => {
            let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
            match code.as_str() {
                // PostgreSQL: invalid_password, invalid_authorization_specification; MySQL: access denied.
                "28P01" | "28000" | "1045" | "28000:1045" => {
                    format!("the database at {shown_url} refused the user name or password")
                }
                // PostgreSQL: invalid_catalog_name; MySQL: unknown database / no access to it.
                "3D000" | "1049" | "42000" if db.message().contains("database") => {
                    format!("the database named in {shown_url} does not exist (or the user may not use it)")
                }
                // MySQL: a name the table's character set cannot hold (a table created before
                // polylock made its tables utf8mb4, or by another tool).
                "1366" | "HY000:1366" | "22007" => {
                    return Error::invalid_argument(format!(
                        "the database at {shown_url} cannot store this lock name: its table's character set \
                         lacks one of the name's characters; convert the table with ALTER TABLE <table> \
                         CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_520_ci"
                    ))
                    .with_source(err)
                }
                // Session killed by an administrator or the server shutting down.
                "57P01" | "57P02" | "57P03" | "1927" | "70100" => {
                    format!("the database session at {shown_url} was ended")
                }
                _ => return Error::backend(format!("the database at {shown_url} failed a statement")).with_source(err),
            }
        }
        _ => return Error::backend(format!("talking to the database at {shown_url} failed")).with_source(err),
    };
    Error::connection(message).with_source(err)
}

/// sqlx hands rustls's handshake failures (an unknown CA, a name mismatch) over as I/O
/// errors of kind InvalidData; what they say tells them from a refused or dropped connection.
fn is_tls_failure(io: &std::io::Error) -> bool {
    let text = io.to_string().to_ascii_lowercase();
    io.kind() == std::io::ErrorKind::InvalidData
        && ["certificate", "tls", "handshake"].iter().any(|word| text.contains(word))
}

/// The SQLSTATE or vendor code of a database error, if it is one.
#[cfg(feature = "postgres")]
pub(crate) fn db_code(err: &sqlx::Error) -> Option<String> {
    match err {
        sqlx::Error::Database(db) => db.code().map(|c| c.into_owned()),
        _ => None,
    }
}

/// MySQL's own error number (1062 duplicate key, 1317 interrupted...), if it is one.
#[cfg(feature = "mysql")]
pub(crate) fn mysql_number(err: &sqlx::Error) -> Option<u16> {
    match err {
        sqlx::Error::Database(db) => db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>().map(|e| e.number()),
        _ => None,
    }
}
