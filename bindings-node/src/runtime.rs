//! The binding's own tokio runtime (DESIGN.md, "Runtime ownership"). napi-rs runs every
//! Promise-returning call on it; the core spawns its watchdogs and backend drivers there.
//!
//! Its threads are not part of Node's event loop, so they never keep a process alive: only
//! a pending Promise does (an acquire still waiting, a release or close still running).

use napi_derive::module_init;

/// Two workers: the watchdogs, acquire tasks and connection drivers are light, and a Node
/// process already has its own threads for everything else.
const WORKER_THREADS: usize = 2;

#[module_init]
fn init() {
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKER_THREADS)
        .thread_name("polylock-node")
        .enable_all()
        .build()
    {
        Ok(runtime) => napi::bindgen_prelude::create_custom_tokio_runtime(runtime),
        // Without our own runtime napi-rs starts its default one on first use, which works too.
        Err(err) => eprintln!("polylock: cannot start its own runtime ({err}); using napi-rs's default"),
    }
}
