//! The one place where Rust results and panics turn into a status: every exported function
//! runs its body through [`call`], so no panic ever unwinds into C.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::last_error;
use crate::status::polylock_status;

/// Run `body`, turning its error or panic into a status and this thread's last error.
pub fn call(body: impl FnOnce() -> polylock::Result<()>) -> polylock_status {
    // AssertUnwindSafe: after a panic the body's state is discarded, never observed again
    // except through handles whose own invariants the core keeps (mutexes are poison-free).
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => polylock_status::POLYLOCK_OK,
        Ok(Err(err)) => {
            last_error::set(&err.to_string());
            last_error::set_details(err.details().cloned());
            err.kind().into()
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            last_error::set(&format!("internal error in polylock (please report it): {what}"));
            polylock_status::POLYLOCK_INTERNAL
        }
    }
}

/// Like [`call`], for functions that cannot fail but must still not unwind (the frees).
pub fn quietly(body: impl FnOnce()) {
    let _ = catch_unwind(AssertUnwindSafe(body));
}
