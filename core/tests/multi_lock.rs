//! Multi-locks (issue #18) against every backend: in-process memory, an SQLite file, and the
//! real redis-server, PostgreSQL, MariaDB, etcd and ZooKeeper of tests/services, each in a
//! private namespace. Two multi-locks over the same names listed in opposite orders, taken by
//! several tasks of two clients at once, all finish within their one deadline (no deadlock,
//! checked by a ledger of who holds what); a wait that runs out gives back every part already
//! taken; each part is the ordinary lock of its name, with its own fencing token; read and
//! write sides of read-write locks mix with mutexes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common;
use polylock::{AcquireOptions, Client, ErrorKind, MultiLockPart};

fn urls() -> (Vec<String>, tempfile::TempDir) {
    common::every_backend_urls("multi")
}

fn wait(ms: u64) -> AcquireOptions {
    AcquireOptions::default().wait(Duration::from_millis(ms))
}

/// Who holds each name right now, as the tasks of this test report it.
#[derive(Default)]
struct Ledger {
    holders: HashMap<&'static str, AtomicU32>,
}

impl Ledger {
    fn new(names: &[&'static str]) -> Arc<Ledger> {
        Arc::new(Ledger { holders: names.iter().map(|name| (*name, AtomicU32::new(0))).collect() })
    }

    fn enter(&self, name: &str) {
        let before = self.holders[name].fetch_add(1, Ordering::SeqCst);
        assert_eq!(before, 0, "two multi-locks held '{name}' at once");
    }

    fn leave(&self, name: &str) {
        self.holders[name].fetch_sub(1, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opposite_orders_under_contention_finish_within_one_deadline() {
    const NAMES: [&str; 3] = ["alpha", "beta", "gamma"];
    const ROUNDS: usize = 4;
    let (urls, _dir) = urls();
    for url in urls {
        let clients = [Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap()];
        let ledger = Ledger::new(&NAMES);
        let mut tasks = Vec::new();
        for task in 0..4 {
            let client = clients[task % 2].clone();
            let ledger = ledger.clone();
            let url = url.clone();
            tasks.push(tokio::spawn(async move {
                // Half the tasks list the names backwards: Redisson's MultiLock deadlocks here.
                let mut names = NAMES.to_vec();
                if task % 2 == 1 {
                    names.reverse();
                }
                let multi = client.multi_lock(&names).unwrap();
                assert_eq!(multi.names(), NAMES.to_vec(), "{url}: parts are taken in key byte order");
                for _ in 0..ROUNDS {
                    let guard = multi
                        .acquire_with(wait(30_000))
                        .await
                        .unwrap_or_else(|err| panic!("{url}: task {task} did not get the multi-lock: {err}"));
                    for name in NAMES {
                        ledger.enter(name);
                    }
                    tokio::time::sleep(Duration::from_millis(3)).await;
                    for name in NAMES {
                        ledger.leave(name);
                    }
                    assert!(!guard.is_lost(), "{url}");
                    guard.release().await.unwrap();
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        for client in clients {
            client.close().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_that_runs_out_gives_back_every_part_taken() {
    let (urls, _dir) = urls();
    for url in urls {
        let (a, b) = (Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap());
        // b holds the last part in canonical order, so a takes "part-a" and "part-b" first.
        let blocker = b.lock("part-c").unwrap().acquire().await.unwrap();
        let multi = a.multi_lock(&["part-c", "part-a", "part-b"]).unwrap();
        let err = multi.acquire_with(wait(300)).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Timeout, "{url}: {err}");
        assert!(err.message().contains("'part-c'") && err.message().contains("2 part(s)"), "{url}: {err}");
        assert!(!multi.is_held(), "{url}");
        for name in ["part-a", "part-b"] {
            let other = b.lock(name).unwrap().try_acquire().await.unwrap();
            assert!(other.is_some(), "{url}: '{name}' was left held after the multi-lock gave up");
            other.unwrap().release().await.unwrap();
        }
        assert!(multi.try_acquire().await.unwrap().is_none(), "{url}: try once fails while a part is held");
        blocker.release().await.unwrap();
        let guard = multi.acquire_with(wait(5000)).await.unwrap();
        guard.release().await.unwrap();
        a.close().await;
        b.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_part_is_the_ordinary_lock_with_its_own_token() {
    let (urls, _dir) = urls();
    for url in urls {
        let (a, b) = (Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap());
        let before = b.lock("left").unwrap().acquire().await.unwrap();
        let before_token = before.fencing_token();
        before.release().await.unwrap();
        let multi = a.multi_lock(&["right", "left"]).unwrap();
        let guard = multi.acquire_with(wait(5000)).await.unwrap();
        let tokens = guard.fencing_tokens();
        assert_eq!(tokens.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>(), ["left", "right"], "{url}");
        assert!(tokens[0].1 > before_token, "{url}: the part's token outgrows the name's earlier grants");
        assert!(guard.fencing_tokens_opt().iter().all(|(_, token)| token.is_some()), "{url}");
        let by_handle: Vec<Option<u64>> = multi.fencing_tokens().into_iter().map(|(_, token)| token).collect();
        assert_eq!(by_handle, tokens.iter().map(|(_, token)| Some(*token)).collect::<Vec<_>>(), "{url}");
        // Another client's plain lock of either name is excluded while the multi-lock holds.
        for name in ["left", "right"] {
            assert!(b.lock(name).unwrap().try_acquire().await.unwrap().is_none(), "{url}: '{name}'");
        }
        guard.release().await.unwrap();
        let after = b.lock("right").unwrap().acquire_with(wait(5000)).await.unwrap();
        assert!(after.fencing_token() > tokens[1].1, "{url}");
        after.release().await.unwrap();
        a.close().await;
        b.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_and_write_sides_mix_with_mutexes() {
    let (urls, _dir) = urls();
    for url in urls {
        let (a, b) = (Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap());
        let parts = || [MultiLockPart::write("doc"), MultiLockPart::read("config"), MultiLockPart::lock("mutex")];
        let multi = a.multi_lock_of(parts()).unwrap();
        let guard = multi.acquire_with(wait(5000)).await.unwrap();
        assert_eq!(guard.names(), ["config", "doc", "mutex"], "{url}");
        // Readers share "config"; "doc" is written, so nobody else reads or writes it.
        let reader = b.rw_lock("config").unwrap().read().acquire_with(wait(2000)).await;
        assert!(reader.is_ok(), "{url}: a read part shares with other readers");
        assert!(b.rw_lock("doc").unwrap().read().try_acquire().await.unwrap().is_none(), "{url}");
        // The same parts from another client wait for the first (the write side excludes).
        let second = b.multi_lock_of(parts()).unwrap();
        assert_eq!(second.acquire_with(wait(200)).await.unwrap_err().kind(), ErrorKind::Timeout, "{url}");
        reader.unwrap().release().await.unwrap();
        guard.release().await.unwrap();
        let guard = second.acquire_with(wait(5000)).await.unwrap();
        guard.release().await.unwrap();
        a.close().await;
        b.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_by_owner_and_reentry_cover_every_part() {
    let client = Client::connect("mem://multi-owner").await.unwrap();
    let multi = client.multi_lock(&["p", "q"]).unwrap();
    let first = multi.acquire().await.unwrap();
    let again = multi.clone().acquire_with(wait(0)).await.unwrap();
    assert_eq!(first.fencing_tokens(), again.fencing_tokens(), "a clone shares the owner: reentrant");
    first.release().await.unwrap();
    assert!(multi.is_held());
    assert_eq!(again.detach().len(), 2); // as a binding does when its user releases by owner
    multi.release().await.unwrap();
    assert!(!multi.is_held());
    assert_eq!(multi.release().await.unwrap_err().kind(), ErrorKind::NotOwner);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_when_any_part_is_lost() {
    let client = Client::connect("mem://multi-lost").await.unwrap();
    let multi = client.multi_lock(&["short", "long"]).unwrap();
    let guard = multi.acquire_with(wait(0).lease(Duration::from_millis(150))).await.unwrap();
    assert!(!guard.is_lost());
    let (name, _reason) = tokio::time::timeout(Duration::from_secs(5), guard.lost()).await.unwrap();
    assert!(name == "long" || name == "short");
    assert!(guard.is_lost());
    assert_eq!(guard.release().await.unwrap_err().kind(), ErrorKind::Lost);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_part_lists_are_refused() {
    let client = Client::connect("mem://multi-bad").await.unwrap();
    let empty: [&str; 0] = [];
    assert_eq!(client.multi_lock(&empty).unwrap_err().kind(), ErrorKind::InvalidArgument);
    let err = client.multi_lock(&["x", "x"]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().contains("'x' twice"), "{err}");
    let err = client.multi_lock_of([MultiLockPart::read("d"), MultiLockPart::write("d")]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert_eq!(client.multi_lock(&["ok", ""]).unwrap_err().kind(), ErrorKind::InvalidArgument);
    let err = client.multi_lock_of([MultiLockPart::lock_of_kind("t", polylock::LockKind::Token)]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "mem has no token locks: {err}");
    client.close().await;
}

/// On PostgreSQL and MariaDB each reentrant part and each read or write side keeps a session
/// connection of its own: a multi-lock of more such parts than `max_sessions` could never be
/// taken, and is refused at once (it used to fail only after the pool's timeout, even with no
/// wait). Lease parts keep no session and do not count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_session_parts_than_the_sql_session_pool_are_refused_at_once() {
    if common::servers_off() {
        return;
    }
    for server in [common::postgres_url(), common::mariadb_url()] {
        let sep = if server.contains('?') { '&' } else { '?' };
        let url = format!("{server}{sep}max_sessions=2&namespace=multi-bound-{}", std::process::id());
        let client = Client::connect(&url).await.unwrap_or_else(|e| panic!("{url}: {e}"));
        let started = std::time::Instant::now();
        let err = client.multi_lock(&["a", "b", "c"]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
        assert!(err.message().contains("max_sessions") && err.message().contains('2'), "{err}");
        let err = client
            .multi_lock_of([MultiLockPart::lock("a"), MultiLockPart::read("b"), MultiLockPart::write("c")])
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
        assert!(started.elapsed() < Duration::from_secs(1));
        // Two session parts and lease parts beside them: taken.
        let multi = client
            .multi_lock_of([
                MultiLockPart::lock("a"),
                MultiLockPart::lock("b"),
                MultiLockPart::lock_of_kind("c", polylock::LockKind::Lease),
            ])
            .unwrap();
        let guard = multi.acquire_with(wait(5000)).await.unwrap_or_else(|e| panic!("{url}: {e}"));
        guard.release().await.unwrap();
        client.close().await;
    }
}
