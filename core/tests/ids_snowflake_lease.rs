//! Snowflake generators on leased worker ids, with a clock the test moves: exclusive ids,
//! epochs that grow, a stalled holder that stops at its deadline and never meets the next
//! holder's IDs, and restarts with the clock set back that repeat nothing.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use polylock::id::{ManualClock, SnowflakeLayout};
use polylock::{Client, ErrorKind, SharedClock, SnowflakeOptions};

const T: u64 = 1_800_000_000_000;

fn options(clock: &Arc<ManualClock>, max_wait_ms: u64) -> SnowflakeOptions {
    SnowflakeOptions {
        clock: SharedClock(clock.clone()),
        max_wait: Duration::from_millis(max_wait_ms),
        ..SnowflakeOptions::default()
    }
}

/// `count` IDs, moving the clock on by a millisecond between batches (a manual clock would
/// otherwise hold one millisecond's 4096 sequence numbers).
async fn issue(generator: &polylock::LeasedSnowflake, clock: &ManualClock, count: usize) -> Vec<u64> {
    let mut ids = Vec::new();
    while ids.len() < count {
        ids.extend(generator.next_ids(100.min(count - ids.len())).await.unwrap());
        clock.advance(1);
    }
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leased_ids_are_exclusive_recycled_and_checked_against_the_layout() {
    let client = Client::connect("mem://ids-snowflake-exclusive").await.unwrap();
    let clock = Arc::new(ManualClock::new(T));
    let first = client.snowflake(None, options(&clock, 100)).await.unwrap();
    let second = client.snowflake(None, options(&clock, 100)).await.unwrap();
    assert_eq!((first.worker_id().await, second.worker_id().await), (Some(0), Some(1)));
    let mut seen = HashSet::new();
    for id in issue(&first, &clock, 500).await.into_iter().chain(issue(&second, &clock, 500).await) {
        assert!(seen.insert(id));
    }
    let layout = SnowflakeLayout::TWITTER;
    let id = first.next_id().await.unwrap();
    assert_eq!(layout.parse(id).unwrap().worker, 0);

    let taken = client.snowflake(Some(1), options(&clock, 100)).await.unwrap_err();
    assert_eq!(taken.kind(), ErrorKind::Timeout, "{taken}");
    let too_wide = client.snowflake(Some(1024), options(&clock, 100)).await.unwrap_err();
    assert_eq!(too_wide.kind(), ErrorKind::InvalidArgument, "{too_wide}");
    let client = Client::connect("mem://ids-snowflake-exclusive?namespace=narrow").await.unwrap();
    let narrow =
        SnowflakeOptions { layout: SnowflakeLayout::new(T - 1000, 41, 1, 12).unwrap(), ..options(&clock, 100) };
    // Two ids in one bit: the first two takes use them, a third finds none free.
    let a = client.snowflake(None, narrow.clone()).await.unwrap();
    let b = client.snowflake(None, narrow.clone()).await.unwrap();
    let none = client.snowflake(None, narrow.clone()).await.unwrap_err();
    assert_eq!(none.kind(), ErrorKind::Exhausted, "{none}");
    // Given back, an id is used again, under a greater epoch.
    let epoch = a.epoch().await.unwrap();
    let worker = a.worker_id().await.unwrap();
    a.close().await.unwrap();
    let again = client.snowflake(None, narrow).await.unwrap();
    assert_eq!(again.worker_id().await, Some(worker));
    assert!(again.epoch().await.unwrap() > epoch);
    b.close().await.unwrap();
    client.close().await;
}

/// The first holder's renewer stalls; its lock is taken from it (as when a paused process's
/// lease runs out) and a second generator, whose clock is behind, takes the id. They never
/// issue the same ID; the stalled one stops at its deadline and then reports `Lost`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_holders_of_one_id_with_a_paused_renewer_never_issue_the_same_id() {
    let url = "mem://ids-snowflake-paused?lease=900ms";
    let (a, b) = (Client::connect(url).await.unwrap(), Client::connect(url).await.unwrap());
    let (clock_a, clock_b) = (Arc::new(ManualClock::new(T)), Arc::new(ManualClock::new(T - 200)));
    let first = a.snowflake(Some(5), options(&clock_a, 50)).await.unwrap();
    let mut seen = HashSet::new();
    for id in issue(&first, &clock_a, 300).await {
        assert!(seen.insert(id));
    }
    first.pause_renewals_for_tests(true);
    assert!(b.lock("polylock-snowflake:5").unwrap().force_unlock().await.unwrap());
    let second = b.snowflake(Some(5), options(&clock_b, 50)).await.unwrap();
    assert!(second.epoch().await.unwrap() > first.epoch().await.unwrap());
    // The second's clock is behind the first's mark: it issues nothing yet.
    let behind = second.next_id().await.unwrap_err();
    assert_eq!(behind.kind(), ErrorKind::Exhausted, "{behind}");
    // Both clocks move on; the second jumps past the first's mark, the first keeps issuing
    // from its own reservation until it runs out or its deadline passes.
    clock_b.set(T + 900 + 1);
    let mut first_stopped = None;
    for _ in 0..60 {
        match first.next_ids(50).await {
            Ok(ids) => ids.into_iter().for_each(|id| assert!(seen.insert(id), "{id} issued twice")),
            Err(err) => {
                first_stopped = Some(err);
                break;
            }
        }
        clock_a.advance(15);
        for id in second.next_ids(50).await.unwrap() {
            assert!(seen.insert(id), "{id} issued twice");
        }
        clock_b.advance(1);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let stopped = first_stopped.expect("the stalled holder stops issuing");
    assert_eq!(stopped.kind(), ErrorKind::Lost, "{stopped}");
    for id in issue(&second, &clock_b, 500).await {
        assert!(seen.insert(id), "{id} issued twice");
    }
    // The first asked for id 5 only, and the second has it.
    first.pause_renewals_for_tests(false);
    assert_eq!(first.next_id().await.unwrap_err().kind(), ErrorKind::Timeout);
    a.close().await;
    b.close().await;
}

/// The renewer stalls, nothing else happens: the store still has the lock, yet the holder
/// stops at its deadline on the local monotonic clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_stops_at_its_deadline_without_news_from_the_store() {
    let client = Client::connect("mem://ids-snowflake-deadline?lease=600ms").await.unwrap();
    let clock = Arc::new(ManualClock::new(T));
    let generator = client.snowflake(None, options(&clock, 50)).await.unwrap();
    generator.pause_renewals_for_tests(true);
    generator.next_id().await.unwrap();
    assert_eq!(generator.lost_reason().await, None);
    // The lost signal fires by itself at the deadline, before any call finds it.
    let reason = tokio::time::timeout(Duration::from_secs(5), generator.lost()).await.expect("lost() fired");
    assert!(reason.contains("deadline"), "{reason}");
    assert_eq!(generator.lost_reason().await.as_deref(), Some(reason.as_str()));
    let err = generator.next_id().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Lost, "{err}");
    assert!(err.to_string().contains("deadline"), "{err}");
    // Any id would do: the next call leases one afresh and goes on.
    generator.pause_renewals_for_tests(false);
    clock.advance(700);
    generator.next_id().await.unwrap();
    client.close().await;
}

/// A process crashes (its mark stays at the end of its reservation) or closes (its mark
/// comes down to its last ID); restarted with the clock set back, the id issues nothing it
/// issued before, and a generator leasing any id picks another one rather than wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_with_the_clock_set_back_issues_no_id_already_issued() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?lease=3s", dir.path().join("snowflake.db").display());
    let clock = Arc::new(ManualClock::new(T));

    let crashed = Client::connect(&url).await.unwrap();
    let generator = crashed.snowflake(Some(0), options(&clock, 100)).await.unwrap();
    let before: HashSet<u64> = issue(&generator, &clock, 2000).await.into_iter().collect();
    let highest = *before.iter().max().unwrap();
    crashed.close().await; // the lock is given back; the generator never wrote its mark down

    clock.set(T - 60_000);
    let restarted = Client::connect(&url).await.unwrap();
    let any = restarted.snowflake(None, options(&clock, 100)).await.unwrap();
    assert_eq!(any.worker_id().await, Some(1), "id 0's mark is far ahead of this clock: take another");
    let same = restarted.snowflake(Some(0), options(&clock, 100)).await.unwrap();
    let err = same.next_id().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Exhausted, "{err}");
    clock.set(T + 3_000 + 10);
    let after = issue(&same, &clock, 2000).await;
    assert!(after.iter().all(|id| !before.contains(id) && *id > highest));

    // A closed generator writes its mark down to its last ID: a restart just past it goes on.
    let last = *after.iter().max().unwrap();
    same.close().await.unwrap();
    clock.set(SnowflakeLayout::TWITTER.parse(last).unwrap().timestamp_ms + 1);
    let reopened = restarted.snowflake(Some(0), options(&clock, 100)).await.unwrap();
    let next = reopened.next_id().await.unwrap();
    assert!(next > last);
    restarted.close().await;
}
