//! Semaphores on PostgreSQL and MySQL/MariaDB: N slot locks per semaphore, each a session
//! lock (`pg_advisory_lock` / `GET_LOCK`) on `<name>#<i>` through the mutex's name mapping
//! (polylock-id's `sql_names`), held by a connection of its own as a mutex's is (session.rs):
//! a permit is one slot, given back by the server the moment its holder's connection ends.
//!
//! An acquisition tries every slot once, from a random start, and when all are busy blocks on
//! one of them (the random start) in the server's queue; so that a permit freed on another
//! slot is not missed, a wait on a semaphore of several permits looks at every slot again
//! after a jittered second. The count is fixed by the first use of the name, in
//! `polylock_semaphores(name, permits)`; another count is refused (`InvalidArgument`). Tokens
//! come from `polylock_fencing`, one counter per semaphore name (the mutex's counter name).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use super::dialect::Dialect;
use super::session::{IdleLimit, Session, SessionConn, Unrecorded};
use super::store::SqlStore;
use super::waiting::{session_connection, try_once};
use crate::error::{Error, Result};
use crate::spi::{AcquireRequest, Acquired, HeldLock, HoldStore, Permits, Release, Renewal};

/// How long a waiter blocks on its slot before it looks at every slot again (± a quarter).
const SLOT_WAIT: Duration = Duration::from_millis(1000);

pub(crate) struct SqlSemaphores<D: Dialect> {
    store: Arc<SqlStore<D>>,
}

/// The key slot `slot` of semaphore `key` is locked under, before the name mapping.
fn slot_key(key: &str, slot: u32) -> String {
    format!("{key}#{slot}")
}

impl<D: Dialect> SqlSemaphores<D> {
    pub fn new(store: Arc<SqlStore<D>>) -> Self {
        SqlSemaphores { store }
    }

    /// Record the count on first use; refuse another.
    async fn check_count(&self, key: &str, permits: u32) -> Result<()> {
        let fixed = D::fix_permits(&self.store.shared, &D::session_fencing_name(key), permits)
            .await
            .map_err(|e| self.store.err(e))?;
        Permits(permits).check_fixed(key, fixed)
    }

    /// One pass: try every slot from `first` on, on one connection, then (unless this is a
    /// try-once) block on slot `first` until `until`. `Ok(None)` when nothing was taken.
    async fn pass(
        &self,
        request: &AcquireRequest<Permits>,
        first: u32,
        until: Option<Instant>,
    ) -> Result<Option<(Unrecorded<D::DB>, D::SessionLock, Instant)>> {
        let store = &self.store;
        let permits = request.kind.0;
        let Some(conn) =
            session_connection(&store.sessions, request, store.config.max_sessions).await.map_err(|e| store.err(e))?
        else {
            return Ok(None);
        };
        // Until a session records the slot, dropping this acquisition closes the connection.
        let mut conn = Unrecorded::new(conn);
        let mut connection_id = None;
        for step in 0..permits {
            let lock = D::session_lock(&slot_key(&request.key, (first + step) % permits));
            let attempt_started = Instant::now();
            let (locked, id) = D::try_session_lock(conn.conn(), &lock).await.map_err(|e| store.err(e))?;
            if locked {
                return Ok(Some((conn, lock, attempt_started)));
            }
            connection_id = Some(id);
            if request.cancel.is_cancelled() {
                break;
            }
        }
        let Some(id) = connection_id.filter(|_| !try_once(request) && !request.cancel.is_cancelled()) else {
            drop(conn.into_inner()); // holds nothing: back to the pool
            return Ok(None);
        };
        let lock = D::session_lock(&slot_key(&request.key, first));
        store.wait_for_lock(&request.cancel, until, conn, lock, id).await
    }
}

#[async_trait]
impl<D: Dialect> HoldStore<Permits> for SqlSemaphores<D> {
    async fn acquire(&self, request: &AcquireRequest<Permits>) -> Result<Option<Acquired>> {
        super::names::check_name(&request.key)?;
        let permits = request.kind.0;
        if permits == 0 {
            return Err(Error::invalid_argument(format!("semaphore '{}' needs at least one permit", request.key)));
        }
        self.check_count(&request.key, permits).await?;
        let (mut conn, lock, granted_at) = loop {
            let first = fastrand::u32(..permits);
            // With one permit there is no other slot to look at: wait in the server's queue.
            let until = match request.deadline {
                _ if permits == 1 => request.deadline,
                deadline => {
                    let step = SLOT_WAIT.mul_f64(0.75 + fastrand::f64() / 2.0);
                    Some(deadline.map_or(Instant::now() + step, |deadline| deadline.min(Instant::now() + step)))
                }
            };
            if let Some(granted) = self.pass(request, first, until).await? {
                break granted;
            }
            let deadline_passed = request.deadline.is_some_and(|deadline| Instant::now() >= deadline);
            if try_once(request) || deadline_passed || request.cancel.is_cancelled() {
                return Ok(None);
            }
        };
        // An error drops the connection unrecorded, which closes it and frees the slot.
        let idle = IdleLimit::set::<D>(conn.conn(), request.lease).await.map_err(|e| self.store.err(e))?;
        let token =
            D::draw_tokens(conn.conn(), &D::session_fencing_name(&request.key)).await.map_err(|e| self.store.err(e))?;
        let session = Session::<D>::start(
            SessionConn { conn: conn.into_inner(), lock, idle },
            granted_at + request.lease,
            self.store.config.session_check,
            request.lost.clone(),
        );
        Ok(Some(Acquired { token, attempt_started: granted_at, state: session.into_state() }))
    }

    async fn renew(&self, held: &HeldLock<Permits>, lease: Duration) -> Result<Renewal> {
        Ok(Session::<D>::renew_held(held, lease).await)
    }

    async fn release(&self, held: &HeldLock<Permits>, holds_left: u32) -> Result<Release> {
        Ok(Session::<D>::release_held(held, holds_left).await)
    }

    /// Whether any slot is held, by anyone.
    async fn is_locked(&self, key: &str, permits: Permits) -> Result<bool> {
        for slot in 0..permits.0 {
            let lock = D::session_lock(&slot_key(key, slot));
            if D::session_lock_taken(&self.store.shared, &lock).await.map_err(|e| self.store.err(e))? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}
