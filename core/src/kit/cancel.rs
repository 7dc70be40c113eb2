//! Acquisitions that the caller can give up on (an `AbortSignal`, an asyncio cancel, a Java
//! interrupt): one implementation for every binding.
//!
//! Giving up drops the acquisition's future. The engine guarantees that this never leaves a
//! hold behind: an acquisition whose caller went away finishes in a task of its own and gives
//! back whatever it was granted (engine/acquire.rs, `PendingAcquire`). So a grant that
//! arrives after the caller gave up is released, never leaked.

use std::future::Future;

/// The token a binding cancels when its caller gives up (re-exported so bindings need not
/// depend on tokio-util themselves).
pub use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};

/// Run `acquisition` until it ends or `cancel` fires, whichever is first; a cancel ends it
/// with an error of kind `Cancelled` that names `what` ("lock 'orders:42'").
pub async fn cancellable<T>(
    what: &str,
    cancel: &CancellationToken,
    acquisition: impl Future<Output = Result<T>>,
) -> Result<T> {
    tokio::select! {
        // An acquisition that has already answered wins over a cancel that comes with it.
        biased;
        acquired = acquisition => acquired,
        () = cancel.cancelled() => Err(Error::cancelled(format!("the acquisition of {what} was cancelled"))),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{Client, ErrorKind};

    /// Cancelled at many moments, some of them just as the holder lets go (so the grant and
    /// the cancel race), a waiting acquisition ends `Cancelled` or granted, and a grant the
    /// caller gave up on is given back: each round the lock is free again. Every third round
    /// cancels while the holder still holds, so `Cancelled` is seen however the machine
    /// schedules the racing rounds (under load those are often granted first).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cancelled_acquisition_leaves_nothing_held() {
        let client = Client::connect("mem://kit-cancel").await.unwrap();
        for round in 0..60u64 {
            let holder = client.lock("job").unwrap().acquire().await.unwrap();
            let waiter = client.lock("job").unwrap();
            let cancel = CancellationToken::new();
            let acquiring = {
                let cancel = cancel.clone();
                tokio::spawn(async move { cancellable("lock 'job'", &cancel, waiter.acquire()).await.map(drop) })
            };
            tokio::time::sleep(Duration::from_micros(37 * (round / 3))).await;
            let held_throughout = match round % 3 {
                0 => {
                    holder.release().await.unwrap(); // the grant races the cancel below
                    None
                }
                1 => {
                    drop(holder); // released in the background
                    None
                }
                _ => Some(holder),
            };
            cancel.cancel();
            // Ok: granted first, then the guard was dropped, which releases it.
            match acquiring.await.unwrap() {
                Err(err) => assert_eq!(err.kind(), ErrorKind::Cancelled, "round {round}: {err}"),
                Ok(()) => assert!(held_throughout.is_none(), "round {round}: granted while another held the lock"),
            }
            if let Some(holder) = held_throughout {
                holder.release().await.unwrap();
            }
            let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
            loop {
                match client.lock("job").unwrap().try_acquire().await.unwrap() {
                    Some(guard) => break guard.release().await.unwrap(),
                    None if tokio::time::Instant::now() < deadline => {
                        tokio::time::sleep(Duration::from_millis(2)).await
                    }
                    None => panic!("round {round}: a cancelled acquisition left the lock held"),
                }
            }
        }
        client.close().await;
    }
}
