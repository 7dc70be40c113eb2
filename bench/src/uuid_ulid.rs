//! UUIDv7 and ULID per second: polylock-id's generators beside the Rust `uuid` crate's
//! `Uuid::now_v7()` (feature `v7`; its shared context keeps a counter, so it is monotonic
//! within a process as polylock's is). There is no ULID crate in this workspace's lock, so
//! polylock's ULID is set beside the same `now_v7()`: both are 48 bits of milliseconds and 80
//! bits of counter and randomness, so the work is alike; the Node and Python benches set
//! ULID beside their ecosystems' own `ulid` packages.

use std::time::Duration;

use polylock::id::{format_ulid, format_uuid, UlidGenerator, Uuid7Generator};
use uuid::Uuid;

use crate::measure::{on_threads, Throughput};
use crate::report::{line, rate, versus};
use crate::Result;

/// IDs between two looks at the clock.
const IDS_PER_ROUND: u64 = 1024;
const BATCH: usize = 10_000;

/// `threads` threads calling `make()` for `budget`; the last value is kept from the optimiser.
fn per_sec<T>(threads: usize, budget: Duration, make: impl Fn() -> Result<T> + Sync) -> Result<Throughput> {
    on_threads(threads, budget, |_| {
        let make = &make;
        move || {
            for _ in 0..IDS_PER_ROUND {
                std::hint::black_box(make()?);
            }
            Ok(IDS_PER_ROUND)
        }
    })
}

fn batches<T>(budget: Duration, make: impl Fn() -> Result<Vec<T>> + Sync) -> Result<Throughput> {
    on_threads(1, budget, |_| {
        let make = &make;
        move || Ok(std::hint::black_box(make()?).len() as u64)
    })
}

fn row(section: &str, label: &str, ours: &Throughput, peer_name: &str, peer: &Throughput) {
    line(
        section,
        label,
        &[
            rate("polylock", ours.per_sec(), "ids/s"),
            rate(peer_name, peer.per_sec(), "ids/s"),
            versus("polylock", peer_name, ours.per_sec(), peer.per_sec()),
        ],
    );
}

pub fn run(budget: Duration) -> Result<()> {
    println!(
        "# uuid7/ulid: IDs/s of polylock-id's Uuid7Generator / UlidGenerator beside the uuid crate \
         (Uuid::now_v7, the version in Cargo.lock); {:.2} s per figure",
        budget.as_secs_f64()
    );
    let uuid7 = Uuid7Generator::new();
    let ulid = UlidGenerator::new();
    let peer = "uuid::now_v7";

    let ours = per_sec(1, budget, || Ok(uuid7.next()?))?;
    let theirs = per_sec(1, budget, || Ok(Uuid::now_v7()))?;
    row("uuid7", "1 thread, u128", &ours, peer, &theirs);

    let ours = per_sec(2, budget, || Ok(uuid7.next()?))?;
    let theirs = per_sec(2, budget, || Ok(Uuid::now_v7()))?;
    row("uuid7", "2 threads, one generator", &ours, peer, &theirs);

    let ours = per_sec(1, budget, || Ok(format_uuid(uuid7.next()?)))?;
    let theirs = per_sec(1, budget, || Ok(Uuid::now_v7().to_string()))?;
    row("uuid7", "1 thread, as text", &ours, peer, &theirs);

    let ours = batches(budget, || Ok(uuid7.batch(BATCH)?))?;
    let theirs = batches(budget, || Ok((0..BATCH).map(|_| Uuid::now_v7()).collect()))?;
    row("uuid7", "batches of 10,000", &ours, &format!("{peer} x10,000"), &theirs);

    let ours = per_sec(1, budget, || Ok(ulid.next()?))?;
    let theirs = per_sec(1, budget, || Ok(Uuid::now_v7()))?;
    row("ulid", "1 thread, u128", &ours, peer, &theirs);

    let ours = per_sec(1, budget, || Ok(format_ulid(ulid.next()?)))?;
    let theirs = per_sec(1, budget, || Ok(Uuid::now_v7().to_string()))?;
    row("ulid", "1 thread, as text", &ours, &format!("{peer} as text"), &theirs);
    Ok(())
}
