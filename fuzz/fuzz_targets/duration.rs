//! `cargo fuzz run duration`: see `src/duration.rs` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| polylock_fuzz::duration::run(data));
