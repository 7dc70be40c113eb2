//! Versioned values, fenced writes and idempotency keys (issue 22), run against every
//! backend: in-process memory, an SQLite file, and the real redis-server, PostgreSQL,
//! MariaDB, etcd and ZooKeeper of tests/services, each in a private namespace. A backend
//! whose capabilities do not offer versioned values must refuse them with `Unsupported`
//! (checked, and said on stderr); a server that is not running fails the test.
//!
//! Kleppmann's scenario runs through real processes: this test binary re-runs itself as the
//! first lock holder, which is SIGSTOPped past its lease while a second holder writes.

use std::io::{BufRead, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common;
use polylock::{AcquireOptions, Begin, Client, ErrorDetails, ErrorKind, LockKind};

fn urls() -> (Vec<String>, tempfile::TempDir) {
    common::every_backend_urls("values")
}

/// Connect (a server that is not there fails the test), and say whether the backend offers
/// versioned values; one that does not must refuse them with `Unsupported`.
async fn connect(url: &str) -> Option<Client> {
    let client = Client::connect(url).await.unwrap_or_else(|e| panic!("{url}: cannot connect: {e}"));
    if client.capabilities().versioned_values {
        return Some(client);
    }
    assert_eq!(client.value("v").unwrap_err().kind(), ErrorKind::Unsupported, "{url}");
    assert_eq!(client.idempotency("ns").unwrap_err().kind(), ErrorKind::Unsupported, "{url}");
    eprintln!("{}: no versioned values yet (Unsupported checked)", client.capabilities().backend);
    client.close().await;
    None
}

fn conflict_current(err: &polylock::Error) -> Option<(Vec<u8>, u64)> {
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    match err.details() {
        Some(ErrorDetails::Conflict { current }) => current.clone(),
        other => panic!("a conflict without its current value: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_are_written_by_compare_and_set() {
    let (urls, _dir) = urls();
    for url in urls {
        let Some(client) = connect(&url).await else { continue };
        let value = client.value("doc").unwrap();
        assert_eq!(value.get().await.unwrap(), None, "{url}");
        let v1 = value.create(b"one").await.unwrap();
        let err = value.create(b"again").await.unwrap_err();
        assert_eq!(conflict_current(&err), Some((b"one".to_vec(), v1)), "{url}");
        let v2 = value.compare_and_set(v1, b"two").await.unwrap();
        assert!(v2 > v1, "{url}");
        let err = value.compare_and_set(v1, b"stale").await.unwrap_err();
        assert_eq!(conflict_current(&err), Some((b"two".to_vec(), v2)), "{url}");
        let got = value.get().await.unwrap().unwrap();
        assert_eq!((got.value.as_slice(), got.version, got.fencing_token), (&b"two"[..], v2, None), "{url}");
        let err = value.delete(v1).await.unwrap_err();
        assert_eq!(conflict_current(&err), Some((b"two".to_vec(), v2)), "{url}: a stale delete removes nothing");
        value.delete(v2).await.unwrap();
        assert_eq!(value.get().await.unwrap(), None, "{url}");
        let err = value.compare_and_set(v2, b"gone").await.unwrap_err();
        assert_eq!(conflict_current(&err), None, "{url}: nothing there");
        let v3 = value.create(b"").await.unwrap();
        assert!(v3 > v2, "{url}: versions grow across a delete");
        assert_eq!(value.get().await.unwrap().unwrap().value, b"", "{url}: an empty value is a value");
        // Another client sees the same value; names are checked.
        let other = Client::connect(&url).await.unwrap();
        assert_eq!(other.value("doc").unwrap().get().await.unwrap().unwrap().version, v3, "{url}");
        assert_eq!(other.value("").unwrap_err().kind(), ErrorKind::InvalidArgument);
        other.close().await;
        client.close().await;
        assert_eq!(value.get().await.unwrap_err().kind(), ErrorKind::Connection, "{url}: a closed client");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_writes_never_accept_a_lower_token() {
    let (urls, _dir) = urls();
    for url in urls {
        let Some(client) = connect(&url).await else { continue };
        let value = client.value("fenced").unwrap();
        let first = value.write_fenced(5, b"by 5").await.unwrap();
        let err = value.write_fenced(3, b"by 3").await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Fenced, "{url}");
        assert_eq!(err.details(), Some(&ErrorDetails::Fenced { winning_token: 5 }), "{url}");
        let again = value.write_fenced(5, b"by 5 again").await.unwrap();
        assert!(again > first, "{url}: the same token writes again");
        // A plain compare-and-set keeps the fence.
        let plain = value.compare_and_set(again, b"plain").await.unwrap();
        let got = value.get().await.unwrap().unwrap();
        assert_eq!((got.value.as_slice(), got.version, got.fencing_token), (&b"plain"[..], plain, Some(5)), "{url}");
        assert_eq!(value.write_fenced(4, b"by 4").await.unwrap_err().kind(), ErrorKind::Fenced, "{url}");
        value.write_fenced(9, b"by 9").await.unwrap();
        let got = value.get().await.unwrap().unwrap();
        assert_eq!((got.value.as_slice(), got.fencing_token), (&b"by 9"[..], Some(9)), "{url}");
        // Racing fenced writers: whatever order they land in, a lower token never follows a higher one.
        let mut tasks = Vec::new();
        for token in 10..30u64 {
            let value = value.clone();
            tasks.push(tokio::spawn(async move {
                match value.write_fenced(token, &token.to_be_bytes()).await {
                    Ok(_) => Some(token),
                    Err(err) if err.kind() == ErrorKind::Fenced => None,
                    Err(err) => panic!("{err}"),
                }
            }));
        }
        let mut accepted = Vec::new();
        for task in tasks {
            accepted.extend(task.await.unwrap());
        }
        let got = value.get().await.unwrap().unwrap();
        assert_eq!(got.fencing_token, accepted.iter().copied().max(), "{url}");
        assert_eq!(got.value, accepted.iter().max().unwrap().to_be_bytes(), "{url}: the highest token's bytes");
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_compare_and_set_increments_count_exactly() {
    const TASKS: u64 = 8;
    const EACH: u64 = 25;
    let (urls, _dir) = urls();
    for url in urls {
        let Some(first) = connect(&url).await else { continue };
        let second = Client::connect(&url).await.unwrap();
        first.value("counter").unwrap().create(&0u64.to_be_bytes()).await.unwrap();
        let retries = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        for task in 0..TASKS {
            let value = if task % 2 == 0 { &first } else { &second }.value("counter").unwrap();
            let retries = retries.clone();
            tasks.push(tokio::spawn(async move {
                for _ in 0..EACH {
                    loop {
                        let current = value.get().await.unwrap().unwrap();
                        let n = u64::from_be_bytes(current.value.try_into().unwrap());
                        match value.compare_and_set(current.version, &(n + 1).to_be_bytes()).await {
                            Ok(_) => break,
                            Err(err) if err.kind() == ErrorKind::Conflict => {
                                retries.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(err) => panic!("{err}"),
                        }
                    }
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let total = first.value("counter").unwrap().get().await.unwrap().unwrap().value;
        assert_eq!(u64::from_be_bytes(total.try_into().unwrap()), TASKS * EACH, "{url}");
        eprintln!(
            "{}: {} increments, {} retries",
            first.capabilities().backend,
            TASKS * EACH,
            retries.load(Ordering::Relaxed)
        );
        first.close().await;
        second.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotency_keys_acquire_replay_and_refuse() {
    let (urls, _dir) = urls();
    for url in urls {
        let Some(client) = connect(&url).await else { continue };
        let idem = client.idempotency("payments").unwrap();
        let Begin::Acquired(ticket) = idem.begin("order-1", b"fp-a").await.unwrap() else { panic!("{url}") };
        assert_eq!(ticket.token(), 1, "{url}");
        match idem.begin("order-1", b"fp-a").await.unwrap() {
            Begin::InProgress { retry_after } => {
                assert!(retry_after <= idem.in_progress_ttl() && !retry_after.is_zero(), "{url}: {retry_after:?}")
            }
            other => panic!("{url}: {other:?}"),
        }
        assert!(matches!(idem.begin("order-1", b"fp-b").await.unwrap(), Begin::Mismatch), "{url}");
        ticket.extend().await.unwrap();
        ticket.complete(b"charged").await.unwrap();
        assert_eq!(ticket.complete(b"twice").await.unwrap_err().kind(), ErrorKind::InvalidArgument, "{url}");
        assert!(matches!(idem.begin("order-1", b"fp-a").await.unwrap(), Begin::Replay(r) if r == b"charged"), "{url}");
        assert!(matches!(idem.begin("order-1", b"fp-b").await.unwrap(), Begin::Mismatch), "{url}");
        // Another namespace, and the same key in it, is another record.
        let other = client.idempotency("refunds").unwrap();
        assert!(matches!(other.begin("order-1", b"fp-b").await.unwrap(), Begin::Acquired(_)), "{url}");
        // Abandoned: the next begin runs again, with a greater token.
        let Begin::Acquired(ticket) = idem.begin("order-2", b"fp").await.unwrap() else { panic!("{url}") };
        ticket.abandon().await.unwrap();
        let Begin::Acquired(again) = idem.begin("order-2", b"fp-other").await.unwrap() else { panic!("{url}") };
        assert!(again.token() > ticket.token(), "{url}");
        // Bad input.
        assert_eq!(idem.begin("", b"fp").await.unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(idem.begin("k", &[0; 2000]).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(client.idempotency("").unwrap_err().kind(), ErrorKind::InvalidArgument);
        client.close().await;
    }
}

/// Issue 35: idempotency records were `<namespace>:<key>` with both spelled as given, so the
/// namespace `a` with the key `b:c` and the namespace `a:b` with the key `c` were one record
/// (a payment replayed for another service's request). The namespace's `:` (and `%`) are now
/// encoded in the record's key, so the split is unique while namespaces and keys keep `:`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotency_namespaces_and_keys_with_the_separator_are_apart() {
    let (urls, _dir) = urls();
    for url in urls {
        let Some(client) = connect(&url).await else { continue };
        let (outer, inner) = (client.idempotency("svc").unwrap(), client.idempotency("svc:pay").unwrap());
        let Begin::Acquired(first) = outer.begin("pay:order-1", b"fp-outer").await.unwrap() else { panic!("{url}") };
        first.complete(b"outer's").await.unwrap();
        // Before: Replay(b"outer's") (the same record) or Mismatch (its fingerprint).
        match inner.begin("order-1", b"fp-inner").await.unwrap() {
            Begin::Acquired(ticket) => ticket.complete(b"inner's").await.unwrap(),
            other => panic!("{url}: namespace 'svc:pay' key 'order-1' found another's record: {other:?}"),
        }
        // '%' is encoded too, so 'svc%3Apay' is a third namespace, not 'svc:pay' again.
        let spelled = client.idempotency("svc%3Apay").unwrap();
        assert!(matches!(spelled.begin("order-1", b"fp-x").await.unwrap(), Begin::Acquired(_)), "{url}");
        assert!(matches!(outer.begin("pay:order-1", b"fp-outer").await.unwrap(), Begin::Replay(r) if r == b"outer's"));
        assert!(matches!(inner.begin("order-1", b"fp-inner").await.unwrap(), Begin::Replay(r) if r == b"inner's"));
        client.close().await;
    }
}

/// Issue 35: other primitives keep records among the versioned values (a lease-backed
/// election's `<name>:leader`, idempotency records, Snowflake marks); a value of such a name
/// was that record, so it is refused on every backend, before anything is read or written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn value_names_of_internal_records_are_refused() {
    let (urls, _dir) = urls();
    for url in urls {
        let Some(client) = connect(&url).await else { continue };
        for name in ["jobs:leader", "polylock:idempotency:payments:order-1", "polylock-snowflake-mark:0"] {
            let err = client.value(name).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{url}: {name}: {err}");
        }
        assert!(client.value("jobs:leader-address").is_ok(), "{url}");
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_attempt_is_taken_over_and_its_late_complete_is_lost() {
    let (urls, _dir) = urls();
    for url in urls {
        let Some(client) = connect(&url).await else { continue };
        let idem = client.idempotency_with("jobs", Duration::from_secs(3600), Duration::from_millis(300)).unwrap();
        let Begin::Acquired(crashed) = idem.begin("job-1", b"fp").await.unwrap() else { panic!("{url}") };
        tokio::time::sleep(Duration::from_millis(400)).await;
        let Begin::Acquired(takeover) = idem.begin("job-1", b"fp").await.unwrap() else { panic!("{url}") };
        assert!(takeover.token() > crashed.token(), "{url}");
        let err = crashed.complete(b"late").await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Lost, "{url}: {err}");
        assert_eq!(crashed.extend().await.unwrap_err().kind(), ErrorKind::Lost, "{url}");
        takeover.complete(b"second").await.unwrap();
        assert_eq!(crashed.abandon().await.unwrap_err().kind(), ErrorKind::Lost, "{url}");
        assert!(matches!(idem.begin("job-1", b"fp").await.unwrap(), Begin::Replay(r) if r == b"second"), "{url}");
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_expire_after_their_retention() {
    let (urls, _dir) = urls();
    for url in urls {
        let Some(client) = connect(&url).await else { continue };
        let idem = client.idempotency_with("short", Duration::from_millis(300), Duration::from_secs(60)).unwrap();
        let Begin::Acquired(ticket) = idem.begin("k", b"fp").await.unwrap() else { panic!("{url}") };
        ticket.complete(b"done").await.unwrap();
        assert!(matches!(idem.begin("k", b"fp").await.unwrap(), Begin::Replay(_)), "{url}");
        tokio::time::sleep(Duration::from_millis(400)).await;
        // Expired: runs afresh, and even another fingerprint is no mismatch any more.
        let Begin::Acquired(fresh) = idem.begin("k", b"fp-new").await.unwrap() else { panic!("{url}") };
        assert!(fresh.token() > ticket.token(), "{url}");
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_begins_yield_exactly_one_acquired() {
    let (urls, _dir) = urls();
    for url in urls {
        let Some(client) = connect(&url).await else { continue };
        let second = Client::connect(&url).await.unwrap();
        let mut tasks = Vec::new();
        for n in 0..16 {
            let idem = if n % 2 == 0 { &client } else { &second }.idempotency("race").unwrap();
            tasks.push(tokio::spawn(async move { idem.begin("one-key", b"fp").await.unwrap() }));
        }
        let mut acquired = 0;
        for task in tasks {
            match task.await.unwrap() {
                Begin::Acquired(_) => acquired += 1,
                Begin::InProgress { .. } => {}
                other => panic!("{url}: {other:?}"),
            }
        }
        assert_eq!(acquired, 1, "{url}");
        client.close().await;
        second.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_does_the_work_once_and_replays() {
    let (urls, _dir) = urls();
    for url in urls {
        let Some(client) = connect(&url).await else { continue };
        let idem = client.idempotency("run").unwrap();
        let calls = Arc::new(AtomicU64::new(0));
        let work = |calls: Arc<AtomicU64>| async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            calls.fetch_add(1, Ordering::SeqCst);
            Ok::<_, polylock::Error>(b"result".to_vec())
        };
        let (a, b) = (idem.clone(), idem.clone());
        let (c1, c2) = (calls.clone(), calls.clone());
        // The second run starts once the first holds the key (its work has begun): a fixed
        // sleep here let a slow first begin lose the key to the second on a loaded machine.
        let started = Arc::new(tokio::sync::Notify::new());
        let begun = started.clone();
        let first = tokio::spawn(async move {
            a.run("k", b"fp", None, || async move {
                begun.notify_one();
                work(c1).await
            })
            .await
        });
        started.notified().await;
        // Waits for the attempt under way and replays its result.
        let second = tokio::spawn(async move { b.run("k", b"fp", Some(Duration::from_secs(10)), || work(c2)).await });
        assert_eq!(first.await.unwrap().unwrap(), b"result");
        assert_eq!(second.await.unwrap().unwrap(), b"result");
        assert_eq!(calls.load(Ordering::SeqCst), 1, "{url}: the work ran once");
        // Without waiting: InProgress with a retry-after.
        let Begin::Acquired(busy) = idem.begin("busy", b"fp").await.unwrap() else { panic!("{url}") };
        let err = idem.run("busy", b"fp", None, || async { Ok::<_, polylock::Error>(vec![]) }).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InProgress, "{url}");
        assert!(matches!(err.details(), Some(ErrorDetails::RetryAfter { after }) if !after.is_zero()), "{url}");
        busy.complete(b"ok").await.unwrap();
        let err = idem.run("busy", b"other", None, || async { Ok::<_, polylock::Error>(vec![]) }).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Mismatch, "{url}");
        // Work that fails abandons the key: the retry runs.
        let err =
            idem.run("flaky", b"fp", None, || async { Err::<Vec<u8>, _>(polylock::Error::backend("boom")) }).await;
        assert_eq!(err.unwrap_err().message(), "boom");
        let again = idem.run("flaky", b"fp", None, || async { Ok::<_, polylock::Error>(b"ok".to_vec()) }).await;
        assert_eq!(again.unwrap(), b"ok", "{url}");
        // run stores the tagged form every binding's run reads (`b` + bytes), and replays a
        // response another language stored as JSON (`j` + text) as that text.
        let Begin::Replay(stored) = idem.begin("k", b"fp").await.unwrap() else { panic!("{url}") };
        assert_eq!(stored, b"bresult", "{url}: the stored form of a run's response");
        let Begin::Acquired(ticket) = idem.begin("from-json", b"fp").await.unwrap() else { panic!("{url}") };
        ticket.complete(b"j{\"id\":7}").await.unwrap();
        let replayed = idem.run("from-json", b"fp", None, || async { Ok::<_, polylock::Error>(vec![]) }).await;
        assert_eq!(replayed.unwrap(), br#"{"id":7}"#, "{url}");
        client.close().await;
    }
}

const CHILD_URL: &str = "POLYLOCK_KLEPPMANN_CHILD_URL";
const CHILD_KIND: &str = "POLYLOCK_KLEPPMANN_CHILD_KIND";

/// How holder 1 holds a lock that ends while it is paused: the URL it connects with and the
/// lock kind. PostgreSQL's and MySQL's default locks live as long as the session (a paused
/// process keeps its connection), so they use their lease kind (ShedLock's table); etcd and
/// ZooKeeper end a paused holder's session after its TTL, so the child's is short.
fn paused_holder(url: &str) -> (String, LockKind) {
    let scheme = url.split("://").next().unwrap_or_default();
    match scheme {
        "postgres" | "postgresql" | "mysql" | "mariadb" => (url.to_string(), LockKind::Lease),
        "etcd" | "etcds" => (format!("{url}&ttl=2s"), LockKind::Reentrant),
        "zk" => (format!("{url}&session_timeout=2s"), LockKind::Reentrant),
        _ => (url.to_string(), LockKind::Reentrant),
    }
}

/// This file's module path inside the test binary, as libtest names its tests.
fn this_module() -> &'static str {
    module_path!().split_once("::").map_or(module_path!(), |(_, rest)| rest)
}

/// Kleppmann's scenario ("How to do distributed locking"): holder 1 takes the lock with a
/// short lease and is paused (SIGSTOP) past it; holder 2 takes the lock and writes fenced;
/// holder 1 resumes and its fenced write, with its older token, is refused. Every backend is
/// tried; the failures are reported together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_holders_fenced_write_is_refused() {
    let (urls, _dir) = urls();
    let mut failures = Vec::new();
    for url in urls {
        if url.starts_with("mem://") {
            continue; // one process's memory: another process cannot share it
        }
        let Some(client) = connect(&url).await else { continue };
        let backend = client.capabilities().backend;
        match paused_holder_is_fenced(&client, &url).await {
            Ok(()) => eprintln!("{backend}: the paused holder's fenced write was refused"),
            Err(failure) => failures.push(format!("{backend}: {failure}")),
        }
        client.close().await;
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

async fn paused_holder_is_fenced(client: &Client, url: &str) -> Result<(), String> {
    let (child_url, kind) = paused_holder(url);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &format!("{}::kleppmann_first_holder", this_module()), "--ignored"])
        .args(["--nocapture", "--test-threads=1"])
        .env(CHILD_URL, &child_url)
        .env(CHILD_KIND, kind.as_str())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first_token: u64 = loop {
        let Some(line) = lines.next() else {
            let _ = child.wait();
            return Err("the child ended before it held the lock".to_string());
        };
        let line = line.unwrap();
        // The test harness may have printed "test kleppmann_first_holder ... " before it.
        if let Some((_, token)) = line.split_once("TOKEN ") {
            break token.trim().parse().unwrap();
        }
    };
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-STOP", &pid]).status().unwrap().success());
    // Once the child's lease (or session) has ended, holder 2 gets the lock and writes.
    let lock = client.lock("kleppmann").unwrap().with_kind(kind).unwrap();
    let acquired = lock.acquire_with(AcquireOptions::default().wait(Duration::from_secs(30))).await;
    let resume = || assert!(Command::new("kill").args(["-CONT", &pid]).status().unwrap().success());
    let guard = match acquired {
        Ok(guard) => guard,
        Err(err) => {
            resume();
            drop(child.stdin.take()); // the child writes and ends
            let _ = child.wait();
            return Err(format!("holder 2 never got the lock of the paused holder 1: {err}"));
        }
    };
    let second_token = guard.fencing_token();
    let value = client.value("kleppmann-file").unwrap();
    let written = value.write_fenced(second_token, b"holder 2").await;
    resume();
    writeln!(child.stdin.as_mut().unwrap(), "write").unwrap();
    let outcome = lines.find_map(|line| line.unwrap().split_once("OUTCOME ").map(|(_, o)| o.trim().to_string()));
    assert!(child.wait().unwrap().success(), "{url}");
    if second_token <= first_token {
        return Err(format!("holder 2's token {second_token} is not above holder 1's {first_token}"));
    }
    written.map_err(|err| format!("holder 2's fenced write failed: {err}"))?;
    if outcome != Some(format!("FENCED {second_token}")) {
        return Err(format!("holder 1's late write: {outcome:?}, expected FENCED {second_token}"));
    }
    let got = value.get().await.unwrap().unwrap();
    if (got.value.as_slice(), got.fencing_token) != (&b"holder 2"[..], Some(second_token)) {
        return Err(format!("the value is {got:?}"));
    }
    guard.release().await.unwrap();
    Ok(())
}

/// The first holder of `a_paused_holders_fenced_write_is_refused`, run as a child process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by a_paused_holders_fenced_write_is_refused as its child process"]
async fn kleppmann_first_holder() {
    let url = std::env::var(CHILD_URL).expect("run by a_paused_holders_fenced_write_is_refused");
    let kind: LockKind = std::env::var(CHILD_KIND).unwrap().parse().unwrap();
    let client = Client::connect(&url).await.unwrap();
    let guard = client
        .lock("kleppmann")
        .unwrap()
        .with_kind(kind)
        .unwrap()
        .acquire_with(AcquireOptions::default().lease(Duration::from_secs(1)))
        .await
        .unwrap();
    println!("TOKEN {}", guard.fencing_token());
    std::io::stdout().flush().unwrap();
    // Paused here; told to go on once resumed.
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    let outcome = match client.value("kleppmann-file").unwrap().write_fenced(guard.fencing_token(), b"holder 1").await {
        Ok(_) => "WRITTEN".to_string(),
        Err(err) => match err.details() {
            Some(ErrorDetails::Fenced { winning_token }) => format!("FENCED {winning_token}"),
            _ => format!("ERROR {err}"),
        },
    };
    println!("OUTCOME {outcome}");
    std::io::stdout().flush().unwrap();
    drop(guard);
    client.close().await;
}
