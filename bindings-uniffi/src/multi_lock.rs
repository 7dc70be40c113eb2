//! `MultiLock`: several mutexes of one client taken as one, owned (like `Lock`) by the owner
//! each call passes: the gem passes the calling Ruby Thread's.

use std::sync::Arc;

use polylock::ErrorKind;

use crate::errors::Result;
use crate::options::AcquireOptions;
use crate::shared::ClientShared;

/// One part of a held multi-lock: its name and fencing token (nil on RedLock).
#[derive(uniffi::Record)]
pub struct MultiPart {
    pub name: String,
    pub fencing_token: Option<u64>,
}

#[derive(uniffi::Object)]
pub struct MultiLock {
    shared: Arc<ClientShared>,
    locks: polylock::MultiLock,
}

impl MultiLock {
    pub fn new(shared: Arc<ClientShared>, locks: polylock::MultiLock) -> Arc<MultiLock> {
        Arc::new(MultiLock { shared, locks })
    }

    fn what(&self) -> String {
        format!("multi-lock of {}", self.locks.names().join(", "))
    }
}

#[uniffi::export]
impl MultiLock {
    /// The names in the order they are taken.
    pub fn names(&self) -> Vec<String> {
        self.locks.names().into_iter().map(str::to_string).collect()
    }

    /// Take every part for `owner` under one wait: the parts, or nil when the wait ran out
    /// (nothing is then held).
    pub async fn acquire(&self, owner: u64, options: AcquireOptions) -> Result<Option<Vec<MultiPart>>> {
        let locks = self.locks.clone().with_local_id(owner);
        let options = options.to_core()?;
        let acquiring = async move {
            match locks.acquire_with(options).await {
                Ok(guard) => Ok(Some(guard)),
                Err(err) if err.kind() == ErrorKind::Timeout => Ok(None),
                Err(err) => Err(err),
            }
        };
        // Detached on the caller's side, as `Lock::acquire` does: a grant to a caller that gave
        // up is dropped with the task's output, which gives it back.
        let guard = self.shared.run(self.what(), acquiring).await?;
        Ok(guard.map(|guard| {
            let parts = guard
                .fencing_tokens_opt()
                .into_iter()
                .map(|(name, fencing_token)| MultiPart { name, fencing_token })
                .collect();
            guard.detach();
            parts
        }))
    }

    /// Give back one hold of every part by `owner`.
    pub async fn release(&self, owner: u64) -> Result<()> {
        let locks = self.locks.clone().with_local_id(owner);
        self.shared.run(self.what(), async move { locks.release().await }).await
    }

    /// Whether `owner` holds every part, none lost.
    pub fn is_held(&self, owner: u64) -> bool {
        self.locks.clone().with_local_id(owner).is_held()
    }
}
