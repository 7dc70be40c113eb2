//! Read-write locks and semaphores on PostgreSQL and MySQL/MariaDB (issue #17), against the
//! real servers of tests/services (`services.sh start postgres mariadb`): sharing and
//! exclusion, the write side and the mutex of one name as one lock, reentrancy, downgrade,
//! fencing, timeouts and cancellation, a waiting writer served before readers that come after
//! it (order, not timing), permits under contention, killed sessions, and the fixed count.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common;
use common::{mariadb_url, postgres_url};
use polylock::{sql_names, AcquireOptions, Client, ErrorKind, LostReason};
use tokio::time::timeout;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Db {
    Postgres,
    MariaDb,
}

impl Db {
    fn url(self) -> String {
        match self {
            Db::Postgres => postgres_url(),
            Db::MariaDb => mariadb_url(),
        }
    }
}

fn unique(name: &str) -> String {
    format!("sqlrw-{}-{}-{name}", std::process::id(), fastrand::u32(..))
}

fn wait(ms: u64) -> AcquireOptions {
    AcquireOptions::default().wait(Duration::from_millis(ms))
}

/// Wait (bounded) until `condition` holds.
async fn eventually<F: std::future::Future<Output = bool>>(what: &str, mut condition: impl FnMut() -> F) {
    for _ in 0..400 {
        if condition().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("timed out waiting until {what}");
}

/// PostgreSQL: how many requests for advisory key `key` wait (not granted).
async fn pg_waiting(admin: &sqlx::PgPool, key: i64) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1
         AND ((classid::bigint << 32) | objid::bigint) = ($1::bigint & x'ffffffffffffffff'::bigint)",
    )
    .bind(key)
    .fetch_one(admin)
    .await
    .unwrap()
}

/// MariaDB (no PROCESS privilege needed: the test user sees its own threads): the ids of the
/// connections running a row lock statement on `polylock_rw` with `clause` (FOR UPDATE /
/// SHARE), that is waiting for it, since a granted one returns at once.
async fn my_waiting(admin: &sqlx::MySqlPool, clause: &str) -> Vec<u64> {
    sqlx::query_scalar::<_, i64>(
        "SELECT ID FROM information_schema.PROCESSLIST
         WHERE INFO LIKE '%FROM polylock_rw%' AND INFO LIKE CONCAT('%', ?, '%') AND ID <> CONNECTION_ID()",
    )
    .bind(clause)
    .fetch_all(admin)
    .await
    .unwrap()
    .into_iter()
    .map(|id| id as u64)
    .collect()
}

/// MariaDB: the connection holding `name`'s GET_LOCK (a writer, once past it).
async fn my_lock_holder(admin: &sqlx::MySqlPool, name: &str) -> Option<u64> {
    let holder: Option<i64> = sqlx::query_scalar("SELECT IS_USED_LOCK(?)")
        .bind(sql_names::mysql_lock_name(name))
        .fetch_one(admin)
        .await
        .unwrap();
    holder.map(|id| id as u64)
}

macro_rules! on_both {
    ($($test:ident),* $(,)?) => {
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    if crate::common::servers_off() {
                        return;
                    }
                    super::$test(super::Db::Postgres).await
                }
            )*
        }
        mod mariadb {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    if crate::common::servers_off() {
                        return;
                    }
                    super::$test(super::Db::MariaDb).await
                }
            )*
        }
    };
}

on_both!(
    readers_share_a_writer_excludes_and_tokens_grow,
    the_write_side_and_the_mutex_of_a_name_are_one_lock,
    each_side_is_reentrant_per_owner,
    the_writer_may_downgrade,
    an_abandoned_acquisition_leaves_nothing_held,
    a_lapsed_read_lease_lets_a_writer_in,
    permits_never_exceed_n_under_contention,
    a_killed_holders_permit_comes_back_and_its_guard_is_lost,
    another_count_is_invalid_argument,
    a_killed_writers_guard_is_lost,
);

async fn readers_share_a_writer_excludes_and_tokens_grow(db: Db) {
    let url = db.url();
    let (a, b) = (Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap());
    let caps = a.capabilities();
    assert!(caps.rw_locks && caps.semaphores, "{db:?}: {caps:?}");
    let name = unique("share");
    let (rw_a, rw_b) = (a.rw_lock(&name).unwrap(), b.rw_lock(&name).unwrap());
    let r1 = rw_a.read().try_acquire().await.unwrap().expect("a free lock");
    let r2 = rw_b.read().try_acquire().await.unwrap().expect("readers share");
    assert!(r2.fencing_token() > r1.fencing_token(), "{db:?}");
    // A writer (another client) waits for both readers: try-once and a deadline both end in
    // Timeout.
    let c = Client::connect(&url).await.unwrap();
    let rw_c = c.rw_lock(&name).unwrap();
    assert!(rw_c.write().try_acquire().await.unwrap().is_none(), "{db:?}");
    let err = rw_c.write().acquire_with(wait(200)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{db:?}: {err}");
    r1.release().await.unwrap();
    assert!(rw_c.write().try_acquire().await.unwrap().is_none(), "{db:?}: one reader is left");
    let r2_token = r2.fencing_token();
    r2.release().await.unwrap();
    let w = rw_c.write().acquire_with(wait(2000)).await.unwrap();
    assert!(w.fencing_token() > r2_token, "{db:?}");
    // A writer excludes readers and writers.
    assert!(rw_a.read().try_acquire().await.unwrap().is_none(), "{db:?}");
    assert_eq!(rw_a.read().acquire_with(wait(150)).await.unwrap_err().kind(), ErrorKind::Timeout);
    assert!(rw_a.write().try_acquire().await.unwrap().is_none(), "{db:?}");
    let w_token = w.fencing_token();
    w.release().await.unwrap();
    let r3 = rw_a.read().acquire_with(wait(2000)).await.unwrap();
    assert!(r3.fencing_token() > w_token, "{db:?}");
    r3.release().await.unwrap();
    for client in [a, b, c] {
        client.close().await;
    }
}

async fn the_write_side_and_the_mutex_of_a_name_are_one_lock(db: Db) {
    let url = db.url();
    let (a, b) = (Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap());
    let name = unique("mutex");
    let write = a.rw_lock(&name).unwrap().write().acquire().await.unwrap();
    let mutex = b.lock(&name).unwrap();
    assert!(mutex.try_acquire().await.unwrap().is_none(), "{db:?}: the mutex got in beside a writer");
    let write_token = write.fencing_token();
    write.release().await.unwrap();
    let held = mutex.acquire_with(wait(2000)).await.unwrap();
    assert!(held.fencing_token() > write_token, "{db:?}: one counter per name");
    let rw = a.rw_lock(&name).unwrap();
    assert!(rw.write().try_acquire().await.unwrap().is_none(), "{db:?}: a writer got in beside the mutex");
    if db == Db::Postgres {
        // The read side is the same advisory lock, shared: it waits for the mutex too.
        assert!(rw.read().try_acquire().await.unwrap().is_none(), "{db:?}");
    }
    held.release().await.unwrap();
    rw.write().acquire_with(wait(2000)).await.unwrap().release().await.unwrap();
    a.close().await;
    b.close().await;
}

async fn each_side_is_reentrant_per_owner(db: Db) {
    let url = db.url();
    let (a, b) = (Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap());
    let name = unique("reentrant");
    let (rw_a, rw_b) = (a.rw_lock(&name).unwrap(), b.rw_lock(&name).unwrap());
    let first = rw_a.read().acquire().await.unwrap();
    let second = rw_a.read().acquire_with(wait(0)).await.unwrap();
    assert_eq!(rw_a.read().hold_count(), 2);
    first.release().await.unwrap();
    assert!(rw_b.write().try_acquire().await.unwrap().is_none(), "{db:?}: one read hold is left");
    second.release().await.unwrap();
    let w1 = rw_b.write().acquire_with(wait(2000)).await.unwrap();
    let w2 = rw_b.write().acquire_with(wait(0)).await.unwrap();
    assert_eq!(rw_b.write().hold_count(), 2);
    w1.release().await.unwrap();
    assert!(rw_a.read().try_acquire().await.unwrap().is_none(), "{db:?}: one write hold is left");
    // Another owner of the same client is someone else.
    let other_owner = b.rw_lock(&name).unwrap().with_local_id(u64::MAX - 7);
    assert!(other_owner.write().try_acquire().await.unwrap().is_none(), "{db:?}");
    w2.release().await.unwrap();
    rw_a.read().acquire_with(wait(2000)).await.unwrap().release().await.unwrap();
    a.close().await;
    b.close().await;
}

async fn the_writer_may_downgrade(db: Db) {
    let url = db.url();
    let (a, b) = (Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap());
    let name = unique("downgrade");
    let (rw_a, rw_b) = (a.rw_lock(&name).unwrap(), b.rw_lock(&name).unwrap());
    let write = rw_a.write().acquire().await.unwrap();
    let read = rw_a.read().acquire_with(wait(1000)).await.unwrap();
    assert!(read.fencing_token() > write.fencing_token(), "{db:?}");
    assert!(rw_b.read().try_acquire().await.unwrap().is_none(), "{db:?}: the write side still excludes readers");
    write.release().await.unwrap();
    // Downgraded: other readers get in, writers and the mutex stay out.
    let shared = rw_b.read().acquire_with(wait(2000)).await.unwrap();
    let other_writer = b.rw_lock(&name).unwrap().with_local_id(u64::MAX - 11);
    assert_eq!(other_writer.write().acquire_with(wait(100)).await.unwrap_err().kind(), ErrorKind::Timeout, "{db:?}");
    assert!(b.lock(&name).unwrap().try_acquire().await.unwrap().is_none(), "{db:?}");
    // Upgrading is refused at once.
    assert_eq!(rw_a.write().acquire_with(wait(5000)).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert!(!read.is_lost(), "{db:?}");
    read.release().await.unwrap();
    assert!(other_writer.write().try_acquire().await.unwrap().is_none(), "{db:?}: b's own reader is left");
    shared.release().await.unwrap();
    rw_b.write().acquire_with(wait(2000)).await.unwrap().release().await.unwrap();
    // The other order: the read side released first leaves the write side as it was.
    let write = rw_a.write().acquire().await.unwrap();
    let read = rw_a.read().acquire().await.unwrap();
    read.release().await.unwrap();
    assert!(rw_b.read().try_acquire().await.unwrap().is_none(), "{db:?}");
    write.release().await.unwrap();
    rw_b.read().acquire_with(wait(2000)).await.unwrap().release().await.unwrap();
    a.close().await;
    b.close().await;
}

/// A writer that waits behind a reader is served before a reader that came after it: the
/// second reader queues behind the waiting writer (order observed, not timed).
async fn readers_queue_behind_a_waiting_writer(db: Db) {
    let url = db.url();
    let name = unique("queue");
    let clients = [
        Client::connect(&url).await.unwrap(),
        Client::connect(&url).await.unwrap(),
        Client::connect(&url).await.unwrap(),
    ];
    let first_reader = clients[0].rw_lock(&name).unwrap().read().acquire().await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let writer = {
        let (rw, order) = (clients[1].rw_lock(&name).unwrap(), order.clone());
        tokio::spawn(async move {
            let guard = rw.write().acquire_with(wait(20_000)).await.unwrap();
            order.lock().unwrap().push("writer");
            tokio::time::sleep(Duration::from_millis(100)).await;
            order.lock().unwrap().push("writer out");
            guard.release().await.unwrap();
        })
    };
    let (pg, my) = match db {
        Db::Postgres => (Some(sqlx::PgPool::connect(&url).await.unwrap()), None),
        Db::MariaDb => (None, Some(sqlx::MySqlPool::connect(&url).await.unwrap())),
    };
    let key = sql_names::postgres_advisory_key(&name);
    // Waiting in the server: on PostgreSQL a request not granted; on MariaDB the writer's
    // connection (the holder of the name's GET_LOCK) runs its FOR UPDATE.
    eventually("the writer waits in the server", || async {
        match (&pg, &my) {
            (Some(pg), _) => pg_waiting(pg, key).await == 1,
            (_, Some(my)) => match my_lock_holder(my, &name).await {
                Some(writer) => my_waiting(my, "FOR UPDATE").await.contains(&writer),
                None => false,
            },
            _ => unreachable!(),
        }
    })
    .await;
    let readers_waiting_before = match &my {
        Some(my) => my_waiting(my, "SHARE").await,
        None => Vec::new(),
    };
    let reader = {
        let (rw, order) = (clients[2].rw_lock(&name).unwrap(), order.clone());
        tokio::spawn(async move {
            let guard = rw.read().acquire_with(wait(20_000)).await.unwrap();
            order.lock().unwrap().push("second reader");
            guard.release().await.unwrap();
        })
    };
    // The second reader is either granted (it overtook the writer) or waiting in the server.
    eventually("the second reader is granted or waits", || async {
        if !order.lock().unwrap().is_empty() {
            return true;
        }
        match (&pg, &my) {
            (Some(pg), _) => pg_waiting(pg, key).await == 2,
            (_, Some(my)) => my_waiting(my, "SHARE").await.iter().any(|id| !readers_waiting_before.contains(id)),
            _ => unreachable!(),
        }
    })
    .await;
    first_reader.release().await.unwrap();
    writer.await.unwrap();
    reader.await.unwrap();
    let order = order.lock().unwrap().clone();
    assert_eq!(
        order,
        ["writer", "writer out", "second reader"],
        "{db:?}: readers do not queue behind a waiting writer"
    );
    for client in clients {
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_readers_queue_behind_a_waiting_writer() {
    if common::servers_off() {
        return;
    }
    readers_queue_behind_a_waiting_writer(Db::Postgres).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_readers_queue_behind_a_waiting_writer() {
    if common::servers_off() {
        return;
    }
    readers_queue_behind_a_waiting_writer(Db::MariaDb).await
}

/// Dropping an acquisition that waits (a caller gone away, a timeout around it) or letting
/// its deadline pass leaves nothing held: for both sides and for permits.
async fn an_abandoned_acquisition_leaves_nothing_held(db: Db) {
    let url = db.url();
    let (a, b, c) = (
        Client::connect(&url).await.unwrap(),
        Client::connect(&url).await.unwrap(),
        Client::connect(&url).await.unwrap(),
    );
    let name = unique("abandoned");
    let read = a.rw_lock(&name).unwrap().read().acquire().await.unwrap();
    let rw_b = b.rw_lock(&name).unwrap();
    assert!(timeout(Duration::from_millis(200), rw_b.write().acquire()).await.is_err(), "{db:?}");
    assert_eq!(rw_b.write().acquire_with(wait(150)).await.unwrap_err().kind(), ErrorKind::Timeout);
    assert_eq!(rw_b.write().hold_count(), 0);
    read.release().await.unwrap();
    let write = a.rw_lock(&name).unwrap().write().acquire().await.unwrap();
    assert!(timeout(Duration::from_millis(200), rw_b.read().acquire()).await.is_err(), "{db:?}");
    write.release().await.unwrap();
    // Nobody was left holding or queued: another client takes the write side.
    c.rw_lock(&name).unwrap().write().acquire_with(wait(3000)).await.unwrap().release().await.unwrap();

    let sem_name = unique("abandoned-sem");
    let permit = a.semaphore(&sem_name, 1).unwrap().acquire().await.unwrap();
    let sem_b = b.semaphore(&sem_name, 1).unwrap();
    assert!(timeout(Duration::from_millis(200), sem_b.acquire()).await.is_err(), "{db:?}");
    assert_eq!(sem_b.acquire_with(wait(150)).await.unwrap_err().kind(), ErrorKind::Timeout);
    assert!(sem_b.try_acquire().await.unwrap().is_none());
    permit.release().await.unwrap();
    c.semaphore(&sem_name, 1).unwrap().acquire_with(wait(3000)).await.unwrap().release().await.unwrap();
    for client in [a, b, c] {
        client.close().await;
    }
}

async fn a_lapsed_read_lease_lets_a_writer_in(db: Db) {
    let url = db.url();
    let (a, b) = (Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap());
    let name = unique("lease");
    let read = a
        .rw_lock(&name)
        .unwrap()
        .read()
        .acquire_with(AcquireOptions::default().lease(Duration::from_millis(300)))
        .await
        .unwrap();
    let write = b.rw_lock(&name).unwrap().write().acquire_with(wait(5000)).await.unwrap();
    assert!(read.is_lost(), "{db:?}");
    assert!(write.fencing_token() > read.fencing_token());
    assert_eq!(read.release().await.unwrap_err().kind(), ErrorKind::Lost);
    write.release().await.unwrap();
    a.close().await;
    b.close().await;
}

async fn permits_never_exceed_n_under_contention(db: Db) {
    const PERMITS: u32 = 3;
    let url = db.url();
    let name = unique("contended");
    let inside = Arc::new(AtomicU32::new(0));
    let most = Arc::new(AtomicU32::new(0));
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let client = Client::connect(&url).await.unwrap();
        let (inside, most, tokens, name) = (inside.clone(), most.clone(), tokens.clone(), name.clone());
        tasks.push(tokio::spawn(async move {
            let sem = client.semaphore(&name, PERMITS).unwrap();
            for _ in 0..6 {
                let permit = sem.acquire_with(wait(30_000)).await.unwrap();
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokens.lock().unwrap().push(permit.fencing_token());
                tokio::time::sleep(Duration::from_millis(20)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                permit.release().await.unwrap();
            }
            client.close().await;
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let most = most.load(Ordering::SeqCst);
    assert!((1..=PERMITS).contains(&most), "{db:?}: {most} holders at once");
    let tokens = tokens.lock().unwrap().clone();
    assert_eq!(tokens.iter().collect::<HashSet<_>>().len(), 36, "{db:?}: every grant has a token of its own");
}

/// Ends, from another connection, the database session holding `lock_key`'s session lock
/// (the advisory key on PostgreSQL, the GET_LOCK name on MariaDB).
async fn kill_session_holding(db: Db, lock_key: &str) {
    match db {
        Db::Postgres => {
            let admin = sqlx::PgPool::connect(&postgres_url()).await.unwrap();
            let ended: i64 = sqlx::query_scalar(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' AND granted
                 AND objsubid = 1
                 AND ((classid::bigint << 32) | objid::bigint) = ($1::bigint & x'ffffffffffffffff'::bigint)",
            )
            .bind(sql_names::postgres_advisory_key(lock_key))
            .fetch_one(&admin)
            .await
            .unwrap();
            assert!(ended >= 1, "no session held {lock_key}");
        }
        Db::MariaDb => {
            let admin = sqlx::MySqlPool::connect(&mariadb_url()).await.unwrap();
            let holder: Option<i64> = sqlx::query_scalar("SELECT IS_USED_LOCK(?)")
                .bind(sql_names::mysql_lock_name(lock_key))
                .fetch_one(&admin)
                .await
                .unwrap();
            let holder = holder.unwrap_or_else(|| panic!("no session held {lock_key}"));
            sqlx::query(&format!("KILL {holder}")).execute(&admin).await.unwrap();
        }
    }
}

async fn a_killed_holders_permit_comes_back_and_its_guard_is_lost(db: Db) {
    let url = db.url();
    let (a, b) = (Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap());
    let name = unique("killed");
    let permit = a.semaphore(&name, 1).unwrap().acquire().await.unwrap();
    let sem_b = b.semaphore(&name, 1).unwrap();
    assert!(sem_b.try_acquire().await.unwrap().is_none(), "{db:?}");
    kill_session_holding(db, &format!("{name}#0")).await;
    let taken = sem_b.acquire_with(wait(5000)).await.unwrap();
    assert!(taken.fencing_token() > permit.fencing_token(), "{db:?}");
    let reason = timeout(Duration::from_secs(5), permit.lost()).await.expect("the guard learns of its loss");
    assert!(matches!(reason, LostReason::SessionEnded(_)), "{db:?}: {reason:?}");
    assert_eq!(permit.release().await.unwrap_err().kind(), ErrorKind::Lost);
    taken.release().await.unwrap();
    a.close().await;
    b.close().await;
}

async fn a_killed_writers_guard_is_lost(db: Db) {
    let url = db.url();
    let (a, b) = (Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap());
    let name = unique("killed-rw");
    let write = a.rw_lock(&name).unwrap().write().acquire().await.unwrap();
    // On PostgreSQL the writer's advisory lock, on MariaDB its GET_LOCK: the same session.
    kill_session_holding(db, &name).await;
    let reason = timeout(Duration::from_secs(5), write.lost()).await.expect("the guard learns of its loss");
    assert!(matches!(reason, LostReason::SessionEnded(_)), "{db:?}: {reason:?}");
    let read = b.rw_lock(&name).unwrap().read().acquire_with(wait(5000)).await.unwrap();
    assert!(read.fencing_token() > write.fencing_token());
    read.release().await.unwrap();
    a.close().await;
    b.close().await;
}

async fn another_count_is_invalid_argument(db: Db) {
    let url = db.url();
    let (a, b) = (Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap());
    let name = unique("count");
    let permit = a.semaphore(&name, 2).unwrap().acquire().await.unwrap();
    let err = b.semaphore(&name, 3).unwrap().acquire_with(wait(0)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{db:?}: {err}");
    assert!(err.message().contains("has 2 permits"), "{err}");
    // The fixed count holds after every permit is back, too.
    permit.release().await.unwrap();
    let err = b.semaphore(&name, 1).unwrap().acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{db:?}: {err}");
    let (p1, p2) = (
        b.semaphore(&name, 2).unwrap().acquire().await.unwrap(),
        b.semaphore(&name, 2).unwrap().acquire().await.unwrap(),
    );
    assert!(b.semaphore(&name, 2).unwrap().try_acquire().await.unwrap().is_none(), "{db:?}: two permits only");
    p1.release().await.unwrap();
    p2.release().await.unwrap();
    a.close().await;
    b.close().await;
}
