//! Snowflake generators whose worker id is leased from the store, so that no two generators
//! of one namespace ever issue the same ID, whatever their clocks say.
//!
//! - The lease of worker id `w` is the lock `polylock-snowflake:<w>` (under the client's
//!   namespace), taken only if free, kept by the watchdog; its fencing token is the lease's
//!   epoch, which grows on every take.
//! - Beside it, outside the leased key, a compare-and-set value `polylock-snowflake-mark:<w>`
//!   holds the high-water mark `reserved_until` (Unix ms) and the epoch that wrote it. The
//!   holder writes it when it takes the id and every third of the lease, and never issues a
//!   timestamp above the mark it last wrote. A new holder writes its own mark (by
//!   compare-and-set, so it reads the last one written) and never issues a timestamp at or
//!   below the mark it found. Once it has written, an older holder's next write conflicts:
//!   that holder learns it was fenced (`Lost`) and can never raise the mark again. So the
//!   timestamps of two holders of one id never meet, with or without clock skew, rollback or
//!   a paused process.
//! - The holder stops issuing at its deadline (the send time of its last successful mark
//!   write + the lease - a tenth of it) on the local monotonic clock, whether or not it heard
//!   from the store, and when its lock is lost.
//! - With no worker id given, the generator leases the lowest free id whose mark its clock
//!   can pass soon, and after a loss it leases another on the next call.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use polylock_id::{Clock, Snowflake, SnowflakeLayout, SystemClock};
use tokio::time::Instant;

use super::lock::Lock;
use super::{storage_key, Guard};
use crate::engine::{AcquireOptions, Engine};
use crate::error::{Error, ErrorDetails, ErrorKind, Result};
use crate::owner::{next_handle_local_id, Owner};
use crate::spi::{VersionStore, Write};

/// A clock a generator and its tests can share.
#[derive(Clone)]
pub struct SharedClock(pub Arc<dyn Clock>);

impl Clock for SharedClock {
    fn now_ms(&self) -> u64 {
        self.0.now_ms()
    }
}

impl fmt::Debug for SharedClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SharedClock")
    }
}

/// How a leased Snowflake generator works.
#[derive(Debug, Clone)]
pub struct SnowflakeOptions {
    pub layout: SnowflakeLayout,
    /// Where timestamps come from (default: the system clock).
    pub clock: SharedClock,
    /// How far a new holder waits for its clock to pass the previous holder's mark before
    /// it fails (`Exhausted`, with when to retry) or, leasing any id, tries another id.
    /// Default 2 s.
    pub max_wait: Duration,
}

impl Default for SnowflakeOptions {
    fn default() -> Self {
        SnowflakeOptions {
            layout: SnowflakeLayout::TWITTER,
            clock: SharedClock(Arc::new(SystemClock)),
            max_wait: Duration::from_secs(2),
        }
    }
}

/// A Snowflake generator holding a leased worker id. Cheap to clone; clones share the lease.
#[derive(Clone)]
pub struct LeasedSnowflake {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Arc<Engine>,
    namespace: Option<Arc<str>>,
    values: Arc<dyn VersionStore>,
    options: SnowflakeOptions,
    /// The worker id asked for; `None`: any free one.
    wanted: Option<u64>,
    ttl: Duration,
    lease: tokio::sync::Mutex<Option<Arc<Lease>>>,
    /// Tests pause the renewer to play a stalled process.
    renewals_paused: AtomicBool,
}

/// One take of one worker id.
struct Lease {
    worker: u64,
    epoch: u64,
    mark_key: String,
    guard: Mutex<Option<Guard>>,
    generator: Snowflake,
    /// Issue only timestamps above this: the mark found when the id was taken.
    floor_ms: u64,
    state: Mutex<LeaseState>,
    /// Woken when `lose` records a loss (the renewer's failures); deadlines and the lock's own
    /// loss are watched directly by `wait_lost`.
    lost_notify: tokio::sync::Notify,
}

struct LeaseState {
    /// The mark this holder wrote last: it issues no timestamp above it.
    reserved_until_ms: u64,
    /// The version of that write, for the next compare-and-set.
    mark_version: u64,
    /// It issues nothing from this instant on unless its mark is written again.
    deadline: Instant,
    /// The largest timestamp issued (written as the mark on close).
    last_issued_ms: u64,
    lost: Option<String>,
}

impl fmt::Debug for LeasedSnowflake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeasedSnowflake").field("wanted", &self.inner.wanted).finish()
    }
}

fn encode_mark(reserved_until_ms: u64, epoch: u64) -> Vec<u8> {
    format!("{reserved_until_ms} {epoch}").into_bytes()
}

fn decode_mark(value: &[u8]) -> Result<(u64, u64)> {
    let text = std::str::from_utf8(value).unwrap_or("");
    let mut parts = text.split(' ').map(str::parse::<u64>);
    match (parts.next(), parts.next()) {
        (Some(Ok(mark)), Some(Ok(epoch))) => Ok((mark, epoch)),
        _ => Err(Error::backend(format!("a worker id's mark reads '{text}', not '<reserved_until_ms> <epoch>'"))),
    }
}

impl LeasedSnowflake {
    /// Lease a worker id (the one asked for, or any free one) and start keeping it.
    pub(crate) async fn start(
        engine: Arc<Engine>,
        namespace: Option<Arc<str>>,
        wanted: Option<u64>,
        options: SnowflakeOptions,
    ) -> Result<LeasedSnowflake> {
        if let Some(worker) = wanted {
            if worker > options.layout.max_worker() {
                return Err(Error::invalid_argument(format!(
                    "worker id {worker} does not fit the layout's worker bits (0..={})",
                    options.layout.max_worker()
                )));
            }
        }
        let values = engine.versions()?;
        let ttl = engine.watchdog_lease();
        let inner = Arc::new(Inner {
            engine,
            namespace,
            values,
            options,
            wanted,
            ttl,
            lease: tokio::sync::Mutex::new(None),
            renewals_paused: AtomicBool::new(false),
        });
        let generator = LeasedSnowflake { inner };
        generator.current_lease().await?;
        Ok(generator)
    }

    /// The worker id held now (`None` between a loss and the next lease).
    pub async fn worker_id(&self) -> Option<u64> {
        self.inner.lease.lock().await.as_ref().map(|lease| lease.worker)
    }

    /// The epoch of the lease held now: greater than every earlier take of that id.
    pub async fn epoch(&self) -> Option<u64> {
        self.inner.lease.lock().await.as_ref().map(|lease| lease.epoch)
    }

    /// Why the lease held now ended, if it has: its deadline passed on the local monotonic
    /// clock without a renewal, its lock was lost, or its mark was taken. `None` while it
    /// lasts and between a reported loss and the next lease. The next `next_id` reports the
    /// loss as `Lost` (and then leases another id, unless one id was asked for).
    pub async fn lost_reason(&self) -> Option<String> {
        let lease = self.inner.lease.lock().await.clone()?;
        lease.check_deadline();
        let lost = lease.state().lost.clone();
        lost
    }

    /// Resolves with the reason when the lease held now ends (at once if it has; never while
    /// no lease is held). A binding's "lost" signal for the generator.
    pub async fn lost(&self) -> String {
        let lease = self.inner.lease.lock().await.clone();
        match lease {
            Some(lease) => lease.wait_lost().await,
            None => std::future::pending().await,
        }
    }

    pub fn layout(&self) -> SnowflakeLayout {
        self.inner.options.layout
    }

    /// The next ID. `Lost` when the lease ended under this call (the next call leases
    /// another id, unless one id was asked for); `Exhausted` when the clock cannot yet pass
    /// the previous holder's mark.
    pub async fn next_id(&self) -> Result<u64> {
        Ok(self.next_ids(1).await?[0])
    }

    /// `count` IDs in increasing order, all under one lease. At most
    /// [`crate::id::MAX_BATCH`], else `InvalidArgument`.
    pub async fn next_ids(&self, count: usize) -> Result<Vec<u64>> {
        crate::id::check_batch(count)?;
        let lease = self.current_lease().await?;
        let mut ids = Vec::with_capacity(count);
        let started = Instant::now();
        while ids.len() < count {
            match lease.issue(&self.inner.options, count - ids.len(), &mut ids)? {
                None => {}
                Some((wait, why)) => {
                    if started.elapsed() + wait > self.inner.options.max_wait {
                        return Err(Error::exhausted(format!(
                            "worker id {}: {why}; retry in {} ms",
                            lease.worker,
                            wait.as_millis()
                        ))
                        .with_details(ErrorDetails::RetryAfter { after: wait }));
                    }
                    tokio::time::sleep(wait.min(Duration::from_millis(5))).await;
                }
            }
        }
        Ok(ids)
    }

    /// Stop renewing, write the mark down to the last timestamp issued (so the next holder
    /// need not wait for the rest of the lease) and give the id back.
    pub async fn close(&self) -> Result<()> {
        let Some(lease) = self.inner.lease.lock().await.take() else { return Ok(()) };
        lease.lose("the generator was closed");
        let (version, last) = {
            let state = lease.state();
            (state.mark_version, state.last_issued_ms.max(lease.floor_ms))
        };
        // A conflict means a newer holder wrote: its mark stands.
        let _ =
            self.inner.values.compare_and_set(&lease.mark_key, Some(version), &encode_mark(last, lease.epoch)).await;
        let guard = lease.guard.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(guard) = guard {
            guard.release().await?;
        }
        Ok(())
    }

    /// For tests: stop (or restart) writing the mark, as a stalled process would.
    #[doc(hidden)]
    pub fn pause_renewals_for_tests(&self, paused: bool) {
        self.inner.renewals_paused.store(paused, Ordering::SeqCst);
    }

    /// The lease to issue under: the live one, else (after a loss) a new one if any id will
    /// do. A loss is reported once, as `Lost`, to the call that finds it.
    async fn current_lease(&self) -> Result<Arc<Lease>> {
        let mut slot = self.inner.lease.lock().await;
        if let Some(lease) = slot.as_ref() {
            lease.check_deadline();
            let lost = lease.state().lost.clone();
            match lost {
                None => return Ok(lease.clone()),
                Some(reason) => {
                    let worker = lease.worker;
                    *slot = None;
                    return Err(Error::lost(format!("the lease of worker id {worker} ended: {reason}")));
                }
            }
        }
        let lease = Arc::new(self.inner.take_any().await?);
        spawn_renewer(Arc::downgrade(&self.inner), Arc::downgrade(&lease), self.inner.engine.runtime());
        *slot = Some(lease.clone());
        Ok(lease)
    }
}

impl Inner {
    fn key(&self, name: &str) -> String {
        storage_key(self.namespace.as_deref(), name)
    }

    async fn take_any(&self) -> Result<Lease> {
        if let Some(worker) = self.wanted {
            return match self.take(worker, None).await? {
                Some(lease) => Ok(lease),
                None => Err(Error::timeout(format!("worker id {worker} is leased by another generator"))),
            };
        }
        let max_ahead = self.options.max_wait.as_millis() as u64;
        for worker in 0..=self.options.layout.max_worker() {
            if let Some(lease) = self.take(worker, Some(max_ahead)).await? {
                return Ok(lease);
            }
        }
        Err(Error::exhausted(format!(
            "every worker id of the layout (0..={}) is leased or was used up to a time this clock has not \
             reached; retry in {} ms",
            self.options.layout.max_worker(),
            self.ttl.as_millis()
        ))
        .with_details(ErrorDetails::RetryAfter { after: self.ttl }))
    }

    /// Take worker id `worker` if its lock is free (and, with `max_ahead_ms`, if its mark is
    /// no further ahead of this clock than that). `None`: not free or not usable now.
    async fn take(&self, worker: u64, max_ahead_ms: Option<u64>) -> Result<Option<Lease>> {
        let name = format!("polylock-snowflake:{worker}");
        let owner = Owner { client_id: self.engine.id(), local_id: next_handle_local_id() };
        let lock = Lock::new(self.engine.clone(), &name, self.key(&name), owner);
        let Some(guard) = lock.acquire_with(AcquireOptions::default().wait(Duration::ZERO)).await.map_or_else(
            |err| if err.kind() == ErrorKind::Timeout { Ok(None) } else { Err(err) },
            |guard| Ok(Some(guard)),
        )?
        else {
            return Ok(None);
        };
        let epoch = guard.fencing_token();
        let mark_key = self.key(&format!("polylock-snowflake-mark:{worker}"));
        // Write our mark on top of the last one, by compare-and-set: whoever wrote before us
        // is below our floor, and cannot write again.
        for _ in 0..16 {
            let current = self.values.get(&mark_key).await?;
            let (previous, previous_epoch) = match &current {
                Some(found) => decode_mark(&found.value)?,
                None => (0, 0),
            };
            if previous_epoch > epoch {
                // A newer take of this id has written: ours is already over.
                let _ = guard.release().await;
                return Ok(None);
            }
            let now = self.options.clock.now_ms();
            if max_ahead_ms.is_some_and(|ahead| previous > now.saturating_add(ahead)) {
                let _ = guard.release().await;
                return Ok(None);
            }
            let sent = Instant::now();
            // The mark covers a lease's worth past whichever is later, this clock or the
            // floor, so a clock that catches up with the floor can issue at once.
            let mark = previous.max(now).saturating_add(self.ttl.as_millis() as u64);
            let expected = current.as_ref().map(|found| found.version);
            match self.values.compare_and_set(&mark_key, expected, &encode_mark(mark, epoch)).await? {
                Write::Written { version } => {
                    let generator =
                        Snowflake::with_layout_and_clock(self.options.layout, worker, self.options.clock.clone())?;
                    return Ok(Some(Lease {
                        worker,
                        epoch,
                        mark_key,
                        guard: Mutex::new(Some(guard)),
                        generator,
                        floor_ms: previous,
                        state: Mutex::new(LeaseState {
                            reserved_until_ms: mark,
                            mark_version: version,
                            deadline: sent + self.ttl - self.ttl / 10,
                            last_issued_ms: 0,
                            lost: None,
                        }),
                        lost_notify: tokio::sync::Notify::new(),
                    }));
                }
                Write::Conflict { .. } => continue,
            }
        }
        let _ = guard.release().await;
        Err(Error::conflict(format!("the mark of worker id {worker} kept changing while it was being taken")))
    }
}

impl Lease {
    fn state(&self) -> std::sync::MutexGuard<'_, LeaseState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn lose(&self, reason: &str) {
        let mut state = self.state();
        if state.lost.is_none() {
            state.lost = Some(reason.to_string());
            drop(state);
            self.lost_notify.notify_waiters();
        }
    }

    /// The reason this lease ended, once it has (its deadline passed, its lock was lost, or a
    /// renewal found its mark taken).
    async fn wait_lost(&self) -> String {
        let lock_lost = self.guard.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(|g| g.lost_watch());
        loop {
            let notified = self.lost_notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            self.check_deadline();
            let (lost, deadline) = {
                let state = self.state();
                (state.lost.clone(), state.deadline)
            };
            if let Some(reason) = lost {
                return reason;
            }
            match &lock_lost {
                Some(watch) => tokio::select! {
                    _ = &mut notified => {}
                    _ = tokio::time::sleep_until(deadline) => {}
                    _ = watch.wait() => {}
                },
                None => tokio::select! {
                    _ = &mut notified => {}
                    _ = tokio::time::sleep_until(deadline) => {}
                },
            }
        }
    }

    /// Past the deadline, or the lock lost: the lease is over.
    fn check_deadline(&self) {
        let guard_lost = self.guard.lock().unwrap_or_else(|p| p.into_inner()).as_ref().is_some_and(|g| g.is_lost());
        if guard_lost {
            self.lose("the store no longer has the worker id's lock");
        } else if Instant::now() >= self.state().deadline {
            self.lose("its deadline passed without a renewal of its mark");
        }
    }

    /// Issue up to `count` IDs into `ids`. `Some(wait)` when the clock must move on first
    /// (at or below the floor, or past the mark: the renewal is late).
    fn issue(
        &self,
        options: &SnowflakeOptions,
        count: usize,
        ids: &mut Vec<u64>,
    ) -> Result<Option<(Duration, String)>> {
        self.check_deadline();
        let mut state = self.state();
        if let Some(reason) = &state.lost {
            return Err(Error::lost(format!("the lease of worker id {} ended: {reason}", self.worker)));
        }
        let now = options.clock.now_ms();
        if now <= self.floor_ms {
            let behind = self.floor_ms + 1 - now;
            return Ok(Some((
                Duration::from_millis(behind),
                format!("the clock is {behind} ms behind the mark of the id's previous holder ({} ms)", self.floor_ms),
            )));
        }
        if now > state.reserved_until_ms {
            return Ok(Some((
                Duration::from_millis(1),
                format!(
                    "the clock ({now} ms) is past the mark this holder wrote ({} ms) and its renewal is late",
                    state.reserved_until_ms
                ),
            )));
        }
        for _ in 0..count {
            let id = self.generator.next_id()?;
            let at = options.layout.parse(id)?.timestamp_ms;
            if at <= self.floor_ms || at > state.reserved_until_ms {
                // The clock moved past a bound since it was read: this ID is a gap.
                return Ok(Some((Duration::from_millis(1), format!("the clock moved to {at} ms, out of bounds"))));
            }
            state.last_issued_ms = state.last_issued_ms.max(at);
            ids.push(id);
        }
        Ok(None)
    }
}

/// Every third of the lease, write the mark again (and with it extend the deadline); a
/// conflict means a newer holder took the id. Ends with the lease or the generator.
fn spawn_renewer(inner: Weak<Inner>, lease: Weak<Lease>, runtime: &tokio::runtime::Handle) {
    runtime.spawn(async move {
        loop {
            let every = match inner.upgrade() {
                Some(inner) => inner.ttl / 3,
                None => return,
            };
            tokio::time::sleep(every).await;
            let (Some(inner), Some(lease)) = (inner.upgrade(), lease.upgrade()) else { return };
            lease.check_deadline();
            if lease.state().lost.is_some() {
                return;
            }
            if inner.renewals_paused.load(Ordering::SeqCst) {
                continue;
            }
            let sent = Instant::now();
            let now = inner.options.clock.now_ms();
            let (mark, version) = {
                let state = lease.state();
                (state.reserved_until_ms.max(now.saturating_add(inner.ttl.as_millis() as u64)), state.mark_version)
            };
            match inner.values.compare_and_set(&lease.mark_key, Some(version), &encode_mark(mark, lease.epoch)).await {
                Ok(Write::Written { version }) => {
                    let mut state = lease.state();
                    state.reserved_until_ms = mark;
                    state.mark_version = version;
                    state.deadline = sent + inner.ttl - inner.ttl / 10;
                }
                Ok(Write::Conflict { .. }) => {
                    lease.lose("another generator took the worker id (its mark was written by a newer lease)");
                    return;
                }
                // The deadline stays; the next round tries again.
                Err(_) => {}
            }
        }
    });
}
