//! polylock: distributed locks and distributed IDs, one core for every language.
//!
//! ```no_run
//! # async fn demo() -> polylock::Result<()> {
//! let client = polylock::Client::connect("sqlite://polylock.db").await?;
//! let lock = client.lock("orders:42")?;
//! let guard = lock.acquire().await?; // held under the watchdog until released
//! println!("fencing token {}", guard.fencing_token());
//! guard.release().await?;
//! # Ok(()) }
//! ```
//!
//! The contract every backend and binding keeps is in DESIGN.md at the repository's root.

mod backend;
mod client;
pub mod duration;
mod error;
pub mod id;
mod lock;
mod owner;
pub mod url;

/// How lock names map to PostgreSQL advisory keys, MySQL lock names and ShedLock rows.
pub use backend::sql::names as sql_names;
pub use client::{Client, DEFAULT_WATCHDOG_LEASE};
pub use error::{Error, ErrorKind, Result};
pub use lock::{AcquireOptions, Guard, Lock, LockKind, LostReason, LostWatch, MAX_NAME_LEN};
pub use owner::{ClientId, Owner};
