//! Segment IDs (Leaf's double buffer) on mem:// and sqlite://: unique, never 0, ranges
//! durable before use, `Exhausted` with a retry hint when the store cannot hand out a range.

use std::collections::HashSet;
use std::time::Duration;

use polylock::{Client, ErrorDetails, ErrorKind, SegmentOptions};

fn options(step: u64) -> SegmentOptions {
    SegmentOptions { step, ..SegmentOptions::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_are_unique_never_zero_and_increase_within_a_generator() {
    let client = Client::connect("mem://ids-segments-basic").await.unwrap();
    let generator = client.segments("orders", options(10)).unwrap();
    let first = generator.next_id().await.unwrap();
    assert_eq!(first, 1, "a counter polylock creates starts at 0, and 0 is skipped");
    let mut all = vec![first];
    for _ in 0..95 {
        all.push(generator.next_id().await.unwrap());
    }
    all.extend(generator.next_ids(250).await.unwrap());
    assert!(all.windows(2).all(|w| w[0] < w[1]), "one generator's IDs only grow");
    assert_eq!(all.iter().collect::<HashSet<_>>().len(), all.len());
    assert!(!all.contains(&0));
    assert!(generator.step() > 10, "ranges used in well under 15 minutes double the step: {}", generator.step());
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generators_of_one_tag_never_share_an_id_and_tags_are_separate() {
    let client = Client::connect("mem://ids-segments-shared").await.unwrap();
    let generators: Vec<_> = (0..4).map(|_| client.segments("shared", options(7)).unwrap()).collect();
    let mut tasks = Vec::new();
    for generator in generators {
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for _ in 0..300 {
                ids.push(generator.next_id().await.unwrap());
            }
            ids.extend(generator.next_ids(100).await.unwrap());
            ids
        }));
    }
    let mut seen = HashSet::new();
    for task in tasks {
        for id in task.await.unwrap() {
            assert!(seen.insert(id), "{id} handed out twice");
        }
    }
    assert_eq!(seen.len(), 4 * 400);
    let other = client.segment("another-tag").unwrap();
    assert_eq!(other.next_id().await.unwrap(), 1, "each tag is its own counter");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_options_and_missing_counters_are_typed_errors() {
    let client = Client::connect("mem://ids-segments-bad").await.unwrap();
    for bad in [
        SegmentOptions { step: 0, ..SegmentOptions::default() },
        SegmentOptions { step: 10, max_step: 5, ..SegmentOptions::default() },
        SegmentOptions { load_at: 1.5, ..SegmentOptions::default() },
        SegmentOptions { load_at: f64::NAN, ..SegmentOptions::default() },
    ] {
        assert_eq!(client.segments("t", bad).unwrap_err().kind(), ErrorKind::InvalidArgument, "{bad:?}");
    }
    assert_eq!(client.segment("").unwrap_err().kind(), ErrorKind::InvalidArgument);
    client.close().await;
    assert_eq!(client.segment("t").unwrap_err().kind(), ErrorKind::Connection, "closed client");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_ranges_survive_a_restart_and_two_clients_never_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("segments.db").display());
    let (a, b) = (Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap());
    let (gen_a, gen_b) = (a.segments("invoices", options(20)).unwrap(), b.segments("invoices", options(20)).unwrap());
    let mut seen = HashSet::new();
    for _ in 0..500 {
        assert!(seen.insert(gen_a.next_id().await.unwrap()));
        assert!(seen.insert(gen_b.next_id().await.unwrap()));
    }
    let highest = *seen.iter().max().unwrap();
    // A process that dies loses the rest of its ranges (a gap); a new one starts past them.
    drop(gen_a);
    drop(a);
    b.close().await;
    let c = Client::connect(&url).await.unwrap();
    let gen_c = c.segments("invoices", options(20)).unwrap();
    let after = gen_c.next_ids(50).await.unwrap();
    assert!(after.iter().all(|id| *id > highest), "a restart never repeats: {after:?} vs {highest}");
    c.close().await;
}

/// A Leaf server's row (max_id 1) is shared: polylock hands out ranges past it, and Leaf's
/// next UPDATE lands past polylock's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_uses_leafs_table_and_shares_a_leaf_tag() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leaf.db");
    let url = format!("sqlite://{}", path.display());
    let client = Client::connect(&url).await.unwrap();
    let db = rusqlite::Connection::open(&path).unwrap();
    db.execute(
        "INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ('leaf-tag', 1, 2000, 'from Leaf')",
        [],
    )
    .unwrap();
    let generator = client.segments("leaf-tag", options(100)).unwrap();
    let ids = generator.next_ids(100).await.unwrap();
    assert_eq!(ids, (1..101).collect::<Vec<_>>());
    // Leaf's own load, in one statement: its range is [max_id - step, max_id), which must
    // hold none of polylock's IDs, before or after.
    let leaf_max: i64 = db
        .query_row(
            "UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = 'leaf-tag' RETURNING max_id",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let leaf_range = (leaf_max - 2000) as u64..leaf_max as u64;
    assert!(leaf_range.start >= 101, "polylock's ranges are in Leaf's row: {leaf_range:?}");
    let more = generator.next_ids(3000).await.unwrap();
    assert!(ids.iter().chain(&more).all(|id| !leaf_range.contains(id)), "{leaf_range:?}");
    assert_eq!(ids.iter().chain(&more).collect::<HashSet<_>>().len(), 3100);
    client.close().await;
}

/// While the store cannot answer (another connection holds SQLite's write lock), callers
/// get `Exhausted` with a retry hint once both ranges are used, and IDs flow again once it
/// can.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_cannot_answer_gives_exhausted_with_a_retry_hint_then_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("busy.db");
    let client = Client::connect(&format!("sqlite://{}", path.display())).await.unwrap();
    let generator = client
        .segments(
            "busy",
            SegmentOptions { step: 5, load_at: 1.0, wait: Duration::from_millis(300), ..Default::default() },
        )
        .unwrap();
    let first = generator.next_ids(4).await.unwrap();
    assert_eq!(first, vec![1, 2, 3, 4]);
    // The next range was asked for as the first ran out; let it land, then block the store.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut blocker = rusqlite::Connection::open(&path).unwrap();
    let tx = blocker.transaction_with_behavior(rusqlite::TransactionBehavior::Exclusive).unwrap();
    let mut served = 0;
    let err = loop {
        match generator.next_id().await {
            Ok(_) => served += 1,
            Err(err) => break err,
        }
        assert!(served < 100, "the loaded ranges are small; the store is blocked");
    };
    assert_eq!(err.kind(), ErrorKind::Exhausted, "{err}");
    assert!(err.to_string().contains("retry in"), "{err}");
    assert!(matches!(err.details(), Some(ErrorDetails::RetryAfter { .. })), "{:?}", err.details());
    tx.rollback().unwrap();
    let mut recovered = None;
    for _ in 0..200 {
        match generator.next_id().await {
            Ok(id) => {
                recovered = Some(id);
                break;
            }
            Err(err) => assert_eq!(err.kind(), ErrorKind::Exhausted, "{err}"),
        }
    }
    assert!(recovered.expect("IDs flow again once the store answers") > 4);
    client.close().await;
}

/// A batch above `polylock::id::MAX_BATCH` is refused before anything is allocated: a count
/// of 10**15 used to abort the host process on the allocation (issue 35).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_batch_is_refused_not_an_abort() {
    let dir = tempfile::tempdir().unwrap();
    let client = Client::connect(&format!("sqlite://{}", dir.path().join("huge.db").display())).await.unwrap();
    let generator = client.segment("t").unwrap();
    for count in [polylock::id::MAX_BATCH + 1, 1_000_000_000_000_000, usize::MAX] {
        let err = generator.next_ids(count).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
        assert!(err.message().contains(&polylock::id::MAX_BATCH.to_string()), "{err}");
    }
    assert!(generator.take_ready(usize::MAX).len() <= polylock::id::MAX_BATCH);
    assert_eq!(generator.next_ids(3).await.unwrap().len(), 3);
    let snowflake = client.snowflake(None, polylock::SnowflakeOptions::default()).await.unwrap();
    let err = snowflake.next_ids(1_000_000_000_000_000).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    for err in [
        polylock::kit::ids::uuid7_batch(1_000_000_000_000_000).unwrap_err(),
        polylock::kit::ids::ulid_batch(1_000_000_000_000_000).unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    }
    assert_eq!(polylock::kit::ids::uuid7_batch(2).unwrap().len(), 2);
}
