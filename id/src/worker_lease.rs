//! When a Snowflake generator holding a leased worker id may issue which timestamps, with no
//! I/O. The lease itself is taken and renewed in a store by the caller; this is the
//! arithmetic that keeps IDs from repeating across holders of one worker id:
//!
//! 1. Every renewal persists a high-water mark, `reserved_until = sent + ttl`, beside the
//!    lease, and the holder never issues a timestamp above the last mark it persisted.
//! 2. A new holder of the id starts after the previous holder's mark: it issues nothing at or
//!    below it, whatever its own clock says (a clock behind the previous holder's waits, or
//!    fails past a bound).
//! 3. The holder stops issuing at its local deadline (the send time of the last successful
//!    renewal + ttl - margin), with or without news from the store.

use crate::error::{IdError, Result};

/// One holder's view of its worker-id lease. Times are clock milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerLease {
    worker: u64,
    ttl_ms: u64,
    margin_ms: u64,
    /// Timestamps at or below this were (or may have been) issued by an earlier holder.
    floor_ms: u64,
    /// The mark this holder persisted last: it issues no timestamp above it.
    reserved_until_ms: u64,
    /// It issues nothing from this time on unless renewed.
    deadline_ms: u64,
}

/// What [`WorkerLease::check`] says of a timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Issue {
    /// Issue IDs with this timestamp.
    Now,
    /// Not yet: an earlier holder may have issued up to `until_ms`; wait until the clock
    /// passes it.
    WaitUntil { until_ms: u64 },
}

impl WorkerLease {
    /// A lease just granted at `granted_ms` (the send time of the request that took it),
    /// after a previous holder whose last persisted mark was `previous_mark_ms` (0 if none).
    /// Returns the lease and the mark to persist with it.
    pub fn granted(worker: u64, ttl_ms: u64, margin_ms: u64, granted_ms: u64, previous_mark_ms: u64) -> Result<Self> {
        if margin_ms >= ttl_ms {
            return Err(IdError::invalid_argument(format!(
                "a worker lease's safety margin ({margin_ms} ms) must be shorter than its ttl ({ttl_ms} ms)"
            )));
        }
        let mut lease = WorkerLease {
            worker,
            ttl_ms,
            margin_ms,
            floor_ms: previous_mark_ms,
            reserved_until_ms: previous_mark_ms,
            deadline_ms: 0,
        };
        lease.renewed(granted_ms);
        Ok(lease)
    }

    pub fn worker(&self) -> u64 {
        self.worker
    }

    /// A renewal sent at `sent_ms` succeeded: extend the deadline and return the new mark to
    /// persist (the caller writes it in the same request as the renewal, or before issuing
    /// past the old mark).
    pub fn renewed(&mut self, sent_ms: u64) -> u64 {
        self.deadline_ms = sent_ms + self.ttl_ms - self.margin_ms;
        self.reserved_until_ms = self.reserved_until_ms.max(sent_ms + self.ttl_ms);
        self.reserved_until_ms
    }

    /// The mark this holder persisted last.
    pub fn reserved_until_ms(&self) -> u64 {
        self.reserved_until_ms
    }

    /// Whether IDs with timestamp `now_ms` may be issued now (the clock reads `now_ms`).
    /// An error of kind `Exhausted` once the lease's deadline has passed or the clock is past
    /// the persisted mark (renew first); of kind `Clock` when an earlier holder's mark is
    /// further ahead than `max_wait_ms`.
    pub fn check(&self, now_ms: u64, max_wait_ms: u64) -> Result<Issue> {
        if now_ms >= self.deadline_ms {
            return Err(IdError::exhausted(format!(
                "the lease of worker id {} ran out at {} ms without a renewal; stop issuing and take a lease again",
                self.worker, self.deadline_ms
            )));
        }
        if now_ms > self.reserved_until_ms {
            return Err(IdError::exhausted(format!(
                "worker id {} may issue up to {} ms (its persisted mark); renew before issuing at {now_ms} ms",
                self.worker, self.reserved_until_ms
            )));
        }
        if now_ms <= self.floor_ms {
            let wait = self.floor_ms + 1 - now_ms;
            if wait > max_wait_ms {
                return Err(IdError::clock(format!(
                    "worker id {} was used up to {} ms by its previous holder, {wait} ms ahead of this clock \
                     (more than the {max_wait_ms} ms tolerated)",
                    self.worker, self.floor_ms
                )));
            }
            return Ok(Issue::WaitUntil { until_ms: self.floor_ms + 1 });
        }
        Ok(Issue::Now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::IdErrorKind;

    const T: u64 = 1_700_000_000_000;

    #[test]
    fn a_holder_issues_within_its_deadline_and_its_mark() {
        let mut lease = WorkerLease::granted(3, 30_000, 5_000, T, 0).unwrap();
        assert_eq!(lease.reserved_until_ms(), T + 30_000);
        assert_eq!(lease.check(T + 1, 10), Ok(Issue::Now));
        assert_eq!(lease.check(T + 25_000, 10).unwrap_err().kind(), IdErrorKind::Exhausted, "past ttl - margin");
        assert_eq!(lease.renewed(T + 10_000), T + 40_000);
        assert_eq!(lease.check(T + 25_000, 10), Ok(Issue::Now));
    }

    #[test]
    fn a_new_holder_never_issues_at_or_below_the_previous_mark() {
        // The previous holder persisted a mark 40 ms ahead of the new holder's clock.
        let lease = WorkerLease::granted(3, 30_000, 5_000, T, T + 40).unwrap();
        assert_eq!(lease.check(T, 100), Ok(Issue::WaitUntil { until_ms: T + 41 }));
        assert_eq!(lease.check(T + 40, 100), Ok(Issue::WaitUntil { until_ms: T + 41 }));
        assert_eq!(lease.check(T + 41, 100), Ok(Issue::Now));
        assert_eq!(lease.check(T, 10).unwrap_err().kind(), IdErrorKind::Clock, "too far ahead to wait");
        // Its own mark covers at least the previous one.
        assert!(lease.reserved_until_ms() >= T + 40);
    }

    #[test]
    fn the_margin_must_be_shorter_than_the_ttl() {
        assert_eq!(WorkerLease::granted(0, 1_000, 1_000, T, 0).unwrap_err().kind(), IdErrorKind::InvalidArgument);
    }
}
