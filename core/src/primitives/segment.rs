//! Leaf-style segment IDs over any store with counters ([`crate::spi::CounterStore`]): ranges
//! reserved in one durable statement each, handed out from a double buffer, the next range
//! loaded in the background once a share of the current one is used.
//!
//! The bookkeeping (which range, when to load, the adaptive step) is `polylock_id::segment`;
//! this file adds the I/O: one loader task at a time that retries with backoff and jitter,
//! and callers that wait for it with a deadline instead of spinning.
//!
//! Guarantees: a range is durable in the store before its first ID is handed out, so IDs
//! never repeat, across processes and crashes; a crash or a dropped generator loses the rest
//! of its ranges (gaps). ID 0 is never handed out (Leaf's IDs start at 1; a counter polylock
//! creates starts at 0).

use std::fmt;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use polylock_id::segment::{SegmentConfig, Segments};
use polylock_id::SystemClock;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::error::{Error, ErrorDetails, ErrorKind, Result};
use crate::spi::CounterStore;

/// How a segment generator sizes its ranges and how long callers wait for one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SegmentOptions {
    /// The first and smallest range (Leaf's `step`; default 1000).
    pub step: u64,
    /// The largest range the adaptive step may reach (Leaf: 1,000,000).
    pub max_step: u64,
    /// Load the next range once this share of the current one is used (Leaf: 0.1).
    pub load_at: f64,
    /// How long a caller waits for a range being loaded before `Exhausted` (default 5 s).
    pub wait: Duration,
}

impl Default for SegmentOptions {
    fn default() -> Self {
        SegmentOptions {
            step: 1000,
            max_step: polylock_id::segment::DEFAULT_MAX_STEP,
            load_at: 0.1,
            wait: Duration::from_secs(5),
        }
    }
}

impl SegmentOptions {
    fn config(&self) -> Result<SegmentConfig> {
        let mut config = SegmentConfig::new(self.step)?;
        if self.max_step < self.step {
            return Err(Error::invalid_argument(format!(
                "a segment's max_step ({}) must be at least its step ({})",
                self.max_step, self.step
            )));
        }
        if !(self.load_at >= 0.0 && self.load_at <= 1.0) {
            return Err(Error::invalid_argument(format!(
                "a segment's load_at share must be within 0..=1, got {}",
                self.load_at
            )));
        }
        config.max_step = self.max_step;
        config.load_at = self.load_at;
        Ok(config)
    }
}

/// First and largest pause between failed loads; each is jittered down to half of itself.
const RETRY_FIRST: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(5);

/// IDs of one tag, from ranges reserved in the store. Cheap to clone; clones share the
/// buffer. Dropping the last clone stops its loader (the rest of its ranges become a gap).
#[derive(Clone)]
pub struct SegmentGenerator {
    inner: Arc<Inner>,
}

struct Inner {
    tag: String,
    key: String,
    store: Arc<dyn CounterStore>,
    runtime: tokio::runtime::Handle,
    wait: Duration,
    state: Mutex<State>,
    /// Woken when a load ends, well or badly.
    loaded: Notify,
}

struct State {
    segments: Segments,
    /// The loader's failures in a row, and the last one's message (for `Exhausted`).
    failures: u32,
    last_failure: Option<String>,
    /// When the loader tries next after a failure.
    retry_at: Option<Instant>,
    /// A failure retrying cannot mend (the counter is at its end): every call gets it.
    fatal: Option<Error>,
}

impl fmt::Debug for SegmentGenerator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SegmentGenerator").field("tag", &self.inner.tag).finish()
    }
}

impl SegmentGenerator {
    pub(crate) fn new(
        tag: &str,
        key: String,
        store: Arc<dyn CounterStore>,
        runtime: tokio::runtime::Handle,
        options: SegmentOptions,
    ) -> Result<SegmentGenerator> {
        let config = options.config()?;
        let state = State {
            segments: Segments::new(config, SystemClock),
            failures: 0,
            last_failure: None,
            retry_at: None,
            fatal: None,
        };
        Ok(SegmentGenerator {
            inner: Arc::new(Inner {
                tag: tag.to_string(),
                key,
                store,
                runtime,
                wait: options.wait,
                state: Mutex::new(state),
                loaded: Notify::new(),
            }),
        })
    }

    /// The tag (Leaf's `biz_tag`, before the namespace).
    pub fn tag(&self) -> &str {
        &self.inner.tag
    }

    /// The size of the range asked for last (adapted to how fast ranges are used).
    pub fn step(&self) -> u64 {
        self.inner.state().segments.step()
    }

    /// Up to `count` IDs already loaded, without waiting (fewer, maybe none, when the
    /// loaded ranges run short; a load is started then). For callers that cannot wait
    /// cheaply (an event loop): take these, then wait with [`Self::next_ids`] for the rest.
    /// More than [`crate::id::MAX_BATCH`] is taken as that many.
    pub fn take_ready(&self, count: usize) -> Vec<u64> {
        let count = count.min(crate::id::MAX_BATCH);
        let mut ids = Vec::with_capacity(count);
        let mut state = self.inner.state();
        while ids.len() < count {
            match state.segments.next_id() {
                Ok(0) => continue,
                Ok(id) => ids.push(id),
                Err(_) => break,
            }
        }
        if state.fatal.is_none() {
            self.inner.start_load_if_due(&mut state);
        }
        ids
    }

    /// The next ID: never 0, never one handed out before by any generator of this tag.
    /// Waits for a range being loaded up to the generator's `wait`, then fails with
    /// `Exhausted` (retry later).
    pub async fn next_id(&self) -> Result<u64> {
        let mut ids = self.next_ids(1).await?;
        Ok(ids.pop().expect("one ID was asked for"))
    }

    /// `count` IDs, increasing within each range (ranges of one tag are not ordered across
    /// generators). All or nothing: on `Exhausted` the IDs taken so far are a gap. At most
    /// [`crate::id::MAX_BATCH`], else `InvalidArgument`.
    pub async fn next_ids(&self, count: usize) -> Result<Vec<u64>> {
        crate::id::check_batch(count)?;
        let inner = &self.inner;
        let deadline = Instant::now() + inner.wait;
        let mut ids = Vec::with_capacity(count);
        loop {
            // Register for the wake-up before looking, so a load ending in between is seen.
            let notified = inner.loaded.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut state = inner.state();
                while ids.len() < count {
                    match state.segments.next_id() {
                        Ok(0) => continue,
                        Ok(id) => ids.push(id),
                        Err(_) => break,
                    }
                }
                if ids.len() == count {
                    inner.start_load_if_due(&mut state);
                    return Ok(ids);
                }
                if let Some(fatal) = &state.fatal {
                    return Err(Error::new(fatal.kind(), fatal.message()));
                }
                inner.start_load_if_due(&mut state);
                if Instant::now() >= deadline {
                    return Err(inner.exhausted(&state));
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                let state = inner.state();
                return Err(inner.exhausted(&state));
            }
        }
    }
}

impl Inner {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Start the loader if the bookkeeping says a range is due and none is loading.
    fn start_load_if_due(self: &Arc<Self>, state: &mut State) {
        if !state.segments.should_load() {
            return;
        }
        let step = state.segments.start_load();
        let inner = Arc::downgrade(self);
        let key = self.key.clone();
        self.runtime.spawn(load(inner, key, step));
    }

    fn exhausted(&self, state: &State) -> Error {
        let retry_in = match state.retry_at {
            Some(at) => at.saturating_duration_since(Instant::now()).max(RETRY_FIRST),
            None => RETRY_FIRST,
        };
        let cause = match &state.last_failure {
            Some(failure) => format!("; the store failed {} time(s) in a row, last: {failure}", state.failures),
            None => String::new(),
        };
        let error = Error::exhausted(format!(
            "segment '{}': every reserved ID is used and the next range did not arrive within {} ms{cause}; \
             retry in {} ms",
            self.tag,
            self.wait.as_millis(),
            retry_in.as_millis()
        ));
        error.with_details(ErrorDetails::RetryAfter { after: retry_in })
    }
}

/// Reserve one range, retrying with backoff and jitter until it arrives or the generator is
/// dropped. The range is committed by the store before it is recorded here, so it is durable
/// before its first ID is handed out.
async fn load(inner: Weak<Inner>, key: String, step: u64) {
    let mut pause = RETRY_FIRST;
    loop {
        let Some(store) = inner.upgrade().map(|inner| inner.store.clone()) else { return };
        let outcome = store.reserve(&key, step).await;
        let Some(inner) = inner.upgrade() else { return };
        match outcome {
            Ok(range) => {
                let mut state = inner.state();
                state.segments.loaded(range);
                state.failures = 0;
                state.last_failure = None;
                state.retry_at = None;
                drop(state);
                inner.loaded.notify_waiters();
                return;
            }
            Err(err) if matches!(err.kind(), ErrorKind::InvalidArgument | ErrorKind::Unsupported) => {
                // Retrying cannot help (a counter at its end, say): report it and stop.
                let mut state = inner.state();
                state.failures += 1;
                state.last_failure = Some(err.to_string());
                state.retry_at = None;
                state.fatal = Some(err);
                drop(state);
                inner.loaded.notify_waiters();
                return;
            }
            Err(err) => {
                let jittered = jitter(pause);
                {
                    let mut state = inner.state();
                    state.failures += 1;
                    state.last_failure = Some(err.to_string());
                    state.retry_at = Some(Instant::now() + jittered);
                }
                inner.loaded.notify_waiters();
                drop(inner);
                tokio::time::sleep(jittered).await;
                pause = (pause * 2).min(RETRY_MAX);
            }
        }
    }
}

/// A pause between half of `pause` and all of it, so generators that failed together do not
/// retry together.
fn jitter(pause: Duration) -> Duration {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let share = 0.5 + f64::from(nanos % 1000) / 2000.0;
    pause.mul_f64(share)
}
