//! How a SQLite mutex waiter waits between attempts. The row decides every grant; what
//! wakes the waiter for its next attempt depends on what the last one found:
//!
//! - the name's file held by someone and the row held: a process using the files holds it.
//!   Wait in the kernel on the file (`name_files.rs`), with the row's lease end as the
//!   fallback for a holder paused past its lease, and a slow poll for holders that took the
//!   row without the file (after such a lease end);
//! - the file held but the row free: a holder between deleting its row and unlocking its
//!   file, or a waiter between locking the file and writing the row. Wait on the file with
//!   the short backoff; if the row stays free for [`FILE_GRACE`] while the file stays held
//!   (its holder stopped in between), take the row without the file;
//! - the file free (or unusable) and the row held: a holder that does not use the files.
//!   Poll with the short backoff, as every waiter did before the files.
//!
//! Releases within this process wake every local waiter at once, whatever the case.

use std::time::Duration;

use tokio::time::{sleep_until, Instant};

use super::name_files::FileWait;
use super::{SqliteBackend, BACKOFF};
use crate::error::Result;
use crate::spi::{AcquireRequest, Acquired};

/// How long a free row beside a held file is left to the file's holder before a waiter
/// takes the row without the file.
pub(super) const FILE_GRACE: Duration = Duration::from_millis(100);

/// The slowest poll of a waiter blocked on a file, for holders that hold the row without it.
pub(super) const FILE_WAIT_POLL: Duration = Duration::from_millis(250);

/// What one attempt on a mutex found.
pub(super) enum LockAttempt {
    Acquired(Acquired),
    Busy {
        /// The holder's lease left, if the row is held.
        holder_lease_left: Option<Duration>,
        /// Someone holds the name's file.
        file_busy: bool,
    },
}

/// Attempt until granted, the deadline or cancellation.
pub(super) async fn acquire_lock(db: &SqliteBackend, request: &AcquireRequest) -> Result<Option<Acquired>> {
    let mut released = db.released();
    let mut pause = BACKOFF.min;
    let (first_slow_pause, slowest_pause) = db.file_wait_poll;
    let mut slow_pause = first_slow_pause;
    let mut row_free_since: Option<Instant> = None;
    let mut file_wait: Option<FileWait> = None;
    loop {
        released.borrow_and_update();
        let take_without_file = row_free_since.is_some_and(|since| since.elapsed() >= FILE_GRACE);
        let (holder_lease_left, file_busy) = match db.lock_attempt(request, take_without_file).await? {
            LockAttempt::Acquired(acquired) => return Ok(Some(acquired)),
            LockAttempt::Busy { holder_lease_left, file_busy } => (holder_lease_left, file_busy),
        };
        let now = Instant::now();
        if request.deadline.is_some_and(|deadline| now >= deadline) || request.cancel.is_cancelled() {
            return Ok(None);
        }
        let jittered = |pause: Duration| pause.mul_f64(0.5 + fastrand::f64() * 0.5);
        let mut wait = match (file_busy, holder_lease_left) {
            (true, Some(_)) => {
                row_free_since = None;
                jittered(slow_pause)
            }
            (true, None) => {
                row_free_since.get_or_insert(now);
                jittered(pause)
            }
            (false, _) => {
                row_free_since = None;
                jittered(pause)
            }
        };
        if let Some(left) = holder_lease_left {
            wait = wait.min(left + Duration::from_millis(1));
        }
        let mut wake_at = now + wait;
        if let Some(deadline) = request.deadline {
            wake_at = wake_at.min(deadline);
        }
        if file_busy {
            match (&file_wait, &db.files) {
                (Some(waiting), _) => waiting.arm(),
                (None, Some(files)) => file_wait = Some(files.wait_for(&request.key)),
                (None, None) => {}
            }
        }
        let got_file = async {
            match &file_wait {
                Some(waiting) if file_busy => waiting.got_file().await,
                _ => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = released.changed() => (pause, slow_pause) = (BACKOFF.min, first_slow_pause),
            _ = got_file => (pause, slow_pause) = (BACKOFF.min, first_slow_pause),
            _ = sleep_until(wake_at) => {
                pause = (pause * 2).min(BACKOFF.max);
                slow_pause = (slow_pause * 2).min(slowest_pause);
            }
            _ = request.cancel.cancelled() => return Ok(None),
        }
    }
}
