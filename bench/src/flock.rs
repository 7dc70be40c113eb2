//! The peer of the lock comparison, what a single-host user would pick instead: an
//! exclusive `flock(2)` on a file, one file per lock name.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;

use crate::lock_side::LockSide;
use crate::Result;

pub struct Flock {
    dir: PathBuf,
}

impl Flock {
    /// Lock files live in `dir`, named after the lock.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Flock { dir: dir.into() }
    }
}

impl LockSide for Flock {
    /// The open lock file; the lock belongs to this open file description.
    type Handle = File;
    type Held = RawFd;

    async fn handle(&self, name: &str) -> Result<File> {
        let path = self.dir.join(format!("{name}.lock"));
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path);
        Ok(file.map_err(|e| format!("cannot open lock file {}: {e}", path.display()))?)
    }

    async fn acquire(&self, file: &File) -> Result<RawFd> {
        let fd = file.as_raw_fd();
        // Try without blocking first; only a contended lock parks a thread in the kernel.
        match flock(fd, libc::LOCK_EX | libc::LOCK_NB) {
            Ok(()) => Ok(fd),
            Err(err) if err.raw_os_error() == Some(libc::EWOULDBLOCK) => {
                tokio::task::block_in_place(|| flock(fd, libc::LOCK_EX))?;
                Ok(fd)
            }
            Err(err) => Err(err.into()),
        }
    }

    async fn release(&self, fd: RawFd) -> Result<()> {
        Ok(flock(fd, libc::LOCK_UN)?)
    }
}

/// `flock(2)`, retried when a signal interrupts it.
fn flock(fd: RawFd, operation: libc::c_int) -> io::Result<()> {
    loop {
        // SAFETY: flock only reads its arguments; `fd` is open for as long as its File lives.
        if unsafe { libc::flock(fd, operation) } == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}
