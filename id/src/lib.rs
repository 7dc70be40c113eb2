//! polylock-id: the ID algorithms and name mappings of polylock, with no I/O, so that they
//! build for every target polylock's bindings reach, WebAssembly included.
//!
//! - [`Snowflake`] generators and [`SnowflakeLayout`] parsing, reading time through a
//!   [`Clock`] (on `wasm32-unknown-unknown` there is no system clock: pass your own);
//! - [`segment`]: Leaf-style double-buffered ID ranges, as pure bookkeeping;
//! - [`worker_lease`]: when a leased Snowflake worker id may issue which timestamps;
//! - [`sql_names`]: how a lock name becomes a PostgreSQL advisory key, a MySQL lock name or a
//!   ShedLock row, which other languages must compute the same way.

mod clock;
mod error;
pub mod segment;
mod snowflake;
pub mod sql_names;
pub mod worker_lease;

#[cfg(not(target_arch = "wasm32"))]
pub use clock::SystemClock;
pub use clock::{Clock, ManualClock};
pub use error::{IdError, IdErrorKind, Result};
pub use snowflake::{parse_snowflake, Snowflake, SnowflakeLayout, SnowflakeParts, DEFAULT_MAX_ROLLBACK};
