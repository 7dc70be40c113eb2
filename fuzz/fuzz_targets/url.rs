//! `cargo fuzz run url`: see `src/url.rs` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| polylock_fuzz::url::run(data));
