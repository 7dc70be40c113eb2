//! What the backend keeps per hold: the key and its create revision (the fencing token), the
//! lane (session) the key is under, and the lease that polylock gives each hold on top of the
//! session. A hold's lease is kept here, not in etcd: the key is deleted when the lease runs
//! out without renewal (an explicit lease, or a watchdog that stopped), while the session
//! lease bounds how long a crashed client's keys outlive it.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use etcd_client::Client;
use tokio::task::AbortHandle;
use tokio::time::{sleep, sleep_until, Instant};

use super::mutex::delete_if_revision;
use super::session::{Session, SessionHold};
use super::session_pool::PoolSlot;
use crate::spi::{LostNotifier, LostReason};

pub(super) struct EtcdHold {
    pub key: String,
    pub revision: i64,
    /// A key (and its create revision) that goes with this hold's: a downgraded write key
    /// that the read hold keeps until it ends (rw_lock.rs).
    pub companion: Mutex<Option<(String, i64)>>,
    pub lost: LostNotifier,
    pub session: Arc<Session>,
    state: Mutex<HoldState>,
}

struct HoldState {
    /// When the hold's lease runs out unless renewed.
    expires_at: Instant,
    /// Freed for the next owner of this client once the key is gone.
    lane: Option<PoolSlot>,
    expiry: Option<AbortHandle>,
    session_entry: Option<u64>,
}

impl EtcdHold {
    /// Record the hold with its session and start the timer that deletes its key when its
    /// lease runs out.
    pub fn start(
        client: &Client,
        key: String,
        revision: i64,
        lost: LostNotifier,
        session: Arc<Session>,
        lane: Option<PoolSlot>,
        expires_at: Instant,
    ) -> Arc<EtcdHold> {
        let hold = Arc::new(EtcdHold {
            key,
            revision,
            companion: Mutex::new(None),
            lost,
            session: session.clone(),
            state: Mutex::new(HoldState { expires_at, lane, expiry: None, session_entry: None }),
        });
        let expiry = tokio::spawn(expire(client.clone(), Arc::downgrade(&hold)));
        {
            let mut state = hold.state();
            state.expiry = Some(expiry.abort_handle());
        }
        let entry = session.remember(hold.clone() as Arc<dyn SessionHold>);
        hold.state().session_entry = Some(entry);
        hold
    }

    fn state(&self) -> std::sync::MutexGuard<'_, HoldState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn extend(&self, lease: Duration) {
        self.state().expires_at = Instant::now() + lease;
    }

    /// The hold is over (released, expired, or its session ended): stop its timer, leave the
    /// session's list and free its lane. Idempotent.
    pub fn finish(&self) {
        let (lane, expiry, entry) = {
            let mut state = self.state();
            (state.lane.take(), state.expiry.take(), state.session_entry.take())
        };
        if let Some(expiry) = expiry {
            expiry.abort();
        }
        if let Some(entry) = entry {
            self.session.forget(entry);
        }
        drop(lane);
    }
}

/// Delete the key when the hold's lease runs out without renewal, retrying until etcd takes
/// the delete or the session (and with it the key) is gone.
async fn expire(client: Client, hold: Weak<EtcdHold>) {
    loop {
        let Some(at) = hold.upgrade().map(|h| h.state().expires_at) else { return };
        sleep_until(at).await;
        let Some(hold) = hold.upgrade() else { return };
        if hold.state().expires_at > Instant::now() {
            continue; // renewed meanwhile
        }
        // Not aborted by the `finish` below: this task is ending anyway.
        hold.state().expiry = None;
        let companion = hold.companion.lock().unwrap_or_else(|e| e.into_inner()).take();
        for (key, revision) in std::iter::once((hold.key.clone(), hold.revision)).chain(companion) {
            while !hold.session.is_ended() {
                if delete_if_revision(&client, &key, revision).await.is_ok() {
                    break;
                }
                sleep(Duration::from_millis(200)).await;
            }
        }
        hold.finish();
        return;
    }
}

impl SessionHold for EtcdHold {
    fn is(&self, key: &str, revision: i64) -> bool {
        self.key == key && self.revision == revision
    }

    fn session_ended(&self, why: &str) {
        self.lost.mark(LostReason::SessionEnded(why.to_string()));
        self.finish();
    }

    fn finish(&self) {
        EtcdHold::finish(self)
    }
}
