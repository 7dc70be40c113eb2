//! Snowflake IDs: `timestamp | worker | sequence` packed into a positive i64.
//!
//! One generator per worker id. The last (timestamp, sequence) pair lives in one atomic word,
//! so threads share a generator without a lock, and IDs from it never repeat and never go
//! backwards, even when the wall clock does: a small rollback is waited out, a large one is
//! an error rather than a risk of duplicates.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::clock::{pause, Clock};
use crate::error::{IdError as Error, Result};

/// How far back the clock may step before `next_id` fails instead of waiting.
pub const DEFAULT_MAX_ROLLBACK: Duration = Duration::from_millis(10);

/// The bit layout and epoch of a family of snowflake IDs. The widths add up to at most 63
/// bits, so IDs are positive in every language's signed 64-bit integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnowflakeLayout {
    epoch_ms: u64,
    timestamp_bits: u32,
    worker_bits: u32,
    sequence_bits: u32,
}

impl SnowflakeLayout {
    /// Twitter's layout: 41 bits of milliseconds since 2010-11-04T01:42:54.657Z, 10 bits of
    /// worker, 12 bits of sequence (4096 IDs per millisecond per worker).
    pub const TWITTER: SnowflakeLayout =
        SnowflakeLayout { epoch_ms: 1_288_834_974_657, timestamp_bits: 41, worker_bits: 10, sequence_bits: 12 };

    pub fn new(epoch_ms: u64, timestamp_bits: u32, worker_bits: u32, sequence_bits: u32) -> Result<Self> {
        if timestamp_bits + worker_bits + sequence_bits > 63 {
            return Err(Error::invalid_argument(format!(
                "a snowflake layout has at most 63 bits; {timestamp_bits}+{worker_bits}+{sequence_bits} is {}",
                timestamp_bits + worker_bits + sequence_bits
            )));
        }
        if timestamp_bits < 31 || sequence_bits == 0 {
            return Err(Error::invalid_argument(
                "a snowflake layout needs at least 31 timestamp bits (about 25 days) and 1 sequence bit",
            ));
        }
        Ok(SnowflakeLayout { epoch_ms, timestamp_bits, worker_bits, sequence_bits })
    }

    pub fn epoch_ms(&self) -> u64 {
        self.epoch_ms
    }

    pub fn max_worker(&self) -> u64 {
        (1u64 << self.worker_bits) - 1
    }

    /// The most IDs one worker can issue in one millisecond.
    pub fn ids_per_ms(&self) -> u64 {
        1u64 << self.sequence_bits
    }

    /// The widths of the three parts, highest first: timestamp, worker, sequence.
    pub fn bits(&self) -> (u32, u32, u32) {
        (self.timestamp_bits, self.worker_bits, self.sequence_bits)
    }

    /// The smallest ID of this layout at `timestamp_ms` (worker 0, sequence 0): every ID
    /// issued at or after that millisecond is at least this, every earlier one below it, so
    /// it bounds range queries (`WHERE id >= ...`).
    pub fn id_from_timestamp(&self, timestamp_ms: u64) -> Result<u64> {
        let elapsed = timestamp_ms.checked_sub(self.epoch_ms).filter(|e| *e <= self.max_elapsed());
        let elapsed = elapsed.ok_or_else(|| {
            Error::invalid_argument(format!(
                "{timestamp_ms} ms is outside the layout's time range ({}..={} ms)",
                self.epoch_ms,
                self.epoch_ms.saturating_add(self.max_elapsed())
            ))
        })?;
        Ok(self.compose(elapsed, 0, 0))
    }

    fn max_sequence(&self) -> u64 {
        self.ids_per_ms() - 1
    }

    fn max_elapsed(&self) -> u64 {
        (1u64 << self.timestamp_bits) - 1
    }

    /// Split an ID of this layout into its parts.
    pub fn parse(&self, id: u64) -> Result<SnowflakeParts> {
        if id >> (self.timestamp_bits + self.worker_bits + self.sequence_bits) != 0 {
            return Err(Error::invalid_argument(format!("{id} is not a snowflake ID of this layout (too many bits)")));
        }
        let sequence = id & self.max_sequence();
        let worker = (id >> self.sequence_bits) & self.max_worker();
        let elapsed = id >> (self.sequence_bits + self.worker_bits);
        Ok(SnowflakeParts { timestamp_ms: self.epoch_ms + elapsed, worker, sequence })
    }

    fn compose(&self, elapsed: u64, worker: u64, sequence: u64) -> u64 {
        (elapsed << (self.worker_bits + self.sequence_bits)) | (worker << self.sequence_bits) | sequence
    }
}

impl Default for SnowflakeLayout {
    fn default() -> Self {
        Self::TWITTER
    }
}

/// The parts of a snowflake ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnowflakeParts {
    /// Milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
    pub worker: u64,
    pub sequence: u64,
}

impl fmt::Display for SnowflakeParts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "timestamp_ms={} worker={} sequence={}", self.timestamp_ms, self.worker, self.sequence)
    }
}

/// Split an ID of the Twitter layout.
pub fn parse_snowflake(id: u64) -> Result<SnowflakeParts> {
    SnowflakeLayout::TWITTER.parse(id)
}

/// A snowflake generator for one worker id. Share it between threads by reference or `Arc`.
pub struct Snowflake {
    layout: SnowflakeLayout,
    worker: u64,
    clock: Box<dyn Clock>,
    max_rollback: Duration,
    /// `(elapsed ms << sequence_bits) | sequence` of the last ID issued.
    last: AtomicU64,
}

impl fmt::Debug for Snowflake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snowflake").field("layout", &self.layout).field("worker", &self.worker).finish()
    }
}

impl Snowflake {
    /// A generator of the Twitter layout, on the system clock.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new(worker: u64) -> Result<Self> {
        Self::with_layout(SnowflakeLayout::TWITTER, worker)
    }

    /// A generator of `layout`, on the system clock.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn with_layout(layout: SnowflakeLayout, worker: u64) -> Result<Self> {
        Self::with_layout_and_clock(layout, worker, crate::clock::SystemClock)
    }

    /// A generator of `layout` reading time from `clock`: the only constructor on `wasm32`.
    pub fn with_layout_and_clock(layout: SnowflakeLayout, worker: u64, clock: impl Clock) -> Result<Self> {
        if worker > layout.max_worker() {
            return Err(Error::invalid_argument(format!(
                "worker id {worker} does not fit the layout's {} worker bits (0..={})",
                layout.worker_bits,
                layout.max_worker()
            )));
        }
        Ok(Snowflake {
            layout,
            worker,
            clock: Box::new(clock),
            max_rollback: DEFAULT_MAX_ROLLBACK,
            last: AtomicU64::new(0),
        })
    }

    /// Read time from `clock` instead of the system clock.
    pub fn with_clock(mut self, clock: impl Clock) -> Self {
        self.clock = Box::new(clock);
        self
    }

    /// Wait out clock rollbacks up to `max` (default 10ms); fail on larger ones.
    pub fn with_max_rollback(mut self, max: Duration) -> Self {
        self.max_rollback = max;
        self
    }

    pub fn layout(&self) -> SnowflakeLayout {
        self.layout
    }

    pub fn worker(&self) -> u64 {
        self.worker
    }

    /// The next ID: greater than every ID this generator issued before.
    pub fn next_id(&self) -> Result<u64> {
        let seq_bits = self.layout.sequence_bits;
        let mut paused_ms = 0;
        loop {
            // Load before reading the clock: the reading that produced `last` then happened
            // before ours, so only a real clock step (not a preempted thread) looks like one.
            let last = self.last.load(Ordering::Acquire);
            let now = self.elapsed_now()?;
            let last_ms = last >> seq_bits;
            let next = if now > last_ms {
                now << seq_bits
            } else if now == last_ms {
                if last & self.layout.max_sequence() == self.layout.max_sequence() {
                    // This millisecond is used up: the layout's ceiling. Spin to the next one.
                    std::hint::spin_loop();
                    continue;
                }
                last + 1
            } else {
                self.wait_out_rollback(last_ms - now, &mut paused_ms)?;
                continue;
            };
            if self.last.compare_exchange_weak(last, next, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                return Ok(self.layout.compose(next >> seq_bits, self.worker, next & self.layout.max_sequence()));
            }
        }
    }

    /// `count` IDs in increasing order.
    /// At most [`crate::MAX_BATCH`], else `InvalidArgument`.
    pub fn next_ids(&self, count: usize) -> Result<Vec<u64>> {
        crate::check_batch(count)?;
        let mut ids = Vec::with_capacity(count);
        for _ in 0..count {
            ids.push(self.next_id()?);
        }
        Ok(ids)
    }

    /// Split an ID of this generator's layout.
    pub fn parse(&self, id: u64) -> Result<SnowflakeParts> {
        self.layout.parse(id)
    }

    fn elapsed_now(&self) -> Result<u64> {
        let now = self.clock.now_ms();
        let elapsed = now.checked_sub(self.layout.epoch_ms).ok_or_else(|| {
            Error::clock(format!(
                "the clock reads {now} ms, before the snowflake epoch {}; check the system clock",
                self.layout.epoch_ms
            ))
        })?;
        if elapsed > self.layout.max_elapsed() {
            return Err(Error::clock(format!(
                "the snowflake layout's {} timestamp bits ran out {} ms after its epoch; choose a later epoch",
                self.layout.timestamp_bits,
                self.layout.max_elapsed()
            )));
        }
        Ok(elapsed)
    }

    /// The clock is `behind_ms` behind the last ID. Pause while that is within the tolerance
    /// (counting the pauses, about a millisecond each, so a clock that never catches up still
    /// ends in an error; no monotonic clock is needed, so this works on `wasm32` too).
    fn wait_out_rollback(&self, behind_ms: u64, paused_ms: &mut u64) -> Result<()> {
        let waited = Duration::from_millis(*paused_ms);
        if Duration::from_millis(behind_ms) > self.max_rollback || waited > self.max_rollback * 2 {
            return Err(Error::clock(format!(
                "the system clock moved back {behind_ms} ms, more than the {} ms tolerated; refusing to issue \
                 IDs that could repeat until it catches up",
                self.max_rollback.as_millis()
            )));
        }
        pause();
        *paused_ms += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;

    use super::*;
    use crate::{IdErrorKind, ManualClock};

    const T0: u64 = 1_700_000_000_000;

    #[test]
    fn parts_round_trip() {
        let clock = Arc::new(ManualClock::new(T0));
        let gen = Snowflake::new(513).unwrap().with_clock(clock.clone());
        let a = gen.next_id().unwrap();
        let b = gen.next_id().unwrap();
        assert_eq!(gen.parse(a).unwrap(), SnowflakeParts { timestamp_ms: T0, worker: 513, sequence: 0 });
        assert_eq!(parse_snowflake(b).unwrap(), SnowflakeParts { timestamp_ms: T0, worker: 513, sequence: 1 });
        // The example tweet of Twitter's API documentation, created Wed Oct 10 20:19:24 +0000 2018.
        let tweet = parse_snowflake(1_050_118_621_198_921_728).unwrap();
        assert_eq!(tweet.timestamp_ms, 1_539_202_764_211);
        assert_eq!((tweet.worker, tweet.sequence), (347, 0));
    }

    #[test]
    fn id_from_timestamp_bounds_the_ids_of_that_millisecond() {
        let clock = Arc::new(ManualClock::new(T0));
        let gen = Snowflake::new(1023).unwrap().with_clock(clock.clone());
        let layout = gen.layout();
        assert_eq!(layout.bits(), (41, 10, 12));
        let id = gen.next_id().unwrap();
        assert!(layout.id_from_timestamp(T0).unwrap() <= id && id < layout.id_from_timestamp(T0 + 1).unwrap());
        assert_eq!(
            layout.parse(layout.id_from_timestamp(T0).unwrap()).unwrap(),
            SnowflakeParts { timestamp_ms: T0, worker: 0, sequence: 0 }
        );
        assert_eq!(layout.id_from_timestamp(layout.epoch_ms()).unwrap(), 0);
        assert_eq!(layout.id_from_timestamp(layout.epoch_ms() - 1).unwrap_err().kind(), IdErrorKind::InvalidArgument);
        assert!(layout.id_from_timestamp(layout.epoch_ms() + (1 << 41)).is_err());
    }

    #[test]
    fn worker_is_checked_against_the_layout() {
        assert_eq!(Snowflake::new(1024).unwrap_err().kind(), IdErrorKind::InvalidArgument);
        assert!(Snowflake::new(1023).is_ok());
        let narrow = SnowflakeLayout::new(T0, 41, 5, 12).unwrap();
        assert!(Snowflake::with_layout(narrow, 32).is_err());
        assert!(SnowflakeLayout::new(T0, 41, 12, 12).is_err());
    }

    #[test]
    fn sequence_exhaustion_moves_to_the_next_millisecond() {
        let layout = SnowflakeLayout::new(T0, 41, 10, 2).unwrap();
        let clock = Arc::new(ManualClock::new(T0 + 5));
        let gen = Snowflake::with_layout(layout, 1).unwrap().with_clock(clock.clone());
        let ids: Vec<u64> = (0..4).map(|_| gen.next_id().unwrap()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        let advancer = {
            let clock = clock.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                clock.advance(1);
            })
        };
        let fifth = gen.next_id().unwrap(); // spins until the clock moves
        advancer.join().unwrap();
        assert_eq!(gen.parse(fifth).unwrap(), SnowflakeParts { timestamp_ms: T0 + 6, worker: 1, sequence: 0 });
    }

    #[test]
    fn small_rollback_is_waited_out_and_ids_stay_increasing() {
        let clock = Arc::new(ManualClock::new(T0 + 100));
        let gen = Snowflake::new(7).unwrap().with_clock(clock.clone()).with_max_rollback(Duration::from_millis(50));
        let before = gen.next_id().unwrap();
        clock.set(T0 + 97); // NTP stepped the clock back 3 ms
        let advancer = {
            let clock = clock.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(10));
                clock.set(T0 + 101);
            })
        };
        let after = gen.next_id().unwrap();
        advancer.join().unwrap();
        assert!(after > before);
        assert_eq!(gen.parse(after).unwrap().timestamp_ms, T0 + 101);
    }

    #[test]
    fn large_rollback_is_an_error_not_a_duplicate() {
        let clock = Arc::new(ManualClock::new(T0 + 3_600_000));
        let gen = Snowflake::new(7).unwrap().with_clock(clock.clone());
        gen.next_id().unwrap();
        clock.set(T0);
        let err = gen.next_id().unwrap_err();
        assert_eq!(err.kind(), IdErrorKind::Clock);
        assert!(err.to_string().contains("moved back 3600000 ms"), "{err}");
    }

    #[test]
    fn clock_that_never_catches_up_fails_in_bounded_time() {
        let clock = Arc::new(ManualClock::new(T0 + 100));
        let gen = Snowflake::new(7).unwrap().with_clock(clock.clone());
        gen.next_id().unwrap();
        clock.set(T0 + 95);
        let started = std::time::Instant::now();
        assert!(gen.next_id().is_err());
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn unique_and_increasing_per_thread_across_threads() {
        let gen = Arc::new(Snowflake::new(3).unwrap());
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let gen = gen.clone();
                std::thread::spawn(move || {
                    let ids = gen.next_ids(50_000).unwrap();
                    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids went backwards within a thread");
                    ids
                })
            })
            .collect();
        let mut seen = HashSet::new();
        for t in threads {
            for id in t.join().unwrap() {
                assert!(seen.insert(id), "duplicate id {id}");
            }
        }
        assert_eq!(seen.len(), 400_000);
    }
}
