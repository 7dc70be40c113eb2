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
//!
//! The folder is this user's alone: created `0700`, and refused (`InvalidArgument` naming
//! it) when it is a symbolic link or belongs to another user, so that nobody else sharing the
//! database's folder can plant links that make polylock create files elsewhere; lock files
//! are opened with `O_NOFOLLOW`. Other users of the same database exclude through the row and
//! poll. At most [`MAX_WAIT_THREADS`] threads of a process block in `flock(2)` at once: a
//! thread stays blocked until the holder lets go even after its waiters left, so names
//! beyond that are waited on by polling.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::error::{Error, Result};

/// The most threads of this process blocked in `flock(2)` at once, over every database.
pub(crate) const MAX_WAIT_THREADS: usize = 64;

/// Threads of this process blocked in `flock(2)` now.
static WAIT_THREADS: AtomicUsize = AtomicUsize::new(0);

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
    /// The files beside the database at `path`, if a folder for them can be made there
    /// (`None`: the row alone decides). `InvalidArgument` when the folder is a link or
    /// another user's.
    pub(super) fn beside(path: &str) -> Result<Option<NameFiles>> {
        if path.is_empty() || path == ":memory:" || path.starts_with("file:") {
            return Ok(None);
        }
        let dir = PathBuf::from(format!("{path}-locks"));
        if !private_dir(&dir)? {
            return Ok(None);
        }
        Ok(Some(NameFiles { dir, idle: Mutex::new(HashMap::new()), waits: Mutex::new(HashMap::new()) }))
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
    /// Beyond [`MAX_WAIT_THREADS`] no thread is started: the waiter's timers wake it.
    pub(super) fn arm(&self) {
        let mut state = lock(&self.wait.state);
        if state.thread_running || state.locked.is_some() {
            return;
        }
        let taken =
            WAIT_THREADS.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < MAX_WAIT_THREADS).then_some(n + 1));
        if taken.is_err() {
            return;
        }
        let path = self.files.dir.join(&self.name);
        let (files, name, wait) = (self.files.clone(), self.name.clone(), self.wait.clone());
        let spawned = std::thread::Builder::new().name("polylock-sqlite-wait".into()).spawn(move || {
            block_until_locked(&files, &name, &wait, &path);
            WAIT_THREADS.fetch_sub(1, Ordering::AcqRel);
        });
        if spawned.is_err() {
            WAIT_THREADS.fetch_sub(1, Ordering::AcqRel);
        }
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

/// Make sure `dir` is a folder of this user's alone: create it `0700` if it is missing.
/// `Ok(false)` when it cannot be made (a read-only place): no files then. A link, something
/// that is no folder, or another user's folder is refused.
fn private_dir(dir: &Path) -> Result<bool> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let refuse = |why: &str| {
        Err(Error::invalid_argument(format!(
            "the SQLite lock folder {} {why}; polylock keeps its lock files only in a folder of its \
             own user (remove it, or use a database path in a folder only you can write)",
            dir.display()
        )))
    };
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => return Ok(true),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => match std::fs::symlink_metadata(dir) {
                Ok(meta) => meta,
                Err(_) => return Ok(false),
            },
            Err(_) => return Ok(false),
        },
        Err(_) => return Ok(false),
    };
    if meta.file_type().is_symlink() {
        return refuse("is a symbolic link");
    }
    if !meta.is_dir() {
        return refuse("is not a folder");
    }
    // SAFETY: geteuid has no arguments and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return refuse(&format!("belongs to user id {}, not to this process's user id {me}", meta.uid()));
    }
    Ok(true)
}

/// Open (creating, `0600`) a lock file, never through a symbolic link (`O_NOFOLLOW`): `flock`
/// needs no write access, so a file left read-only is opened read-only.
fn open(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false).mode(0o600).custom_flags(libc::O_NOFOLLOW);
    match options.open(path) {
        Err(err) if err.kind() == io::ErrorKind::PermissionDenied => {
            OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path)
        }
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
        let (ours, theirs) = (NameFiles::beside(&db).unwrap().unwrap(), NameFiles::beside(&db).unwrap().unwrap());
        let FileTry::Locked(locked) = ours.try_lock("a") else { panic!("a free file was not locked") };
        assert!(matches!(theirs.try_lock("a"), FileTry::Busy));
        assert!(matches!(theirs.try_lock("b"), FileTry::Locked(_)));
        ours.unlock(locked);
        assert!(matches!(theirs.try_lock("a"), FileTry::Locked(_)));
    }

    #[test]
    fn no_files_beside_an_in_memory_database() {
        assert!(NameFiles::beside(":memory:").unwrap().is_none());
    }

    #[test]
    fn the_folder_is_made_private_and_a_planted_link_is_refused() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("locks.db").display().to_string();
        let files = NameFiles::beside(&db).unwrap().unwrap();
        let folder = std::fs::metadata(format!("{db}-locks")).unwrap();
        assert_eq!(folder.permissions().mode() & 0o777, 0o700);
        // A link planted where a lock file goes: never followed, nothing made at its target.
        let target = dir.path().join("elsewhere");
        std::os::unix::fs::symlink(&target, files.dir.join(file_name("planted"))).unwrap();
        assert!(matches!(files.try_lock("planted"), FileTry::Unavailable));
        assert!(!target.exists(), "a lock file was created through a link");
        let FileTry::Locked(locked) = files.try_lock("fine") else { panic!("a plain name was not locked") };
        assert_eq!(locked.file.metadata().unwrap().mode() & 0o777, 0o600);

        // The folder itself a link: refused, naming it.
        let other = dir.path().join("other.db").display().to_string();
        std::os::unix::fs::symlink(dir.path(), format!("{other}-locks")).unwrap();
        let Err(err) = NameFiles::beside(&other) else { panic!("a linked folder was taken") };
        assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
        assert!(err.message().contains(&format!("{other}-locks")) && err.message().contains("link"), "{err}");
    }

    #[test]
    fn another_users_folder_is_refused() {
        // SAFETY: geteuid has no arguments and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("not root: cannot give a folder to another user; skipped");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("locks.db").display().to_string();
        let folder = format!("{db}-locks");
        std::fs::create_dir(&folder).unwrap();
        std::os::unix::fs::chown(&folder, Some(65534), Some(65534)).unwrap();
        let Err(err) = NameFiles::beside(&db) else { panic!("another user's folder was taken") };
        assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
        assert!(err.message().contains("65534") && err.message().contains(&folder), "{err}");
    }

    #[test]
    fn threads_blocked_in_flock_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("locks.db").display().to_string();
        let (ours, theirs) =
            (Arc::new(NameFiles::beside(&db).unwrap().unwrap()), NameFiles::beside(&db).unwrap().unwrap());
        let names: Vec<String> = (0..MAX_WAIT_THREADS + 8).map(|i| format!("held-{i}")).collect();
        let held: Vec<LockedFile> = names
            .iter()
            .map(|name| match theirs.try_lock(name) {
                FileTry::Locked(locked) => locked,
                _ => panic!("{name} was not locked"),
            })
            .collect();
        // Waiters that time out and leave: their threads stay blocked until the holder lets go.
        for name in &names {
            drop(ours.wait_for(name));
        }
        assert!(WAIT_THREADS.load(Ordering::Acquire) <= MAX_WAIT_THREADS);
        assert!(ours.threads_waiting() <= MAX_WAIT_THREADS);
        drop(held);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while ours.threads_waiting() > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(ours.threads_waiting(), 0);
    }
}
