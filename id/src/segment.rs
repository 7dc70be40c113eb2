//! Leaf-style segment bookkeeping, with no I/O: ID ranges reserved from a store (one
//! statement each, by the caller), handed out one by one, with the next range loaded in the
//! background once a share of the current one is used (the double buffer), and the step
//! adapted to how fast ranges are used, as Leaf's `SegmentIDGenImpl` does:
//! a range that lasted under 15 minutes doubles the step (up to a bound), one that lasted
//! over 30 minutes halves it (down to the configured step).
//!
//! The caller owns the I/O: when [`Segments::should_load`] says so it calls
//! [`Segments::start_load`] for the step to reserve, reserves it, and reports back with
//! [`Segments::loaded`] or [`Segments::load_failed`].

use std::ops::Range;

use crate::clock::Clock;
use crate::error::{IdError, Result};

/// Leaf's `SEGMENT_DURATION`: the time a range should last.
pub const SEGMENT_DURATION_MS: u64 = 15 * 60 * 1000;
/// Leaf's `MAX_STEP`.
pub const DEFAULT_MAX_STEP: u64 = 1_000_000;

/// How segments are sized and when the next one is loaded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SegmentConfig {
    /// The configured step (Leaf's `leaf_alloc.step`): the first and the smallest.
    pub step: u64,
    /// The largest step adaptation may reach.
    pub max_step: u64,
    /// Load the next range once this share of the current one is used (Leaf: 0.1).
    pub load_at: f64,
}

impl SegmentConfig {
    pub fn new(step: u64) -> Result<Self> {
        if step == 0 {
            return Err(IdError::invalid_argument("a segment step must be at least 1"));
        }
        Ok(SegmentConfig { step, max_step: DEFAULT_MAX_STEP.max(step), load_at: 0.1 })
    }
}

/// The double buffer of one tag.
pub struct Segments {
    config: SegmentConfig,
    clock: Box<dyn Clock>,
    current: Range<u64>,
    /// The first value of `current`, for measuring how much of it is used.
    current_start: u64,
    next: Option<Range<u64>>,
    loading: bool,
    /// The step the last load asked for, and when it was loaded (clock ms).
    step: u64,
    last_loaded_ms: Option<u64>,
}

impl Segments {
    pub fn new(config: SegmentConfig, clock: impl Clock) -> Self {
        Segments {
            config,
            clock: Box::new(clock),
            current: 0..0,
            current_start: 0,
            next: None,
            loading: false,
            step: config.step,
            last_loaded_ms: None,
        }
    }

    /// The next ID, or `Exhausted` when both ranges are used up (a load is then due or
    /// under way: wait for it).
    pub fn next_id(&mut self) -> Result<u64> {
        if self.current.is_empty() {
            match self.next.take() {
                Some(next) => self.switch_to(next),
                None => {
                    return Err(IdError::exhausted("every reserved ID is used; the next range is not loaded yet"));
                }
            }
        }
        let id = self.current.start;
        self.current.start += 1;
        Ok(id)
    }

    /// Up to `count` IDs from what is loaded (fewer when the ranges run out first).
    pub fn next_ids(&mut self, count: usize) -> Vec<u64> {
        // Never more than is loaded, so the capacity need not follow a huge count.
        let mut ids = Vec::with_capacity(count.min(crate::MAX_BATCH));
        while ids.len() < count {
            match self.next_id() {
                Ok(id) => ids.push(id),
                Err(_) => break,
            }
        }
        ids
    }

    /// Whether the caller should load the next range now: none is loaded or loading, and
    /// the current one is used past the configured share (or empty).
    pub fn should_load(&self) -> bool {
        if self.loading || self.next.is_some() {
            return false;
        }
        let size = self.current.end - self.current_start;
        let used = self.current.start - self.current_start;
        size == 0 || self.current.is_empty() || used as f64 >= size as f64 * self.config.load_at
    }

    /// Mark a load as under way and return the step to reserve, adapted to how long the
    /// last range lasted.
    pub fn start_load(&mut self) -> u64 {
        self.loading = true;
        let now = self.clock.now_ms();
        self.step = match self.last_loaded_ms {
            None => self.step,
            Some(then) => {
                let lasted = now.saturating_sub(then);
                if lasted < SEGMENT_DURATION_MS {
                    (self.step.saturating_mul(2)).min(self.config.max_step)
                } else if lasted < 2 * SEGMENT_DURATION_MS {
                    self.step
                } else {
                    (self.step / 2).max(self.config.step)
                }
            }
        };
        self.step
    }

    /// The reserved range arrived: it becomes the current one if that is used up, else the
    /// next.
    pub fn loaded(&mut self, range: Range<u64>) {
        self.loading = false;
        self.last_loaded_ms = Some(self.clock.now_ms());
        if self.current.is_empty() {
            self.switch_to(range);
        } else {
            self.next = Some(range);
        }
    }

    /// The load failed; the next `should_load` asks again (the caller backs off).
    pub fn load_failed(&mut self) {
        self.loading = false;
    }

    /// The step the last load asked for.
    pub fn step(&self) -> u64 {
        self.step
    }

    fn switch_to(&mut self, range: Range<u64>) {
        self.current_start = range.start;
        self.current = range;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{IdErrorKind, ManualClock};

    const MIN: u64 = 60_000;

    fn segments(step: u64) -> (Segments, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new(1_700_000_000_000));
        (Segments::new(SegmentConfig::new(step).unwrap(), clock.clone()), clock)
    }

    #[test]
    fn ids_come_from_the_current_range_then_the_next_and_never_repeat() {
        let (mut seg, _) = segments(10);
        assert_eq!(seg.next_id().unwrap_err().kind(), IdErrorKind::Exhausted);
        assert!(seg.should_load());
        assert_eq!(seg.start_load(), 10);
        assert!(!seg.should_load(), "one load at a time");
        seg.loaded(0..10);
        assert_eq!(seg.next_id().unwrap(), 0);
        assert!(seg.should_load(), "10% used: load the next range in the background");
        seg.start_load();
        seg.loaded(100..120);
        assert!(!seg.should_load(), "the next range is there");
        let ids = seg.next_ids(15);
        assert_eq!(ids, (1..10).chain(100..106).collect::<Vec<_>>());
        assert!(seg.should_load(), "the range switched; 6 of 20 used");
    }

    #[test]
    fn a_failed_load_is_asked_for_again() {
        let (mut seg, _) = segments(5);
        seg.start_load();
        seg.load_failed();
        assert!(seg.should_load());
        assert_eq!(SegmentConfig::new(0).unwrap_err().kind(), IdErrorKind::InvalidArgument);
    }

    #[test]
    fn the_step_doubles_when_ranges_go_fast_and_halves_when_slow_within_bounds() {
        let (mut seg, clock) = segments(100);
        seg.start_load();
        seg.loaded(0..100);
        clock.advance(MIN);
        assert_eq!(seg.start_load(), 200, "lasted 1 min < 15 min: double");
        seg.loaded(100..300);
        clock.advance(20 * MIN);
        assert_eq!(seg.start_load(), 200, "lasted 20 min: keep");
        seg.loaded(300..500);
        clock.advance(40 * MIN);
        assert_eq!(seg.start_load(), 100, "lasted 40 min > 30 min: halve");
        seg.loaded(500..600);
        clock.advance(40 * MIN);
        assert_eq!(seg.start_load(), 100, "never below the configured step");
        let mut fast = segments(600_000).0;
        fast.start_load();
        fast.loaded(0..1);
        assert_eq!(fast.start_load(), DEFAULT_MAX_STEP, "never above the bound");
    }
}
