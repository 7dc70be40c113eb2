//! Holders in another OS process: this test binary started again with [`HOLDER_ENV`] set,
//! running only [`holder_process`], which takes a mutex through the store and then does what
//! the test tells it on its stdin. Every assertion is about order (by the database's clock),
//! never about how long something took.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::params;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{SqliteBackend, NOW_MS};
use crate::owner::{ClientId, Owner};
use crate::spi::{lost_latch, AcquireRequest, Acquired, HeldLock, HoldStore, LockKind};
use crate::url::ConnectUrl;

/// `<database path>|<key>|<lease in ms>`: set, [`holder_process`] is a holder.
const HOLDER_ENV: &str = "POLYLOCK_SQLITE_TEST_HOLDER";

async fn open(path: &str) -> SqliteBackend {
    SqliteBackend::open(&mut ConnectUrl::parse(&format!("sqlite://{path}")).unwrap()).await.unwrap()
}

fn request(key: &str, lease: Duration, wait: Duration) -> AcquireRequest {
    AcquireRequest {
        key: key.to_string(),
        owner: Owner { client_id: ClientId::random(), local_id: 1 },
        kind: LockKind::Reentrant,
        lease,
        deadline: Some(Instant::now() + wait),
        cancel: CancellationToken::new(),
        lost: lost_latch().0,
    }
}

/// Not a test of its own: the holder the tests below start. Without [`HOLDER_ENV`] it does
/// nothing. It prints `held <token>`, then on each line of stdin: `release` (prints
/// `released`, and stays alive), or end of input (exits).
#[test]
fn holder_process() {
    let Ok(spec) = std::env::var(HOLDER_ENV) else { return };
    let mut parts = spec.split('|');
    let (path, key, lease_ms) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
    let lease = Duration::from_millis(lease_ms.parse().unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    runtime.block_on(async {
        let db = open(path).await;
        let request = request(key, lease, Duration::from_secs(30));
        let acquired = db.acquire(&request).await.unwrap().expect("the holder got the lock");
        let held = HeldLock::new(key.to_string(), request.owner, LockKind::Reentrant, acquired);
        println!("held {}", held.token);
        let mut lines = BufReader::new(std::io::stdin()).lines();
        while let Some(Ok(line)) = lines.next() {
            if line == "release" {
                db.release(&held, 0).await.unwrap();
                println!("released");
            }
        }
    });
}

struct Holder {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    token: u64,
}

impl Holder {
    /// Start a holder process and wait until it holds `key`.
    fn start(path: &str, key: &str, lease: Duration) -> Holder {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "backend::sqlite::process_tests::holder_process", "--nocapture", "--test-threads=1"])
            .env(HOLDER_ENV, format!("{path}|{key}|{}", lease.as_millis()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let (stdin, mut stdout) = (child.stdin.take().unwrap(), BufReader::new(child.stdout.take().unwrap()));
        let token = read_until(&mut stdout, "held ").parse().unwrap();
        Holder { child, stdin, stdout, token }
    }

    fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill only sends a signal to the child we started and still own.
        assert_eq!(unsafe { libc::kill(self.child.id() as libc::pid_t, signal) }, 0);
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What follows `word` on the first line of `out` that has it (the test harness prints its
/// own text around the holder's, on the same line too).
fn read_until(out: &mut impl BufRead, word: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert_ne!(out.read_line(&mut line).unwrap(), 0, "the holder process ended before printing '{word}'");
        if let Some(at) = line.find(word) {
            return line[at + word.len()..].trim().to_string();
        }
    }
}

/// The row's lease end and the database's clock now, in unix ms.
fn lease_end_and_now(path: &str, key: &str) -> (i64, i64) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row(
        &format!("SELECT lease_until_ms, {NOW_MS} FROM polylock_locks WHERE name = ?1"),
        params![key],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )
    .unwrap()
}

fn db_now(path: &str) -> i64 {
    rusqlite::Connection::open(path).unwrap().query_row(&format!("SELECT {NOW_MS}"), [], |row| row.get(0)).unwrap()
}

fn temp_db() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locks.db").display().to_string();
    (dir, path)
}

/// A waiter of this process, blocked on the holder's file, is woken by the holder's release
/// in the other process. It cannot be woken any other way: it polls no more (its polls are
/// set an hour apart), the holder's lease outlasts the wait, and no release of its own
/// process happens. So acquiring at all proves the kernel woke it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_in_another_process_wakes_a_waiter_without_polling() {
    let (_dir, path) = temp_db();
    let mut db = open(&path).await;
    db.file_wait_poll = (Duration::from_secs(3600), Duration::from_secs(3600));
    let db = Arc::new(db);
    let mut holder = Holder::start(&path, "woken", Duration::from_secs(600));

    let waiter = tokio::spawn({
        let db = db.clone();
        async move { db.acquire(&request("woken", Duration::from_secs(30), Duration::from_secs(120))).await }
    });
    // Release only once the waiter is blocked in the kernel on the holder's file.
    let files = db.files.clone().expect("lock files beside a database in a temporary folder");
    while files.threads_waiting() == 0 {
        if waiter.is_finished() {
            let ended = waiter.await.unwrap().map(|acquired| acquired.map(|acquired| acquired.token));
            panic!("the waiter ended before the holder released: {ended:?}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    writeln!(holder.stdin, "release").unwrap();
    read_until(&mut holder.stdout, "released");

    let acquired: Acquired = waiter.await.unwrap().unwrap().expect("woken and granted before the wait ran out");
    assert!(acquired.token > holder.token, "a newer token than the holder's");
}

/// A holder killed with SIGKILL frees its file at once, but its row keeps the lock until the
/// row's lease ends: the waiter is granted no earlier than that, by the database's clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holders_lock_lasts_until_its_lease_ends() {
    let (_dir, path) = temp_db();
    let db = open(&path).await;
    let holder = Holder::start(&path, "killed", Duration::from_millis(1500));
    let (lease_end, _) = lease_end_and_now(&path, "killed");
    holder.signal(libc::SIGKILL);

    let acquired = db.acquire(&request("killed", Duration::from_secs(30), Duration::from_secs(60))).await.unwrap();
    let granted_at = db_now(&path);
    assert!(acquired.expect("granted once the lease ended").token > holder.token);
    assert!(granted_at >= lease_end, "granted at {granted_at}, before the dead holder's lease ended at {lease_end}");
}

/// A holder stopped (SIGSTOP) past its lease still has its file locked; the row's lease
/// governs, so a waiter takes the lock when the lease ends, not when the file is free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_holder_loses_the_lock_at_its_lease_end_though_its_file_stays_locked() {
    let (_dir, path) = temp_db();
    let db = open(&path).await;
    let holder = Holder::start(&path, "paused", Duration::from_millis(1500));
    let (lease_end, _) = lease_end_and_now(&path, "paused");
    holder.signal(libc::SIGSTOP);

    let acquired = db.acquire(&request("paused", Duration::from_secs(30), Duration::from_secs(60))).await.unwrap();
    let granted_at = db_now(&path);
    let files = db.files.clone().expect("lock files beside a database in a temporary folder");
    assert!(matches!(files.try_lock("paused"), super::FileTry::Busy), "the paused holder still has its file locked");
    assert!(acquired.expect("granted once the lease ended").token > holder.token);
    assert!(granted_at >= lease_end, "granted at {granted_at}, before the paused holder's lease ended at {lease_end}");
}
