//! Exit statuses, after sysexits(3) where one fits.

use polylock::{Error, ErrorKind};

/// The lock was not acquired within --wait (EX_TEMPFAIL): try again later.
pub const NOT_ACQUIRED: u8 = 75;
/// Bad arguments or URL (EX_USAGE).
pub const USAGE: u8 = 64;
/// The backend cannot be reached (EX_UNAVAILABLE).
pub const UNAVAILABLE: u8 = 69;
/// Anything else that went wrong inside polylock (EX_SOFTWARE).
pub const SOFTWARE: u8 = 70;
/// The command exists but cannot be run, as in POSIX shells.
pub const CANNOT_EXECUTE: u8 = 126;
/// The command was not found, as in POSIX shells.
pub const NOT_FOUND: u8 = 127;

/// Report `err` on stderr and choose the exit status for it.
pub fn fail(err: &Error) -> u8 {
    eprintln!("polylock: {err}");
    match err.kind() {
        // Temporary: the same command can succeed later (EX_TEMPFAIL).
        ErrorKind::Timeout | ErrorKind::Exhausted | ErrorKind::InProgress => NOT_ACQUIRED,
        // A primitive or kind the backend lacks is a usage error: the same command cannot work.
        ErrorKind::InvalidArgument | ErrorKind::Unsupported => USAGE,
        ErrorKind::Connection => UNAVAILABLE,
        _ => SOFTWARE,
    }
}
