//! Leader elections (issue #18) against every backend that has them: in-process memory, an
//! SQLite file, and the real redis-server, PostgreSQL and MariaDB of tests/services, each in
//! a private namespace. Exactly one of N candidates leads; resigning hands leadership to the
//! next; each new leader's term is greater; `leader()` and `observe()` follow; a leader whose
//! renewals stop (its runtime frozen, as under SIGSTOP) is replaced and then reports `Lost`;
//! and a ledger of who believed it led in which term never shows two believers of one term.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use polylock::{Client, ErrorKind, Leadership};

use crate::common;

/// Every backend URL whose elections this suite checks. etcd and ZooKeeper keep elections in
/// their own layouts (backend/etcd/election.rs, backend/zk/election.rs); they join the loop
/// when those stores are offered (`Capabilities::elections`).
fn election_urls(tag: &str) -> (Vec<String>, tempfile::TempDir) {
    common::every_backend_urls(tag)
}

/// Who believed it led in which term: a term must never have two believers.
#[derive(Default, Clone)]
struct Ledger(Arc<Mutex<BTreeMap<u64, String>>>);

impl Ledger {
    fn believe(&self, term: u64, candidate: &str) {
        let mut terms = self.0.lock().unwrap();
        let believer = terms.entry(term).or_insert_with(|| candidate.to_string());
        assert_eq!(believer, candidate, "two candidates believed they led in term {term}");
    }

    fn terms(&self) -> Vec<u64> {
        self.0.lock().unwrap().keys().copied().collect()
    }
}

/// Waits (boundedly) until `check` holds; a liveness bound, not a timing claim.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..300 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never happened: {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_at_a_time_and_resign_hands_over_with_growing_terms() {
    let (urls, _dir) = election_urls("election-one");
    for url in urls {
        let name = "jobs-leader";
        let candidates = 4;
        let mut clients = Vec::new();
        for _ in 0..candidates {
            clients.push(Client::connect(&url).await.unwrap_or_else(|err| panic!("{url}: {err}")));
        }
        let ledger = Ledger::default();
        let (won, mut winners) = tokio::sync::mpsc::unbounded_channel::<(usize, Leadership)>();
        let mut campaigns = Vec::new();
        for (index, client) in clients.iter().enumerate() {
            let election = client.election(name).unwrap();
            let won = won.clone();
            campaigns.push(tokio::spawn(async move {
                let leadership = election.campaign(format!("node-{index}").as_bytes(), None).await.unwrap();
                won.send((index, leadership)).unwrap();
            }));
        }
        let observer_election = clients[0].election(name).unwrap();
        let mut last_term = 0;
        let mut led = Vec::new();
        for round in 0..candidates {
            let (index, leadership) = winners.recv().await.unwrap();
            assert!(leadership.is_leader(), "{url}: round {round}");
            ledger.believe(leadership.term(), &format!("node-{index}"));
            assert!(leadership.term() > last_term, "{url}: term {} after {last_term}", leadership.term());
            last_term = leadership.term();
            // Nobody else wins while it leads.
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert!(winners.try_recv().is_err(), "{url}: a second leader while node-{index} leads");
            let seen = observer_election.leader().await.unwrap().expect("a leader");
            assert_eq!((seen.value, seen.term), (format!("node-{index}").into_bytes(), leadership.term()), "{url}");
            led.push(index);
            leadership.resign().await.unwrap();
            assert!(!leadership.is_leader());
            assert!(!leadership.is_lost(), "{url}: resigning is not losing");
        }
        led.sort();
        assert_eq!(led, (0..candidates).collect::<Vec<_>>(), "{url}: every candidate led once");
        assert_eq!(observer_election.leader().await.unwrap(), None, "{url}: nobody leads after the last resigned");
        assert_eq!(ledger.terms().len(), candidates);
        for campaign in campaigns {
            campaign.await.unwrap();
        }
        for client in clients {
            client.close().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_and_leader_follow_campaigns_proclaims_and_resigns() {
    let (urls, _dir) = election_urls("election-observe");
    for url in urls {
        let watcher = Client::connect(&url).await.unwrap_or_else(|err| panic!("{url}: {err}"));
        let first = Client::connect(&url).await.unwrap();
        let second = Client::connect(&url).await.unwrap();
        let name = "observed";
        let mut changes = watcher.election(name).unwrap().observe().unwrap();
        assert_eq!(changes.next().await.unwrap().unwrap(), None, "{url}: nobody leads at first");

        let a = first.election(name).unwrap().campaign(b"a", Some(Duration::from_secs(5))).await.unwrap();
        let seen = changes.next().await.unwrap().unwrap().expect("a leads");
        assert_eq!((seen.value.as_slice(), seen.term), (&b"a"[..], a.term()), "{url}");

        a.proclaim(b"a-2").await.unwrap();
        let seen = changes.next().await.unwrap().unwrap().expect("a still leads");
        assert_eq!((seen.value.as_slice(), seen.term), (&b"a-2"[..], a.term()), "{url}: a proclaim keeps the term");
        assert_eq!(a.value(), b"a-2");

        // A try-once campaign while a leads is a Timeout and leaves nothing behind.
        let refused = second.election(name).unwrap().campaign(b"b", Some(Duration::ZERO)).await.unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::Timeout, "{url}: {refused}");

        let b_election = second.election(name).unwrap();
        let b_campaign = tokio::spawn(async move { b_election.campaign(b"b", None).await.unwrap() });
        a.resign().await.unwrap();
        let b = b_campaign.await.unwrap();
        assert!(b.term() > a.term(), "{url}");
        // The watcher may see "nobody" between a and b, and must then see b.
        let mut seen = changes.next().await.unwrap().unwrap();
        if seen.is_none() {
            seen = changes.next().await.unwrap().unwrap();
        }
        let seen = seen.expect("b leads");
        assert_eq!((seen.value.as_slice(), seen.term), (&b"b"[..], b.term()), "{url}");
        assert_eq!(watcher.election(name).unwrap().leader().await.unwrap().map(|l| l.term), Some(b.term()));

        // Proclaiming or resigning a term that was resigned is refused, never a new term.
        assert_eq!(a.proclaim(b"late").await.unwrap_err().kind(), ErrorKind::NotOwner, "{url}");
        b.resign().await.unwrap();
        for client in [watcher, first, second] {
            client.close().await;
        }
    }
}

/// The leader's runtime is frozen (one worker thread, blocked: what SIGSTOP does to a process)
/// for several leases: another candidate takes over with a greater term, and the old leader,
/// once it runs again, reports `Lost` and never leads again; no term has two believers.
#[test]
fn a_leader_whose_renewals_stop_is_replaced_and_reports_lost() {
    let (urls, _dir) = election_urls("election-frozen");
    let main = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    for url in urls {
        let url = format!("{url}{}lease=600ms", if url.contains('?') { '&' } else { '?' });
        // etcd and ZooKeeper end a frozen leader through its session, not the lease.
        let url = match url.split("://").next() {
            Some("etcd") => format!("{url}&ttl=2s"),
            Some("zk") => format!("{url}&session_timeout=2s"),
            _ => url,
        };
        let frozen = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let ledger = Ledger::default();
        let name = "frozen-leader";
        let (old_client, old) = frozen.block_on(async {
            let client = Client::connect(&url).await.unwrap_or_else(|err| panic!("{url}: {err}"));
            let leadership = client.election(name).unwrap().campaign(b"old", None).await.unwrap();
            (client, leadership)
        });
        ledger.believe(old.term(), "old");
        // Freeze every task of the old leader's runtime, its watchdog included.
        frozen.spawn(async { std::thread::sleep(Duration::from_millis(3000)) });

        let (new_client, new) = main.block_on(async {
            let client = Client::connect(&url).await.unwrap();
            let leadership = client.election(name).unwrap().campaign(b"new", Some(Duration::from_secs(20))).await;
            (client, leadership.unwrap_or_else(|err| panic!("{url}: no takeover: {err}")))
        });
        assert!(new.term() > old.term(), "{url}");
        ledger.believe(new.term(), "new");

        // The old leader runs again: it learns at its next renewal that it lost.
        main.block_on(eventually("the frozen leader reports Lost", || old.is_lost()));
        assert!(!old.is_leader(), "{url}: a lost leadership never leads again");
        let proclaim = frozen.block_on(old.proclaim(b"zombie")).unwrap_err();
        assert_eq!(proclaim.kind(), ErrorKind::Lost, "{url}: {proclaim}");
        let seen = main.block_on(new_client.election(name).unwrap().leader()).unwrap().expect("new leads");
        assert_eq!((seen.value.as_slice(), seen.term), (&b"new"[..], new.term()), "{url}: the zombie wrote nothing");
        assert!(new.is_leader(), "{url}");
        main.block_on(async {
            new.resign().await.unwrap();
            new_client.close().await;
        });
        frozen.block_on(old_client.close());
        drop(old);
        frozen.shutdown_timeout(Duration::from_secs(1));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_that_times_out_or_is_dropped_leaves_no_candidacy() {
    let (urls, _dir) = election_urls("election-cancel");
    for url in urls {
        let holder = Client::connect(&url).await.unwrap_or_else(|err| panic!("{url}: {err}"));
        let other = Client::connect(&url).await.unwrap();
        let name = "cancelled";
        let leading = holder.election(name).unwrap().campaign(b"holder", None).await.unwrap();
        let timed_out = other.election(name).unwrap().campaign(b"other", Some(Duration::from_millis(200))).await;
        assert_eq!(timed_out.unwrap_err().kind(), ErrorKind::Timeout, "{url}");
        // The try form: the same wait running out is nothing, and leaves no candidacy either.
        let nothing = other.election(name).unwrap().try_campaign(b"other", Some(Duration::from_millis(200))).await;
        assert!(nothing.unwrap().is_none(), "{url}: try_campaign won a held election");
        let dropped =
            tokio::time::timeout(Duration::from_millis(200), other.election(name).unwrap().campaign(b"dropped", None))
                .await;
        assert!(dropped.is_err(), "{url}: the campaign was still waiting");
        leading.resign().await.unwrap();
        // Nobody left a candidacy behind: a try-once campaign wins at once.
        let next = other.election(name).unwrap().campaign(b"next", Some(Duration::from_secs(5))).await.unwrap();
        assert!(next.term() > leading.term(), "{url}");
        let seen = other.election(name).unwrap().leader().await.unwrap().unwrap();
        assert_eq!(seen.value, b"next", "{url}");
        next.resign().await.unwrap();
        holder.close().await;
        other.close().await;
    }
}

#[tokio::test]
async fn bad_names_and_closed_clients_get_typed_errors() {
    let client = Client::connect("mem://election-bad").await.unwrap();
    assert_eq!(client.election("").unwrap_err().kind(), ErrorKind::InvalidArgument);
    client.close().await;
    assert_eq!(client.election("x").unwrap_err().kind(), ErrorKind::Connection);
}

/// Issue 35 (section 9): closing a leader's client, its leadership neither resigned nor
/// dropped, hands the leadership on at once, on every backend: the next candidate leads well
/// within its wait, long before any lease or session timeout could have ended the old
/// leader's claim. On ZooKeeper the closed client's leader node used to outlive `close()`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_leaders_client_hands_the_leadership_on_at_once() {
    let (urls, _dir) = election_urls("election-closed");
    for url in urls {
        let own = Client::connect(&url).await.unwrap_or_else(|err| panic!("{url}: {err}"));
        let other = Client::connect(&url).await.unwrap();
        let name = "closed-leader";
        let leadership = own.election(name).unwrap().campaign(b"doomed", Some(Duration::from_secs(10))).await.unwrap();
        own.close().await;
        let started = std::time::Instant::now();
        let next = other
            .election(name)
            .unwrap()
            .campaign(b"next", Some(Duration::from_secs(20)))
            .await
            .unwrap_or_else(|err| panic!("{url}: the next candidate never led: {err}"));
        let waited = started.elapsed();
        assert!(waited < Duration::from_secs(5), "{url}: the next candidate led only after {waited:?}");
        assert!(next.term() > leadership.term(), "{url}");
        assert!(leadership.is_lost() || !leadership.is_leader(), "{url}: the closed client still believes it leads");
        next.resign().await.unwrap();
        other.close().await;
        drop(leadership);
    }
}
