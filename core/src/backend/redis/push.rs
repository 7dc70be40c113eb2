//! The queue between the connections' push callbacks (sync, never waiting) and the pub/sub
//! dispatcher (`pubsub.rs`): bounded, with an overflow flag the dispatcher reads.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use redis::PushInfo;
use tokio::sync::mpsc::error::TrySendError;

/// The most push messages queued for the dispatcher. Past it a message is dropped and the
/// dispatcher, told of the overflow, wakes every listener to look again, as after a lost
/// connection: memory stays bounded however fast the server pushes.
pub(super) const PUSH_QUEUE: usize = 4096;

/// The sending side of the push queue, as the connections' push callbacks use it.
#[derive(Clone)]
pub(super) struct PushSender {
    queue: tokio::sync::mpsc::Sender<PushInfo>,
    overflowed: Arc<AtomicBool>,
}

/// The receiving side: the dispatcher's.
pub(super) struct PushReceiver {
    queue: tokio::sync::mpsc::Receiver<PushInfo>,
    overflowed: Arc<AtomicBool>,
}

/// A bounded push queue of [`PUSH_QUEUE`] messages.
pub(super) fn push_channel() -> (PushSender, PushReceiver) {
    let (queue, receiver) = tokio::sync::mpsc::channel(PUSH_QUEUE);
    let overflowed = Arc::new(AtomicBool::new(false));
    (PushSender { queue, overflowed: overflowed.clone() }, PushReceiver { queue: receiver, overflowed })
}

impl PushSender {
    /// Queue `info`, never waiting: a full queue drops it and records the overflow. `Err`
    /// once the dispatcher is gone.
    pub fn send(&self, info: PushInfo) -> std::result::Result<(), ()> {
        match self.queue.try_send(info) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => {
                self.overflowed.store(true, Ordering::Release);
                Ok(())
            }
            Err(TrySendError::Closed(_)) => Err(()),
        }
    }
}

impl PushReceiver {
    /// The next message; `None` once every sender is gone.
    pub async fn recv(&mut self) -> Option<PushInfo> {
        self.queue.recv().await
    }

    /// Whether messages were dropped since the last call.
    pub fn take_overflow(&self) -> bool {
        self.overflowed.swap(false, Ordering::AcqRel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::PushKind;

    #[test]
    fn the_push_queue_is_bounded_and_records_an_overflow() {
        let (sender, mut receiver) = push_channel();
        for _ in 0..PUSH_QUEUE + 100 {
            sender.send(PushInfo { kind: PushKind::Message, data: vec![] }).unwrap();
        }
        assert!(receiver.overflowed.load(Ordering::Acquire));
        let mut queued = 0;
        while receiver.queue.try_recv().is_ok() {
            queued += 1;
        }
        assert_eq!(queued, PUSH_QUEUE);
        drop(receiver);
        assert!(sender.send(PushInfo { kind: PushKind::Message, data: vec![] }).is_err());
    }
}
