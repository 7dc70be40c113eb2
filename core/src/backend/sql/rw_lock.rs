//! Read-write locks on PostgreSQL and MySQL/MariaDB. Each side of each owner is held by a
//! connection of its own from the session pool, as a session lock is (see `rw_session.rs`),
//! so a crashed process frees its sides the moment its connection drops:
//!
//! - **PostgreSQL**: `pg_advisory_lock_shared` for readers and `pg_advisory_lock` for
//!   writers, on the mutex's advisory key (polylock-id's `sql_names`): the write side and the
//!   polylock mutex of one name are one lock, and readers exclude mutex holders too. The
//!   server queues a new shared request behind a waiting exclusive one, so readers do not
//!   starve a waiting writer.
//! - **MySQL/MariaDB** (`GET_LOCK` has no shared mode): one row per lock in `polylock_rw`,
//!   locked by an open transaction: `LOCK IN SHARE MODE` (MariaDB) / `FOR SHARE` (MySQL 8)
//!   for readers, `FOR UPDATE` for writers, who first take the mutex's `GET_LOCK` (so the
//!   write side and the mutex of one name exclude each other; readers and mutex holders do
//!   not). InnoDB queues a new shared request behind a waiting exclusive one (measured on
//!   MariaDB 10.11 by `core/tests/sql_rw_semaphore.rs`).
//!
//! A downgrade (the write holder takes the read side) rides the write side's own connection:
//! PostgreSQL takes the shared advisory lock there (a session never conflicts with itself),
//! and releasing the write side then leaves exactly a shared lock; on MySQL the writer's row
//! lock covers reading, and releasing the write side ends the transaction (readers get in)
//! while the `GET_LOCK` stays until the read side goes too (writers stay out). An upgrade is
//! refused before it gets here (primitives/rw_lock.rs).
//!
//! Tokens come from `polylock_fencing`, under the mutex's counter name (one counter per name).
//! Waits are the server's blocking calls, bounded by the caller's deadline and interrupted on
//! the server when the caller gives up (`pg_cancel_backend` / `KILL QUERY`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex as SyncMutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use super::dialect::{Dialect, LockWait};
use super::errors::map_error;
use super::rw_session::RwSession;
use super::session::{IdleLimit, Unrecorded};
use super::store::SqlStore;
use super::waiting::{answer_or_interrupt, in_own_task_for_caller, session_connection, try_once, wait_left_until};
use crate::error::{Error, Result};
use crate::owner::Owner;
use crate::spi::{AcquireRequest, Acquired, HeldLock, HoldStore, Release, Renewal, RwMode};

/// The write sides this client holds, by key and owner, so the holder's read request rides
/// the same connection (a downgrade).
type Writers<D> = HashMap<(String, Owner), Weak<RwSession<D>>>;

pub(crate) struct SqlRwLocks<D: Dialect> {
    store: Arc<SqlStore<D>>,
    writers: SyncMutex<Writers<D>>,
}

/// A connection that has taken a side but not yet recorded it in a session, and when.
type Granted<D> = (Unrecorded<<D as Dialect>::DB>, Instant);

impl<D: Dialect> SqlRwLocks<D> {
    pub fn new(store: Arc<SqlStore<D>>) -> Self {
        SqlRwLocks { store, writers: SyncMutex::new(HashMap::new()) }
    }

    fn writers(&self) -> std::sync::MutexGuard<'_, Writers<D>> {
        self.writers.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn writer_session(&self, key: &str, owner: Owner) -> Option<Arc<RwSession<D>>> {
        self.writers().get(&(key.to_string(), owner)).and_then(Weak::upgrade)
    }

    fn record_writer(&self, key: &str, owner: Owner, session: &Arc<RwSession<D>>) {
        let mut writers = self.writers();
        writers.retain(|_, session| session.strong_count() > 0);
        writers.insert((key.to_string(), owner), Arc::downgrade(session));
    }

    fn forget_if_done(&self, key: &str, owner: Owner, session: &Arc<RwSession<D>>) {
        if !session.is_empty() {
            return;
        }
        let mut writers = self.writers();
        let entry = (key.to_string(), owner);
        if writers.get(&entry).is_some_and(|recorded| std::ptr::eq(recorded.as_ptr(), Arc::as_ptr(session))) {
            writers.remove(&entry);
        }
    }

    /// The write holder asks for the read side: taken on its own connection at once.
    async fn downgrade(&self, request: &AcquireRequest<RwMode>) -> Result<Option<Acquired>> {
        let Some(session) = self.writer_session(&request.key, request.owner).filter(|s| s.holds_write()) else {
            return Ok(None);
        };
        let fencing_name = D::session_fencing_name(&request.key);
        let taken = session
            .read_beside_write(self.store.shared.clone(), fencing_name, request.lease, request.lost.clone())
            .await
            .map_err(|e| self.store.err(e))?;
        Ok(taken.map(|(token, attempt_started)| Acquired {
            token,
            attempt_started,
            state: Some(session as Arc<dyn std::any::Any + Send + Sync>),
        }))
    }

    /// Block on the server until the deadline, in a task of its own that interrupts the wait
    /// on the server when the caller gives up or goes away, or the deadline passes (MySQL's
    /// own timer counts whole seconds). `Some` holding the side.
    async fn wait_for_side(
        &self,
        request: &AcquireRequest<RwMode>,
        mut conn: Unrecorded<D::DB>,
        id: D::ConnectionId,
    ) -> Result<Option<Granted<D>>> {
        let (dialect, shared, shown_url) =
            (self.store.dialect.clone(), self.store.shared.clone(), self.store.config.shown_url.clone());
        let (cancel, deadline, mode, lock) =
            (request.cancel.clone(), request.deadline, request.kind, D::rw_lock(&request.key));
        let wait = |abandoned: CancellationToken| async move {
            let given_up = cancel.child_token();
            let timer = deadline.map(|deadline| {
                let given_up = given_up.clone();
                tokio::spawn(async move {
                    sleep_until(deadline).await;
                    given_up.cancel();
                })
            });
            let _stop_timer = AbortOnDrop(timer);
            loop {
                let (outcome, interrupted) = {
                    let wait = dialect.wait_rw_lock(conn.conn(), &lock, mode, deadline.map(wait_left_until));
                    let interrupt = || D::interrupt_wait(&shared, id);
                    answer_or_interrupt(wait, interrupt, &given_up, &abandoned).await
                };
                let Some(outcome) = outcome else {
                    return Err(Error::backend("the database did not answer a cancelled lock wait"));
                };
                return match outcome {
                    LockWait::Granted if !interrupted => Ok(Some((conn, Instant::now()))),
                    // Granted just before the interrupt, which could still hit a later
                    // statement: the connection is closed (dropped unrecorded), the side with it.
                    LockWait::Granted => Ok(None),
                    LockWait::Failed(err) => Err(map_error(&shown_url, err)),
                    LockWait::TimedOut | LockWait::Interrupted => {
                        let held_nothing = D::rw_give_up(conn.conn(), &lock).await.is_ok();
                        // Waiting for ever, in the server's longest steps.
                        if held_nothing && !interrupted && deadline.is_none() {
                            continue;
                        }
                        if held_nothing {
                            drop(conn.into_inner()); // back to the pool
                        }
                        Ok(None)
                    }
                };
            }
        };
        in_own_task_for_caller(wait, Err(Error::backend("the lock wait stopped with the runtime"))).await
    }
}

struct AbortOnDrop(Option<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}

#[async_trait]
impl<D: Dialect> HoldStore<RwMode> for SqlRwLocks<D> {
    async fn acquire(&self, request: &AcquireRequest<RwMode>) -> Result<Option<Acquired>> {
        super::names::check_name(&request.key)?;
        let mode = request.kind;
        if mode == RwMode::Read {
            if let Some(acquired) = self.downgrade(request).await? {
                return Ok(Some(acquired));
            }
        }
        let store = &self.store;
        let Some(conn) =
            session_connection(&store.sessions, request, store.config.max_sessions).await.map_err(|e| store.err(e))?
        else {
            return Ok(None);
        };
        // Until a session records the side, dropping this acquisition closes the connection.
        let mut conn = Unrecorded::new(conn);
        let attempt_started = Instant::now();
        let lock = D::rw_lock(&request.key);
        let (taken, id) = store.dialect.try_rw_lock(conn.conn(), &lock, mode).await.map_err(|e| store.err(e))?;
        // The lease counts from the grant, as for a session lock.
        let (mut conn, granted_at) = if taken {
            (conn, attempt_started)
        } else if try_once(request) || request.cancel.is_cancelled() {
            drop(conn.into_inner()); // holds nothing: back to the pool
            return Ok(None);
        } else {
            match self.wait_for_side(request, conn, id).await? {
                Some(granted) => granted,
                None => return Ok(None),
            }
        };
        // An error drops the connection unrecorded, which closes it and frees the side.
        let idle = IdleLimit::set::<D>(conn.conn(), request.lease).await.map_err(|e| store.err(e))?;
        let token = D::rw_draw_tokens(&store.shared, conn.conn(), &D::session_fencing_name(&request.key))
            .await
            .map_err(|e| store.err(e))?;
        let session = RwSession::<D>::start(
            lock,
            conn.into_inner(),
            idle,
            mode,
            granted_at + request.lease,
            store.config.session_check,
            request.lost.clone(),
        );
        if mode == RwMode::Write {
            self.record_writer(&request.key, request.owner, &session);
        }
        Ok(Some(Acquired { token, attempt_started: granted_at, state: Some(session) }))
    }

    async fn renew(&self, held: &HeldLock<RwMode>, lease: Duration) -> Result<Renewal> {
        let renewed = match RwSession::<D>::of(held) {
            Some(session) => session.renew(held.kind, lease).await,
            None => false,
        };
        Ok(if renewed { Renewal::Renewed } else { Renewal::Gone })
    }

    async fn release(&self, held: &HeldLock<RwMode>, holds_left: u32) -> Result<Release> {
        let Some(session) = RwSession::<D>::of(held) else { return Ok(Release::Gone) };
        let held_still = if holds_left > 0 {
            session.check(held.kind).await
        } else {
            let released = session.release(held.kind).await;
            self.forget_if_done(&held.key, held.owner, &session);
            released
        };
        Ok(if held_still { Release::Released } else { Release::Gone })
    }
}
