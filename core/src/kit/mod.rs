//! The binding kit: what every language binding needs beyond translating types, written
//! once. Bindings take their owner identities, cancellation and error table from here, so
//! that none of them solves those problems (differently) on its own.
//!
//! - [`owner_ids`]: local owner ids that are unique for the life of the process and never
//!   reused (a thread's, a task's, a handle's, a permit's);
//! - [`cancel`]: an acquisition raced against the caller giving up, ending in `Cancelled`
//!   and leaving nothing held;
//! - [`LockTarget`] and [`AnyGuard`]: a handle and a guard over every primitive family, so no
//!   binding keeps its own dispatch between them;
//! - [`ids`]: the process's one UUIDv7 and one ULID generator;
//! - [`idempotency_codec`]: how fingerprints and `run`'s stored responses are written, so
//!   services in different languages share an idempotency namespace;
//! - [`http_idempotency`]: the `Idempotency-Key` HTTP middleware's rules (which requests,
//!   the key, the request's fingerprint, the stored response, the 400/409/422 answers), so
//!   every framework's middleware is an adapter and they replay each other's records;
//! - [`redlock_url`]: the `redlock://` URL of a list of Redis servers;
//! - [`runtime`]: the one runtime and close policy: worker threads, and how closing gives
//!   holds back and stops the runtime;
//! - [`fork`]: a client used in a process forked from the one that connected it is refused
//!   with one clear error, and abandoned there rather than closed;
//! - [`log_bridge`]: the core's `tracing` events handed to the language's own logging, with
//!   one level switch (`POLYLOCK_LOG`, `DEBUG=polylock`) read the same way everywhere;
//! - [`metrics_json`]: the metrics snapshot as the one JSON shape every binding hands out;
//! - [`inspect_json`]: a lock's status and the list of locks (`Inspector`) as the one JSON
//!   shape the CLI prints and every binding hands out;
//! - [`value_watch`]: a value's watch shared by a handle, waited on with a bound, closed
//!   from any thread;
//! - the error table is [`crate::ErrorKind::ALL`] with its stable names and numbers.

pub mod cancel;
pub mod fork;
pub mod http_idempotency;
// The stored form of `run`'s responses is the primitive's own (Idempotency::run writes it too).
pub use crate::primitives::idempotency_codec;
pub mod ids;
pub mod inspect_json;
pub mod log_bridge;
pub mod metrics_json;
pub mod owner_ids;
pub mod redlock_url;
pub mod runtime;
mod target;
pub mod value_watch;

pub use target::{AnyGuard, LockTarget, Reentering};
