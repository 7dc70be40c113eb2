//! `cargo fuzz run c_api`: see `src/c_api.rs` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| polylock_fuzz::c_api::run(data));
