//! The fuzz targets' bodies, shared by the libFuzzer binaries (`fuzz_targets/*.rs`, run by
//! `cargo fuzz`) and the stable runner (`src/bin/stable.rs`). Each `run` takes arbitrary
//! bytes and panics only when polylock breaks a promise: a panic of its own, an error of the
//! wrong kind, a password in a message, or a result that disagrees with the documented rule.

pub mod c_api;
pub mod common;
pub mod duration;
pub mod url;

/// The targets by name, as `cargo fuzz` and the corpus folders name them.
/// A fuzz target: its name and the function that runs one input.
pub type Target = (&'static str, fn(&[u8]));

pub const TARGETS: [Target; 3] = [("url", url::run), ("duration", duration::run), ("c_api", c_api::run)];
