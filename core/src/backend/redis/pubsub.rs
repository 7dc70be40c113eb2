//! One pub/sub connection shared by every waiter of a client. Each channel a waiter listens
//! on is subscribed once, counted, and unsubscribed when its last listener leaves.
//!
//! A release message wakes one waiter of this client, the longest waiting, not all of them:
//! only one can win the lock, and a herd of attempts would slow that one down. Channels of
//! read-write locks and semaphores, where one release can let several in, wake them all. A lost
//! connection wakes them all, since messages may have been missed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use redis::{PushKind, Value};
use tokio::sync::Notify;

use super::link::Link;
use super::push::PushReceiver;
use crate::backend::poll::Wakeups;
use crate::error::Result;

struct Channel {
    wake: Arc<Notify>,
    /// Wake every listener on a message, not just the longest waiting: read-write locks and
    /// semaphores, where one release can let several waiters in.
    everyone: bool,
    listeners: usize,
    /// Whether the server has us subscribed; changed only under this lock, so a SUBSCRIBE and
    /// the UNSUBSCRIBE of an earlier listener never cross.
    subscribed: Arc<tokio::sync::Mutex<bool>>,
}

type Channels = Arc<Mutex<HashMap<String, Channel>>>;

pub(super) struct Subscriptions {
    link: Arc<Link>,
    channels: Channels,
}

/// A listener on one channel; leaving is dropping it.
pub(super) struct Subscription {
    subscriptions: Arc<Subscriptions>,
    name: String,
    wake: Arc<Notify>,
}

/// `notify_one` keeps a permit when nobody is waiting yet, so a release between an attempt
/// and the wait is not lost; a stale permit costs one extra attempt at most.
impl Wakeups for Subscription {
    fn arm(&mut self) {}

    async fn next(&mut self) {
        self.wake.notified().await;
    }
}

impl Subscriptions {
    /// Start dispatching the push messages of the link's subscriber connection.
    pub fn start(link: Arc<Link>, mut pushes: PushReceiver) -> Arc<Subscriptions> {
        let channels: Channels = Arc::default();
        let dispatch = channels.clone();
        tokio::spawn(async move {
            while let Some(push) = pushes.recv().await {
                let channels = dispatch.lock().unwrap_or_else(|e| e.into_inner());
                // Messages were dropped on a full queue: wake everyone to look again.
                if pushes.take_overflow() {
                    for channel in channels.values() {
                        channel.wake.notify_waiters();
                    }
                }
                match push.kind {
                    PushKind::Message | PushKind::SMessage => {
                        if let Some(channel) = push.data.first().and_then(channel_name).and_then(|n| channels.get(&n)) {
                            channel.wake_up();
                        }
                    }
                    // Messages sent while we were away are lost: wake everyone to look again.
                    PushKind::Disconnection => {
                        for channel in channels.values() {
                            channel.wake.notify_waiters();
                        }
                    }
                    _ => {}
                }
            }
        });
        Arc::new(Subscriptions { link, channels })
    }

    /// Listen on `name`, subscribing on the server if nobody in this client already is.
    /// Returns once the server has confirmed the subscription.
    pub async fn listen(self: &Arc<Self>, name: &str) -> Result<Subscription> {
        self.listen_with(name, false).await
    }

    /// [`Subscriptions::listen`] on a channel whose messages wake every listener of this
    /// client (each one tries again; those that lose wait on).
    pub async fn listen_all(self: &Arc<Self>, name: &str) -> Result<Subscription> {
        self.listen_with(name, true).await
    }

    async fn listen_with(self: &Arc<Self>, name: &str, everyone: bool) -> Result<Subscription> {
        let (wake, subscribed) = {
            let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
            let channel = channels.entry(name.to_string()).or_insert_with(|| Channel {
                wake: Arc::default(),
                everyone,
                listeners: 0,
                subscribed: Arc::default(),
            });
            channel.everyone |= everyone;
            channel.listeners += 1;
            (channel.wake.clone(), channel.subscribed.clone())
        };
        // From here on, dropping the subscription undoes the count.
        let subscription = Subscription { subscriptions: self.clone(), name: name.to_string(), wake };
        let mut is_subscribed = subscribed.lock().await;
        if !*is_subscribed {
            self.link.subscribe(name).await?;
            *is_subscribed = true;
        }
        Ok(subscription)
    }

    /// This client released the lock: wake one of its own waiters now rather than after the
    /// message's round trip through the server.
    pub fn released_locally(&self, name: &str) {
        if let Some(channel) = self.channels.lock().unwrap_or_else(|e| e.into_inner()).get(name) {
            channel.wake_up();
        }
    }

    fn leave(self: &Arc<Self>, name: &str) {
        let subscribed = {
            let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
            let Some(channel) = channels.get_mut(name) else { return };
            channel.listeners -= 1;
            if channel.listeners > 0 {
                return;
            }
            channel.subscribed.clone()
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // Let go of outside any runtime (a binding freeing a watch after its client): no
            // task can unsubscribe now; the channel is forgotten, and a later listener on it
            // subscribes again (a second SUBSCRIBE is harmless).
            let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
            if channels.get(name).is_some_and(|c| c.listeners == 0) {
                channels.remove(name);
            }
            return;
        };
        let this = self.clone();
        let name = name.to_string();
        runtime.spawn(async move {
            let mut is_subscribed = subscribed.lock().await;
            let still_unused =
                this.channels.lock().unwrap_or_else(|e| e.into_inner()).get(&name).is_some_and(|c| c.listeners == 0);
            if !still_unused {
                return; // a new listener arrived and relies on the subscription
            }
            if *is_subscribed && this.link.unsubscribe(&name).await.is_ok() {
                *is_subscribed = false;
            }
            let mut channels = this.channels.lock().unwrap_or_else(|e| e.into_inner());
            if channels.get(&name).is_some_and(|c| c.listeners == 0) && !*is_subscribed {
                channels.remove(&name);
            }
        });
    }
}

impl Channel {
    fn wake_up(&self) {
        if self.everyone {
            self.wake.notify_waiters();
        }
        // Also keeps a permit for a listener between its attempt and its wait.
        self.wake.notify_one();
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.subscriptions.leave(&self.name);
    }
}

fn channel_name(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
        Value::SimpleString(text) => Some(text.clone()),
        _ => None,
    }
}
