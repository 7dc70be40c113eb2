//! `Semaphore`: N permits. A permit is its own owner, named by the id its acquisition returns,
//! so any Ruby thread holding the gem's `Permit` may release it.

use std::sync::Arc;

use polylock::kit::AnyGuard;
use polylock::ErrorKind;

use crate::errors::Result;
use crate::options::AcquireOptions;
use crate::shared::ClientShared;

/// A permit taken: its id (what `release` takes) and its fencing token.
#[derive(uniffi::Record)]
pub struct PermitInfo {
    pub id: u64,
    pub fencing_token: u64,
}

#[derive(uniffi::Object)]
pub struct Semaphore {
    shared: Arc<ClientShared>,
    semaphore: polylock::Semaphore,
}

impl Semaphore {
    pub fn new(shared: Arc<ClientShared>, semaphore: polylock::Semaphore) -> Arc<Semaphore> {
        Arc::new(Semaphore { shared, semaphore })
    }

    fn what(&self) -> String {
        format!("semaphore '{}'", self.semaphore.name())
    }
}

#[uniffi::export]
impl Semaphore {
    /// The waiting form: take a permit; a wait that runs out is `Timeout` (nothing taken).
    pub async fn acquire_waiting(&self, options: AcquireOptions) -> Result<PermitInfo> {
        let semaphore = self.semaphore.clone();
        let options = options.to_core()?;
        let taking = async move { semaphore.acquire_with(options).await.map(AnyGuard::Permit) };
        // Detached on the caller's side, as in `acquire`.
        let permit = self.shared.run(self.what(), taking).await?;
        let id = permit.permit_id().unwrap_or_default();
        Ok(PermitInfo { id, fencing_token: permit.detach() })
    }

    /// The try form: take a permit, or nil when the wait ran out.
    pub async fn acquire(&self, options: AcquireOptions) -> Result<Option<PermitInfo>> {
        let semaphore = self.semaphore.clone();
        let options = options.to_core()?;
        let taking = async move {
            match semaphore.acquire_with(options).await {
                Ok(permit) => Ok(Some(AnyGuard::Permit(permit))),
                Err(err) if err.kind() == ErrorKind::Timeout => Ok(None),
                Err(err) => Err(err),
            }
        };
        // Detached on the caller's side, as in `Lock::acquire`: a permit granted to a caller
        // that gave up is dropped with the task's output, which gives it back.
        let permit = self.shared.run(self.what(), taking).await?;
        Ok(permit.map(|permit| {
            let id = permit.permit_id().unwrap_or_default();
            PermitInfo { id, fencing_token: permit.detach() }
        }))
    }

    /// Give back permit `permit`: `NotOwner` unless this client holds it, `Lost` if its lease
    /// ran out first.
    pub async fn release(&self, permit: u64) -> Result<()> {
        let semaphore = self.semaphore.clone();
        self.shared.run(self.what(), async move { semaphore.release_permit(permit).await }).await
    }

    pub fn name(&self) -> String {
        self.semaphore.name().to_string()
    }

    pub fn permits(&self) -> u32 {
        self.semaphore.permits()
    }
}
