//! The uniffi binding of polylock: the objects, records, error enum and callback interface
//! that `uniffi-bindgen` turns into Ruby (ruby/lib/polylock_uniffi.rb, committed), which the
//! gem `polylock` wraps in Ruby idioms (ruby/lib/polylock.rb).
//!
//! Translation only: owners, cancellation, the runtime and close policy, the dispatch between
//! primitive families and the error table all come from the core's binding kit.
//!
//! Calls that wait on a store are `async` exports: uniffi's Ruby polls them through a pipe it
//! waits on with the GVL released, so other Ruby threads run meanwhile (its synchronous calls
//! keep the GVL for their whole length). Calls answered from memory are synchronous.

uniffi::setup_scaffolding!();

mod client;
mod election;
mod errors;
mod http_idempotency;
mod id_generators;
mod idempotency;
mod ids;
mod latch;
mod lock;
mod multi_lock;
mod observe;
mod options;
mod semaphore;
mod shared;
mod value;
