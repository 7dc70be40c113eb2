//! `Election`, `Leadership` and `LeaderChanges`: leader elections, translated from the core's
//! `Election` (no logic here). Values are bytes, as in Python: Buffers out, and a Buffer,
//! Uint8Array or string (its UTF-8) in. Terms are BigInts (fencing tokens).

use std::sync::{Arc, Mutex, MutexGuard};

use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi_derive::napi;
use polylock::{LeaderRecord, LostWatch};
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;

use crate::cancel::AcquireCancel;
use crate::convert::wait_from_millis;
use crate::errors::{to_napi, IntoNapiResult};
use crate::lock::until_cancelled;
use crate::settle;
use crate::values::bytes_of;

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks; if something ever did, the state is still valid.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[napi(object, object_to_js = false)]
pub struct CampaignOptions {
    /// How long to campaign, in ms. Absent: until this candidate leads; 0: try once. A wait
    /// that runs out leaves no candidacy behind: `campaign` rejects with `POLYLOCK_TIMEOUT`,
    /// `tryCampaign` resolves to `null`.
    pub wait_ms: Option<f64>,
}

/// The leader of an election: the value it campaigned with or last proclaimed, and its term.
#[napi(object, object_from_js = false)]
pub struct Leader {
    pub value: Buffer,
    /// The leader's term (a fencing token: greater for every new leader).
    pub term: BigInt,
}

fn leader_of(record: LeaderRecord) -> Leader {
    Leader { value: record.value.into(), term: BigInt::from(record.term) }
}

/// One step of an observed election: the leader after a change (`null`: nobody leads), or
/// `ended` once the stream is over (closed, or its client closed).
#[napi(object, object_from_js = false)]
pub struct LeaderChange {
    pub ended: bool,
    pub leader: Option<Leader>,
}

/// A named election as seen by one client. Each campaign is a candidate of its own.
#[napi]
pub struct Election {
    election: polylock::Election,
}

impl Election {
    pub fn new(election: polylock::Election) -> Self {
        Election { election }
    }
}

#[napi]
impl Election {
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.election.name().to_string()
    }

    /// Campaign with `value` until this candidate leads (at most `waitMs`); resolves to the
    /// leadership. Rejects with `POLYLOCK_TIMEOUT` if `waitMs` runs out and with the signal's
    /// reason if `signal` aborts the campaign; either way no candidacy is left behind.
    #[napi(
        ts_args_type = "value: Buffer | Uint8Array | string, options?: CampaignOptions",
        ts_return_type = "Promise<Leadership>"
    )]
    pub fn campaign<'env>(
        &self,
        env: &'env Env,
        value: Either<Buffer, String>,
        options: Option<CampaignOptions>,
        cancel: Option<&AcquireCancel>,
    ) -> Result<PromiseRaw<'env, Leadership>> {
        let wait = wait_from_millis(options.and_then(|options| options.wait_ms))?;
        let (election, value) = (self.election.clone(), bytes_of(value));
        let cancel = cancel.map(AcquireCancel::token);
        let what = format!("leadership of election '{}'", election.name());
        settle::spawn(env, async move {
            // A campaign dropped by a cancel withdraws its candidacy (the core's rule).
            let won = until_cancelled(what, cancel, async move { election.campaign(&value, wait).await }).await;
            won.map(Leadership::new).map_err(to_napi)
        })
    }

    /// The try form of `campaign`: campaign with `value` until this candidate leads (at most
    /// `waitMs`; 0: try once) and resolve to the leadership, or to `null` when `waitMs` runs
    /// out first. Rejects with the signal's reason if `signal` aborts the campaign; either way
    /// no candidacy is left behind.
    #[napi(
        ts_args_type = "value: Buffer | Uint8Array | string, options?: CampaignOptions",
        ts_return_type = "Promise<Leadership | null>"
    )]
    pub fn try_campaign<'env>(
        &self,
        env: &'env Env,
        value: Either<Buffer, String>,
        options: Option<CampaignOptions>,
        cancel: Option<&AcquireCancel>,
    ) -> Result<PromiseRaw<'env, Option<Leadership>>> {
        let wait = wait_from_millis(options.and_then(|options| options.wait_ms))?;
        let (election, value) = (self.election.clone(), bytes_of(value));
        let cancel = cancel.map(AcquireCancel::token);
        let what = format!("leadership of election '{}'", election.name());
        settle::spawn(env, async move {
            let won = until_cancelled(what, cancel, async move { election.try_campaign(&value, wait).await }).await;
            won.map(|won| won.map(Leadership::new)).map_err(to_napi)
        })
    }

    /// The current leader, or `null` when nobody leads.
    #[napi(ts_return_type = "Promise<Leader | null>")]
    pub fn leader<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Option<Leader>>> {
        let election = self.election.clone();
        settle::spawn(env, async move { election.leader().await.map(|found| found.map(leader_of)).into_napi() })
    }

    /// @internal The native stream behind `observe()` (index.js makes it an async iterator).
    #[napi(js_name = "observeNative", skip_typescript)]
    pub fn observe_native(&self) -> Result<LeaderChanges> {
        let changes = self.election.observe().into_napi()?;
        Ok(LeaderChanges {
            changes: Arc::new(tokio::sync::Mutex::new(Some(changes))),
            closed: CancellationToken::new(),
        })
    }
}

/// @internal The leader after each change, one `next()` at a time; `close()` ends it.
#[napi]
pub struct LeaderChanges {
    /// `None` once closed: the core's stream is dropped, which ends its watch.
    changes: Arc<tokio::sync::Mutex<Option<polylock::LeaderChanges>>>,
    closed: CancellationToken,
}

const ENDED: LeaderChange = LeaderChange { ended: true, leader: None };

#[napi]
impl LeaderChanges {
    /// The next change, or `{ ended: true }` once the stream is over. Rejects with the
    /// stream's error, which ends it.
    #[napi(ts_return_type = "Promise<LeaderChange>")]
    pub fn next<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, LeaderChange>> {
        let (changes, closed) = (self.changes.clone(), self.closed.clone());
        settle::spawn(env, async move {
            let mut changes = tokio::select! {
                biased;
                () = closed.cancelled() => return Ok(ENDED),
                changes = changes.lock() => changes,
            };
            let next = match changes.as_mut() {
                None => return Ok(ENDED),
                Some(stream) => tokio::select! {
                    biased;
                    () = closed.cancelled() => None,
                    next = stream.next() => next,
                },
            };
            match next {
                None => {
                    *changes = None;
                    Ok(ENDED)
                }
                Some(Ok(leader)) => Ok(LeaderChange { ended: false, leader: leader.map(leader_of) }),
                Some(Err(err)) => {
                    *changes = None;
                    Err(to_napi(err))
                }
            }
        })
    }

    /// End the stream: a pending `next()` resolves `{ ended: true }`, and so does every later one.
    #[napi]
    pub fn close(&self) {
        self.closed.cancel();
        let changes = self.changes.clone();
        // Dropped on the runtime once a pending next() has let go of it.
        napi::bindgen_prelude::spawn(async move {
            changes.lock().await.take();
        });
    }
}

/// One won campaign, for one term. `resign()` hands over to the next candidate; a
/// leadership garbage-collected without it resigns in the background.
#[napi]
pub struct Leadership {
    leadership: polylock::Leadership,
    lost: LostWatch,
    /// The task that reports loss to JavaScript, while anyone listens.
    watcher: Mutex<Option<AbortHandle>>,
}

impl Leadership {
    fn new(leadership: polylock::Leadership) -> Self {
        Leadership { lost: leadership.lost_watch(), leadership, watcher: Mutex::new(None) }
    }

    fn stop_watching(&self) {
        if let Some(watcher) = locked(&self.watcher).take() {
            watcher.abort();
        }
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        // The core leadership, dropped with this struct, resigns in the background.
        self.stop_watching();
    }
}

#[napi]
impl Leadership {
    /// The election's name.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.leadership.name().to_string()
    }

    /// The term: a fencing token strictly greater than every earlier leader's term.
    #[napi(getter)]
    pub fn term(&self) -> BigInt {
        BigInt::from(self.leadership.term())
    }

    /// The value this leader campaigned with or last proclaimed.
    #[napi(getter)]
    pub fn value(&self) -> Buffer {
        self.leadership.value().into()
    }

    /// True until resigned or lost; once false, never true again.
    #[napi(getter)]
    pub fn is_leader(&self) -> bool {
        self.leadership.is_leader()
    }

    /// True once the store no longer has this leader (lease passed, session ended, taken).
    #[napi(getter)]
    pub fn is_lost(&self) -> bool {
        self.leadership.is_lost()
    }

    /// Why the leadership was lost, or `null` while it is not.
    #[napi(getter)]
    pub fn lost_reason(&self) -> Option<String> {
        self.lost.reason().map(|reason| reason.to_string())
    }

    /// While the backend cannot tell whether this is still the leader (ZooKeeper's SUSPENDED).
    #[napi(getter)]
    pub fn is_suspended(&self) -> bool {
        self.leadership.is_suspended()
    }

    /// Replace the leader's value, keeping the term. Rejects with `POLYLOCK_LOST` if this is no
    /// longer the leader, `POLYLOCK_NOT_OWNER` once resigned.
    #[napi(ts_args_type = "value: Buffer | Uint8Array | string", ts_return_type = "Promise<void>")]
    pub fn proclaim<'env>(&self, env: &'env Env, value: Either<Buffer, String>) -> Result<PromiseRaw<'env, ()>> {
        let (leadership, value) = (self.leadership.clone(), bytes_of(value));
        settle::spawn(env, async move { leadership.proclaim(&value).await.into_napi() })
    }

    /// Stop leading, so that the next candidate leads. Resigning twice is harmless; rejects
    /// with `POLYLOCK_LOST` if the leadership had been lost before.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn resign<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        self.stop_watching();
        let leadership = self.leadership.clone();
        settle::spawn(env, async move { leadership.resign().await.into_napi() })
    }

    /// Call `callback(reason)` once, when the leadership is lost. `index.js` builds the
    /// `lost` Promise on it. While leading, the callback keeps the process alive; resigning
    /// or garbage-collecting the leadership drops it.
    #[napi(skip_typescript)]
    pub fn on_lost(&self, callback: Function<String, ()>) -> Result<()> {
        if !self.leadership.is_leader() && !self.leadership.is_lost() {
            return Ok(()); // resigned: it is never lost now
        }
        let notify = callback.build_threadsafe_function::<String>().build()?;
        let lost = self.lost.clone();
        let task = napi::bindgen_prelude::spawn(async move {
            let reason = lost.wait().await;
            notify.call(reason.to_string(), ThreadsafeFunctionCallMode::NonBlocking);
        });
        if let Some(previous) = locked(&self.watcher).replace(task.abort_handle()) {
            previous.abort();
        }
        Ok(())
    }
}
