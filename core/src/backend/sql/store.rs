//! The one SQL lock engine: which kind is kept where, session locks on connections of their
//! own, lease locks on ShedLock's table, fencing and local handoffs. The statements come from
//! a [`Dialect`]; see the module docs in `mod.rs` for the behaviour.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::pool::PoolOptions;
use sqlx::Pool;
use tokio::sync::{watch, OnceCell};
use tokio::task::AbortHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::{probe, SqlConfig};
use super::dialect::{Dialect, LockWait};
use super::errors::map_error;
use super::session::{IdleLimit, Session, SessionConn, Unrecorded};
use super::waiting::{answer_or_interrupt, in_own_task_for_caller, session_connection, try_once, wait_left_until};
use crate::backend::poll::{acquire_by_attempts, Attempt};
use crate::error::{Error, Result};
use crate::owner::Owner;
use crate::spi::{AcquireRequest, Acquired, HeldLock, HoldStore, LockKind, LostNotifier, Release, Renewal};
use crate::url::ConnectUrl;
use polylock_id::sql_names::lease_name;

/// Where a kind of lock is kept on a SQL database. Every kind is named, so a kind SQL does
/// not offer can never fall into another kind's statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keeping {
    /// The database's session lock, held by a connection of its own.
    Session,
    /// ShedLock's lease row.
    LeaseRow,
}

impl Keeping {
    fn of<D: Dialect>(kind: LockKind) -> Result<Keeping> {
        match kind {
            LockKind::Reentrant => Ok(Keeping::Session),
            LockKind::Lease => Ok(Keeping::LeaseRow),
            LockKind::Fair | LockKind::Token => Err(Error::unsupported(format!(
                "the {} backend does not offer {} locks (it offers reentrant and lease)",
                D::BACKEND,
                kind.as_str()
            ))),
        }
    }
}

/// The kinds every SQL backend offers.
pub(super) const KINDS: &[LockKind] = &[LockKind::Reentrant, LockKind::Lease];

/// What the lease table records as `locked_by` for an owner: an operator reading the table
/// sees that polylock holds the row, and which client and owner.
fn locked_by(owner: &Owner) -> String {
    format!("polylock:{owner}")
}

pub(crate) struct SqlStore<D: Dialect> {
    pub(super) dialect: Arc<D>,
    /// Lease statements, fencing and interrupts.
    pub(super) shared: Pool<D::DB>,
    /// One connection per held or waiting session lock.
    pub(super) sessions: Pool<D::DB>,
    pub(super) config: SqlConfig,
    /// Bumped for every release this process makes or hears announced.
    released: Arc<watch::Sender<u64>>,
    /// The task turning other processes' announced releases into wake-ups, once started.
    release_watcher: OnceCell<Option<AbortHandle>>,
}

impl<D: Dialect> SqlStore<D> {
    pub(crate) async fn open(url: &mut ConnectUrl) -> Result<Self> {
        let config = SqlConfig::from_url(url, D::SQLX_SCHEME, D::SQLX_OPTIONS)?;
        let options = D::connect_options(&config.sqlx_url).map_err(|e| map_error(&config.shown_url, e))?;
        probe(&options, &config).await?;
        let shared = PoolOptions::<D::DB>::new()
            .max_connections(config.pool_size)
            .acquire_timeout(config.connect_timeout)
            .connect_lazy_with(options.clone());
        let sessions = PoolOptions::<D::DB>::new()
            .max_connections(config.max_sessions)
            .min_connections(0)
            .idle_timeout(Duration::from_secs(60))
            .acquire_timeout(config.connect_timeout)
            .connect_lazy_with(options);
        let dialect = Arc::new(D::new(config.table.clone()));
        dialect.create_schema(&shared).await.map_err(|e| map_error(&config.shown_url, e))?;
        Ok(SqlStore {
            dialect,
            shared,
            sessions,
            config,
            released: Arc::new(watch::channel(0).0),
            release_watcher: OnceCell::new(),
        })
    }

    pub(super) fn err(&self, err: sqlx::Error) -> Error {
        map_error(&self.config.shown_url, err)
    }

    fn announce_release(&self) {
        self.released.send_modify(|n| *n = n.wrapping_add(1));
    }

    async fn acquire_session(&self, request: &AcquireRequest) -> Result<Option<Acquired>> {
        let lock = D::session_lock(&request.key);
        let Some(conn) =
            session_connection(&self.sessions, request, self.config.max_sessions).await.map_err(|e| self.err(e))?
        else {
            return Ok(None);
        };
        // Until a session records the lock, dropping this acquisition closes the connection.
        let mut conn = Unrecorded::new(conn);
        let attempt_started = Instant::now();
        let (locked, id) = D::try_session_lock(conn.conn(), &lock).await.map_err(|e| self.err(e))?;
        // The hold's lease counts from the grant: after a wait, from when the grant arrived
        // (the database keeps no expiry of its own for a session lock, so nothing else can
        // end it earlier), never from when the wait began.
        let (mut conn, lock, granted_at) = if locked {
            (conn, lock, attempt_started)
        } else if try_once(request) || request.cancel.is_cancelled() {
            drop(conn.into_inner()); // holds nothing: back to the pool
            return Ok(None);
        } else {
            match self.wait_for_lock(&request.cancel, request.deadline, conn, lock, id).await? {
                Some(held) => held,
                None => return Ok(None),
            }
        };
        // An error drops the connection unrecorded, which closes it and frees the lock.
        let idle = IdleLimit::set::<D>(conn.conn(), request.lease).await.map_err(|e| self.err(e))?;
        let token =
            D::draw_tokens(conn.conn(), &D::session_fencing_name(&request.key)).await.map_err(|e| self.err(e))?;
        let session = Session::<D>::start(
            SessionConn { conn: conn.into_inner(), lock, idle },
            granted_at + request.lease,
            self.config.session_check,
            request.lost.clone(),
        );
        Ok(Some(Acquired { token, attempt_started: granted_at, state: session.into_state() }))
    }

    /// Block on the server until the deadline; `Some` holding the lock, with when the grant
    /// arrived. The wait runs in a task
    /// of its own, so it ends cleanly however it is given up: a cancellation, or this
    /// acquisition being dropped (a waiter handed the lock by another owner of this client
    /// drops its own attempt), interrupts it on the server, and a connection whose wait was
    /// interrupted goes back to the pool rather than being closed, so local handoffs do not
    /// cost a new connection each.
    pub(super) async fn wait_for_lock(
        &self,
        cancel: &CancellationToken,
        deadline: Option<Instant>,
        mut conn: Unrecorded<D::DB>,
        lock: D::SessionLock,
        id: D::ConnectionId,
    ) -> Result<Option<(Unrecorded<D::DB>, D::SessionLock, Instant)>> {
        let (shared, cancel, shown_url) = (self.shared.clone(), cancel.clone(), self.config.shown_url.clone());
        let wait = |abandoned: CancellationToken| async move {
            loop {
                let (outcome, interrupted) = {
                    let wait = D::wait_session_lock(conn.conn(), &lock, deadline.map(wait_left_until));
                    let interrupt = || D::interrupt_wait(&shared, id);
                    answer_or_interrupt(wait, interrupt, &cancel, &abandoned).await
                };
                let Some(outcome) = outcome else {
                    return Err(Error::backend("the database did not answer a cancelled lock wait"));
                };
                return match outcome {
                    LockWait::Granted if !interrupted => Ok(Some((conn, lock, Instant::now()))),
                    // Waiting for ever, in the server's longest steps.
                    LockWait::TimedOut if !interrupted && deadline.is_none() => continue,
                    LockWait::TimedOut if !interrupted => {
                        drop(conn.into_inner()); // timed out holding nothing: back to the pool
                        Ok(None)
                    }
                    // An interrupt can land after the lock was granted, and a session lock
                    // outlives the interrupted statement: the session gives it up before the
                    // connection goes back to the pool (closed instead if a repeated interrupt
                    // fails that too).
                    LockWait::TimedOut | LockWait::Interrupted => {
                        if D::give_up_after_interrupt(conn.conn(), &lock).await.is_ok() {
                            drop(conn.into_inner());
                        }
                        Ok(None)
                    }
                    // Granted just before the interrupt, which could still hit a later
                    // statement: the connection is closed (dropped unrecorded), the lock with it.
                    LockWait::Granted => Ok(None),
                    LockWait::Failed(err) => Err(map_error(&shown_url, err)),
                };
            }
        };
        in_own_task_for_caller(wait, Err(Error::backend("the lock wait stopped with the runtime"))).await
    }

    /// Start (once) the task that turns releases announced by other processes into wake-ups.
    async fn watch_releases(&self) {
        self.release_watcher
            .get_or_init(|| async { D::watch_releases(self.sessions.clone(), self.released.clone()) })
            .await;
    }

    /// A lease attempt in a task of its own, which gives back a row it won after the caller
    /// went away (unless a transfer has since made it a live hold of the same owner): a waiter handed the lock locally drops its attempt, whose statement may
    /// still land, and a statement dropped half way would leave its connection out of step.
    async fn lease_attempt_to_the_end(&self, lease: Duration, name: &str, by: &str) -> Result<Attempt> {
        let (dialect, shared, shown_url) = (self.dialect.clone(), self.shared.clone(), self.config.shown_url.clone());
        let (name, by) = (name.to_string(), by.to_string());
        let attempt = |abandoned: CancellationToken| async move {
            let attempt = dialect.lease_attempt(&shared, &name, &by, lease).await.map_err(|e| map_error(&shown_url, e));
            if let (true, Ok(Attempt::Acquired { token, .. })) = (abandoned.is_cancelled(), &attempt) {
                let _ = dialect.lease_give_back_won(&shared, &name, &by, *token).await;
            }
            attempt
        };
        in_own_task_for_caller(attempt, Err(Error::backend("a lease attempt stopped with the runtime"))).await
    }
}

impl<D: Dialect> Drop for SqlStore<D> {
    /// A client dropped without `close()` must not leave its release watcher running.
    fn drop(&mut self) {
        if let Some(Some(watcher)) = self.release_watcher.get() {
            watcher.abort();
        }
    }
}

#[async_trait]
impl<D: Dialect> HoldStore for SqlStore<D> {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Option<Acquired>> {
        super::names::check_name(&request.key)?;
        match Keeping::of::<D>(request.kind)? {
            Keeping::Session => self.acquire_session(request).await,
            Keeping::LeaseRow => {
                self.watch_releases().await;
                let name = lease_name(&request.key);
                let by = locked_by(&request.owner);
                let mut wakeups = self.released.subscribe();
                acquire_by_attempts(request, D::LEASE_BACKOFF, &mut wakeups, || {
                    self.lease_attempt_to_the_end(request.lease, &name, &by)
                })
                .await
            }
        }
    }

    async fn renew(&self, held: &HeldLock, lease: Duration) -> Result<Renewal> {
        let renewed = match Keeping::of::<D>(held.kind)? {
            Keeping::Session => return Ok(Session::<D>::renew_held(held, lease).await),
            Keeping::LeaseRow => self
                .dialect
                .lease_renew(&self.shared, &lease_name(&held.key), &locked_by(&held.owner), lease)
                .await
                .map_err(|e| self.err(e))?,
        };
        Ok(if renewed { Renewal::Renewed } else { Renewal::Gone })
    }

    /// A session lock stays with its connection, which draws the token set aside; a lease
    /// lock's ShedLock row is rewritten to the new owner and the counter bumped in one
    /// statement, so the row never looks free to anyone in between, and a transfer cut off
    /// half way changes nothing.
    async fn transfer(
        &self,
        from: &HeldLock,
        to: Owner,
        lease: Duration,
        lost: &LostNotifier,
    ) -> Result<Option<Acquired>> {
        let attempt_started = Instant::now();
        match Keeping::of::<D>(from.kind)? {
            Keeping::Session => {
                let token = Session::<D>::transfer_held(from, D::session_fencing_name(&from.key), lease, lost)
                    .await
                    .map_err(|e| self.err(e))?;
                Ok(token.map(|token| Acquired { token, attempt_started, state: from.state.clone() }))
            }
            Keeping::LeaseRow => {
                let (name, from_by, to_by) = (lease_name(&from.key), locked_by(&from.owner), locked_by(&to));
                let token = self
                    .dialect
                    .lease_transfer(&self.shared, &name, &from_by, &to_by, lease)
                    .await
                    .map_err(|e| self.err(e))?;
                Ok(token.map(|token| Acquired { token, attempt_started, state: None }))
            }
        }
    }

    /// Waiters for a session lock queue in the server (`pg_advisory_lock`, `GET_LOCK`'s
    /// metadata lock), which grants it to the oldest when it is released.
    fn grants_in_order(&self, kind: LockKind) -> bool {
        matches!(Keeping::of::<D>(kind), Ok(Keeping::Session))
    }

    /// Lease waiters elsewhere hear of a release only where the database announces it.
    fn others_poll_within(&self, kind: LockKind) -> Option<Duration> {
        let polled = matches!(Keeping::of::<D>(kind), Ok(Keeping::LeaseRow)) && !D::ANNOUNCES_RELEASES;
        polled.then_some(D::LEASE_BACKOFF.max)
    }

    fn transfers(&self, kind: LockKind) -> bool {
        Keeping::of::<D>(kind).is_ok()
    }

    /// Every acquisition draws two tokens and issues the first; a transfer draws one.
    fn reserves_next_token(&self, kind: LockKind) -> bool {
        self.transfers(kind)
    }

    async fn release(&self, held: &HeldLock, holds_left: u32) -> Result<Release> {
        if let Keeping::Session = Keeping::of::<D>(held.kind)? {
            return Ok(Session::<D>::release_held(held, holds_left).await);
        }
        let (name, by) = (lease_name(&held.key), locked_by(&held.owner));
        let ours = if holds_left > 0 {
            self.dialect.lease_is_held_by(&self.shared, &name, &by).await.map_err(|e| self.err(e))?
        } else {
            // Like ShedLock's unlock, the row stays with lock_until = now; only ours is touched.
            let ours = self.dialect.lease_give_back(&self.shared, &name, &by).await.map_err(|e| self.err(e))?;
            self.announce_release();
            ours
        };
        Ok(if ours { Release::Released } else { Release::Gone })
    }

    async fn is_locked(&self, key: &str, kind: LockKind) -> Result<bool> {
        self.remaining_lease(key, kind).await.map(|left| left.is_some())
    }

    /// A lease lock's time left is its ShedLock row's `lock_until`; a session lock has no
    /// expiry in the database (its holder's lease is kept by the holder's client), so a held
    /// one answers `Duration::MAX`.
    async fn remaining_lease(&self, key: &str, kind: LockKind) -> Result<Option<Duration>> {
        match Keeping::of::<D>(kind)? {
            Keeping::Session => {
                let taken =
                    D::session_lock_taken(&self.shared, &D::session_lock(key)).await.map_err(|e| self.err(e))?;
                Ok(taken.then_some(Duration::MAX))
            }
            Keeping::LeaseRow => self.dialect.lease_left(&self.shared, &lease_name(key)).await.map_err(|e| self.err(e)),
        }
    }

    /// Ends a lease lock's row now, as a release would, and wakes waiters; refused for session
    /// locks: the database frees one only when the session holding it releases it or ends, and
    /// ending someone else's session would abort whatever else that connection is doing (the
    /// holder may be any application sharing the database).
    async fn force_unlock(&self, key: &str, kind: LockKind) -> Result<bool> {
        if let Keeping::Session = Keeping::of::<D>(kind)? {
            return Err(Error::unsupported(format!(
                "force_unlock is not offered for {} session locks: only the session holding one can \
                 release it, and ending another client's session would abort all its work; use the lease kind \
                 (ShedLock table) for locks an operator must be able to break, or end the holding session yourself",
                D::DATABASE
            )));
        }
        let forced = self.dialect.lease_force_end(&self.shared, &lease_name(key)).await.map_err(|e| self.err(e))?;
        self.announce_release();
        Ok(forced)
    }
}

impl<D: Dialect> SqlStore<D> {
    /// Stop the release watcher and close both pools (the backend's `Store::close`).
    pub(super) async fn shut_down(&self) {
        if let Some(Some(watcher)) = self.release_watcher.get() {
            watcher.abort();
        }
        self.sessions.close().await;
        self.shared.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(var: &str, default: &str) -> String {
        std::env::var(var).unwrap_or_else(|_| default.to_string())
    }

    /// The interleaving behind the abandoned-attempt give-back, played statement by statement
    /// against the real servers: owner B's attempt wins the row (A's lease having run out), A's
    /// transfer then moves the row to B, and only after that does B's abandoned attempt try to
    /// give back what it won. It must not end the hold the transfer gave B; with nothing in
    /// between, it gives the row back.
    async fn an_abandoned_win_never_ends_a_transferred_hold<D: Dialect>(url: &str) {
        let mut url = ConnectUrl::parse(url).unwrap();
        let store = SqlStore::<D>::open(&mut url).await.unwrap();
        let (shared, dialect) = (&store.shared, &store.dialect);
        let name = format!("give-back-{}-{}", std::process::id(), fastrand::u64(..));
        let (a, b) = ("polylock:test:a", "polylock:test:b");
        let lease = Duration::from_secs(30);
        let won = |attempt: Attempt| match attempt {
            Attempt::Acquired { token, .. } => token,
            Attempt::Busy { .. } => panic!("{}: the row was not free", D::DATABASE),
        };

        let token = won(dialect.lease_attempt(shared, &name, b, lease).await.unwrap());
        let moved = dialect.lease_transfer(shared, &name, a, b, lease).await.unwrap();
        assert!(moved.is_some(), "{}: the transfer finds B's row and takes it as B's", D::DATABASE);
        let given_back = dialect.lease_give_back_won(shared, &name, b, token).await.unwrap();
        assert!(!given_back, "{}: the abandoned attempt ended the transferred hold", D::DATABASE);
        assert!(dialect.lease_is_held_by(shared, &name, b).await.unwrap(), "{}", D::DATABASE);

        assert!(dialect.lease_give_back(shared, &name, b).await.unwrap());
        let token = won(dialect.lease_attempt(shared, &name, b, lease).await.unwrap());
        assert!(dialect.lease_give_back_won(shared, &name, b, token).await.unwrap(), "{}", D::DATABASE);
        assert!(!dialect.lease_is_held_by(shared, &name, b).await.unwrap(), "{}", D::DATABASE);
        store.shut_down().await;
    }

    #[cfg(feature = "postgres")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_an_abandoned_win_never_ends_a_transferred_hold() {
        if crate::servers_off_in_tests() {
            return;
        }
        let url = url("POLYLOCK_TEST_POSTGRES_URL", "postgres://polylock:polylock@127.0.0.1:15432/polylock");
        an_abandoned_win_never_ends_a_transferred_hold::<super::super::postgres::Pg>(&url).await;
    }

    #[cfg(feature = "mysql")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn mysql_an_abandoned_win_never_ends_a_transferred_hold() {
        if crate::servers_off_in_tests() {
            return;
        }
        let url = url("POLYLOCK_TEST_MARIADB_URL", "mysql://polylock:polylock@127.0.0.1:13306/polylock");
        an_abandoned_win_never_ends_a_transferred_hold::<super::super::mysql::MySqlDialect>(&url).await;
    }
}
