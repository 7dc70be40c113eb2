//! Cross-process wake-ups for SQLite mutexes: one empty file per lock name in a folder
//! beside the database (`<database>-locks/<hash of the name>.lock`), locked with an
//! exclusive `flock(2)` by whoever holds the name's row. A waiter in another process blocks
//! on the file in the kernel and is woken the moment the holder lets go of it, by releasing
//! or by dying, instead of noticing the release at its next poll.
//!
//! The row stays the truth. The file lock is only ever taken beside the row, never instead
//! of it: a grant is the row, written in a transaction as before; leases, fencing tokens and
//! loss are the row's. Processes that do not use the files (another program, a database
//! whose folder cannot be written) still exclude and are excluded through the row, and are
//! noticed by polling. A holder paused past its lease keeps its file locked, so its waiters
//! also wake at the row's lease end and take the row without the file (see `wait.rs`).
//!
//! Files are never deleted: unlinking a lock file while another process has it open would
//! let two processes lock two different files of one name.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

/// Unlocked open files kept for the next attempt on their name, so an attempt costs no
/// `open(2)`; beyond this many names they are closed after use.
const IDLE_FILES: usize = 128;

/// The lock files of one database, and this process's kernel waits on them.
pub(super) struct NameFiles {
    dir: PathBuf,
    /// Open, unlocked files by file name.
    idle: Mutex<HashMap<String, File>>,
    /// One kernel wait per name that a waiter of this process is waiting on.
    waits: Mutex<HashMap<String, Arc<KernelWait>>>,
}

/// What trying a name's file without blocking found.
pub(super) enum FileTry {
    /// Locked by us now: keep it with the hold, or give it back.
    Locked(LockedFile),
    /// Someone holds it (a holder in another process, another owner of this process, or a
    /// waiter about to write the row).
    Busy,
    /// No file can be used for this name: the row alone decides, and waiters poll.
    Unavailable,
}

/// A name's file, locked exclusively by this process. Dropping it closes the file, which
/// unlocks it.
pub(super) struct LockedFile {
    name: String,
    file: File,
}

impl NameFiles {
    /// The files beside the database at `path`, if a folder for them can be made there.
    pub(super) fn beside(path: &str) -> Option<NameFiles> {
        if path.is_empty() || path == ":memory:" || path.starts_with("file:") {
            return None;
        }
        let dir = PathBuf::from(format!("{path}-locks"));
        std::fs::create_dir_all(&dir).ok()?;
        Some(NameFiles { dir, idle: Mutex::new(HashMap::new()), waits: Mutex::new(HashMap::new()) })
    }

    /// Lock the file of mutex `key` if nobody holds it; never blocks.
    pub(super) fn try_lock(&self, key: &str) -> FileTry {
        let name = file_name(key);
        // A kernel wait of this process may have got the file for its waiters already.
        if let Some(wait) = lock(&self.waits).get(&name).cloned() {
            if let Some(file) = lock(&wait.state).locked.take() {
                return FileTry::Locked(LockedFile { name, file });
            }
        }
        let idle = lock(&self.idle).remove(&name);
        let file = match idle {
            Some(file) => file,
            None => match open(&self.dir.join(&name)) {
                Ok(file) => file,
                Err(_) => return FileTry::Unavailable,
            },
        };
        match flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
            Ok(()) => FileTry::Locked(LockedFile { name, file }),
            Err(err) if err.raw_os_error() == Some(libc::EWOULDBLOCK) => {
                self.keep_idle(name, file);
                FileTry::Busy
            }
            Err(_) => FileTry::Unavailable,
        }
    }

    /// Unlock a file this process holds and keep it open for the next attempt.
    pub(super) fn unlock(&self, locked: LockedFile) {
        let LockedFile { name, file } = locked;
        if flock(&file, libc::LOCK_UN).is_ok() {
            self.keep_idle(name, file);
        } // else: closing it unlocks it
    }

    fn keep_idle(&self, name: String, file: File) {
        let mut idle = lock(&self.idle);
        if idle.len() < IDLE_FILES || idle.contains_key(&name) {
            idle.insert(name, file);
        }
    }

    /// Take part in the kernel wait on `key`'s file: a thread of this process blocks on it
    /// in `flock(2)` (one per name, shared by every waiter of the name) and hands the locked
    /// file to the next attempt on the name (`try_lock`).
    pub(super) fn wait_for(self: &Arc<Self>, key: &str) -> FileWait {
        let name = file_name(key);
        let wait = lock(&self.waits).entry(name.clone()).or_insert_with(|| Arc::new(KernelWait::default())).clone();
        lock(&wait.state).interested += 1;
        let file_wait = FileWait { files: self.clone(), name, wait };
        file_wait.arm();
        file_wait
    }

    /// Kernel-waiting threads of this process right now (for tests).
    #[cfg(test)]
    pub(super) fn threads_waiting(&self) -> usize {
        lock(&self.waits).values().filter(|wait| lock(&wait.state).thread_running).count()
    }
}

#[derive(Default)]
struct KernelWait {
    state: Mutex<KernelWaitState>,
    /// Told when the thread has got the file.
    got_file: Notify,
}

#[derive(Default)]
struct KernelWaitState {
    /// Waiters of this process that want the file.
    interested: usize,
    /// Got by the thread, not yet taken by an attempt.
    locked: Option<File>,
    thread_running: bool,
}

/// One waiter's part in a name's kernel wait; leaving it (drop) lets the file go if nobody
/// else of this process wants it.
pub(super) struct FileWait {
    files: Arc<NameFiles>,
    name: String,
    wait: Arc<KernelWait>,
}

impl FileWait {
    /// Make sure a thread is blocked on the file, unless one is or it was got already.
    pub(super) fn arm(&self) {
        let mut state = lock(&self.wait.state);
        if state.thread_running || state.locked.is_some() {
            return;
        }
        let path = self.files.dir.join(&self.name);
        let (files, name, wait) = (self.files.clone(), self.name.clone(), self.wait.clone());
        let spawned = std::thread::Builder::new()
            .name("polylock-sqlite-wait".into())
            .spawn(move || block_until_locked(&files, &name, &wait, &path));
        state.thread_running = spawned.is_ok();
    }

    /// Resolves once the thread has got the file (and not yet given it to an attempt).
    pub(super) async fn got_file(&self) {
        loop {
            let notified = self.wait.got_file.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let (got, thread_running) = {
                let state = lock(&self.wait.state);
                (state.locked.is_some(), state.thread_running)
            };
            if got {
                return;
            }
            if !thread_running {
                // No thread (it could not start, or its open failed): the timers wake us.
                std::future::pending::<()>().await;
            }
            notified.await;
        }
    }
}

impl Drop for FileWait {
    fn drop(&mut self) {
        let mut waits = lock(&self.files.waits);
        let mut state = lock(&self.wait.state);
        state.interested -= 1;
        if state.interested == 0 {
            state.locked = None; // closing unlocks: nobody here wants it any more
            if !state.thread_running {
                waits.remove(&self.name);
            }
        }
    }
}

/// The body of a kernel-waiting thread: block on the file, then hand it over (or let it go
/// at once if every waiter has left meanwhile) and end.
fn block_until_locked(files: &NameFiles, name: &str, wait: &KernelWait, path: &Path) {
    let got = open(path).and_then(|file| flock(&file, libc::LOCK_EX).map(|()| file));
    let mut waits = lock(&files.waits);
    let mut state = lock(&wait.state);
    state.thread_running = false;
    if state.interested > 0 {
        state.locked = got.ok();
        wait.got_file.notify_waiters();
    } else {
        drop(got);
        waits.remove(name);
    }
}

/// The file name of mutex `key`: a stable 64-bit FNV-1a hash, so any name fits and every
/// build of polylock picks the same file. Two names that share a hash only share wake-ups.
fn file_name(key: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in b"lock\0".iter().chain(key.as_bytes()) {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}.lock")
}

/// Open (creating) a lock file that every user of the database can lock: `flock` needs no
/// write access, so a file made by another user is opened read-only.
fn open(path: &Path) -> io::Result<File> {
    match OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o666).open(path) {
        Err(err) if err.kind() == io::ErrorKind::PermissionDenied => OpenOptions::new().read(true).open(path),
        opened => opened,
    }
}

/// `flock(2)`, retried when a signal interrupts it.
fn flock(file: &File, operation: libc::c_int) -> io::Result<()> {
    loop {
        // SAFETY: flock only reads its arguments; the descriptor is open while `file` lives.
        if unsafe { libc::flock(file.as_raw_fd(), operation) } == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_stable_and_per_name() {
        assert_eq!(file_name("orders:42"), file_name("orders:42"));
        assert_ne!(file_name("orders:42"), file_name("orders:43"));
        assert_eq!(file_name("").len(), "0123456789abcdef.lock".len());
    }

    #[test]
    fn a_locked_name_is_busy_until_unlocked() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("locks.db").display().to_string();
        let (ours, theirs) = (NameFiles::beside(&db).unwrap(), NameFiles::beside(&db).unwrap());
        let FileTry::Locked(locked) = ours.try_lock("a") else { panic!("a free file was not locked") };
        assert!(matches!(theirs.try_lock("a"), FileTry::Busy));
        assert!(matches!(theirs.try_lock("b"), FileTry::Locked(_)));
        ours.unlock(locked);
        assert!(matches!(theirs.try_lock("a"), FileTry::Locked(_)));
    }

    #[test]
    fn no_files_beside_an_in_memory_database() {
        assert!(NameFiles::beside(":memory:").is_none());
    }
}
