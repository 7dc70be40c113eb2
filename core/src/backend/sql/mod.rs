//! `postgres://` / `postgresql://` and `mysql://` / `mariadb://`: locks for teams whose only
//! shared infrastructure is a database, through sqlx.
//!
//! Two kinds:
//! - `Reentrant` (the default) is the database's own session lock: `pg_advisory_lock` on
//!   PostgreSQL, `GET_LOCK` on MySQL/MariaDB. It is held by a dedicated connection for as
//!   long as the hold lasts, so a crashed process frees it the moment its connection drops.
//!   Waiting is the server's own blocking call (bounded by `lock_timeout` / `GET_LOCK`'s
//!   timeout); cancelling sends the server a cancel (`pg_cancel_backend` / `KILL QUERY`).
//!   A background check pings the connection every `session_check` (default 1s): a killed
//!   session or a dropped connection marks the guard lost. While it holds, the session is told
//!   to end after a silence of its lease rounded up to whole seconds plus one
//!   (`idle_session_timeout` on PostgreSQL 14+, `wait_timeout` on MySQL/MariaDB; session.rs),
//!   so the server frees the lock of a paused or cut-off holder instead of keeping it for as
//!   long as the pause lasts; the setting is put back before the connection returns to its pool.
//! - `Lease` is ShedLock's table (`shedlock(name, lock_until, locked_at, locked_by)`), with
//!   the database's clock, so a Java job scheduled with ShedLock and a polylock lease lock
//!   on the same name exclude each other. Renewals learn of loss, as on SQLite.
//!
//! Read-write locks (`rw_lock.rs`, `rw_session.rs`) and semaphores (`semaphore.rs`) are session
//! holds too, each on a connection of its own from the session pool: PostgreSQL's shared and
//! exclusive advisory locks on the mutex's key; on MySQL/MariaDB InnoDB row locks on
//! `polylock_rw` held by an open transaction, writers behind the mutex's `GET_LOCK`; a
//! semaphore is N slot session locks `<name>#<i>`, its count fixed in `polylock_semaphores`.
//!
//! Queries: `is_locked` and `remaining_lease` read `pg_locks` / `IS_USED_LOCK` for session
//! locks (held ones answer `Duration::MAX`: the database keeps no expiry for them) and the
//! ShedLock row's `lock_until` for lease locks. `force_unlock` ends a lease row now; on a
//! session lock it is refused with a typed error, as it would mean ending another client's
//! database session.
//!
//! Both kinds take a fencing token from `polylock_fencing(name, token)`, bumped while the lock
//! is already held, so tokens grow in the order the lock was granted. Each acquisition draws
//! two (the counter goes up by 2, a new name starts at 2) and issues the first; the second is
//! set aside for a local handoff.
//!
//! Local handoffs (engine/handoff.rs; both kinds): when an owner releases a lock another owner
//! of the same client waits for, the lock moves without ever being free. A session lock stays
//! on its connection (the new owner's hold carries the same session), which draws the token
//! set aside (`UPDATE polylock_fencing SET token = token + 1`) on that very connection, so a
//! killed session fails the transfer instead of handing on a lock it lost; a failed transfer
//! closes the connection, which frees the lock. A lease lock's ShedLock row is rewritten to
//! the new owner (`locked_by`, `locked_at`, `lock_until` from the database clock, only while
//! it is still the old owner's and live) with the counter bump, in one statement. The new
//! owner starts at once with the reserved token; a transfer that finds the hold gone marks it
//! lost, and whoever holds the lock then has a greater token. A session lock's connection
//! check reports to the owner the lock moved to. A waiter handed the lock drops its own store
//! attempt: a blocked `pg_advisory_lock` / `GET_LOCK` is cancelled on the server (and anything
//! it was granted meanwhile given up) before its connection goes back to the pool, and a lease
//! attempt runs to its end in a task of its own and gives back a row it won for nobody. The
//! servers queue session-lock waiters and grant the oldest (`Backend::grants_in_order`), so a
//! run of handoffs on a session lock ends with a plain release.
//!
//! Connections: a shared pool (`pool_size`, default 4) for lease statements, fencing and
//! cancels, and a session pool (up to `max_sessions`, default 64) from which each held *or
//! waiting* session lock takes one connection. N held session locks therefore cost N
//! connections plus the shared pool, and waiters never take connections from other work.
//! Released session connections go back to the session pool for the next lock. On PostgreSQL,
//! the first lease lock also takes one session-pool connection for `LISTEN polylock_release`.
//!
//! Layout: `store.rs` is the one engine (which kind is kept where, sessions, waits, fencing,
//! handoffs); `dialect.rs` is the trait of statements each database supplies (`postgres.rs`,
//! `mysql.rs`); `session.rs` keeps a held session lock; `waiting.rs` has the helpers that keep
//! a connection in step when a wait is given up; `config.rs` reads the URL; `errors.rs` maps
//! sqlx's errors.
//!
//! URL options (besides `namespace` and `lease`): `pool_size`, `max_sessions`,
//! `session_check`, `connect_timeout` (default 10s), `table` (ShedLock table, default
//! `shedlock`), and sqlx's own TLS and connection options (`sslmode`, `sslrootcert`,
//! `sslcert`, `sslkey`, `application_name`, `options` on PostgreSQL; `ssl-mode`, `ssl-ca`,
//! `ssl-cert`, `ssl-key`, `charset`, `collation`, `socket`, `timezone` on MySQL).

mod config;
mod counters;
mod dialect;
mod errors;
mod inspect;
mod latch;
#[cfg(feature = "mysql")]
mod mysql;
mod names;
#[cfg(feature = "postgres")]
mod postgres;
mod rw_lock;
mod rw_session;
mod semaphore;
mod session;
mod store;
mod values;
mod waiting;

use std::sync::Arc;

use async_trait::async_trait;

use crate::spi::{Capabilities, CounterStore, ExclusiveStore, PermitStore, SharedStore, Store, VersionStore};
use counters::SqlCounters;
use dialect::Dialect;
use rw_lock::SqlRwLocks;
use semaphore::SqlSemaphores;
use store::{SqlStore, KINDS};
use values::SqlValues;

/// What the SQL backend offers: mutexes of two kinds, read-write locks and semaphores.
#[async_trait]
impl<D: Dialect> Store for SqlStore<D> {
    fn inspect(self: Arc<Self>) -> Option<Arc<dyn crate::spi::InspectStore>> {
        inspect::inspector(self)
    }

    /// `connect_timeout`: the pool hands a retried call another connection within it.
    fn retry_within(&self) -> std::time::Duration {
        self.config.connect_timeout
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            rw_locks: true,
            semaphores: true,
            counters: true,
            versioned_values: true,
            elections: true,
            ..Capabilities::locks_only(D::BACKEND, KINDS)
        }
    }

    fn session_bound(&self) -> Option<crate::spi::SessionBound> {
        Some(crate::spi::SessionBound {
            max: self.config.max_sessions,
            option: "max_sessions",
            lock_kinds: &[crate::spi::LockKind::Reentrant],
        })
    }

    fn locks(self: Arc<Self>) -> Arc<ExclusiveStore> {
        self
    }

    fn rw_locks(self: Arc<Self>) -> Option<Arc<SharedStore>> {
        Some(Arc::new(SqlRwLocks::new(self)))
    }

    fn semaphores(self: Arc<Self>) -> Option<Arc<PermitStore>> {
        Some(Arc::new(SqlSemaphores::new(self)))
    }

    fn latches(self: Arc<Self>) -> Option<Arc<dyn crate::spi::LatchStore>> {
        Some(Arc::new(latch::SqlLatches::new(self)))
    }

    fn counters(self: Arc<Self>) -> Option<Arc<dyn CounterStore>> {
        Some(Arc::new(SqlCounters::new(self)))
    }

    fn versions(self: Arc<Self>) -> Option<Arc<dyn VersionStore>> {
        Some(Arc::new(SqlValues::new(self)))
    }

    async fn close(&self) {
        self.shut_down().await;
    }
}

/// `postgres://`: the SQL engine with PostgreSQL's statements.
#[cfg(feature = "postgres")]
pub(crate) type PgBackend = store::SqlStore<postgres::Pg>;

/// `mysql://`, `mariadb://`: the SQL engine with MySQL's statements.
#[cfg(feature = "mysql")]
pub(crate) type MySqlBackend = store::SqlStore<mysql::MySqlDialect>;
