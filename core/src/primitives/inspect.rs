//! The operator's view of mutexes whoever holds them (`polylock status`, `list`,
//! `unlock --force`): read from the backend's own layout where it can
//! ([`crate::spi::InspectStore`]), else from the questions every backend answers
//! (`is_locked`, `remaining_lease`).

use std::sync::Arc;
use std::time::Duration;

use super::lock::Lock;
use super::name::{storage_key, validate_name};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::owner::{next_handle_local_id, Owner};
use crate::spi::{InspectStore, LockKind, LockStatus, Primitive};

/// One lock found by [`Inspector::list`], by its name as the caller uses it (namespace off).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockEntry {
    pub name: String,
    pub kind: LockKind,
    pub held: bool,
}

/// Read-only questions about any holder's locks, and the one dangerous write an operator
/// needs: breaking a hold. Made by [`crate::Client::inspect`]; holds nothing.
#[derive(Clone)]
pub struct Inspector {
    engine: Arc<Engine>,
    namespace: Option<Arc<str>>,
    store: Option<Arc<dyn InspectStore>>,
}

impl Inspector {
    pub(crate) fn new(engine: Arc<Engine>, namespace: Option<Arc<str>>, store: Option<Arc<dyn InspectStore>>) -> Self {
        Inspector { engine, namespace, store }
    }

    /// The kind a lock is read as: `kind` if given (refused with `Unsupported` when the
    /// backend lacks it), else the backend's default (reentrant, or its only kind).
    pub fn kind_or_default(&self, kind: Option<LockKind>) -> Result<LockKind> {
        let capabilities = self.engine.capabilities();
        let kind = match (kind, capabilities.lock_kinds) {
            (Some(kind), _) => kind,
            (None, [only]) => *only,
            (None, _) => LockKind::default(),
        };
        capabilities.check(Primitive::Lock(kind))?;
        Ok(kind)
    }

    fn lock(&self, name: &str, kind: LockKind) -> Result<Lock> {
        let key = self.key(name)?;
        let owner = Owner { client_id: self.engine.id(), local_id: next_handle_local_id() };
        Lock::new(self.engine.clone(), name, key, owner).with_kind(kind)
    }

    fn key(&self, name: &str) -> Result<String> {
        validate_name(name)?;
        Ok(storage_key(self.namespace.as_deref(), name))
    }

    /// Who holds the mutex `name` (of `kind`, default the backend's), with which token, for
    /// how long yet, and how many wait, as far as the backend's layout tells.
    pub async fn status(&self, name: &str, kind: Option<LockKind>) -> Result<LockStatus> {
        let kind = self.kind_or_default(kind)?;
        self.engine.check_open()?;
        if let Some(store) = &self.store {
            return store.status(&self.key(name)?, kind).await;
        }
        // No layout reader: what every backend answers, without holder, token or waiters.
        let lock = self.lock(name, kind)?;
        let remaining_lease = lock.remaining_lease().await?;
        Ok(LockStatus {
            held: remaining_lease.is_some(),
            remaining_lease,
            layout: "generic (this backend has no layout reader)",
            ..LockStatus::default()
        })
    }

    /// The mutexes whose name starts with `prefix`, sorted by name; `Unsupported` where the
    /// backend cannot enumerate its locks.
    pub async fn list(&self, prefix: &str) -> Result<Vec<LockEntry>> {
        self.engine.check_open()?;
        let Some(store) = &self.store else {
            return Err(Error::unsupported(format!(
                "the {} backend cannot list its locks",
                self.engine.capabilities().backend
            )));
        };
        let key_prefix = storage_key(self.namespace.as_deref(), prefix);
        let namespace_len = self.namespace.as_ref().map_or(0, |ns| ns.len() + 1);
        let mut entries: Vec<LockEntry> = store
            .list(&key_prefix)
            .await?
            .into_iter()
            .filter(|listed| listed.key.starts_with(&key_prefix))
            .map(|listed| LockEntry {
                name: listed.key[namespace_len..].to_string(),
                kind: listed.kind,
                held: listed.held,
            })
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.kind.as_str().cmp(b.kind.as_str())));
        Ok(entries)
    }

    /// Remove the mutex `name` whoever holds it and wake its waiters (Redisson's
    /// `forceUnlock`). Dangerous: the holder keeps running believing it holds the lock until
    /// its next renewal or release tells it otherwise. Returns whether there was a hold.
    pub async fn force_unlock(&self, name: &str, kind: Option<LockKind>) -> Result<bool> {
        let kind = self.kind_or_default(kind)?;
        self.lock(name, kind)?.force_unlock().await
    }
}

/// Milliseconds of a remaining lease for display: `None` for no hold or no expiry.
pub fn lease_millis(remaining: Option<Duration>) -> Option<u64> {
    remaining.filter(|left| *left != Duration::MAX).map(|left| u64::try_from(left.as_millis()).unwrap_or(u64::MAX))
}
