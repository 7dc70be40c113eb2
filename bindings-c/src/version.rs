//! `polylock_version`: which polylock a program loaded (the same version in every language).

use std::ffi::c_char;

/// polylock's version, such as `"0.1.0"`: a static NUL-terminated string, never freed, the
/// same as `polylock --version` and every other binding's version.
#[no_mangle]
pub extern "C" fn polylock_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
