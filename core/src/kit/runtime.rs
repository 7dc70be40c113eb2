//! The one runtime and close policy of every binding (ARCHITECTURE.md, "Runtime ownership").
//!
//! Each client of a binding owns a tokio runtime (Node has one per process, napi-rs's), built
//! by [`new_runtime`]. Closing a client is [`close_and_stop`]: give the holds back, bounded by
//! a limit, then stop the runtime and wait a moment for its threads. Bindings choose only the
//! worker count and what a new worker thread must do first (the JVM attaches it).

use std::time::Duration;

use tokio::runtime::{Handle, Runtime};

use crate::error::{Error, Result};
use crate::kit::fork::{self, ConnectedIn};
use crate::Client;

/// How many worker threads a binding's runtime gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workers {
    /// Two: the watchdogs, acquire tasks and connection drivers are light, and the caller's
    /// own threads do the waiting (C, Python, Node; small machines may create several clients).
    Light,
    /// One per core, at least two: for callers that hand every call to the runtime and get a
    /// future back, and may have hundreds in flight (the JVM).
    OnePerCore,
}

impl Workers {
    pub fn count(self) -> usize {
        match self {
            Workers::Light => 2,
            Workers::OnePerCore => std::thread::available_parallelism().map_or(2, |n| n.get()).max(2),
        }
    }
}

/// How long an explicit close may spend giving holds back before it stops the runtime anyway.
pub const CLOSE_LIMIT: Duration = Duration::from_secs(5);

/// How long a close that nobody asked for (a client garbage-collected unclosed) may spend
/// giving holds back: the program is not waiting for it, and holds it cannot give back in
/// time end at their lease.
pub const CLOSE_ON_DROP_LIMIT: Duration = Duration::from_secs(2);

/// How long stopping a runtime waits for its threads after the close.
pub const SHUTDOWN_LIMIT: Duration = Duration::from_secs(1);

/// A runtime for one client (or, on Node, for the process). `on_thread_start` runs first on
/// every worker thread.
pub fn new_runtime(workers: Workers, on_thread_start: Option<fn()>) -> Result<Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(workers.count()).thread_name("polylock-worker").enable_all();
    if let Some(start) = on_thread_start {
        builder.on_thread_start(start);
    }
    builder.build().map_err(|err| Error::internal(format!("cannot start the polylock runtime: {err}")))
}

/// Close `client` on `runtime` (stopping its watchdogs and giving its holds back, bounded by
/// `limit`), then stop the runtime and wait up to [`SHUTDOWN_LIMIT`] for its threads. Tasks
/// still pending are dropped, which fails the calls waiting on them.
///
/// Called on a runtime's own thread (a callback of the binding's language that closes the
/// client), blocking would deadlock: the runtime then stops without waiting and the holds
/// end at their lease.
pub fn close_and_stop(runtime: Runtime, client: &Client, limit: Duration) {
    if Handle::try_current().is_ok() {
        runtime.shutdown_background();
        return;
    }
    runtime.block_on(async {
        let _ = tokio::time::timeout(limit, client.close()).await;
    });
    runtime.shutdown_timeout(SHUTDOWN_LIMIT);
}

/// How a binding lets go of a client and its runtime: [`close_and_stop`] in the process that
/// connected; in a child forked since, both are [`fork::abandon`]ed instead (stopping the
/// runtime would wait for threads that stayed in the parent, closing would give back the
/// parent's holds).
pub fn close_or_abandon(connected_in: ConnectedIn, runtime: Runtime, client: Client, limit: Duration) {
    if connected_in.is_inherited() {
        fork::abandon((client, runtime));
    } else {
        close_and_stop(runtime, &client, limit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closing_gives_holds_back_and_stops_the_runtime() {
        let runtime = new_runtime(Workers::Light, None).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("locks.db").display());
        let client = runtime.block_on(Client::connect(&url)).unwrap();
        let guard = runtime.block_on(client.lock("closing").unwrap().try_acquire()).unwrap().expect("free");
        std::mem::forget(guard); // still held when the client closes
        close_and_stop(runtime, &client, CLOSE_LIMIT);

        let runtime = new_runtime(Workers::Light, None).unwrap();
        let other = runtime.block_on(Client::connect(&url)).unwrap();
        let taken = runtime.block_on(other.lock("closing").unwrap().try_acquire()).unwrap();
        assert!(taken.is_some(), "the closed client's hold was given back");
        close_and_stop(runtime, &other, CLOSE_LIMIT);
    }

    #[test]
    fn closing_on_a_runtime_thread_does_not_block() {
        let runtime = new_runtime(Workers::Light, None).unwrap();
        let client = runtime.block_on(Client::connect("mem://")).unwrap();
        let inner = new_runtime(Workers::Light, None).unwrap();
        // From inside another runtime, as a callback on a worker thread would be.
        runtime.block_on(async move { close_and_stop(inner, &client, CLOSE_LIMIT) });
    }
}
