//! A client belongs to the process that connected it. `fork()` copies only the calling
//! thread: in the child, the client's runtime has no worker threads (a call would wait
//! forever) and its sockets are the parent's too (a request from the child would interleave
//! with the parent's on one connection). Bindings whose users fork (Python's
//! `multiprocessing`, Ruby's preforking servers, C programs) keep a [`ConnectedIn`] beside
//! each client: every call checks it, and a client let go of in a child is abandoned rather
//! than closed (closing would give back holds that are the parent's): see
//! `kit::runtime::close_or_abandon`.

use std::any::Any;
use std::sync::Mutex;

use crate::error::{Error, Result};

/// What forked children let go of without dropping: kept reachable, so that a leak checker
/// (valgrind, LeakSanitizer) in the child sees memory still in use rather than lost.
static ABANDONED: Mutex<Vec<Box<dyn Any + Send>>> = Mutex::new(Vec::new());

/// Let go of `value` in a forked child without dropping it: its drop would stop a runtime
/// whose threads stayed in the parent (waiting forever) or give back the parent's holds.
pub fn abandon<T: Send + 'static>(value: T) {
    ABANDONED.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(Box::new(value));
}

/// The process a client was connected in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectedIn {
    pid: u32,
}

impl ConnectedIn {
    /// The calling process.
    pub fn this_process() -> ConnectedIn {
        ConnectedIn { pid: std::process::id() }
    }

    /// Whether this is a forked child of the process that connected.
    pub fn is_inherited(&self) -> bool {
        std::process::id() != self.pid
    }

    /// `Ok` in the process that connected; in a forked child, a `Connection` error that says
    /// so (the same words in every language).
    pub fn check(&self) -> Result<()> {
        if !self.is_inherited() {
            return Ok(());
        }
        Err(Error::connection(format!(
            "this polylock client was connected in process {} and inherited across fork() by process {}; \
             its runtime's threads and its connections stay with the parent: connect again in the child",
            self.pid,
            std::process::id()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn the_connecting_process_passes() {
        let here = ConnectedIn::this_process();
        assert!(!here.is_inherited());
        assert!(here.check().is_ok());
    }

    #[test]
    fn another_process_is_refused_with_a_connection_error() {
        // As a forked child sees its parent's client: connected in another process.
        let parent = ConnectedIn { pid: std::process::id().wrapping_add(1) };
        assert!(parent.is_inherited());
        let err = parent.check().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Connection);
        assert!(err.to_string().contains("fork()"), "{err}");
        assert!(err.to_string().contains("connect again in the child"), "{err}");
    }
}
