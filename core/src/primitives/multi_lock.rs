//! Several locks of one client taken as one (Redisson's MultiLock, Curator's
//! InterProcessMultiLock), without their deadlock: the parts are always taken in one
//! canonical order, the byte order of their full storage keys, so two multi-locks over the
//! same names, listed in any order, queue behind each other instead of each holding what the
//! other waits for. One deadline covers the whole wait, and a failure gives back every part
//! already taken before it returns. Each part is an ordinary lock (or one side of an ordinary
//! read-write lock) in its backend's usual layout, so a Redisson or Curator client holding one
//! of the names excludes the multi-lock, and each part has its own fencing token.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::guard::Guard;
use super::lock::Lock;
use super::name::{storage_key, validate_name};
use super::rw_lock::{RwLock, RwLockSide};
use crate::engine::{AcquireOptions, Engine};
use crate::error::{Error, ErrorKind, Result};
use crate::owner::Owner;
use crate::spi::{LockKind, LostReason, LostWatch, Primitive, RwMode};

/// What one part of a multi-lock is: a mutex (of the backend's default kind, or of a named
/// kind), or the read or the write side of a read-write lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultiLockPart {
    name: String,
    side: PartSide,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PartSide {
    /// `None`: the backend's default kind (reentrant, or the one kind it offers).
    Lock(Option<LockKind>),
    Read,
    Write,
}

impl MultiLockPart {
    /// The mutex `name`, of the backend's default kind: reentrant where the backend offers
    /// it, else the one kind it offers (RedLock's token lock).
    pub fn lock(name: impl Into<String>) -> Self {
        MultiLockPart { name: name.into(), side: PartSide::Lock(None) }
    }

    /// The mutex `name` of `kind` (`Unsupported` when the multi-lock is made if the backend
    /// lacks it).
    pub fn lock_of_kind(name: impl Into<String>, kind: LockKind) -> Self {
        MultiLockPart { name: name.into(), side: PartSide::Lock(Some(kind)) }
    }

    /// The read side of the read-write lock `name`.
    pub fn read(name: impl Into<String>) -> Self {
        MultiLockPart { name: name.into(), side: PartSide::Read }
    }

    /// The write side of the read-write lock `name`.
    pub fn write(name: impl Into<String>) -> Self {
        MultiLockPart { name: name.into(), side: PartSide::Write }
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

/// One part's handle, in canonical order.
#[derive(Clone)]
enum PartHandle {
    Lock(Lock),
    Read(RwLock),
    Write(RwLock),
}

impl PartHandle {
    fn with_local_id(self, local_id: u64) -> PartHandle {
        match self {
            PartHandle::Lock(lock) => PartHandle::Lock(lock.with_local_id(local_id)),
            PartHandle::Read(rw) => PartHandle::Read(rw.with_local_id(local_id)),
            PartHandle::Write(rw) => PartHandle::Write(rw.with_local_id(local_id)),
        }
    }

    async fn acquire(&self, options: AcquireOptions) -> Result<PartGuard> {
        Ok(match self {
            PartHandle::Lock(lock) => PartGuard::Lock(lock.acquire_with(options).await?),
            PartHandle::Read(rw) => PartGuard::Side(rw.read().acquire_with(options).await?),
            PartHandle::Write(rw) => PartGuard::Side(rw.write().acquire_with(options).await?),
        })
    }

    /// Give back one hold of this part by the multi-lock's owner.
    async fn release_by_owner(&self) -> Result<()> {
        match self {
            PartHandle::Lock(lock) => lock.release().await,
            PartHandle::Read(rw) => rw.read().release().await,
            PartHandle::Write(rw) => rw.write().release().await,
        }
    }

    fn side(&self) -> Option<&RwLockSide> {
        match self {
            PartHandle::Lock(_) => None,
            PartHandle::Read(rw) => Some(rw.read()),
            PartHandle::Write(rw) => Some(rw.write()),
        }
    }

    fn name(&self) -> &str {
        match self {
            PartHandle::Lock(lock) => lock.name(),
            PartHandle::Read(rw) | PartHandle::Write(rw) => rw.name(),
        }
    }

    fn what(&self) -> &'static str {
        match self {
            PartHandle::Lock(_) => "lock",
            PartHandle::Read(_) => "read lock",
            PartHandle::Write(_) => "write lock",
        }
    }
}

/// Several locks of one client, acquired and released as one. Cheap to clone; clones share
/// the owner (one owner for every part), so acquiring through two clones is reentrant on
/// every part.
#[derive(Clone)]
pub struct MultiLock {
    /// Sorted by storage key: the one order every multi-lock takes its parts in.
    parts: Arc<[PartHandle]>,
    owner: Owner,
}

impl fmt::Debug for MultiLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultiLock").field("parts", &self.describe()).field("owner", &self.owner).finish()
    }
}

impl MultiLock {
    pub(crate) fn new(
        engine: Arc<Engine>,
        namespace: Option<&str>,
        parts: impl IntoIterator<Item = MultiLockPart>,
        owner: Owner,
    ) -> Result<MultiLock> {
        let capabilities = engine.capabilities();
        let default_kind = if capabilities.offers(Primitive::Lock(LockKind::default())) {
            LockKind::default()
        } else {
            capabilities.lock_kinds.first().copied().unwrap_or_default()
        };
        let mut keyed = Vec::new();
        for part in parts {
            validate_name(&part.name)?;
            let key = storage_key(namespace, &part.name);
            engine.check_key(&key)?;
            let handle = match part.side {
                PartSide::Lock(kind) => {
                    let lock = Lock::new(engine.clone(), &part.name, key.clone(), owner);
                    PartHandle::Lock(lock.with_kind(kind.unwrap_or(default_kind))?)
                }
                PartSide::Read | PartSide::Write => {
                    engine.check(Primitive::ReadWriteLock)?;
                    let rw = RwLock::new(engine.clone(), &part.name, key.clone(), owner);
                    if part.side == PartSide::Read {
                        PartHandle::Read(rw)
                    } else {
                        PartHandle::Write(rw)
                    }
                }
            };
            keyed.push((key, handle));
        }
        if keyed.is_empty() {
            return Err(Error::invalid_argument("a multi-lock needs at least one name"));
        }
        if let Some(bound) = engine.session_bound() {
            let sessions = keyed
                .iter()
                .filter(|(_, part)| match part {
                    PartHandle::Lock(lock) => bound.lock_kinds.contains(&lock.kind()),
                    PartHandle::Read(_) | PartHandle::Write(_) => true,
                })
                .count();
            if sessions > bound.max as usize {
                // Each part would wait for a connection the earlier parts keep: never taken.
                return Err(Error::invalid_argument(format!(
                    "a multi-lock of {sessions} parts that keep a connection each is more than the {} \
                     the {} backend keeps for one client (URL option '{}'); raise it or take fewer parts",
                    bound.max, capabilities.backend, bound.option
                )));
            }
        }
        keyed.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        if let Some(pair) = keyed.windows(2).find(|pair| pair[0].0 == pair[1].0) {
            // Twice the same name would wait on itself (a read side, then the write side) or
            // share one key between two layouts: refused, as the caller's mistake.
            return Err(Error::invalid_argument(format!(
                "a multi-lock names '{}' twice (as a {} and a {}); name each lock once",
                pair[0].1.name(),
                pair[0].1.what(),
                pair[1].1.what()
            )));
        }
        let parts: Vec<PartHandle> = keyed.into_iter().map(|(_, handle)| handle).collect();
        Ok(MultiLock { parts: parts.into(), owner })
    }

    /// The same multi-lock owned by `local_id` of this client (on every part): bindings pass
    /// the thread or task id here, so that ownership follows their language's rules.
    pub fn with_local_id(self, local_id: u64) -> MultiLock {
        let parts: Vec<PartHandle> = self.parts.iter().cloned().map(|part| part.with_local_id(local_id)).collect();
        MultiLock { parts: parts.into(), owner: Owner { local_id, ..self.owner } }
    }

    pub fn owner(&self) -> Owner {
        self.owner
    }

    /// The parts' names, in the order they are taken (byte order of their storage keys).
    pub fn names(&self) -> Vec<&str> {
        self.parts.iter().map(PartHandle::name).collect()
    }

    fn describe(&self) -> Vec<String> {
        self.parts.iter().map(|part| format!("{} '{}'", part.what(), part.name())).collect()
    }

    /// Wait as long as it takes for every part, then hold them under the watchdog.
    pub async fn acquire(&self) -> Result<MultiGuard> {
        self.acquire_with(AcquireOptions::default()).await
    }

    /// Try each part once; `None` if someone else holds any of them (and nothing is held).
    pub async fn try_acquire(&self) -> Result<Option<MultiGuard>> {
        self.try_acquire_with(AcquireOptions::default().wait(Duration::ZERO)).await
    }

    /// The try form of [`MultiLock::acquire_with`]: `Ok(None)` when the one wait runs out
    /// (and nothing is held).
    pub async fn try_acquire_with(&self, options: AcquireOptions) -> Result<Option<MultiGuard>> {
        match self.acquire_with(options).await {
            Ok(guard) => Ok(Some(guard)),
            Err(err) if err.kind() == ErrorKind::Timeout => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Take every part, in canonical order, within ONE wait (`options.wait` is for the whole
    /// multi-lock, not per part), each with `options.lease` (an explicit lease runs from each
    /// part's own grant). If any part fails (its wait ran out, the backend failed, or this
    /// future is dropped), the parts already taken are given back before this returns; the
    /// error is the failing part's, naming it.
    pub async fn acquire_with(&self, options: AcquireOptions) -> Result<MultiGuard> {
        let deadline = options.wait.map(|wait| Instant::now().checked_add(wait));
        let mut taken: Vec<PartGuard> = Vec::with_capacity(self.parts.len());
        for part in self.parts.iter() {
            let wait = match deadline {
                None | Some(None) => None,
                Some(Some(deadline)) => Some(deadline.saturating_duration_since(Instant::now())),
            };
            let part_options = AcquireOptions { wait, lease: options.lease };
            match part.acquire(part_options).await {
                Ok(guard) => taken.push(guard),
                Err(err) => {
                    let count = taken.len();
                    release_in_reverse(taken).await;
                    let message = format!(
                        "multi-lock of {} parts: {} (the {count} part(s) taken before it were released)",
                        self.parts.len(),
                        err.message()
                    );
                    return Err(Error::new(err.kind(), message));
                }
            }
        }
        Ok(MultiGuard { parts: taken })
    }

    /// Give back one hold of every part by this multi-lock's owner, for bindings whose users
    /// release by owner. Every part is released even if one fails; the first failure is
    /// returned (`NotOwner` if the owner held none of it, `Lost` if it was lost).
    pub async fn release(&self) -> Result<()> {
        let mut first_error = None;
        for part in self.parts.iter().rev() {
            if let Err(err) = part.release_by_owner().await {
                first_error.get_or_insert(err);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Whether this owner holds every part and none of them was lost.
    pub fn is_held(&self) -> bool {
        self.parts.iter().all(|part| match part {
            PartHandle::Lock(lock) => lock.is_held(),
            PartHandle::Read(_) | PartHandle::Write(_) => part.side().is_some_and(RwLockSide::is_held),
        })
    }

    /// The fencing tokens of this owner's current holds, part by part in canonical order
    /// (`None` for a part it does not hold).
    pub fn fencing_tokens(&self) -> Vec<(String, Option<u64>)> {
        self.parts
            .iter()
            .map(|part| {
                let token = match part {
                    PartHandle::Lock(lock) => lock.fencing_token(),
                    PartHandle::Read(_) | PartHandle::Write(_) => part.side().and_then(RwLockSide::fencing_token),
                };
                (part.name().to_string(), token)
            })
            .collect()
    }
}

/// One part's guard.
enum PartGuard {
    Lock(Guard<LockKind>),
    Side(Guard<RwMode>),
}

impl PartGuard {
    fn name(&self) -> &str {
        match self {
            PartGuard::Lock(guard) => guard.name(),
            PartGuard::Side(guard) => guard.name(),
        }
    }

    fn token(&self) -> u64 {
        match self {
            PartGuard::Lock(guard) => guard.fencing_token(),
            PartGuard::Side(guard) => guard.fencing_token(),
        }
    }

    fn has_fencing_token(&self) -> bool {
        match self {
            PartGuard::Lock(guard) => guard.has_fencing_token(),
            PartGuard::Side(guard) => guard.has_fencing_token(),
        }
    }

    fn lost_watch(&self) -> LostWatch {
        match self {
            PartGuard::Lock(guard) => guard.lost_watch(),
            PartGuard::Side(guard) => guard.lost_watch(),
        }
    }

    async fn release(self) -> Result<()> {
        match self {
            PartGuard::Lock(guard) => guard.release().await,
            PartGuard::Side(guard) => guard.release().await,
        }
    }
}

async fn release_in_reverse(parts: Vec<PartGuard>) -> Option<Error> {
    let mut first_error = None;
    for part in parts.into_iter().rev() {
        if let Err(err) = part.release().await {
            first_error.get_or_insert(err);
        }
    }
    first_error
}

/// The proof that every part of a multi-lock is held. Dropping it releases every part in the
/// background; [`MultiGuard::release`] says how that went. It is lost as soon as any part is.
#[must_use = "dropping a multi-guard releases every part at once"]
pub struct MultiGuard {
    /// In canonical order.
    parts: Vec<PartGuard>,
}

impl fmt::Debug for MultiGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultiGuard")
            .field("fencing_tokens", &self.fencing_tokens())
            .field("lost", &self.is_lost())
            .finish()
    }
}

impl MultiGuard {
    /// One fencing token per part, with the part's name, in canonical order. Each is the
    /// token of that name's own counter, to be passed with writes to what that name protects.
    /// On a backend without fencing tokens (RedLock) see [`MultiGuard::fencing_tokens_opt`].
    pub fn fencing_tokens(&self) -> Vec<(String, u64)> {
        self.parts.iter().map(|part| (part.name().to_string(), part.token())).collect()
    }

    /// As [`MultiGuard::fencing_tokens`], with `None` for parts whose backend issues no
    /// fencing token (RedLock).
    pub fn fencing_tokens_opt(&self) -> Vec<(String, Option<u64>)> {
        self.parts
            .iter()
            .map(|part| (part.name().to_string(), part.has_fencing_token().then(|| part.token())))
            .collect()
    }

    /// The parts' names, in canonical order.
    pub fn names(&self) -> Vec<&str> {
        self.parts.iter().map(PartGuard::name).collect()
    }

    /// True once any part is no longer held.
    pub fn is_lost(&self) -> bool {
        self.parts.iter().any(|part| part.lost_watch().is_lost())
    }

    /// The lost latch of every part, in canonical order.
    pub fn lost_watches(&self) -> Vec<LostWatch> {
        self.parts.iter().map(PartGuard::lost_watch).collect()
    }

    /// Resolves when any part is lost, with that part's name and reason (never, if the
    /// multi-guard is released first).
    pub async fn lost(&self) -> (String, LostReason) {
        let mut waits = tokio::task::JoinSet::new();
        for part in &self.parts {
            let (name, watch) = (part.name().to_string(), part.lost_watch());
            waits.spawn(async move { (name, watch.wait().await) });
        }
        loop {
            match waits.join_next().await {
                Some(Ok(first)) => return first,
                Some(Err(_)) => continue,
                None => std::future::pending::<()>().await,
            }
        }
    }

    /// Keep holding every part without this guard, for bindings whose users release by
    /// owner ([`MultiLock::release`]). Returns the fencing tokens, as
    /// [`MultiGuard::fencing_tokens`].
    pub fn detach(mut self) -> Vec<(String, u64)> {
        let tokens = self.fencing_tokens();
        for part in std::mem::take(&mut self.parts) {
            match part {
                PartGuard::Lock(guard) => {
                    guard.detach();
                }
                PartGuard::Side(guard) => {
                    guard.detach();
                }
            }
        }
        tokens
    }

    /// Give back every part, in reverse canonical order, even if one fails. The first failure
    /// is returned: kind `Lost` if that part was lost before the release.
    pub async fn release(mut self) -> Result<()> {
        let parts = std::mem::take(&mut self.parts);
        release_in_reverse(parts).await.map_or(Ok(()), Err)
    }
}
