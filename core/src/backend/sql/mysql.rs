//! MySQL's and MariaDB's statements: session locks with `GET_LOCK`, lease locks on ShedLock's
//! table. MySQL has no NOTIFY, so lease waiters back off with jitter, bounded by the holder's
//! `lock_until`, and are woken at once by releases within their own process.

use std::str::FromStr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use sqlx::mysql::{MySqlConnectOptions, MySqlPool};
use sqlx::{MySql, Row};
use tokio::sync::watch;
use tokio::task::AbortHandle;

use super::dialect::{Conn, Dialect, LockWait, VALUE_NAME_BYTES};
use super::errors::mysql_number;
use crate::backend::poll::{Attempt, Backoff};
use crate::spi::RwMode;
use polylock_id::sql_names::mysql_lock_name;

/// Every table polylock creates holds any Unicode name, whatever the server's default (latin1,
/// or utf8mb3 without four-byte characters). The collation ignores case and accents as
/// ShedLock's tables usually do (`Job` and `job` are one row), but unlike the servers' default
/// utf8mb4 collations it tells characters outside the BMP apart (those weigh every emoji the
/// same), and unlike a `_bin` one it keeps the columns text for clients such as sqlx. Both
/// MySQL (5.6+) and MariaDB have it. Tables that exist already are left as they are.
const TABLE_CHARSET: &str = "CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_520_ci";

const ER_DUP_ENTRY: u16 = 1062;
const ER_QUERY_INTERRUPTED: u16 = 1317;
/// A row lock's wait ran out (also MariaDB's answer to NOWAIT).
const ER_LOCK_WAIT_TIMEOUT: u16 = 1205;
/// MySQL 8's answer to NOWAIT.
const ER_LOCK_NOWAIT: u16 = 3572;

/// `innodb_lock_wait_timeout`'s largest value, in seconds: waiting "for ever".
const FOREVER_LOCK_WAIT_SECONDS: u64 = 1_073_741_824;

/// `wait_timeout`'s largest value, in seconds (a year, on Linux).
const MAX_WAIT_TIMEOUT_SECONDS: u64 = 31_536_000;

/// MariaDB answers NULL to a negative ("forever") `GET_LOCK` timeout: a year it is, asked
/// again if it ever runs out.
const FOREVER_SECONDS: f64 = 365.0 * 24.0 * 3600.0;

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// A time left in microseconds as the database computed it; `None` when not positive.
fn left_from_micros(us: Option<i64>) -> Option<Duration> {
    us.filter(|us| *us > 0).map(|us| Duration::from_micros(us as u64))
}

pub(crate) struct MySqlDialect {
    table: String,
    /// How this server spells a shared row lock, learnt when the schema is made: MariaDB's
    /// `LOCK IN SHARE MODE`, MySQL 8's `FOR SHARE` (both take NOWAIT).
    share_clause: OnceLock<&'static str>,
}

/// The locking clause of a side of a read-write lock.
fn row_lock_clause(share_clause: &'static str, mode: RwMode) -> &'static str {
    match mode {
        RwMode::Read => share_clause,
        RwMode::Write => "FOR UPDATE",
    }
}

/// Make sure a read-write lock's row exists, before any transaction: a plain read never
/// waits, and only a name's first use inserts (an `INSERT IGNORE` that meets the row would
/// take a shared lock on it, waiting behind a writer).
async fn ensure_rw_row(conn: &mut Conn<MySqlDialect>, name: &str) -> Result<(), sqlx::Error> {
    let exists: Option<i64> =
        sqlx::query_scalar("SELECT 1 FROM polylock_rw WHERE name = ?").bind(name).fetch_optional(&mut **conn).await?;
    if exists.is_none() {
        sqlx::query("INSERT IGNORE INTO polylock_rw (name) VALUES (?)").bind(name).execute(&mut **conn).await?;
    }
    Ok(())
}

impl MySqlDialect {
    fn share_clause(&self) -> &'static str {
        self.share_clause.get().copied().unwrap_or("LOCK IN SHARE MODE")
    }

    /// Draw two tokens while the lock is held and return the first. LAST_INSERT_ID(x) makes
    /// the new value the statement's insert id, so this is one round trip.
    async fn draw_tokens_on<'e, E: sqlx::MySqlExecutor<'e>>(
        executor: E,
        fencing_name: &str,
    ) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(
            "INSERT INTO polylock_fencing (name, token) VALUES (?, LAST_INSERT_ID(2))
             ON DUPLICATE KEY UPDATE token = LAST_INSERT_ID(token + 2)",
        )
        .bind(fencing_name)
        .execute(executor)
        .await?;
        Ok(done.last_insert_id() - 1)
    }

    async fn lease_left_micros(&self, shared: &MySqlPool, name: &str) -> Result<Option<i64>, sqlx::Error> {
        Ok(sqlx::query_scalar::<_, Option<i64>>(&format!(
            "SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), lock_until) FROM {} WHERE name = ?",
            self.table
        ))
        .bind(name)
        .fetch_optional(shared)
        .await?
        .flatten())
    }

    /// An attempt on a name without a row or a counter (or whose lease expired just now):
    /// take the row if it is expired, else insert it, then draw the tokens.
    async fn first_lease_attempt(
        &self,
        shared: &MySqlPool,
        name: &str,
        by: &str,
        micros: i64,
    ) -> Result<Attempt, sqlx::Error> {
        let table = &self.table;
        let taken = sqlx::query(&format!(
            "UPDATE {table} SET lock_until = UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND,
                 locked_at = UTC_TIMESTAMP(3), locked_by = ?
             WHERE name = ? AND lock_until <= UTC_TIMESTAMP(3)"
        ))
        .bind(micros)
        .bind(by)
        .bind(name)
        .execute(shared)
        .await?
        .rows_affected()
            == 1;
        let won = taken || {
            let inserted = sqlx::query(&format!(
                "INSERT INTO {table} (name, lock_until, locked_at, locked_by)
                 VALUES (?, UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND, UTC_TIMESTAMP(3), ?)"
            ))
            .bind(name)
            .bind(micros)
            .bind(by)
            .execute(shared)
            .await;
            match inserted {
                Ok(_) => true,
                Err(err) if mysql_number(&err) == Some(ER_DUP_ENTRY) => false,
                Err(err) => return Err(err),
            }
        };
        if won {
            return match Self::draw_tokens_on(shared, name).await {
                Ok(token) => Ok(Attempt::Acquired { token, state: None }),
                Err(err) => {
                    let _ = self.lease_give_back(shared, name, by).await;
                    Err(err)
                }
            };
        }
        let left = self.lease_left_micros(shared, name).await?;
        Ok(Attempt::Busy { holder_lease_left: left_from_micros(left) })
    }
}

#[async_trait]
impl Dialect for MySqlDialect {
    type DB = MySql;
    type SessionLock = String;
    type ConnectionId = u64;

    const DATABASE: &'static str = "MySQL/MariaDB";
    const BACKEND: &'static str = "mysql";
    const SQLX_SCHEME: &'static str = "mysql";
    const SQLX_OPTIONS: &'static [&'static str] = &[
        "ssl-mode",
        "sslmode",
        "ssl-ca",
        "sslca",
        "ssl-cert",
        "sslcert",
        "ssl-key",
        "sslkey",
        "charset",
        "collation",
        "socket",
        "timezone",
        "statement-cache-capacity",
    ];
    const LEASE_BACKOFF: Backoff = Backoff { min: Duration::from_millis(2), max: Duration::from_millis(100) };
    const ANNOUNCES_RELEASES: bool = false;

    fn new(table: String) -> Self {
        MySqlDialect { table, share_clause: OnceLock::new() }
    }

    fn connect_options(sqlx_url: &str) -> Result<MySqlConnectOptions, sqlx::Error> {
        MySqlConnectOptions::from_str(sqlx_url)
    }

    async fn create_schema(&self, pool: &MySqlPool) -> Result<(), sqlx::Error> {
        let statements = [
            format!(
                "CREATE TABLE IF NOT EXISTS polylock_fencing (name VARCHAR(64) NOT NULL PRIMARY KEY, \
                 token BIGINT NOT NULL) {TABLE_CHARSET}"
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS polylock_semaphores (name VARCHAR(64) NOT NULL PRIMARY KEY, \
                 permits BIGINT NOT NULL) {TABLE_CHARSET}"
            ),
            // One row per read-write lock, never deleted: its row locks are the lock.
            format!(
                "CREATE TABLE IF NOT EXISTS polylock_rw (name VARCHAR(64) NOT NULL PRIMARY KEY) \
                 ENGINE=InnoDB {TABLE_CHARSET}"
            ),
            // ShedLock's documented MySQL schema, in utf8mb4.
            format!(
                "CREATE TABLE IF NOT EXISTS {}(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP(3) NOT NULL, \
                 locked_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), locked_by VARCHAR(255) NOT NULL, \
                 PRIMARY KEY (name)) {TABLE_CHARSET}",
                self.table
            ),
            // Leaf's own DDL, so a Leaf server and polylock can share a tag.
            format!(
                "CREATE TABLE IF NOT EXISTS leaf_alloc (biz_tag VARCHAR(128) NOT NULL DEFAULT '', \
                 max_id BIGINT NOT NULL DEFAULT 1, step INT NOT NULL, description VARCHAR(256) DEFAULT NULL, \
                 update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, \
                 PRIMARY KEY (biz_tag)) ENGINE=InnoDB {TABLE_CHARSET}"
            ),
            // Names are bytes: values of names that differ only in case are two values.
            format!(
                "CREATE TABLE IF NOT EXISTS polylock_values (name VARBINARY({VALUE_NAME_BYTES}) NOT NULL PRIMARY KEY, \
                 value LONGBLOB NULL, version BIGINT NOT NULL) ENGINE=InnoDB"
            ),
            // Countdown latches; names are bytes, as values' are.
            format!(
                "CREATE TABLE IF NOT EXISTS polylock_latches (name VARBINARY({VALUE_NAME_BYTES}) NOT NULL PRIMARY KEY, \
                 count BIGINT NOT NULL) ENGINE=InnoDB"
            ),
        ];
        for statement in statements {
            sqlx::query(&statement).execute(pool).await?;
        }
        let version: String = sqlx::query_scalar("SELECT VERSION()").fetch_one(pool).await?;
        let _ = self.share_clause.set(if version.contains("MariaDB") { "LOCK IN SHARE MODE" } else { "FOR SHARE" });
        Ok(())
    }

    fn session_lock(key: &str) -> String {
        mysql_lock_name(key)
    }

    fn session_fencing_name(key: &str) -> String {
        mysql_lock_name(key)
    }

    async fn try_session_lock(conn: &mut Conn<Self>, name: &String) -> Result<(bool, u64), sqlx::Error> {
        let row = sqlx::query("SELECT GET_LOCK(?, 0), CONNECTION_ID()").bind(name).fetch_one(&mut **conn).await?;
        let (got, connection_id): (Option<i64>, u64) = (row.get(0), row.get(1));
        Ok((got == Some(1), connection_id))
    }

    async fn wait_session_lock(conn: &mut Conn<Self>, name: &String, wait: Option<Duration>) -> LockWait {
        let seconds = wait.map_or(FOREVER_SECONDS, |wait| wait.as_secs_f64());
        let outcome = sqlx::query_scalar::<_, Option<i64>>("SELECT GET_LOCK(?, ?)")
            .bind(name)
            .bind(seconds)
            .fetch_one(&mut **conn)
            .await;
        match outcome {
            Ok(Some(1)) => LockWait::Granted,
            Ok(Some(0)) => LockWait::TimedOut,
            // NULL: interrupted by KILL QUERY on some versions (others fail with 1317).
            Ok(_) => LockWait::Interrupted,
            Err(err) if mysql_number(&err) == Some(ER_QUERY_INTERRUPTED) => LockWait::Interrupted,
            Err(err) => LockWait::Failed(err),
        }
    }

    async fn interrupt_wait(shared: &MySqlPool, connection_id: u64) {
        let _ = sqlx::query(&format!("KILL QUERY {connection_id}")).execute(shared).await;
    }

    async fn give_up_after_interrupt(conn: &mut Conn<Self>, name: &String) -> Result<(), sqlx::Error> {
        sqlx::query("SELECT RELEASE_LOCK(?)").bind(name).execute(&mut **conn).await.map(|_| ())
    }

    async fn session_holds(conn: &mut Conn<Self>, name: &String) -> Result<bool, sqlx::Error> {
        let holds: Option<i64> =
            sqlx::query_scalar("SELECT IS_USED_LOCK(?) = CONNECTION_ID()").bind(name).fetch_one(&mut **conn).await?;
        Ok(holds == Some(1))
    }

    async fn session_unlock(conn: &mut Conn<Self>, name: &String) -> Result<bool, sqlx::Error> {
        let released: Option<i64> =
            sqlx::query_scalar("SELECT RELEASE_LOCK(?)").bind(name).fetch_one(&mut **conn).await?;
        Ok(released == Some(1))
    }

    /// The session's `wait_timeout`, in whole seconds (MySQL and MariaDB, every version), at
    /// most its largest value, a year: the server closes a connection that sends no command
    /// for that long, and `GET_LOCK`'s locks go with it.
    async fn limit_idle(conn: &mut Conn<Self>, idle: Duration) -> Result<Option<String>, sqlx::Error> {
        let seconds = idle.as_secs().clamp(1, MAX_WAIT_TIMEOUT_SECONDS);
        sqlx::query("SET SESSION wait_timeout = ?").bind(seconds).execute(&mut **conn).await?;
        Ok(Some(String::new()))
    }

    /// Back to the server's global `wait_timeout`, which a connection starts with (sqlx does
    /// not connect as an interactive client, which would start from `interactive_timeout`).
    async fn restore_idle(conn: &mut Conn<Self>, _before: &str) -> Result<(), sqlx::Error> {
        sqlx::query("SET SESSION wait_timeout = DEFAULT").execute(&mut **conn).await.map(|_| ())
    }

    async fn session_lock_taken(shared: &MySqlPool, name: &String) -> Result<bool, sqlx::Error> {
        let holder: Option<i64> = sqlx::query_scalar("SELECT IS_USED_LOCK(?)").bind(name).fetch_one(shared).await?;
        Ok(holder.is_some())
    }

    async fn draw_tokens(conn: &mut Conn<Self>, fencing_name: &str) -> Result<u64, sqlx::Error> {
        Self::draw_tokens_on(&mut **conn, fencing_name).await
    }

    async fn step_token(conn: &mut Conn<Self>, fencing_name: &str) -> Result<u64, sqlx::Error> {
        let done = sqlx::query("UPDATE polylock_fencing SET token = LAST_INSERT_ID(token + 1) WHERE name = ?")
            .bind(fencing_name)
            .execute(&mut **conn)
            .await?;
        if done.rows_affected() != 1 {
            return Err(sqlx::Error::RowNotFound);
        }
        Ok(done.last_insert_id())
    }

    type RwLock = String;

    fn rw_lock(key: &str) -> String {
        mysql_lock_name(key)
    }

    /// A writer first takes the mutex's `GET_LOCK` (writers and mutex holders of one name
    /// exclude each other there, without holding readers up), then the row's exclusive lock
    /// (readers). A reader takes the row's shared lock only.
    async fn try_rw_lock(
        &self,
        conn: &mut Conn<Self>,
        name: &String,
        mode: RwMode,
    ) -> Result<(bool, u64), sqlx::Error> {
        let connection_id: u64 = sqlx::query_scalar("SELECT CONNECTION_ID()").fetch_one(&mut **conn).await?;
        ensure_rw_row(conn, name).await?;
        if mode == RwMode::Write {
            let got: Option<i64> =
                sqlx::query_scalar("SELECT GET_LOCK(?, 0)").bind(name).fetch_one(&mut **conn).await?;
            if got != Some(1) {
                return Ok((false, connection_id));
            }
        }
        let locked = async {
            sqlx::query("START TRANSACTION").execute(&mut **conn).await?;
            sqlx::query(&format!(
                "SELECT name FROM polylock_rw WHERE name = ? {} NOWAIT",
                row_lock_clause(self.share_clause(), mode)
            ))
            .bind(name)
            .fetch_optional(&mut **conn)
            .await
        }
        .await;
        match locked {
            Ok(Some(_)) => Ok((true, connection_id)),
            Ok(None) => {
                let _ = Self::rw_give_up(conn, name).await;
                Err(sqlx::Error::RowNotFound)
            }
            Err(err) => {
                Self::rw_give_up(conn, name).await?;
                match mysql_number(&err) {
                    Some(ER_LOCK_WAIT_TIMEOUT | ER_LOCK_NOWAIT) => Ok((false, connection_id)),
                    _ => Err(err),
                }
            }
        }
    }

    /// A writer's `GET_LOCK`, then the row lock in a transaction under
    /// `innodb_lock_wait_timeout` (whole seconds, rounded up: the engine interrupts the wait at
    /// the caller's deadline), both within `wait`.
    ///
    /// Measured on MariaDB 10.11 (`core/tests/sql_rw_semaphore.rs`,
    /// `mysql_readers_queue_behind_a_waiting_writer`): InnoDB queues a new shared request
    /// behind a waiting exclusive one, so a reader that comes after a writer waiting for the
    /// row is granted after that writer; readers do not starve writers. A writer still waiting
    /// for another writer (at `GET_LOCK`) does not hold readers up.
    async fn wait_rw_lock(
        &self,
        conn: &mut Conn<Self>,
        name: &String,
        mode: RwMode,
        wait: Option<Duration>,
    ) -> LockWait {
        let deadline = wait.map(|wait| tokio::time::Instant::now() + wait);
        let left = || deadline.map(|deadline| deadline.saturating_duration_since(tokio::time::Instant::now()));
        if mode == RwMode::Write {
            match Self::wait_session_lock(conn, name, left()).await {
                LockWait::Granted => {}
                other => return other,
            }
        }
        let seconds = left().map_or(FOREVER_LOCK_WAIT_SECONDS, |left| {
            (left.as_millis().div_ceil(1000) as u64).clamp(1, FOREVER_LOCK_WAIT_SECONDS)
        });
        let prepared = async {
            sqlx::query(&format!("SET SESSION innodb_lock_wait_timeout = {seconds}")).execute(&mut **conn).await?;
            sqlx::query("START TRANSACTION").execute(&mut **conn).await.map(|_| ())
        };
        if let Err(err) = prepared.await {
            return LockWait::Failed(err);
        }
        let locked = sqlx::query(&format!(
            "SELECT name FROM polylock_rw WHERE name = ? {}",
            row_lock_clause(self.share_clause(), mode)
        ))
        .bind(name)
        .fetch_optional(&mut **conn)
        .await;
        match locked {
            Ok(Some(_)) => LockWait::Granted,
            Ok(None) => LockWait::Failed(sqlx::Error::RowNotFound),
            Err(err) => match mysql_number(&err) {
                Some(ER_LOCK_WAIT_TIMEOUT) => LockWait::TimedOut,
                Some(ER_QUERY_INTERRUPTED) => LockWait::Interrupted,
                _ => LockWait::Failed(err),
            },
        }
    }

    /// The writer's row lock and `GET_LOCK` cover reading.
    async fn rw_read_on_writer(_conn: &mut Conn<Self>, _name: &String) -> Result<(), sqlx::Error> {
        Ok(())
    }

    /// InnoDB frees a transaction's row locks only all together, at its end, so: the write
    /// side given back while the read side stays (a downgrade) ends the transaction, which lets
    /// readers in, and keeps the `GET_LOCK`, which keeps writers out until the read side is
    /// released too; the read side given back while the write side stays changes nothing.
    async fn rw_unlock(
        conn: &mut Conn<Self>,
        name: &String,
        mode: RwMode,
        other_side_left: bool,
    ) -> Result<bool, sqlx::Error> {
        match (mode, other_side_left) {
            (RwMode::Read, true) => {
                sqlx::query("SELECT 1").execute(&mut **conn).await?;
            }
            (RwMode::Write, true) => {
                sqlx::query("ROLLBACK").execute(&mut **conn).await?;
            }
            (_, false) => Self::rw_give_up(conn, name).await?,
        }
        Ok(true)
    }

    async fn rw_give_up(conn: &mut Conn<Self>, name: &String) -> Result<(), sqlx::Error> {
        sqlx::query("ROLLBACK").execute(&mut **conn).await?;
        sqlx::query("DO RELEASE_LOCK(?)").bind(name).execute(&mut **conn).await.map(|_| ())
    }

    async fn rw_draw_tokens(
        shared: &MySqlPool,
        _conn: &mut Conn<Self>,
        fencing_name: &str,
    ) -> Result<u64, sqlx::Error> {
        Self::draw_tokens_on(shared, fencing_name).await
    }

    async fn fix_permits(shared: &MySqlPool, name: &str, permits: u32) -> Result<u32, sqlx::Error> {
        sqlx::query("INSERT IGNORE INTO polylock_semaphores (name, permits) VALUES (?, ?)")
            .bind(name)
            .bind(i64::from(permits))
            .execute(shared)
            .await?;
        let fixed: i64 = sqlx::query_scalar("SELECT permits FROM polylock_semaphores WHERE name = ?")
            .bind(name)
            .fetch_one(shared)
            .await?;
        Ok(u32::try_from(fixed).unwrap_or(u32::MAX))
    }

    /// Once a name has a row and a counter (every acquisition after its first), taking the
    /// row and drawing the tokens is one statement, and a busy lock costs one more read.
    async fn lease_attempt(
        &self,
        shared: &MySqlPool,
        name: &str,
        by: &str,
        lease: Duration,
    ) -> Result<Attempt, sqlx::Error> {
        let micros = micros(lease);
        let taken = sqlx::query(&format!(
            "UPDATE {} AS s JOIN polylock_fencing AS f ON f.name = s.name
             SET s.lock_until = UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND,
                 s.locked_at = UTC_TIMESTAMP(3), s.locked_by = ?,
                 f.token = LAST_INSERT_ID(f.token + 2)
             WHERE s.name = ? AND s.lock_until <= UTC_TIMESTAMP(3)",
            self.table
        ))
        .bind(micros)
        .bind(by)
        .bind(name)
        .execute(shared)
        .await?;
        if taken.rows_affected() > 0 && taken.last_insert_id() > 0 {
            return Ok(Attempt::Acquired { token: taken.last_insert_id() - 1, state: None });
        }
        match left_from_micros(self.lease_left_micros(shared, name).await?) {
            Some(left) => Ok(Attempt::Busy { holder_lease_left: Some(left) }),
            // No row yet, no counter yet, or it expired just now: the long way.
            None => self.first_lease_attempt(shared, name, by, micros).await,
        }
    }

    async fn lease_give_back(&self, shared: &MySqlPool, name: &str, by: &str) -> Result<bool, sqlx::Error> {
        let done = sqlx::query(&format!(
            "UPDATE {} SET lock_until = UTC_TIMESTAMP(3)
             WHERE name = ? AND locked_by = ? AND lock_until > UTC_TIMESTAMP(3)",
            self.table
        ))
        .bind(name)
        .bind(by)
        .execute(shared)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn lease_give_back_won(
        &self,
        shared: &MySqlPool,
        name: &str,
        by: &str,
        token: u64,
    ) -> Result<bool, sqlx::Error> {
        let done = sqlx::query(&format!(
            "UPDATE {} AS s JOIN polylock_fencing AS f ON f.name = s.name
             SET s.lock_until = UTC_TIMESTAMP(3)
             WHERE s.name = ? AND s.locked_by = ? AND s.lock_until > UTC_TIMESTAMP(3) AND f.token = ?",
            self.table
        ))
        .bind(name)
        .bind(by)
        .bind(token + 1)
        .execute(shared)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn lease_renew(
        &self,
        shared: &MySqlPool,
        name: &str,
        by: &str,
        lease: Duration,
    ) -> Result<bool, sqlx::Error> {
        let done = sqlx::query(&format!(
            "UPDATE {} SET lock_until = UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND
             WHERE name = ? AND locked_by = ? AND lock_until > UTC_TIMESTAMP(3)",
            self.table
        ))
        .bind(micros(lease))
        .bind(name)
        .bind(by)
        .execute(shared)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn lease_is_held_by(&self, shared: &MySqlPool, name: &str, by: &str) -> Result<bool, sqlx::Error> {
        let count: i64 = sqlx::query_scalar(&format!(
            "SELECT COUNT(*) FROM {} WHERE name = ? AND locked_by = ? AND lock_until > UTC_TIMESTAMP(3)",
            self.table
        ))
        .bind(name)
        .bind(by)
        .fetch_one(shared)
        .await?;
        Ok(count == 1)
    }

    /// One statement, so one round trip and atomic under autocommit: the row moves and the
    /// counter steps only together. LAST_INSERT_ID(x) makes the new counter the statement's
    /// insert id; it stays 0 when no row matched.
    async fn lease_transfer(
        &self,
        shared: &MySqlPool,
        name: &str,
        from: &str,
        to: &str,
        lease: Duration,
    ) -> Result<Option<u64>, sqlx::Error> {
        let moved = sqlx::query(&format!(
            "UPDATE {} AS s JOIN polylock_fencing AS f ON f.name = s.name
             SET s.locked_by = ?, s.locked_at = UTC_TIMESTAMP(3),
                 s.lock_until = UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND,
                 f.token = LAST_INSERT_ID(f.token + 1)
             WHERE s.name = ? AND s.locked_by IN (?, ?) AND s.lock_until > UTC_TIMESTAMP(3)",
            self.table
        ))
        .bind(to)
        .bind(micros(lease))
        .bind(name)
        .bind(from)
        .bind(to)
        .execute(shared)
        .await?;
        if moved.rows_affected() == 0 || moved.last_insert_id() == 0 {
            return Ok(None);
        }
        Ok(Some(moved.last_insert_id() - 1))
    }

    async fn lease_left(&self, shared: &MySqlPool, name: &str) -> Result<Option<Duration>, sqlx::Error> {
        Ok(left_from_micros(self.lease_left_micros(shared, name).await?))
    }

    async fn lease_force_end(&self, shared: &MySqlPool, name: &str) -> Result<bool, sqlx::Error> {
        let done = sqlx::query(&format!(
            "UPDATE {} SET lock_until = UTC_TIMESTAMP(3) WHERE name = ? AND lock_until > UTC_TIMESTAMP(3)",
            self.table
        ))
        .bind(name)
        .execute(shared)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// MySQL cannot announce: only this process's own releases wake its waiters.
    fn watch_releases(_sessions: MySqlPool, _released: Arc<watch::Sender<u64>>) -> Option<AbortHandle> {
        None
    }

    /// Over an open latch's row, else a new row (`INSERT IGNORE`: 0 rows when one exists). A
    /// row that exists but was not open is read once more, in case it reached zero between.
    async fn latch_try_set(shared: &MySqlPool, name: &str, count: i64) -> Result<bool, sqlx::Error> {
        for _ in 0..3 {
            let reopened = sqlx::query("UPDATE polylock_latches SET count = ? WHERE name = ? AND count <= 0")
                .bind(count)
                .bind(name.as_bytes())
                .execute(shared)
                .await?;
            if reopened.rows_affected() == 1 {
                return Ok(true);
            }
            let created = sqlx::query("INSERT IGNORE INTO polylock_latches (name, count) VALUES (?, ?)")
                .bind(name.as_bytes())
                .bind(count)
                .execute(shared)
                .await?;
            if created.rows_affected() == 1 {
                return Ok(true);
            }
            if Self::latch_count(shared, name).await?.unwrap_or(0) > 0 {
                return Ok(false);
            }
        }
        Ok(false)
    }

    async fn latch_count_down(shared: &MySqlPool, name: &str) -> Result<(), sqlx::Error> {
        sqlx::query("UPDATE polylock_latches SET count = count - 1 WHERE name = ? AND count > 0")
            .bind(name.as_bytes())
            .execute(shared)
            .await
            .map(drop)
    }

    async fn latch_count(shared: &MySqlPool, name: &str) -> Result<Option<i64>, sqlx::Error> {
        sqlx::query_scalar("SELECT count FROM polylock_latches WHERE name = ?")
            .bind(name.as_bytes())
            .fetch_optional(shared)
            .await
    }

    /// LAST_INSERT_ID(x) makes the new `max_id` the statement's insert id, read from the OK
    /// packet of this very statement: one round trip, and no other server's update can slip
    /// in between (Leaf's DAO reads it back after committing, Leaf issues #145 and #151).
    async fn reserve(shared: &MySqlPool, tag: &str, count: i64, step: i32) -> Result<i64, sqlx::Error> {
        let done = sqlx::query(
            "INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, LAST_INSERT_ID(?), ?, 'polylock counter')
             ON DUPLICATE KEY UPDATE max_id = LAST_INSERT_ID(max_id + ?), update_time = CURRENT_TIMESTAMP",
        )
        .bind(tag)
        .bind(count)
        .bind(step)
        .bind(count)
        .execute(shared)
        .await?;
        i64::try_from(done.last_insert_id()).map_err(|e| sqlx::Error::Decode(Box::new(e)))
    }

    async fn counter_max_id(shared: &MySqlPool, tag: &str) -> Result<Option<i64>, sqlx::Error> {
        sqlx::query_scalar("SELECT max_id FROM leaf_alloc WHERE biz_tag = ?").bind(tag).fetch_optional(shared).await
    }

    async fn value_get(shared: &MySqlPool, name: &str) -> Result<Option<(Vec<u8>, i64)>, sqlx::Error> {
        sqlx::query_as("SELECT value, version FROM polylock_values WHERE name = ? AND value IS NOT NULL")
            .bind(name.as_bytes())
            .fetch_optional(shared)
            .await
    }

    /// Revive a deleted row in one statement; only a name never used before costs an INSERT.
    async fn value_create(shared: &MySqlPool, name: &str, value: &[u8]) -> Result<Option<i64>, sqlx::Error> {
        let revived = sqlx::query(
            "UPDATE polylock_values SET value = ?, version = LAST_INSERT_ID(version + 1) WHERE name = ? AND value IS NULL",
        )
        .bind(value)
        .bind(name.as_bytes())
        .execute(shared)
        .await?;
        if revived.rows_affected() == 1 {
            return Ok(Some(revived.last_insert_id() as i64));
        }
        match sqlx::query("INSERT INTO polylock_values (name, value, version) VALUES (?, ?, 1)")
            .bind(name.as_bytes())
            .bind(value)
            .execute(shared)
            .await
        {
            Ok(_) => Ok(Some(1)),
            Err(err) if mysql_number(&err) == Some(ER_DUP_ENTRY) => Ok(None),
            Err(err) => Err(err),
        }
    }

    async fn value_replace(
        shared: &MySqlPool,
        name: &str,
        expected: i64,
        value: &[u8],
    ) -> Result<Option<i64>, sqlx::Error> {
        let done = sqlx::query(
            "UPDATE polylock_values SET value = ?, version = LAST_INSERT_ID(version + 1)
             WHERE name = ? AND version = ? AND value IS NOT NULL",
        )
        .bind(value)
        .bind(name.as_bytes())
        .bind(expected)
        .execute(shared)
        .await?;
        Ok((done.rows_affected() == 1).then(|| done.last_insert_id() as i64))
    }

    async fn value_delete(shared: &MySqlPool, name: &str, expected: i64) -> Result<bool, sqlx::Error> {
        let done =
            sqlx::query("UPDATE polylock_values SET value = NULL WHERE name = ? AND version = ? AND value IS NOT NULL")
                .bind(name.as_bytes())
                .bind(expected)
                .execute(shared)
                .await?;
        Ok(done.rows_affected() == 1)
    }

    /// `NOW(3)` in the session's time zone and back to Unix time: milliseconds since the epoch.
    async fn server_millis(shared: &MySqlPool) -> Result<i64, sqlx::Error> {
        sqlx::query_scalar("SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)").fetch_one(shared).await
    }
}
