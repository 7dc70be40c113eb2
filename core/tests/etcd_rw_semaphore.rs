//! Read-write locks and semaphores on etcd against the real server (tests/services: `etcd`):
//! the layout of etcd's rwmutex recipe and of polylock's semaphore, key for key; sharing,
//! exclusion, reentrancy, downgrade, FIFO order, fencing, timeouts, permits under
//! contention, the count fixed by the first use, and session leases that end (revoked from
//! outside) freeing holds and stopping waiters with `Lost`.

use crate::common;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use etcd_client::GetOptions;
use polylock::{AcquireOptions, Client, ErrorKind};
use tokio::time::{sleep, timeout, Instant};

fn etcd_url() -> String {
    std::env::var("POLYLOCK_TEST_ETCD_URL").unwrap_or_else(|_| "etcd://127.0.0.1:12379".to_string())
}

/// A lock name no other test (or earlier run) uses.
fn unique(name: &str) -> String {
    format!("etcdrs-{name}-{}-{}", std::process::id(), fastrand::u64(..))
}

fn endpoints(url: &str) -> Vec<String> {
    let hosts = url.trim_start_matches("etcd://").split('?').next().unwrap();
    hosts.split(',').map(|h| format!("http://{h}")).collect()
}

async fn connect() -> Client {
    let url = etcd_url();
    Client::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e} (start the servers with tests/services/services.sh start)"))
}

async fn raw() -> etcd_client::Client {
    etcd_client::Client::connect(endpoints(&etcd_url()), None).await.unwrap()
}

fn wait(ms: u64) -> AcquireOptions {
    AcquireOptions::default().wait(Duration::from_millis(ms))
}

/// The keys under `<name>/`, oldest first: (key, value, create revision, lease).
async fn keys(raw: &mut etcd_client::Client, name: &str) -> Vec<(String, String, i64, i64)> {
    let options =
        GetOptions::new().with_prefix().with_sort(etcd_client::SortTarget::Create, etcd_client::SortOrder::Ascend);
    let answer = raw.get(format!("{name}/"), Some(options)).await.unwrap();
    answer
        .kvs()
        .iter()
        .map(|kv| {
            let key = kv.key_str().unwrap().to_string();
            (key, kv.value_str().unwrap().to_string(), kv.create_revision(), kv.lease())
        })
        .collect()
}

/// `<lease hex>-<number>`, the `<n>` of a read-write lock key.
fn is_hold_number(n: &str) -> bool {
    n.split_once('-')
        .is_some_and(|(lease, number)| i64::from_str_radix(lease, 16).is_ok() && number.parse::<u64>().is_ok())
}

// ---------------------------------------------------------------------------------------
// Read-write lock

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_share_a_writer_excludes_and_the_layout_is_the_recipes() {
    if common::servers_off() {
        return;
    }
    let (a, b) = (connect().await, connect().await);
    let mut raw = raw().await;
    let name = unique("share");
    let (ra, rb) = (a.rw_lock(&name).unwrap(), b.rw_lock(&name).unwrap());
    let read_a = ra.read().acquire().await.unwrap();
    let read_b = rb.read().acquire_with(wait(2000)).await.unwrap();
    assert!(read_b.fencing_token() > read_a.fencing_token(), "tokens grow");
    let found = keys(&mut raw, &name).await;
    assert_eq!(found.len(), 2, "{found:?}");
    for (key, value, _, lease) in &found {
        let n = key.strip_prefix(&format!("{name}/read/")).expect("a read key");
        assert!(is_hold_number(n), "{key}");
        assert!(value.is_empty() && *lease != 0, "value \"\" under the session lease: {found:?}");
    }

    let writer = b.rw_lock(&name).unwrap(); // another owner of client b
    let err = writer.write().acquire_with(wait(300)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "a writer waits for readers");
    assert_eq!(keys(&mut raw, &name).await.len(), 2, "the writer that gave up left no key behind");
    let last_read = read_b.fencing_token();
    read_a.release().await.unwrap();
    read_b.release().await.unwrap();

    let write = writer.write().acquire_with(wait(2000)).await.unwrap();
    assert!(write.fencing_token() > last_read, "every grant outgrows every earlier one");
    let found = keys(&mut raw, &name).await;
    assert!(found.len() == 1 && found[0].0.starts_with(&format!("{name}/write/")), "{found:?}");
    assert!(ra.write().is_locked().await.unwrap() && !ra.read().is_locked().await.unwrap());
    assert_eq!(ra.read().acquire_with(wait(200)).await.unwrap_err().kind(), ErrorKind::Timeout);
    assert_eq!(ra.write().acquire_with(wait(200)).await.unwrap_err().kind(), ErrorKind::Timeout);
    assert!(ra.read().try_acquire().await.unwrap().is_none(), "try once: refused while written");

    let again = writer.write().acquire().await.unwrap();
    assert_eq!(again.fencing_token(), write.fencing_token(), "reentrant: one key, one token");
    assert_eq!(keys(&mut raw, &name).await.len(), 1);
    again.release().await.unwrap();
    assert_eq!(keys(&mut raw, &name).await.len(), 1, "still held once");
    write.release().await.unwrap();
    let read = ra.read().acquire_with(wait(2000)).await.unwrap();
    let read_again = ra.read().acquire().await.unwrap();
    assert_eq!(ra.read().hold_count(), 2);
    read_again.release().await.unwrap();
    read.release().await.unwrap();
    assert!(keys(&mut raw, &name).await.is_empty());
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_downgrade_keeps_writers_out_and_lets_readers_in() {
    if common::servers_off() {
        return;
    }
    let (a, b) = (connect().await, connect().await);
    let mut raw = raw().await;
    let name = unique("downgrade");
    let lock = a.rw_lock(&name).unwrap();
    let write = lock.write().acquire().await.unwrap();
    let read = lock.read().acquire_with(wait(0)).await.expect("the write holder reads at once");
    assert!(read.fencing_token() > write.fencing_token());
    let found = keys(&mut raw, &name).await;
    let n = found[0].0.strip_prefix(&format!("{name}/write/")).expect("the write key first").to_string();
    assert_eq!(found[1].0, format!("{name}/read/{n}"), "the read key carries the write key's number: {found:?}");

    // A writer queued before the release must not get in while the downgraded reader reads.
    let queued_writer = {
        let lock = b.rw_lock(&name).unwrap();
        tokio::spawn(async move { lock.write().acquire_with(wait(20_000)).await })
    };
    sleep(Duration::from_millis(300)).await;
    write.release().await.unwrap();
    let found = keys(&mut raw, &name).await;
    assert!(found.iter().any(|(k, v, _, _)| *k == format!("{name}/read/{n}") && v == "downgraded"), "{found:?}");
    assert!(found.iter().any(|(k, _, _, _)| *k == format!("{name}/write/{n}")), "the write key stays: {found:?}");
    let other = b.rw_lock(&name).unwrap();
    assert_eq!(other.write().acquire_with(wait(300)).await.unwrap_err().kind(), ErrorKind::Timeout);
    assert!(!queued_writer.is_finished(), "the writer queued earlier still waits");
    // An upgrade is refused at once, never deadlocked.
    assert_eq!(lock.write().acquire_with(wait(5000)).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    read.release().await.unwrap();
    let write = queued_writer.await.unwrap().expect("the queued writer gets in after the downgraded reader");
    assert!(!keys(&mut raw, &name).await.iter().any(|(k, _, _, _)| k.ends_with(&n)), "both keys went");
    write.release().await.unwrap();
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_readers_share_with_a_downgraded_reader() {
    if common::servers_off() {
        return;
    }
    let (a, b) = (connect().await, connect().await);
    let name = unique("downgrade-share");
    let lock = a.rw_lock(&name).unwrap();
    let write = lock.write().acquire().await.unwrap();
    let read = lock.read().acquire().await.unwrap();
    let waiting_reader = {
        let lock = b.rw_lock(&name).unwrap();
        tokio::spawn(async move { lock.read().acquire_with(wait(20_000)).await })
    };
    sleep(Duration::from_millis(300)).await;
    assert!(!waiting_reader.is_finished(), "readers wait while the write side is held");
    write.release().await.unwrap();
    let shared = timeout(Duration::from_secs(10), waiting_reader).await.unwrap().unwrap().expect("shares");
    let late = b.rw_lock(&name).unwrap().read().acquire_with(wait(2000)).await.expect("a new reader shares too");
    late.release().await.unwrap();
    shared.release().await.unwrap();
    read.release().await.unwrap();
    let write = b.rw_lock(&name).unwrap().write().acquire_with(wait(2000)).await.unwrap();
    write.release().await.unwrap();
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_arrives_after_a_waiting_writer_waits_behind_it() {
    if common::servers_off() {
        return;
    }
    let (a, b, c) = (connect().await, connect().await, connect().await);
    let name = unique("fifo");
    let first_reader = a.rw_lock(&name).unwrap().read().acquire().await.unwrap();
    let writer = {
        let lock = b.rw_lock(&name).unwrap();
        tokio::spawn(async move { lock.write().acquire_with(wait(20_000)).await })
    };
    sleep(Duration::from_millis(500)).await;
    let late = c.rw_lock(&name).unwrap();
    assert_eq!(
        late.read().acquire_with(wait(500)).await.unwrap_err().kind(),
        ErrorKind::Timeout,
        "a new reader queues behind the waiting writer, though only readers hold"
    );
    let late_reader = {
        let late = late.clone();
        tokio::spawn(async move { late.read().acquire_with(wait(20_000)).await })
    };
    sleep(Duration::from_millis(300)).await;
    let first_token = first_reader.fencing_token();
    first_reader.release().await.unwrap();
    let write = writer.await.unwrap().expect("the writer is served first");
    assert!(write.fencing_token() > first_token);
    sleep(Duration::from_millis(300)).await;
    assert!(!late_reader.is_finished(), "the late reader still waits for the writer");
    let write_token = write.fencing_token();
    write.release().await.unwrap();
    let read = late_reader.await.unwrap().expect("then the late reader");
    assert!(read.fencing_token() > write_token);
    read.release().await.unwrap();
    for client in [a, b, c] {
        client.close().await;
    }
}

// ---------------------------------------------------------------------------------------
// Semaphore

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_semaphore_layout_and_the_count_fixed_by_the_first_use() {
    if common::servers_off() {
        return;
    }
    let (a, b) = (connect().await, connect().await);
    let mut raw = raw().await;
    let name = unique("sem-layout");
    let semaphore = a.semaphore(&name, 2).unwrap();
    let one = semaphore.acquire().await.unwrap();
    let two = b.semaphore(&name, 2).unwrap().acquire_with(wait(2000)).await.unwrap();
    assert!(two.fencing_token() > one.fencing_token());
    let found = keys(&mut raw, &name).await;
    assert_eq!(found.len(), 3, "{found:?}");
    assert_eq!((found[0].0.as_str(), found[0].1.as_str(), found[0].3), (format!("{name}/permits").as_str(), "2", 0));
    for (key, value, _, lease) in &found[1..] {
        let hex = key.strip_prefix(&format!("{name}/permit-")).unwrap();
        assert_eq!(
            i64::from_str_radix(hex, 16).ok(),
            Some(*lease),
            "`<name>/permit-<lease hex>` under that lease: {key}"
        );
        assert!(value.is_empty());
    }
    assert!(semaphore.try_acquire().await.unwrap().is_none(), "both permits are out");
    assert_eq!(semaphore.acquire_with(wait(300)).await.unwrap_err().kind(), ErrorKind::Timeout);
    assert_eq!(keys(&mut raw, &name).await.len(), 3, "the waiter that gave up left no key");

    let err = b.semaphore(&name, 3).unwrap().try_acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.message().contains("2 permits"), "{err}");

    let waiter = {
        let semaphore = semaphore.clone();
        tokio::spawn(async move { semaphore.acquire_with(wait(20_000)).await })
    };
    sleep(Duration::from_millis(300)).await;
    let last = two.fencing_token();
    one.release().await.unwrap();
    let three = waiter.await.unwrap().expect("a released permit wakes the waiter");
    assert!(three.fencing_token() > last, "a waiter's token is newer than every earlier grant");
    two.release().await.unwrap();
    three.release().await.unwrap();
    assert_eq!(keys(&mut raw, &name).await.len(), 1, "only the count is left");
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_never_exceed_n_under_contention() {
    if common::servers_off() {
        return;
    }
    const PERMITS: u32 = 3;
    let name = unique("sem-contention");
    let inside = Arc::new(AtomicU32::new(0));
    let most = Arc::new(AtomicU32::new(0));
    let mut clients = Vec::new();
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let client = connect().await;
        for _ in 0..3 {
            let semaphore = client.semaphore(&name, PERMITS).unwrap();
            let (inside, most) = (inside.clone(), most.clone());
            tasks.push(tokio::spawn(async move {
                let mut last_token = 0;
                for _ in 0..6 {
                    let permit = semaphore.acquire_with(wait(60_000)).await.unwrap();
                    assert!(permit.fencing_token() > last_token);
                    last_token = permit.fencing_token();
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    sleep(Duration::from_millis(15)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    permit.release().await.unwrap();
                }
            }));
        }
        clients.push(client);
    }
    for task in tasks {
        task.await.unwrap();
    }
    let most = most.load(Ordering::SeqCst);
    eprintln!("at most {most} of {PERMITS} permits held at once");
    assert!(most <= PERMITS, "{most} holders at once");
    assert!(most >= 2, "the permits were shared ({most})");
    for client in clients {
        client.close().await;
    }
}

// ---------------------------------------------------------------------------------------
// Session leases that end

/// Revoke the lease of the key under `prefix` that `pick` chooses, as a crashed or
/// partitioned client's lease would run out.
async fn revoke_lease_of(raw: &mut etcd_client::Client, name: &str, pick: impl Fn(&str) -> bool) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some((_, _, _, lease)) = keys(raw, name).await.into_iter().find(|(key, _, _, _)| pick(key)) {
            raw.lease_revoke(lease).await.unwrap();
            return lease;
        }
        assert!(Instant::now() < deadline, "no key to revoke under {name}");
        sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_ends_frees_its_holds_and_its_waiters_stop_with_lost() {
    if common::servers_off() {
        return;
    }
    let (doomed, other) = (connect().await, connect().await);
    let mut raw = raw().await;
    let (rw_name, sem_name) = (unique("end-rw"), unique("end-sem"));

    // The doomed client holds a read lock; the other client's writer waits behind it.
    let read = doomed.rw_lock(&rw_name).unwrap().read().acquire().await.unwrap();
    let writer = {
        let lock = other.rw_lock(&rw_name).unwrap();
        tokio::spawn(async move { lock.write().acquire_with(wait(30_000)).await })
    };
    sleep(Duration::from_millis(300)).await;
    let lease = revoke_lease_of(&mut raw, &rw_name, |key| key.contains("/read/")).await;
    let write = writer.await.unwrap().expect("the writer gets in once the reader's lease is gone");
    timeout(Duration::from_secs(20), read.lost()).await.expect("the reader learns its session ended");

    // Now the doomed client waits behind the other's write, and its lease ends while it waits.
    let doomed_reader = {
        // Another owner: the first reader's lost hold is still on the books of its owner.
        let lock = doomed.rw_lock(&rw_name).unwrap().with_local_id(u64::MAX - 7);
        tokio::spawn(async move { lock.read().acquire_with(wait(30_000)).await })
    };
    sleep(Duration::from_millis(300)).await;
    revoke_lease_of(&mut raw, &rw_name, |key| key.contains("/read/")).await;
    let err = timeout(Duration::from_secs(20), doomed_reader).await.expect("the waiter stops").unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Lost, "a waiter whose session ended stops with Lost: {err}");
    write.release().await.unwrap();

    // Semaphores: a permit comes back with its holder's lease; a waiter whose lease ends stops.
    let permit = doomed.semaphore(&sem_name, 1).unwrap().acquire().await.unwrap();
    let waiting = {
        let semaphore = other.semaphore(&sem_name, 1).unwrap();
        tokio::spawn(async move { semaphore.acquire_with(wait(30_000)).await })
    };
    sleep(Duration::from_millis(300)).await;
    let holder_lease =
        i64::from_str_radix(keys(&mut raw, &sem_name).await[1].0.rsplit("/permit-").next().unwrap(), 16).unwrap();
    raw.lease_revoke(holder_lease).await.unwrap();
    let theirs = waiting.await.unwrap().expect("the permit comes back with the lease");
    timeout(Duration::from_secs(20), permit.lost()).await.expect("the holder learns its session ended");
    let doomed_waiter = {
        let semaphore = doomed.semaphore(&sem_name, 1).unwrap();
        tokio::spawn(async move { semaphore.acquire_with(wait(30_000)).await })
    };
    sleep(Duration::from_millis(500)).await;
    let found = keys(&mut raw, &sem_name).await;
    assert_eq!(found.len(), 3, "the count, the holder's key and the waiter's: {found:?}");
    let (_, _, _, waiter_lease) = found.last().unwrap(); // the newest key is the waiter's
    assert_ne!(*waiter_lease, lease);
    raw.lease_revoke(*waiter_lease).await.unwrap();
    let err = timeout(Duration::from_secs(20), doomed_waiter).await.expect("the waiter stops").unwrap();
    let err = err.map(|p| p.fencing_token()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Lost, "a waiter whose session ended stops with Lost: {err}");
    theirs.release().await.unwrap();
    doomed.close().await;
    other.close().await;
}

// ---------------------------------------------------------------------------------------
// Fencing: one token per grant, even for holds let in together

/// Every key of `name` (the recipe's and the fence key) with its create and mod revisions.
async fn revisions(raw: &mut etcd_client::Client, prefix: &str) -> Vec<(String, i64, i64)> {
    let answer = raw.get(prefix, Some(GetOptions::new().with_prefix())).await.unwrap();
    answer.kvs().iter().map(|kv| (kv.key_str().unwrap().to_string(), kv.create_revision(), kv.mod_revision())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_let_in_by_one_release_get_distinct_increasing_tokens() {
    if common::servers_off() {
        return;
    }
    let mut raw = raw().await;
    let name = unique("fence-readers");
    let writer_client = connect().await;
    let write = writer_client.rw_lock(&name).unwrap().write().acquire().await.unwrap();
    // Readers of clients of their own, so each looks for itself when the writer goes.
    let mut readers = Vec::new();
    let mut waiting = Vec::new();
    for _ in 0..8 {
        let client = connect().await;
        let lock = client.rw_lock(&name).unwrap();
        waiting.push(tokio::spawn(async move { lock.read().acquire_with(wait(20_000)).await }));
        readers.push(client);
    }
    // Every reader's key is written before the release.
    let deadline = Instant::now() + Duration::from_secs(10);
    while keys(&mut raw, &name).await.len() < 9 {
        assert!(Instant::now() < deadline, "the readers queued: {:?}", keys(&mut raw, &name).await);
        sleep(Duration::from_millis(20)).await;
    }
    let write_token = write.fencing_token();
    write.release().await.unwrap();
    let mut guards = Vec::new();
    for task in waiting {
        guards.push(task.await.unwrap().expect("one release lets every reader in"));
    }
    let mut tokens: Vec<u64> = guards.iter().map(|g| g.fencing_token()).collect();
    assert!(tokens.iter().all(|&t| t > write_token), "every reader's token outgrows the writer's: {tokens:?}");
    tokens.sort_unstable();
    tokens.dedup();
    assert_eq!(tokens.len(), 8, "8 readers, 8 distinct tokens: {tokens:?}");

    // The recipe's keys are as Go writes them (never modified); the fence key sits outside.
    for (key, created, modified) in revisions(&mut raw, &format!("{name}/")).await {
        assert_eq!(created, modified, "{key} was modified");
    }
    let fence = revisions(&mut raw, &format!("{name}:rw-fence")).await;
    assert_eq!(fence.len(), 1, "{fence:?}");
    assert_eq!(fence[0].2 as u64, *tokens.last().unwrap(), "the newest token is the fence key's last write");

    // A writer after them outgrows them all.
    let last_read = *tokens.last().unwrap();
    for guard in guards {
        guard.release().await.unwrap();
    }
    let write = writer_client.rw_lock(&name).unwrap().write().acquire_with(wait(5000)).await.unwrap();
    assert!(write.fencing_token() > last_read);
    write.release().await.unwrap();
    for client in readers {
        client.close().await;
    }
    writer_client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_freed_together_get_distinct_increasing_tokens() {
    if common::servers_off() {
        return;
    }
    let mut raw = raw().await;
    let name = unique("fence-permits");
    let holder = connect().await;
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(holder.semaphore(&name, 4).unwrap().acquire().await.unwrap());
    }
    let mut clients = Vec::new();
    let mut waiting = Vec::new();
    for _ in 0..4 {
        let client = connect().await;
        let semaphore = client.semaphore(&name, 4).unwrap();
        waiting.push(tokio::spawn(async move { semaphore.acquire_with(wait(20_000)).await }));
        clients.push(client);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while keys(&mut raw, &name).await.len() < 9 {
        assert!(Instant::now() < deadline, "the waiters queued: {:?}", keys(&mut raw, &name).await);
        sleep(Duration::from_millis(20)).await;
    }
    let newest_held = held.iter().map(|p| p.fencing_token()).max().unwrap();
    let releases: Vec<_> = held.into_iter().map(|permit| tokio::spawn(permit.release())).collect();
    for release in releases {
        release.await.unwrap().unwrap();
    }
    let mut tokens = Vec::new();
    let mut permits = Vec::new();
    for task in waiting {
        let permit = task.await.unwrap().expect("the freed permits go to the waiters");
        tokens.push(permit.fencing_token());
        permits.push(permit);
    }
    assert!(tokens.iter().all(|&t| t > newest_held), "{tokens:?} after {newest_held}");
    tokens.sort_unstable();
    tokens.dedup();
    assert_eq!(tokens.len(), 4, "4 permits, 4 distinct tokens: {tokens:?}");
    let fence = revisions(&mut raw, &format!("{name}:semaphore-fence")).await;
    assert_eq!(fence.len(), 1, "{fence:?}");
    for permit in permits {
        permit.release().await.unwrap();
    }
    for client in clients {
        client.close().await;
    }
    holder.close().await;
}
