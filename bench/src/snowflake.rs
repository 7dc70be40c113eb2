//! Section 1: snowflake IDs per second, polylock's generator beside rs-snowflake's, each
//! against the Twitter layout's ceiling of 4096 IDs per millisecond per worker id.
//!
//! A generator cannot honestly beat the ceiling: past 4096 IDs in a millisecond it must
//! either wait for the next one or issue IDs dated in the future (or repeat). So every
//! figure is printed with its ratio to the ceiling, and a generator found above it is
//! flagged, with how far ahead of the wall clock its newest ID was dated.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use polylock::id::{Snowflake, SnowflakeLayout};
use snowflake::{SnowflakeIdBucket, SnowflakeIdGenerator};

use crate::measure::{on_threads, Throughput};
use crate::report::{count, line, rate, ratio, versus};
use crate::Result;

const SECTION: &str = "snowflake";
const OURS: &str = "polylock";
const PEER: &str = "rs-snowflake";
/// IDs per `next_ids` call in the batch workload.
const BATCH: usize = 10_000;
/// Single IDs issued between two looks at the clock, so the clock costs nothing.
const IDS_PER_CLOCK_READ: u64 = 1024;

/// Hands out IDs on one thread. A generator shared between threads is a shared reference.
trait IdGenerator {
    fn next_id(&mut self) -> Result<u64>;

    fn next_ids(&mut self, count: usize) -> Result<Vec<u64>> {
        (0..count).map(|_| self.next_id()).collect()
    }
}

impl IdGenerator for &Snowflake {
    fn next_id(&mut self) -> Result<u64> {
        Ok(Snowflake::next_id(self)?)
    }

    fn next_ids(&mut self, count: usize) -> Result<Vec<u64>> {
        Ok(Snowflake::next_ids(self, count)?)
    }
}

/// rs-snowflake's clock-faithful method: one worker's generator, owned by one thread.
impl IdGenerator for SnowflakeIdGenerator {
    fn next_id(&mut self) -> Result<u64> {
        Ok(self.real_time_generate() as u64)
    }
}

/// rs-snowflake's generator needs `&mut`, so threads share it the usual way: a mutex.
impl IdGenerator for &Mutex<SnowflakeIdGenerator> {
    fn next_id(&mut self) -> Result<u64> {
        let mut generator = self.lock().map_err(|_| "rs-snowflake's mutex was poisoned")?;
        Ok(generator.real_time_generate() as u64)
    }
}

/// rs-snowflake's batch API: refills 4091 IDs at a time from `lazy_generate`, which moves
/// to the next millisecond after every 4096 IDs without looking at the clock.
impl IdGenerator for SnowflakeIdBucket {
    fn next_id(&mut self) -> Result<u64> {
        Ok(self.get_id() as u64)
    }
}

/// When (unix ms) an ID of each side says it was made.
fn polylock_unix_ms(id: u64) -> u64 {
    SnowflakeLayout::TWITTER.parse(id).map(|parts| parts.timestamp_ms).unwrap_or(0)
}

fn rs_snowflake_unix_ms(id: u64) -> u64 {
    id >> 22 // 42 bits of ms since the unix epoch, then 5 machine, 5 node, 12 sequence bits
}

fn now_unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// One measurement of a generator.
struct IdRun {
    throughput: Throughput,
    /// How far the newest ID's timestamp was ahead of the wall clock when the run ended.
    newest_ahead_ms: i64,
}

/// Issue IDs on `threads` threads for `budget`: single IDs, or `batch`-sized calls.
/// `generator()` gives each thread its generator (or its reference to a shared one).
fn measure_ids<G: IdGenerator>(
    threads: usize,
    batch: Option<usize>,
    budget: Duration,
    generator: impl Fn() -> G + Sync,
    unix_ms_of: fn(u64) -> u64,
) -> Result<IdRun> {
    let newest = AtomicU64::new(0);
    let throughput = on_threads(threads, budget, |_| {
        let mut generator = generator();
        let newest = &newest;
        move || {
            let (issued, last) = match batch {
                Some(size) => {
                    let ids = generator.next_ids(size)?;
                    (size as u64, ids.last().copied().unwrap_or(0))
                }
                None => {
                    let mut last = 0;
                    for _ in 0..IDS_PER_CLOCK_READ {
                        last = generator.next_id()?;
                    }
                    (IDS_PER_CLOCK_READ, last)
                }
            };
            newest.fetch_max(last, Ordering::Relaxed);
            Ok(issued)
        }
    })?;
    let newest_ahead_ms = unix_ms_of(newest.load(Ordering::Relaxed)) as i64 - now_unix_ms() as i64;
    Ok(IdRun { throughput, newest_ahead_ms })
}

/// The Twitter layout's most IDs per second per worker id: 4096/ms.
fn ceiling_per_sec() -> f64 {
    (SnowflakeLayout::TWITTER.ids_per_ms() * 1000) as f64
}

/// Whether a run issued more IDs than the milliseconds it touched allow, or dated one in
/// the future. A window of `n` ms on the monotonic clock touches at most `n + 2` wall-clock
/// milliseconds (a partial one at each end), give or take NTP slewing (at most 500 ppm).
fn above_ceiling(run: &IdRun) -> bool {
    let touched_ms = run.throughput.elapsed.as_secs_f64() * 1000.0 * 1.0005 + 2.0;
    let most_allowed = touched_ms * SnowflakeLayout::TWITTER.ids_per_ms() as f64;
    run.throughput.ops() as f64 > most_allowed || run.newest_ahead_ms > 1
}

/// `who N ids/s = 0.99x ceiling`, plus a warning if the figure is above the ceiling.
fn figure(who: &str, run: &IdRun) -> String {
    let per_sec = run.throughput.per_sec();
    let of_ceiling = per_sec / ceiling_per_sec();
    let mut text = format!("{} = {} ceiling", rate(who, per_sec, "ids/s"), ratio(of_ceiling));
    if above_ceiling(run) {
        text.push_str(&format!(
            " (ABOVE THE 4096/ms CEILING: invalid as snowflakes, newest ID dated {} ms ahead of the clock)",
            count(run.newest_ahead_ms.max(0) as f64)
        ));
    }
    text
}

fn print_row(label: &str, ours: &IdRun, peer_name: &str, peer: &IdRun) {
    let cells = [
        figure(OURS, ours),
        figure(peer_name, peer),
        versus(OURS, peer_name, ours.throughput.per_sec(), peer.throughput.per_sec()),
    ];
    line(SECTION, label, &cells);
}

/// Measure and print section 1. `budget` is per measurement; there are seven.
pub fn run(budget: Duration) -> Result<()> {
    println!(
        "# {SECTION}: IDs/s; ceiling = Twitter layout's {} IDs/s per worker id; peer = {PEER} 0.6 \
         (SnowflakeIdGenerator::real_time_generate unless named); {} s per figure",
        count(ceiling_per_sec()),
        budget.as_secs_f64()
    );

    let ours = Snowflake::new(1)?;
    let ours_run = measure_ids(1, None, budget, || &ours, polylock_unix_ms)?;
    let peer_run = measure_ids(1, None, budget, || SnowflakeIdGenerator::new(1, 1), rs_snowflake_unix_ms)?;
    print_row("1 thread, next_id", &ours_run, PEER, &peer_run);

    let ours = Snowflake::new(2)?;
    let ours_run = measure_ids(2, None, budget, || &ours, polylock_unix_ms)?;
    let peer = Mutex::new(SnowflakeIdGenerator::new(1, 2));
    let peer_run = measure_ids(2, None, budget, || &peer, rs_snowflake_unix_ms)?;
    print_row("2 threads, one generator", &ours_run, &format!("{PEER}(Mutex)"), &peer_run);

    let ours = Snowflake::new(3)?;
    let ours_batches = measure_ids(1, Some(BATCH), budget, || &ours, polylock_unix_ms)?;
    let peer_run = measure_ids(1, Some(BATCH), budget, || SnowflakeIdGenerator::new(1, 3), rs_snowflake_unix_ms)?;
    print_row("batches of 10,000", &ours_batches, PEER, &peer_run);

    let peer_run = measure_ids(1, Some(BATCH), budget, || SnowflakeIdBucket::new(1, 4), rs_snowflake_unix_ms)?;
    print_row("batches of 10,000 vs bucket", &ours_batches, &format!("{PEER}(SnowflakeIdBucket)"), &peer_run);
    Ok(())
}
