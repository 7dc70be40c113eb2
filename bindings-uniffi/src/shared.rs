//! What a client and every handle made from it share: the core client and the runtime the
//! binding built for it (the kit's policy: one runtime per client, two workers, since Ruby's
//! own threads do the waiting).

use std::future::Future;
use std::mem::ManuallyDrop;

use polylock::kit::cancel::cancellable;
use polylock::kit::fork::ConnectedIn;
use polylock::kit::runtime::{self, Workers, CLOSE_ON_DROP_LIMIT};
use polylock::Error;
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

use crate::errors::Result;

pub struct ClientShared {
    // ManuallyDrop: `Drop` hands both to the kit's close policy (which, in a forked child,
    // abandons them).
    client: ManuallyDrop<polylock::Client>,
    runtime: ManuallyDrop<Runtime>,
    connected_in: ConnectedIn,
}

pub fn new_runtime() -> Result<Runtime> {
    Ok(runtime::new_runtime(Workers::Light, None)?)
}

impl ClientShared {
    pub fn new(runtime: Runtime, client: polylock::Client) -> ClientShared {
        ClientShared {
            client: ManuallyDrop::new(client),
            runtime: ManuallyDrop::new(runtime),
            connected_in: ConnectedIn::this_process(),
        }
    }

    /// Whether this is a child forked from the process that connected (Puma's and Unicorn's
    /// workers, `Process.fork`): the client's runtime threads and connections are the parent's.
    pub fn is_inherited_across_fork(&self) -> bool {
        self.connected_in.is_inherited()
    }

    pub fn client(&self) -> &polylock::Client {
        &self.client
    }

    /// Run `work` on this client's runtime and await it from uniffi's future (which Ruby polls
    /// with the GVL released). If the caller gives up (`Thread#kill`, `Thread#raise`, a
    /// `Timeout`), uniffi drops the awaiting future; the kit's cancellation then ends `work`,
    /// and the engine gives back anything it was granted meanwhile. A result that was already
    /// on its way is dropped with the task's output, so work must hand back guards, not
    /// detached holds.
    pub async fn run<T: Send + 'static>(
        &self,
        what: String,
        work: impl Future<Output = polylock::Result<T>> + Send + 'static,
    ) -> Result<T> {
        // In a forked child the runtime has no threads: the task would never run.
        self.connected_in.check()?;
        let cancel = CancellationToken::new();
        let task = self.runtime.spawn({
            let cancel = cancel.clone();
            async move { cancellable(&what, &cancel, work).await }
        });
        let _cancel_when_dropped = cancel.drop_guard();
        match task.await {
            Ok(result) => Ok(result?),
            Err(join) => Err(Error::internal(format!("a polylock task failed: {join}")).into()),
        }
    }

    /// Drop `value` inside this client's runtime (what it holds may need the runtime to let
    /// go, as a Redis subscription does); in a forked child, abandon it (kit::fork).
    pub fn let_go<T: Send + 'static>(&self, value: T) {
        if self.connected_in.is_inherited() {
            polylock::kit::fork::abandon(value);
        } else {
            let _inside = self.runtime.enter();
            drop(value);
        }
    }

    /// Start `work` on this client's runtime without waiting for it (in a forked child,
    /// nothing: there is no runtime thread to run it, and what it would touch is the parent's).
    pub fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        if !self.connected_in.is_inherited() {
            self.runtime.spawn(work);
        }
    }
}

impl Drop for ClientShared {
    fn drop(&mut self) {
        // SAFETY: both fields are taken exactly once, here, and never used again.
        let (client, runtime) =
            unsafe { (ManuallyDrop::take(&mut self.client), ManuallyDrop::take(&mut self.runtime)) };
        // A client Ruby collected unclosed: give its holds back within the kit's limit (an
        // explicit close already did, so this is then quick); in a forked child, abandon both.
        runtime::close_or_abandon(self.connected_in, runtime, client, CLOSE_ON_DROP_LIMIT);
    }
}
