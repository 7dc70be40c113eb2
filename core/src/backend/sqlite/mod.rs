//! `sqlite://path.db`: the embedded default. Locks are rows in a lease table inside one
//! SQLite file, so processes on one host exclude each other with no server. Time is the
//! database's clock, read inside each statement; fencing tokens come from a counter table
//! that is never cleared.
//!
//! SQLite cannot notify other processes. A mutex's holder also locks a file of the name
//! beside the database (`name_files.rs`), so a waiter in another process blocks on it in
//! the kernel and wakes as the holder lets go; the row stays the truth (`wait.rs`). Waiters
//! on read-write locks and semaphores, and on holders that do not use the files, poll with
//! a short, jittered, bounded backoff (woken at once by releases within their own process),
//! and read before they write so a waiter never takes the write lock while the lock is
//! visibly held.
//!
//! Statements run on the caller's thread when the connection is free and no other process
//! holds the database's write lock (a few tens of microseconds of local file I/O), and in
//! tokio's blocking pool, where they may wait out the busy timeout, otherwise.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior};
use tokio::sync::watch;

mod inspect;
mod latch;
mod name_files;
#[cfg(test)]
mod process_tests;
mod rw_lock;
mod semaphore;
mod values;
mod wait;

use self::name_files::{FileTry, LockedFile, NameFiles};
use self::wait::LockAttempt;
use super::poll::Backoff;
use crate::error::{Error, Result};
use crate::owner::Owner;
use crate::spi::{
    AcquireRequest, Acquired, Capabilities, ExclusiveStore, HeldLock, HoldStore, Release, Renewal, Store,
};
use crate::spi::{CounterStore, LockKind, LostNotifier, PermitStore, SharedStore, VersionStore};
use crate::url::ConnectUrl;

/// Unix milliseconds by the database's clock.
const NOW_MS: &str = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS polylock_locks (
    name           TEXT PRIMARY KEY,
    owner          TEXT NOT NULL,     -- '<client uuid>:<local id>'
    token          INTEGER NOT NULL,  -- fencing token of this hold
    lease_until_ms INTEGER NOT NULL   -- unix ms, database clock
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS polylock_fencing (
    name  TEXT PRIMARY KEY,
    token INTEGER NOT NULL            -- last token issued for this name, by every family
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS polylock_rw_holds (
    name           TEXT NOT NULL,
    mode           TEXT NOT NULL,     -- 'read', 'write', or 'waiting' (a writer's mark)
    owner          TEXT NOT NULL,
    token          INTEGER NOT NULL,
    lease_until_ms INTEGER NOT NULL,
    PRIMARY KEY (name, mode, owner)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS polylock_semaphores (
    name    TEXT PRIMARY KEY,
    permits INTEGER NOT NULL          -- fixed by the first use of the name
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS polylock_counters (
    name TEXT PRIMARY KEY,
    next INTEGER NOT NULL             -- the end of the last range handed out
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS polylock_values (
    name    TEXT PRIMARY KEY,
    value   BLOB NOT NULL,
    version INTEGER NOT NULL          -- from polylock_fencing ('value:' || name): only grows
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS leaf_alloc (biz_tag TEXT PRIMARY KEY, max_id INTEGER NOT NULL DEFAULT 1, step INTEGER NOT NULL, description TEXT, update_time TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP); -- Leaf's segment table: counters
CREATE TABLE IF NOT EXISTS polylock_latches (
    name  TEXT PRIMARY KEY,
    count INTEGER NOT NULL            -- a countdown latch's count; 0 (or no row) is open
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS polylock_permits (
    name           TEXT NOT NULL,
    owner          TEXT NOT NULL,     -- one permit's identity
    token          INTEGER NOT NULL,
    lease_until_ms INTEGER NOT NULL,
    PRIMARY KEY (name, owner)
) WITHOUT ROWID;
";

/// Draws the next fencing token of a name (inside the caller's transaction).
const NEXT_TOKEN: &str = "INSERT INTO polylock_fencing (name, token) VALUES (?1, 1)
     ON CONFLICT (name) DO UPDATE SET token = token + 1
     RETURNING token";

/// Between attempts of a waiter when no release in this process wakes it. Small enough that
/// a freed lock is noticed within a few milliseconds; bounded so waiters do not hammer the file.
const BACKOFF: Backoff = Backoff { min: Duration::from_millis(1), max: Duration::from_millis(20) };

/// How long one statement waits for another process's write transaction.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

pub(crate) struct SqliteBackend {
    conn: Arc<Mutex<Connection>>,
    path: Arc<str>,
    /// Bumped on every release by this process, waking its own waiters at once.
    released: watch::Sender<u64>,
    /// The mutexes' lock files, unless no folder for them can be made beside the database.
    files: Option<Arc<NameFiles>>,
    /// The first and the slowest poll of a waiter blocked on a held file whose row is held.
    file_wait_poll: (Duration, Duration),
}

/// A mutex hold's locked file; it moves with the hold on a transfer.
struct HeldFile(Mutex<Option<LockedFile>>);

impl HeldFile {
    fn of(held: &HeldLock) -> Option<&HeldFile> {
        held.state.as_ref()?.downcast_ref::<HeldFile>()
    }

    fn take(&self) -> Option<LockedFile> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// What the row said to one mutex attempt.
enum RowOutcome {
    Granted(i64),
    Busy { holder_lease_left: Option<Duration> },
}

impl SqliteBackend {
    pub(crate) async fn open(url: &mut ConnectUrl) -> Result<Self> {
        let path: Arc<str> = url.target().into();
        if path.is_empty() {
            return Err(Error::invalid_argument(
                "sqlite:// needs a file path, such as sqlite://polylock.db or sqlite:///var/lib/app/locks.db",
            ));
        }
        // sqlite takes no option of its own: an unknown one is refused before the file is
        // created (a misspelt option must leave nothing behind).
        url.ensure_no_options_left()?;
        let conn = run_blocking({
            let path = path.clone();
            move || open_connection(&path)
        })
        .await?;
        let files = NameFiles::beside(&path)?.map(Arc::new);
        Ok(SqliteBackend {
            conn: Arc::new(Mutex::new(conn)),
            path,
            released: watch::channel(0).0,
            files,
            file_wait_poll: (BACKOFF.max, wait::FILE_WAIT_POLL),
        })
    }

    /// Run `op` on the connection: on this thread if the connection is free and the
    /// database's write lock is not held by another process, else in the blocking pool
    /// (waiting out the busy timeout there). `op` may run twice: a run that met a busy
    /// database changed nothing (its transaction rolled back) and runs again in the pool.
    pub(super) async fn with_conn_fast<T, F>(&self, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: Fn(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        if let Ok(mut conn) = self.conn.try_lock() {
            if conn.busy_timeout(Duration::ZERO).is_ok() {
                let outcome = op(&mut conn);
                let busy = matches!(
                    outcome.as_ref().err().and_then(|e| e.sqlite_error_code()),
                    Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
                );
                if !busy {
                    return outcome.map_err(|e| map_error(&self.path, e));
                }
            }
        }
        self.with_conn(op).await
    }

    /// Run `op` on the connection in the blocking pool, mapping SQLite errors to ours.
    pub(super) async fn with_conn<T, F>(&self, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let conn = self.conn.clone();
        let path = self.path.clone();
        run_blocking(move || {
            let mut conn = conn.lock().unwrap_or_else(|e| e.into_inner());
            // The fast path (`with_conn_fast`) turns the busy timeout off while it runs.
            conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| map_error(&path, e))?;
            op(&mut conn).map_err(|e| map_error(&path, e))
        })
        .await
    }

    /// Wake this process's waiters: something was released.
    pub(super) fn wake_waiters(&self) {
        self.released.send_modify(|n| *n = n.wrapping_add(1));
    }

    pub(super) fn released(&self) -> watch::Receiver<u64> {
        self.released.subscribe()
    }

    /// The lease left of whoever holds `key`, if anyone does.
    async fn lease_left(&self, key: &str) -> Result<Option<Duration>> {
        let key = key.to_string();
        let left: Option<i64> = self
            .with_conn(move |conn| {
                conn.prepare_cached(&format!("SELECT lease_until_ms - {NOW_MS} FROM polylock_locks WHERE name = ?1"))?
                    .query_row(params![key], |row| row.get(0))
                    .optional()
            })
            .await?;
        Ok(left.filter(|ms| *ms > 0).map(|ms| Duration::from_millis(ms as u64)))
    }

    /// One attempt on a mutex: its file if free, then its row. `take_without_file` takes a
    /// free row even though someone holds the file (see `wait.rs`).
    async fn lock_attempt(&self, request: &AcquireRequest, take_without_file: bool) -> Result<LockAttempt> {
        let file = match &self.files {
            Some(files) => files.try_lock(&request.key),
            None => FileTry::Unavailable,
        };
        let (file_locked, file_busy) = (matches!(file, FileTry::Locked(_)), matches!(file, FileTry::Busy));
        let key = request.key.clone();
        let owner = request.owner.to_string();
        let lease_ms = duration_ms(request.lease);
        // A blocking closure outlives a dropped future. An attempt its waiter abandoned (to
        // take a handoff instead) must not write after that, so the closure checks this flag
        // under the connection lock, which the handoff's transfer takes too.
        let wanted = Arc::new(AtomicBool::new(true));
        let _abandon_on_drop = AbandonOnDrop(wanted.clone());
        let attempt_started = tokio::time::Instant::now();
        let outcome = self
            .with_conn_fast(move |conn| {
                if !wanted.load(Ordering::Acquire) {
                    return Ok(RowOutcome::Busy { holder_lease_left: None });
                }
                row_attempt(conn, &key, &owner, lease_ms, !file_locked, !file_busy || take_without_file)
            })
            .await;
        let locked = match file {
            FileTry::Locked(locked) => Some(locked),
            FileTry::Busy | FileTry::Unavailable => None,
        };
        match outcome {
            Ok(RowOutcome::Granted(token)) => {
                let state = locked.map(|locked| Arc::new(HeldFile(Mutex::new(Some(locked)))) as _);
                Ok(LockAttempt::Acquired(Acquired { token: token as u64, attempt_started, state }))
            }
            Ok(RowOutcome::Busy { holder_lease_left }) => {
                self.unlock_file(locked);
                Ok(LockAttempt::Busy { holder_lease_left, file_busy })
            }
            Err(err) => {
                self.unlock_file(locked);
                Err(err)
            }
        }
    }

    fn unlock_file(&self, locked: Option<LockedFile>) {
        if let (Some(files), Some(locked)) = (&self.files, locked) {
            files.unlock(locked);
        }
    }
}

/// The row's part of a mutex attempt. With `read_first` (the name's file is not ours), a
/// read outside any write transaction comes first: most attempts of a waiter end there.
/// Without `may_take_free` (someone holds the name's file), a free row is left to the
/// file's holder; an expired one is not (the lease governs).
fn row_attempt(
    conn: &mut Connection,
    key: &str,
    owner: &str,
    lease_ms: i64,
    read_first: bool,
    may_take_free: bool,
) -> rusqlite::Result<RowOutcome> {
    if read_first {
        let row: Option<(i64, bool)> = conn
            .prepare_cached(&format!(
                "SELECT lease_until_ms - {NOW_MS}, owner = ?2 FROM polylock_locks WHERE name = ?1"
            ))?
            .query_row(params![key, owner], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?;
        match row {
            Some((left, false)) if left > 0 => {
                return Ok(RowOutcome::Busy { holder_lease_left: Some(Duration::from_millis(left as u64)) });
            }
            // The file's holder is between its row and its file: the row is for it to take.
            None if !may_take_free => return Ok(RowOutcome::Busy { holder_lease_left: None }),
            _ => {}
        }
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if let Some(left) = holder_lease_left(&tx, key, owner)? {
        return Ok(RowOutcome::Busy { holder_lease_left: Some(left) });
    }
    let token: i64 = tx.prepare_cached(NEXT_TOKEN)?.query_row(params![key], |row| row.get(0))?;
    tx.prepare_cached(&format!(
        "INSERT INTO polylock_locks (name, owner, token, lease_until_ms)
         VALUES (?1, ?2, ?3, {NOW_MS} + ?4)
         ON CONFLICT (name) DO UPDATE SET
             owner = excluded.owner, token = excluded.token,
             lease_until_ms = excluded.lease_until_ms"
    ))?
    .execute(params![key, owner, token, lease_ms])?;
    tx.commit()?;
    Ok(RowOutcome::Granted(token))
}

/// How long another owner's unexpired hold on `key` has left, or `None` if it is free to take.
struct AbandonOnDrop(Arc<AtomicBool>);

impl Drop for AbandonOnDrop {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

fn holder_lease_left(conn: &Connection, key: &str, owner: &str) -> rusqlite::Result<Option<Duration>> {
    let left: Option<i64> = conn
        .prepare_cached(&format!(
            "SELECT lease_until_ms - {NOW_MS} FROM polylock_locks WHERE name = ?1 AND owner <> ?2"
        ))?
        .query_row(params![key, owner], |row| row.get(0))
        .optional()?;
    Ok(left.filter(|ms| *ms > 0).map(|ms| Duration::from_millis(ms as u64)))
}

fn open_connection(path: &str) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let setup = |conn: &Connection| -> rusqlite::Result<()> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // WAL lets waiters read while the holder writes. NORMAL sync is durable against
        // process crashes, the failure that matters for a single-host lock.
        switch_to_wal(conn)?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.execute_batch(SCHEMA)
    };
    let conn = Connection::open_with_flags(path, flags).map_err(|e| map_error(path, e))?;
    setup(&conn).map_err(|e| map_error(path, e))?;
    Ok(conn)
}

/// `PRAGMA journal_mode=WAL`, retried while another connection holds the database: on a new
/// file that several processes open at once, SQLite answers this pragma with "database is
/// locked" at once instead of waiting out the busy timeout as other statements do.
fn switch_to_wal(conn: &Connection) -> rusqlite::Result<()> {
    let give_up_at = std::time::Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(1);
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(err)
                if matches!(err.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
                    && std::time::Instant::now() + pause < give_up_at =>
            {
                // On the blocking pool (see `open`), so a plain sleep is fine.
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            outcome => return outcome,
        }
    }
}

fn map_error(path: &str, err: rusqlite::Error) -> Error {
    let code = err.sqlite_error_code();
    let message = match code {
        Some(ErrorCode::CannotOpen | ErrorCode::ReadOnly | ErrorCode::PermissionDenied | ErrorCode::NotADatabase) => {
            return Error::connection(format!(
                "cannot use sqlite database '{path}'; check that its directory exists and is writable \
                 and that the file is an SQLite database"
            ))
            .with_source(err);
        }
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => format!(
            "sqlite database '{path}' stayed locked by another process for more than {}s",
            BUSY_TIMEOUT.as_secs()
        ),
        Some(ErrorCode::DiskFull) => format!("the disk holding sqlite database '{path}' is full"),
        _ => format!("sqlite database '{path}' failed"),
    };
    Error::backend(message).with_source(err)
}

async fn run_blocking<T: Send + 'static>(op: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(op)
        .await
        .map_err(|e| Error::backend("a sqlite operation was interrupted").with_source(e))?
}

/// A lease as the milliseconds the database adds to its clock: rounded up, plus one. The
/// database's clock (`NOW_MS`) is cut to whole milliseconds, so without the extra one a row
/// could expire up to a millisecond before the holder's own view of its lease ends, and a
/// waiter be granted the lock while the holder does not yet see it lost. Erring the other way
/// (the row outlives the holder's view by under 2 ms) is the safe side.
pub(super) fn duration_ms(d: Duration) -> i64 {
    let millis = d.as_nanos().div_ceil(1_000_000).saturating_add(1);
    i64::try_from(millis).unwrap_or(i64::MAX)
}

#[async_trait]
impl HoldStore for SqliteBackend {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Option<Acquired>> {
        wait::acquire_lock(self, request).await
    }

    async fn renew(&self, held: &HeldLock, lease: Duration) -> Result<Renewal> {
        let (key, owner, token) = (held.key.clone(), held.owner.to_string(), held.token as i64);
        let lease_ms = duration_ms(lease);
        let updated = self
            .with_conn_fast(move |conn| {
                conn.prepare_cached(&format!(
                    "UPDATE polylock_locks SET lease_until_ms = {NOW_MS} + ?4
                     WHERE name = ?1 AND owner = ?2 AND token = ?3 AND lease_until_ms > {NOW_MS}"
                ))?
                .execute(params![key, owner, token, lease_ms])
            })
            .await?;
        if updated != 1 {
            // Lost: its file must not keep this process's waiters or anyone else's waiting.
            self.unlock_file(HeldFile::of(held).and_then(HeldFile::take));
            return Ok(Renewal::Gone);
        }
        Ok(Renewal::Renewed)
    }

    async fn release(&self, held: &HeldLock, holds_left: u32) -> Result<Release> {
        let (key, owner, token) = (held.key.clone(), held.owner.to_string(), held.token as i64);
        let partial = holds_left > 0;
        let was_current: Result<Option<bool>> = self
            .with_conn_fast(move |conn| {
                if partial {
                    // Reentrancy is counted by the client; the row only needs to still be ours.
                    return conn
                        .prepare_cached(&format!(
                            "SELECT lease_until_ms > {NOW_MS} FROM polylock_locks
                             WHERE name = ?1 AND owner = ?2 AND token = ?3"
                        ))?
                        .query_row(params![key, owner, token], |row| row.get(0))
                        .optional();
                }
                // An expired row of ours is deleted too (tidiness), but reported as gone.
                conn.prepare_cached(&format!(
                    "DELETE FROM polylock_locks WHERE name = ?1 AND owner = ?2 AND token = ?3
                     RETURNING lease_until_ms > {NOW_MS}"
                ))?
                .query_row(params![key, owner, token], |row| row.get(0))
                .optional()
            })
            .await;
        if !partial {
            // After the row is gone, so that a waiter woken by the file finds the row free;
            // whatever the outcome, so that a failed release does not keep the file.
            self.unlock_file(HeldFile::of(held).and_then(HeldFile::take));
            self.wake_waiters();
        }
        Ok(if was_current? == Some(true) { Release::Released } else { Release::Gone })
    }

    async fn transfer(
        &self,
        from: &HeldLock,
        to: Owner,
        lease: Duration,
        _lost: &LostNotifier,
    ) -> Result<Option<Acquired>> {
        let (key, owner, token) = (from.key.clone(), from.owner.to_string(), from.token as i64);
        let (to, lease_ms) = (to.to_string(), duration_ms(lease));
        let attempt_started = tokio::time::Instant::now();
        let token = self
            .with_conn_fast(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let takes_over = tx
                    .prepare_cached(&format!(
                        "SELECT 1 FROM polylock_locks WHERE name = ?1
                         AND ((owner = ?2 AND token = ?3 AND lease_until_ms > {NOW_MS}) OR owner = ?4)"
                    ))?
                    .query_row(params![key, owner, token, to], |_| Ok(()))
                    .optional()?
                    .is_some();
                if !takes_over {
                    return Ok(None);
                }
                let token: i64 = tx
                    .prepare_cached("UPDATE polylock_fencing SET token = token + 1 WHERE name = ?1 RETURNING token")?
                    .query_row(params![key], |row| row.get(0))?;
                tx.prepare_cached(&format!(
                    "UPDATE polylock_locks SET owner = ?2, token = ?3, lease_until_ms = {NOW_MS} + ?4 WHERE name = ?1"
                ))?
                .execute(params![key, to, token, lease_ms])?;
                tx.commit()?;
                Ok(Some(token as u64))
            })
            .await?;
        // The file moves with the hold, out of the old hold's state into the new one's.
        let file = token.and_then(|_| HeldFile::of(from).and_then(HeldFile::take));
        let state = file.map(|file| Arc::new(HeldFile(Mutex::new(Some(file)))) as _);
        Ok(token.map(|token| Acquired { token, attempt_started, state }))
    }

    fn transfers(&self, kind: LockKind) -> bool {
        kind == LockKind::Reentrant
    }

    async fn is_locked(&self, key: &str, _kind: LockKind) -> Result<bool> {
        Ok(self.lease_left(key).await?.is_some())
    }

    async fn remaining_lease(&self, key: &str, _kind: LockKind) -> Result<Option<Duration>> {
        // Without the millisecond `duration_ms` pads every row with: callers see the lease asked.
        Ok(self.lease_left(key).await?.map(|left| left.saturating_sub(Duration::from_millis(1))))
    }

    async fn force_unlock(&self, key: &str, _kind: LockKind) -> Result<bool> {
        let key = key.to_string();
        let was_live: Option<bool> = self
            .with_conn(move |conn| {
                conn.prepare_cached(&format!(
                    "DELETE FROM polylock_locks WHERE name = ?1 RETURNING lease_until_ms > {NOW_MS}"
                ))?
                .query_row(params![key], |row| row.get(0))
                .optional()
            })
            .await?;
        self.wake_waiters();
        Ok(was_live == Some(true))
    }
}

#[async_trait]
impl Store for SqliteBackend {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            backend: "sqlite",
            lock_kinds: &[LockKind::Reentrant],
            rw_locks: true,
            semaphores: true,
            counters: true,
            versioned_values: true,
            elections: true,
        }
    }

    fn rw_locks(self: Arc<Self>) -> Option<Arc<SharedStore>> {
        Some(Arc::new(rw_lock::SqliteRwLocks { db: self }))
    }

    fn semaphores(self: Arc<Self>) -> Option<Arc<PermitStore>> {
        Some(Arc::new(semaphore::SqliteSemaphores { db: self }))
    }

    fn latches(self: Arc<Self>) -> Option<Arc<dyn crate::spi::LatchStore>> {
        Some(Arc::new(latch::SqliteLatches { db: self }))
    }

    fn counters(self: Arc<Self>) -> Option<Arc<dyn CounterStore>> {
        Some(Arc::new(values::SqliteValues { db: self }))
    }

    fn versions(self: Arc<Self>) -> Option<Arc<dyn VersionStore>> {
        Some(Arc::new(values::SqliteValues { db: self }))
    }

    fn inspect(self: Arc<Self>) -> Option<Arc<dyn crate::spi::InspectStore>> {
        Some(self)
    }

    fn locks(self: Arc<Self>) -> Arc<ExclusiveStore> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Connections opening one new database file at once (as `polylock run` processes do)
    /// all get it set up; none fails with "database is locked".
    #[test]
    fn connections_opening_a_new_file_at_once_all_succeed() {
        for round in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("locks.db").display().to_string();
            let start = std::sync::Barrier::new(8);
            std::thread::scope(|scope| {
                let opening: Vec<_> = (0..8)
                    .map(|_| {
                        scope.spawn(|| {
                            start.wait();
                            open_connection(&path).map(drop)
                        })
                    })
                    .collect();
                for opened in opening {
                    if let Err(err) = opened.join().unwrap() {
                        panic!("round {round}: {err} ({:?})", std::error::Error::source(&err));
                    }
                }
            });
        }
    }
}
