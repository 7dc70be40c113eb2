//! Local handoffs on the SQL backends: a release that another owner of the same client waits
//! for hands the lock straight over (the session connection or the ShedLock row moves to the
//! new owner) with the fencing token the old hold set aside. Needs
//! `tests/services/services.sh start postgres mariadb`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common;
use common::{mariadb_url, postgres_url};
use polylock::{sql_names, AcquireOptions, Client, ErrorKind, LockKind, LostReason};
use tokio::time::{sleep, timeout, Instant};

fn unique(name: &str) -> String {
    format!("sqlhandoff-{}-{name}", std::process::id())
}

fn with_option(url: &str, option: &str) -> String {
    format!("{url}{}{option}", if url.contains('?') { '&' } else { '?' })
}

const KINDS: [LockKind; 2] = [LockKind::Reentrant, LockKind::Lease];

/// Eight owners of one client take turns on one name for a second. Every hold is recorded
/// inside the critical section, so the ledger is in the order the lock was held: tokens must
/// grow strictly along it, holds must never overlap, and some holds must have come by local
/// handoff (a handoff issues exactly the previous token + 1; a store acquisition skips the
/// token its predecessor set aside).
async fn owners_of_one_client_take_turns(url: &str) {
    for kind in KINDS {
        let name = unique(&format!("turns-{kind}-{}", url.len()));
        let client = Client::connect(url).await.unwrap();
        let ledger = Arc::new(Mutex::new(Vec::<u64>::new()));
        let inside = Arc::new(AtomicUsize::new(0));
        let overlapped = Arc::new(AtomicBool::new(false));
        let until = Instant::now() + Duration::from_secs(1);
        let mut owners = Vec::new();
        for _ in 0..8 {
            let lock = client.lock(&name).unwrap().with_kind(kind).unwrap();
            let (ledger, inside, overlapped) = (ledger.clone(), inside.clone(), overlapped.clone());
            owners.push(tokio::spawn(async move {
                while Instant::now() < until {
                    let guard = lock.acquire_with(AcquireOptions::default().wait(Duration::from_secs(10))).await?;
                    if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                        overlapped.store(true, Ordering::SeqCst);
                    }
                    ledger.lock().unwrap().push(guard.fencing_token());
                    sleep(Duration::from_millis(1)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    guard.release().await?;
                }
                polylock::Result::<()>::Ok(())
            }));
        }
        for owner in owners {
            timeout(Duration::from_secs(20), owner)
                .await
                .unwrap_or_else(|_| panic!("{kind}: an owner stalled"))
                .unwrap()
                .unwrap_or_else(|e| panic!("{kind}: {e}"));
        }
        assert!(!overlapped.load(Ordering::SeqCst), "{kind}: two owners held the lock at once");
        let tokens = ledger.lock().unwrap().clone();
        assert!(tokens.len() > 16, "{kind}: only {} holds in a second", tokens.len());
        for pair in tokens.windows(2) {
            assert!(pair[1] > pair[0], "{kind}: token {} after {} in {tokens:?}", pair[1], pair[0]);
        }
        let handed_over = tokens.windows(2).filter(|pair| pair[1] == pair[0] + 1).count();
        assert!(handed_over > 0, "{kind}: no hold came by local handoff: {tokens:?}");
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_owners_of_one_client_take_turns_in_token_order() {
    if common::servers_off() {
        return;
    }
    owners_of_one_client_take_turns(&postgres_url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_owners_of_one_client_take_turns_in_token_order() {
    if common::servers_off() {
        return;
    }
    owners_of_one_client_take_turns(&mariadb_url()).await;
}

/// Local handoffs are bounded: a client whose owners keep the lock busy between themselves
/// still lets another client's waiter in. A session lock's run ends with a plain release (the
/// waiter elsewhere is first in the server's queue); a lease lock's with a stand-aside.
async fn a_busy_client_does_not_starve_another_clients_waiter(url: &str) {
    for kind in KINDS {
        let name = unique(&format!("starve-{kind}-{}", url.len()));
        common::a_busy_client_does_not_starve_another_clients_waiter(url, &name, kind, Duration::from_secs(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_busy_client_does_not_starve_another_clients_waiter() {
    if common::servers_off() {
        return;
    }
    a_busy_client_does_not_starve_another_clients_waiter(&postgres_url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_a_busy_client_does_not_starve_another_clients_waiter() {
    if common::servers_off() {
        return;
    }
    a_busy_client_does_not_starve_another_clients_waiter(&mariadb_url()).await;
}

/// A handoff moves the ShedLock row to the new owner without freeing it, and a session lock
/// stays on the same database session.
async fn a_release_moves_the_hold_to_the_waiter(url: &str, holder_of: impl AsyncFn(LockKind, &str) -> String) {
    for kind in KINDS {
        let name = unique(&format!("moves-{kind}-{}", url.len()));
        let client = Client::connect(url).await.unwrap();
        let first = client.lock(&name).unwrap().with_kind(kind).unwrap().acquire().await.unwrap();
        let before = holder_of(kind, &name).await;
        let waiter = client.lock(&name).unwrap().with_kind(kind).unwrap();
        let waiting = tokio::spawn(async move { waiter.acquire().await.unwrap() });
        sleep(Duration::from_millis(100)).await;
        let (first_token, first_owner) = (first.fencing_token(), first.lock().owner());
        first.release().await.unwrap();
        let second = timeout(Duration::from_secs(2), waiting).await.expect("the waiter got the lock").unwrap();
        assert_eq!(second.fencing_token(), first_token + 1, "{kind}: the token set aside");
        // The transfer lands behind the new owner; a renewal-free query waits a moment for it.
        sleep(Duration::from_millis(100)).await;
        let after = holder_of(kind, &name).await;
        match kind {
            LockKind::Lease => {
                assert_eq!(before, format!("polylock:{first_owner}"));
                assert_eq!(after, format!("polylock:{}", second.lock().owner()), "the row names the new owner");
            }
            _ => assert_eq!(after, before, "the same session holds the lock"),
        }
        assert!(second.lock().is_locked().await.unwrap());
        second.release().await.unwrap();
        assert!(!client.lock(&name).unwrap().with_kind(kind).unwrap().is_locked().await.unwrap());
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_release_moves_the_hold_to_the_waiter() {
    if common::servers_off() {
        return;
    }
    let admin = sqlx::PgPool::connect(&postgres_url()).await.unwrap();
    a_release_moves_the_hold_to_the_waiter(&postgres_url(), async |kind, name| match kind {
        LockKind::Lease => sqlx::query_scalar("SELECT locked_by FROM shedlock WHERE name = $1")
            .bind(sql_names::lease_name(name))
            .fetch_one(&admin)
            .await
            .unwrap(),
        _ => {
            let pid: i32 =
                sqlx::query_scalar(&pg_holder_pid_sql()).bind(name_key(name)).fetch_one(&admin).await.unwrap();
            pid.to_string()
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_release_moves_the_hold_to_the_waiter() {
    if common::servers_off() {
        return;
    }
    let admin = sqlx::MySqlPool::connect(&mariadb_url()).await.unwrap();
    a_release_moves_the_hold_to_the_waiter(&mariadb_url(), async |kind, name| match kind {
        LockKind::Lease => sqlx::query_scalar("SELECT locked_by FROM shedlock WHERE name = ?")
            .bind(sql_names::lease_name(name))
            .fetch_one(&admin)
            .await
            .unwrap(),
        _ => {
            let id: Option<i64> = sqlx::query_scalar("SELECT IS_USED_LOCK(?)")
                .bind(sql_names::mysql_lock_name(name))
                .fetch_one(&admin)
                .await
                .unwrap();
            id.expect("held").to_string()
        }
    })
    .await;
}

fn name_key(name: &str) -> i64 {
    sql_names::postgres_advisory_key(name)
}

fn pg_holder_pid_sql() -> String {
    "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
     AND ((classid::bigint << 32) | objid::bigint) = ($1::bigint & x'ffffffffffffffff'::bigint)"
        .to_string()
}

/// What the store was made to look like behind the releasing owner's back.
enum Taken {
    /// Another client holds the lock, with this fencing token.
    ByAnotherClient(u64),
}

/// A handoff lets the new owner start before its transfer reaches the database, with the token
/// the old hold set aside. If the old hold turns out to be gone, the new owner is told it lost
/// the lock, its token is below that of whoever holds the lock now (so a fenced store rejects
/// it), and nothing of the new holder's is touched. `take` makes the old hold gone.
async fn a_handoff_that_cannot_land_is_lost_and_fenced_out<F>(url: &str, kind: LockKind, take: F)
where
    F: AsyncFnOnce(&str, &polylock::Guard) -> (Taken, Option<polylock::Guard>),
{
    // The session monitor must not notice a killed session before the handoff does.
    let url = with_option(url, "session_check=60s");
    let name = unique(&format!("unlanded-{kind}-{}", url.len()));
    let client = Client::connect(&url).await.unwrap();
    let first = client.lock(&name).unwrap().with_kind(kind).unwrap().acquire().await.unwrap();
    let (Taken::ByAnotherClient(other_token), other_guard) = take(&name, &first).await;
    let waiter = client.lock(&name).unwrap().with_kind(kind).unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire().await.unwrap() });
    sleep(Duration::from_millis(200)).await;

    let err = first.release().await.unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Lost | ErrorKind::Connection), "{kind}: {err}");
    let second = timeout(Duration::from_secs(3), waiting).await.expect("the waiter was handed the lock").unwrap();
    let reason =
        timeout(Duration::from_secs(3), second.lost()).await.unwrap_or_else(|_| panic!("{kind}: the loss is noticed"));
    assert!(matches!(reason, LostReason::Taken | LostReason::RenewalFailed(_)), "{kind}: {reason:?}");
    assert!(
        second.fencing_token() < other_token,
        "{kind}: the stale owner's token {} must be below the new holder's {other_token}",
        second.fencing_token(),
    );
    assert_eq!(second.release().await.unwrap_err().kind(), ErrorKind::Lost);
    assert!(
        client.lock(&name).unwrap().with_kind(kind).unwrap().is_locked().await.unwrap(),
        "{kind}: still held by the other"
    );
    if let Some(other) = other_guard {
        other.release().await.unwrap();
    }
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_handoffs_that_cannot_land_are_lost_and_fenced_out() {
    if common::servers_off() {
        return;
    }
    let url = postgres_url();
    let admin = sqlx::PgPool::connect(&url).await.unwrap();
    // Lease: another client's ShedLock row replaces ours, with a token from the shared counter.
    a_handoff_that_cannot_land_is_lost_and_fenced_out(&url, LockKind::Lease, async |name, _| {
        let name = sql_names::lease_name(name);
        sqlx::query(
            "UPDATE shedlock SET locked_by = 'another-client', lock_until = timezone('utc', now()) + interval '30 s'
             WHERE name = $1",
        )
        .bind(&name)
        .execute(&admin)
        .await
        .unwrap();
        let token: i64 =
            sqlx::query_scalar("UPDATE polylock_fencing SET token = token + 2 WHERE name = $1 RETURNING token - 1")
                .bind(&name)
                .fetch_one(&admin)
                .await
                .unwrap();
        (Taken::ByAnotherClient(token as u64), None)
    })
    .await;
    // Session: the holder's session is terminated and another client takes the lock.
    let other = Client::connect(&url).await.unwrap();
    a_handoff_that_cannot_land_is_lost_and_fenced_out(&url, LockKind::Reentrant, async |name, _| {
        let pid: i32 = sqlx::query_scalar(&pg_holder_pid_sql()).bind(name_key(name)).fetch_one(&admin).await.unwrap();
        sqlx::query("SELECT pg_terminate_backend($1)").bind(pid).execute(&admin).await.unwrap();
        let lock = other.lock(name).unwrap();
        let guard = lock.acquire_with(AcquireOptions::default().wait(Duration::from_secs(5))).await.unwrap();
        (Taken::ByAnotherClient(guard.fencing_token()), Some(guard))
    })
    .await;
    other.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_handoffs_that_cannot_land_are_lost_and_fenced_out() {
    if common::servers_off() {
        return;
    }
    let url = mariadb_url();
    let admin = sqlx::MySqlPool::connect(&url).await.unwrap();
    a_handoff_that_cannot_land_is_lost_and_fenced_out(&url, LockKind::Lease, async |name, _| {
        let name = sql_names::lease_name(name);
        sqlx::query(
            "UPDATE shedlock SET locked_by = 'another-client', lock_until = UTC_TIMESTAMP(3) + INTERVAL 30 SECOND
             WHERE name = ?",
        )
        .bind(&name)
        .execute(&admin)
        .await
        .unwrap();
        sqlx::query("UPDATE polylock_fencing SET token = token + 2 WHERE name = ?")
            .bind(&name)
            .execute(&admin)
            .await
            .unwrap();
        let token: i64 = sqlx::query_scalar("SELECT token - 1 FROM polylock_fencing WHERE name = ?")
            .bind(&name)
            .fetch_one(&admin)
            .await
            .unwrap();
        (Taken::ByAnotherClient(token as u64), None)
    })
    .await;
    let other = Client::connect(&url).await.unwrap();
    a_handoff_that_cannot_land_is_lost_and_fenced_out(&url, LockKind::Reentrant, async |name, _| {
        let holder: Option<i64> = sqlx::query_scalar("SELECT IS_USED_LOCK(?)")
            .bind(sql_names::mysql_lock_name(name))
            .fetch_one(&admin)
            .await
            .unwrap();
        sqlx::query(&format!("KILL {}", holder.expect("held"))).execute(&admin).await.unwrap();
        let lock = other.lock(name).unwrap();
        let guard = lock.acquire_with(AcquireOptions::default().wait(Duration::from_secs(5))).await.unwrap();
        (Taken::ByAnotherClient(guard.fencing_token()), Some(guard))
    })
    .await;
    other.close().await;
}

/// After a session lock changed hands locally, the connection check reports a killed session
/// to the owner the lock moved to, at its next check, not at its next renewal or release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_killed_session_after_a_handoff_is_reported_to_the_new_owner() {
    if common::servers_off() {
        return;
    }
    let url = with_option(&postgres_url(), "session_check=100ms");
    let admin = sqlx::PgPool::connect(&url.replace("?session_check=100ms", "")).await.unwrap();
    let name = unique("killed-after-handoff");
    let client = Client::connect(&url).await.unwrap();
    let first = client.lock(&name).unwrap().acquire().await.unwrap();
    let waiter = client.lock(&name).unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire().await.unwrap() });
    sleep(Duration::from_millis(200)).await;
    let first_token = first.fencing_token();
    first.release().await.unwrap();
    let second = timeout(Duration::from_secs(3), waiting).await.expect("the waiter was handed the lock").unwrap();
    assert_eq!(second.fencing_token(), first_token + 1, "handed over, not taken afresh");
    sleep(Duration::from_millis(300)).await; // the transfer has landed; the check runs again
    assert!(!second.is_lost());

    let pid: i32 = sqlx::query_scalar(&pg_holder_pid_sql()).bind(name_key(&name)).fetch_one(&admin).await.unwrap();
    sqlx::query("SELECT pg_terminate_backend($1)").bind(pid).execute(&admin).await.unwrap();
    let reason = timeout(Duration::from_secs(2), second.lost())
        .await
        .expect("the new owner hears of the killed session from the connection check");
    assert!(matches!(reason, LostReason::SessionEnded(_)), "{reason:?}");
    client.close().await;
}
