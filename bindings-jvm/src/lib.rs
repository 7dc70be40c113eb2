//! The native side of polylock's JVM binding: JNI entry points behind `io.polylock.NativeBridge`.
//!
//! Thin translation only (DESIGN.md): Java strings, longs and `CompletableFuture`s in, core
//! calls on the client's own tokio runtime, results and typed errors out. Every entry point
//! catches Rust panics and turns them into a Java exception, so nothing unwinds into the JVM.

mod blocking;
mod client;
mod complete;
mod election;
mod entry;
mod idempotency;
mod inspect;
mod latch;
mod leased_snowflake;
mod lock;
mod multi_lock;
mod observe;
mod redlock;
mod segment;
mod self_test;
mod semaphore;
mod snowflake;
mod target;
mod uuid_ulid;
mod values;
mod vm;

pub use vm::JNI_OnLoad;
