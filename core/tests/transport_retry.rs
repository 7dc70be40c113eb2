//! Issue 35 §8: a transport error on an idempotent call (release, renewal, reads) is retried
//! within the client's `timeout=`, on a fresh connection, and only then handed to the caller
//! as `Connection`. Against a private redis-server of this test (its own port, an append-only
//! file so that a lock outlives a restart), killed or stopped between acquire and release;
//! the shared servers are never touched. The etcd cluster case, a member partitioned away
//! with iptables, is in tests/faults (`faults.py release_retry`).

use crate::common;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use polylock::{AcquireOptions, Client, ErrorKind};

/// One redis-server with an append-only file fsynced on every write, restartable on its port.
struct Server {
    port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl Server {
    fn start(slot: u16) -> Server {
        let mut dir = tempfile::tempdir().unwrap();
        for attempt in 0..40u16 {
            let port = 40_000 + (std::process::id() as u16 % 400) * 20 + slot * 5 + attempt * 997 % 9_000;
            if std::net::TcpListener::bind(("127.0.0.1", port)).is_err() {
                continue;
            }
            let mut server = Server { port, dir, child: None };
            if server.spawn() {
                return server;
            }
            dir = server.take_dir();
        }
        panic!("could not start a redis-server on a free port");
    }

    fn take_dir(&mut self) -> tempfile::TempDir {
        std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap())
    }

    /// Start the server (again) on its port and directory; whether it answers PING.
    fn spawn(&mut self) -> bool {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .args(["--appendonly", "yes", "--appendfsync", "always", "--daemonize", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (tests/services installs it)");
        self.child = Some(child);
        for _ in 0..200 {
            if ping(self.port) {
                return true;
            }
            if matches!(self.child.as_mut().unwrap().try_wait(), Ok(Some(_))) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        false
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").args(["-CONT", &child.id().to_string()]).status();
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().unwrap().id().to_string();
        assert!(Command::new("kill").args([signal, &pid]).status().unwrap().success());
    }

    fn url(&self, options: &str) -> String {
        format!("redis://127.0.0.1:{}{options}", self.port)
    }

    fn exists(&self, key: &str) -> bool {
        let client = redis::Client::open(self.url("")).unwrap();
        let mut connection = client.get_connection().unwrap();
        redis::cmd("EXISTS").arg(key).query::<i64>(&mut connection).unwrap() == 1
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

fn ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let mut reply = [0u8; 7];
    stream.write_all(b"PING\r\n").is_ok() && stream.read_exact(&mut reply).is_ok() && &reply == b"+PONG\r\n"
}

fn lease(seconds: u64) -> AcquireOptions {
    AcquireOptions::default().lease(Duration::from_secs(seconds))
}

/// The server dies after the acquisition and is back 1.5 s later: the release, sent while it
/// is down, is retried on a new connection and gives the lock back (before issue 35 it
/// failed with `Connection` and the lock stayed held until its lease ended).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_while_the_server_restarts_is_retried_and_frees_the_lock() {
    if common::servers_off() {
        return;
    }
    let mut server = Server::start(0);
    let client = Client::connect(&server.url("?timeout=5s")).await.unwrap();
    for kind in [polylock::LockKind::Reentrant, polylock::LockKind::Token, polylock::LockKind::Fair] {
        let name = format!("restart-{kind}");
        let guard = client.lock(&name).unwrap().with_kind(kind).unwrap().acquire_with(lease(60)).await.unwrap();
        server.kill();
        let back = std::thread::spawn({
            let mut server =
                std::mem::replace(&mut server, Server { port: 0, dir: tempfile::tempdir().unwrap(), child: None });
            move || {
                std::thread::sleep(Duration::from_millis(1500));
                assert!(server.spawn(), "the server starts again on its port");
                server
            }
        });
        let started = Instant::now();
        let released = guard.release().await;
        server = back.join().unwrap();
        released.unwrap_or_else(|e| panic!("{kind}: the release is retried until the server is back: {e}"));
        assert!(started.elapsed() >= Duration::from_millis(1400), "{kind}: it waited for the server");
        assert!(!server.exists(&name), "{kind}: the lock key is gone");
    }
    client.close().await;
}

/// The server does not come back: the release fails with `Connection` once the client's
/// `timeout=` (1 s here) has passed since its first failure, not at once and not never.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_fails_with_connection_when_the_server_stays_away() {
    if common::servers_off() {
        return;
    }
    let mut server = Server::start(1);
    let client = Client::connect(&server.url("?timeout=1s")).await.unwrap();
    let guard = client.lock("gone-for-good").unwrap().acquire_with(lease(60)).await.unwrap();
    server.kill();
    let started = Instant::now();
    let err = guard.release().await.expect_err("nothing answers");
    let took = started.elapsed();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(took >= Duration::from_millis(900), "retried for the timeout, took {took:?}");
    assert!(took < Duration::from_secs(6), "gave up after the timeout, took {took:?}");
    // Reads give up the same way.
    let started = Instant::now();
    let err = client.lock("gone-for-good").unwrap().is_locked().await.expect_err("nothing answers");
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(started.elapsed() >= Duration::from_millis(900), "{:?}", started.elapsed());
    client.close().await;
}

/// The first release is sent to a server that is paused (SIGSTOP): it times out, is retried,
/// and when the server resumes it runs the first delete and then the repeat, which finds the
/// key gone. That is the release the caller asked for, not "not held" nor `Lost`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeat_after_a_release_that_went_through_is_not_an_error() {
    if common::servers_off() {
        return;
    }
    let server = Server::start(2);
    let client = Client::connect(&server.url("?timeout=1s")).await.unwrap();
    let guard = client.lock("went-through").unwrap().acquire_with(lease(60)).await.unwrap();
    server.signal("-STOP");
    let resume = std::thread::spawn({
        let pid = server.child.as_ref().unwrap().id().to_string();
        move || {
            std::thread::sleep(Duration::from_millis(1400)); // after the first 1 s response timeout
            assert!(Command::new("kill").args(["-CONT", &pid]).status().unwrap().success());
        }
    });
    let released = guard.release().await;
    resume.join().unwrap();
    released.expect("the repeat finds the key gone: released");
    assert!(!server.exists("went-through"));
    client.close().await;
}
