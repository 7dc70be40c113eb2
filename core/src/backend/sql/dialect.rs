//! What PostgreSQL and MySQL/MariaDB do differently: the statements. Everything else (the
//! pools, which kind is kept where, waiting, interrupting, sessions, fencing, handoffs, error
//! mapping) is the one engine in `store.rs` and `session.rs`.
//!
//! Statements answer `sqlx::Error`; the engine turns them into polylock's errors, so each
//! database's messages say the same things.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::{Database, Pool};
use tokio::sync::watch;
use tokio::task::AbortHandle;

use crate::backend::poll::{Attempt, Backoff};
use crate::spi::RwMode;

/// The session connection a statement runs on.
pub(crate) type Conn<D> = sqlx::pool::PoolConnection<<D as Dialect>::DB>;

/// The options sqlx connects with.
pub(crate) type Options<D> = <<<D as Dialect>::DB as Database>::Connection as sqlx::Connection>::Options;

/// The longest versioned value name, in bytes: MySQL's `polylock_values.name` is a VARBINARY
/// of this size (an InnoDB key holds 3072 bytes), and PostgreSQL keeps the same limit.
pub(crate) const VALUE_NAME_BYTES: usize = 1024;

/// How a blocking session-lock statement ended.
pub(crate) enum LockWait {
    Granted,
    /// The server's own timeout ran out; nothing is held.
    TimedOut,
    /// Interrupted on the server (by our interrupt, or by someone else's).
    Interrupted,
    Failed(sqlx::Error),
}

#[async_trait]
pub(crate) trait Dialect: Send + Sync + Sized + 'static {
    type DB: Database;
    /// A session lock's identity on the server: PostgreSQL's advisory key, MySQL's lock name.
    type SessionLock: Send + Sync + 'static;
    /// The server's id of a connection, to interrupt its wait from another connection.
    type ConnectionId: Copy + Send + Sync + 'static;

    /// The database as users know it, for messages: "PostgreSQL", "MySQL/MariaDB".
    const DATABASE: &'static str;
    /// The backend's name in capabilities and `Unsupported` errors.
    const BACKEND: &'static str;
    /// The scheme sqlx connects with, and its own URL options polylock passes through.
    const SQLX_SCHEME: &'static str;
    const SQLX_OPTIONS: &'static [&'static str];
    /// The pause between lease attempts when no release is announced.
    const LEASE_BACKOFF: Backoff;
    /// Whether releases of lease rows reach waiters in other processes as a message
    /// (`watch_releases` is `Some`); where not, those waiters poll within `LEASE_BACKOFF.max`.
    const ANNOUNCES_RELEASES: bool;

    /// The statements for ShedLock's table named `table`.
    fn new(table: String) -> Self;

    fn connect_options(sqlx_url: &str) -> Result<Options<Self>, sqlx::Error>;

    /// Create the fencing counter table and ShedLock's table if they are missing.
    async fn create_schema(&self, pool: &Pool<Self::DB>) -> Result<(), sqlx::Error>;

    // Session locks: the statements run on the connection that holds (or waits for) the lock.

    fn session_lock(key: &str) -> Self::SessionLock;

    /// The fencing counter's row for a session lock on `key`.
    fn session_fencing_name(key: &str) -> String;

    /// Take the lock if it is free, without waiting; also the connection's id.
    async fn try_session_lock(
        conn: &mut Conn<Self>,
        lock: &Self::SessionLock,
    ) -> Result<(bool, Self::ConnectionId), sqlx::Error>;

    /// Block on the server until the lock is granted or `wait` (`None`: a very long time)
    /// runs out.
    async fn wait_session_lock(conn: &mut Conn<Self>, lock: &Self::SessionLock, wait: Option<Duration>) -> LockWait;

    /// Interrupt the blocking statement of connection `id`, from another connection.
    async fn interrupt_wait(shared: &Pool<Self::DB>, id: Self::ConnectionId);

    /// After an interrupted wait: give up the lock, in case it was granted just before the
    /// interrupt landed, so the connection goes back to the pool holding nothing.
    async fn give_up_after_interrupt(conn: &mut Conn<Self>, lock: &Self::SessionLock) -> Result<(), sqlx::Error>;

    /// Whether the session is alive and still holds the lock.
    async fn session_holds(conn: &mut Conn<Self>, lock: &Self::SessionLock) -> Result<bool, sqlx::Error>;

    /// Give the lock back; true if the session still held it.
    async fn session_unlock(conn: &mut Conn<Self>, lock: &Self::SessionLock) -> Result<bool, sqlx::Error>;

    /// Have the server end this session, and the locks it holds, once it has been silent
    /// (no statement) for `idle`: a holder that is paused (SIGSTOP, a long GC pause, a frozen
    /// VM) keeps its connection open, and without this the server keeps its session lock for
    /// as long as the pause lasts. Answers the setting to put back when the connection returns
    /// to its pool ([`Dialect::restore_idle`]), `None` where the server has no such limit
    /// (PostgreSQL before 14: nothing is set, and nothing needs putting back).
    async fn limit_idle(conn: &mut Conn<Self>, idle: Duration) -> Result<Option<String>, sqlx::Error>;

    /// Put back the setting [`Dialect::limit_idle`] answered, before the connection goes back
    /// to its pool holding nothing, so idle pooled connections are not ended by the server.
    async fn restore_idle(conn: &mut Conn<Self>, before: &str) -> Result<(), sqlx::Error>;

    /// Whether any session holds the lock.
    async fn session_lock_taken(shared: &Pool<Self::DB>, lock: &Self::SessionLock) -> Result<bool, sqlx::Error>;

    // Fencing: `polylock_fencing(name, token)`, bumped only while the lock is held.

    /// Draw two tokens and return the first; the second is set aside for the owner the hold
    /// may be handed to. A new name starts at 2, issuing 1.
    async fn draw_tokens(conn: &mut Conn<Self>, fencing_name: &str) -> Result<u64, sqlx::Error>;

    /// Step the counter by one for a handoff; returns the new counter (the token set aside
    /// is the one before it). `RowNotFound` when the name has no counter.
    async fn step_token(conn: &mut Conn<Self>, fencing_name: &str) -> Result<u64, sqlx::Error>;

    // Read-write locks (rw_lock.rs): each owner's sides ride one connection of their own.

    /// A read-write lock's identity: on PostgreSQL the mutex's advisory key (so the write side
    /// and the mutex of one name are one lock), on MySQL its row name in `polylock_rw`.
    type RwLock: Send + Sync + 'static;

    fn rw_lock(key: &str) -> Self::RwLock;

    /// Take `mode` if nobody else's side conflicts, without waiting (the connection holds
    /// nothing before); also the connection's id. Not taken, the connection holds nothing.
    async fn try_rw_lock(
        &self,
        conn: &mut Conn<Self>,
        lock: &Self::RwLock,
        mode: RwMode,
    ) -> Result<(bool, Self::ConnectionId), sqlx::Error>;

    /// Block on the server until `mode` is granted or `wait` (`None`: a very long time) runs
    /// out. Whatever the outcome, [`Dialect::rw_give_up`] leaves the connection holding nothing.
    async fn wait_rw_lock(
        &self,
        conn: &mut Conn<Self>,
        lock: &Self::RwLock,
        mode: RwMode,
        wait: Option<Duration>,
    ) -> LockWait;

    /// Take the read side on the connection that holds the write side (a downgrade); never waits.
    async fn rw_read_on_writer(conn: &mut Conn<Self>, lock: &Self::RwLock) -> Result<(), sqlx::Error>;

    /// Give back `mode`; `other_side_left` when the connection still carries the other side.
    /// True if it was held.
    async fn rw_unlock(
        conn: &mut Conn<Self>,
        lock: &Self::RwLock,
        mode: RwMode,
        other_side_left: bool,
    ) -> Result<bool, sqlx::Error>;

    /// After a wait that did not end in a grant (or one that did, for nobody): hold nothing.
    async fn rw_give_up(conn: &mut Conn<Self>, lock: &Self::RwLock) -> Result<(), sqlx::Error>;

    /// Draw two tokens for a read-write grant held on `conn` and return the first (see
    /// [`Dialect::draw_tokens`]); where the hold is an open transaction the counter is bumped
    /// on the shared pool, so the counter's row is not kept locked for the whole hold.
    async fn rw_draw_tokens(
        shared: &Pool<Self::DB>,
        conn: &mut Conn<Self>,
        fencing_name: &str,
    ) -> Result<u64, sqlx::Error>;

    // Semaphores (semaphore.rs): N slot session locks; the count in `polylock_semaphores`.

    /// The count semaphore `name` was first used with: `permits` is recorded if it has none.
    async fn fix_permits(shared: &Pool<Self::DB>, name: &str, permits: u32) -> Result<u32, sqlx::Error>;

    // Lease locks: ShedLock's row, with the database's clock, on the shared pool.

    /// One attempt: take the row if it is free or expired and draw two tokens (issuing the
    /// first), or report the holder's time left.
    async fn lease_attempt(
        &self,
        shared: &Pool<Self::DB>,
        name: &str,
        by: &str,
        lease: Duration,
    ) -> Result<Attempt, sqlx::Error>;

    /// End `by`'s live lease on `name` now (the row stays, as ShedLock leaves it) and announce
    /// it where the database can. True if it was `by`'s.
    async fn lease_give_back(&self, shared: &Pool<Self::DB>, name: &str, by: &str) -> Result<bool, sqlx::Error>;

    /// [`Dialect::lease_give_back`] for a row an abandoned attempt won with `token`, only while
    /// nothing has happened to the lock since: the fencing counter still stands at `token + 1`.
    /// A transfer to the same owner (which steps the counter) made the row a live hold of
    /// that owner's, which must not be ended by the attempt it overtook.
    async fn lease_give_back_won(
        &self,
        shared: &Pool<Self::DB>,
        name: &str,
        by: &str,
        token: u64,
    ) -> Result<bool, sqlx::Error>;

    /// Extend `by`'s live lease to `lease` from now; true if it was still `by`'s.
    async fn lease_renew(
        &self,
        shared: &Pool<Self::DB>,
        name: &str,
        by: &str,
        lease: Duration,
    ) -> Result<bool, sqlx::Error>;

    /// Whether `by` holds a live lease on `name`.
    async fn lease_is_held_by(&self, shared: &Pool<Self::DB>, name: &str, by: &str) -> Result<bool, sqlx::Error>;

    /// Move a live lease from `from` (or `to`, whose abandoned attempt may have won it) to
    /// `to` with a fresh lease and step the counter by one, in one statement; the token set
    /// aside, or `None` when neither held it.
    async fn lease_transfer(
        &self,
        shared: &Pool<Self::DB>,
        name: &str,
        from: &str,
        to: &str,
        lease: Duration,
    ) -> Result<Option<u64>, sqlx::Error>;

    /// The live lease's time left, `None` if the row is free or missing.
    async fn lease_left(&self, shared: &Pool<Self::DB>, name: &str) -> Result<Option<Duration>, sqlx::Error>;

    /// End whoever's live lease on `name` now, and announce it where the database can.
    async fn lease_force_end(&self, shared: &Pool<Self::DB>, name: &str) -> Result<bool, sqlx::Error>;

    /// Turn releases announced by other processes into bumps of `released`, in a task of its
    /// own on a `sessions` connection; `None` where the database cannot announce (waiters then
    /// rely on `LEASE_BACKOFF`).
    fn watch_releases(sessions: Pool<Self::DB>, released: Arc<watch::Sender<u64>>) -> Option<AbortHandle>;

    // Countdown latches (latch.rs): `polylock_latches(name, count)`, on the shared pool; a
    // latch at zero keeps its row, and zero (or no row) means open.

    /// Set the count of latch `name` to `count` if it is open; whether it was set.
    async fn latch_try_set(shared: &Pool<Self::DB>, name: &str, count: i64) -> Result<bool, sqlx::Error>;

    /// Take one off the count of latch `name` if it is above zero.
    async fn latch_count_down(shared: &Pool<Self::DB>, name: &str) -> Result<(), sqlx::Error>;

    /// The count of latch `name`, `None` without a row.
    async fn latch_count(shared: &Pool<Self::DB>, name: &str) -> Result<Option<i64>, sqlx::Error>;

    // Counters (counters.rs): Leaf's `leaf_alloc`, on the shared pool.

    /// Add `count` to counter `tag`'s `max_id` and return the new `max_id`, in one statement
    /// that has committed when it returns; a tag without a row gets one at `count` (as if it
    /// had started at 0), with `step` = `step`.
    async fn reserve(shared: &Pool<Self::DB>, tag: &str, count: i64, step: i32) -> Result<i64, sqlx::Error>;

    /// Counter `tag`'s `max_id`, `None` without a row.
    async fn counter_max_id(shared: &Pool<Self::DB>, tag: &str) -> Result<Option<i64>, sqlx::Error>;

    // Versioned values (values.rs): `polylock_values(name, value, version)`; a deleted value
    // keeps its row with `value` NULL, so its version keeps growing.

    /// The live value and its version.
    async fn value_get(shared: &Pool<Self::DB>, name: &str) -> Result<Option<(Vec<u8>, i64)>, sqlx::Error>;

    /// Write a value where there is none (no row, or a deleted one); the new version, `None`
    /// when a live value is there.
    async fn value_create(shared: &Pool<Self::DB>, name: &str, value: &[u8]) -> Result<Option<i64>, sqlx::Error>;

    /// Write over the live value of version `expected`; the new version, `None` when the
    /// value is not live at that version.
    async fn value_replace(
        shared: &Pool<Self::DB>,
        name: &str,
        expected: i64,
        value: &[u8],
    ) -> Result<Option<i64>, sqlx::Error>;

    /// Delete the live value of version `expected` (its row stays, keeping the version);
    /// whether it was there.
    async fn value_delete(shared: &Pool<Self::DB>, name: &str, expected: i64) -> Result<bool, sqlx::Error>;

    /// The database server's clock, in milliseconds since the Unix epoch.
    async fn server_millis(shared: &Pool<Self::DB>) -> Result<i64, sqlx::Error>;
}
