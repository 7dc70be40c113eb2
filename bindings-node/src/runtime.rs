//! The binding's own tokio runtime (DESIGN.md, "Runtime ownership"). napi-rs runs every
//! Promise-returning call on it; the core spawns its watchdogs and backend drivers there.
//!
//! Its threads are not part of Node's event loop, so they never keep a process alive: only
//! a pending Promise does (an acquire still waiting, a release or close still running).

use napi_derive::module_init;
use polylock::kit::runtime::{new_runtime, Workers};

/// The kit's runtime with two workers: a Node process already has its own threads for
/// everything else. Logging as `POLYLOCK_LOG` / `DEBUG=polylock` ask (observe.rs), read here,
/// when the addon loads, before any call can log.
#[module_init]
fn init() {
    crate::observe::init_from_env();
    match new_runtime(Workers::Light, None) {
        Ok(runtime) => napi::bindgen_prelude::create_custom_tokio_runtime(runtime),
        // Without our own runtime napi-rs starts its default one on first use, which works too.
        Err(err) => eprintln!("polylock: cannot start its own runtime ({err}); using napi-rs's default"),
    }
}
