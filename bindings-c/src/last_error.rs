//! The thread-local message behind `polylock_last_error()`, as with `errno`/`dlerror`, and
//! the structured details of the same failure (a conflict's current value, the winning
//! fencing token, a retry-after), read through `polylock_last_error_*` in `details.rs`.

use std::cell::RefCell;
use std::ffi::{c_char, CString};

use polylock::ErrorDetails;

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
    static LAST_DETAILS: RefCell<Option<ErrorDetails>> = const { RefCell::new(None) };
}

/// Remember `message` as this thread's last error. Interior NULs (which a C string cannot
/// carry) are replaced so that the message is never cut short or lost.
pub fn set(message: &str) {
    let text = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    // `try_with`: a call from a thread-exit destructor finds the slot gone; `with` would
    // panic there, outside any `catch_unwind`, and abort the process.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = Some(text));
    set_details(None);
}

/// Remember the details of this thread's last failure (`None`: it had none); every failure
/// replaces them, so details never outlive the error they came with.
pub fn set_details(details: Option<ErrorDetails>) {
    let _ = LAST_DETAILS.try_with(|slot| *slot.borrow_mut() = details);
}

/// A copy of this thread's last failure's details (none during thread teardown).
pub fn details() -> Option<ErrorDetails> {
    LAST_DETAILS.try_with(|slot| slot.borrow().clone()).ok().flatten()
}

/// The message of the last failed call on the calling thread, or NULL if no call on this
/// thread has failed yet. The string stays valid until the next failed call on this thread
/// (or the thread's exit); copy it to keep it longer. Do not free it.
#[no_mangle]
pub extern "C" fn polylock_last_error() -> *const c_char {
    // `try_with`: during thread teardown the slot may already be gone; say nothing then.
    LAST_ERROR
        .try_with(|slot| slot.borrow().as_ref().map_or(std::ptr::null(), |text| text.as_ptr()))
        .unwrap_or(std::ptr::null())
}
