//! Snowflake IDs per second on a LEASED worker id (`Client::snowflake(None, …)`: the lowest
//! free id of the backend, renewed by the watchdog, with its high-water mark written outside
//! the lease) on SQLite and Redis, beside the fixed-worker generator (`Snowflake::new`) and
//! the Twitter layout's ceiling of 4096 IDs per millisecond per worker id (issue 19).
//!
//! Both sides are checked as the `snowflake` section checks its generators: a run that issued
//! more IDs than the milliseconds it touched allow, or dated its newest ID in the future, is
//! flagged as above the ceiling.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use polylock::id::{Snowflake, SnowflakeLayout};
use polylock::{Client, SnowflakeOptions};

use crate::report::{count, line, rate, ratio, versus};
use crate::Result;

const SECTION: &str = "leased";
/// IDs per `next_ids` call in the batch rows.
const BATCH: usize = 10_000;
/// Single IDs between two looks at the clock.
const IDS_PER_CLOCK_READ: u64 = 1024;

fn now_unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

fn ceiling_per_sec() -> f64 {
    (SnowflakeLayout::TWITTER.ids_per_ms() * 1000) as f64
}

/// One run of a generator: IDs, time, and its newest ID.
struct IdRun {
    ids: u64,
    elapsed: Duration,
    newest: u64,
}

impl IdRun {
    fn per_sec(&self) -> f64 {
        self.ids as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    fn figure(&self, who: &str) -> String {
        let per_sec = self.per_sec();
        let mut text = format!("{} = {} ceiling", rate(who, per_sec, "ids/s"), ratio(per_sec / ceiling_per_sec()));
        let touched_ms = self.elapsed.as_secs_f64() * 1000.0 * 1.0005 + 2.0;
        let ahead_ms = SnowflakeLayout::TWITTER.parse(self.newest).map(|p| p.timestamp_ms).unwrap_or(0) as i64
            - now_unix_ms() as i64;
        if self.ids as f64 > touched_ms * SnowflakeLayout::TWITTER.ids_per_ms() as f64 || ahead_ms > 1 {
            text.push_str(&format!(
                " (ABOVE THE 4096/ms CEILING: invalid as snowflakes, newest ID dated {} ms ahead of the clock)",
                count(ahead_ms.max(0) as f64)
            ));
        }
        text
    }
}

fn fixed_run(worker: u64, batch: Option<usize>, budget: Duration) -> Result<IdRun> {
    let generator = Snowflake::new(worker)?;
    let started = Instant::now();
    let (mut ids, mut newest) = (0u64, 0u64);
    while started.elapsed() < budget {
        match batch {
            Some(size) => {
                let got = generator.next_ids(size)?;
                newest = newest.max(got.last().copied().unwrap_or(0));
                ids += got.len() as u64;
            }
            None => {
                for _ in 0..IDS_PER_CLOCK_READ {
                    newest = generator.next_id()?;
                }
                ids += IDS_PER_CLOCK_READ;
            }
        }
    }
    Ok(IdRun { ids, elapsed: started.elapsed(), newest })
}

async fn leased_run(url: &str, batch: Option<usize>, budget: Duration) -> Result<(IdRun, u64)> {
    let client = Client::connect(url).await?;
    let generator = client.snowflake(None, SnowflakeOptions::default()).await?;
    let worker = generator.worker_id().await.unwrap_or(0);
    generator.next_ids(16).await?; // warm
    let started = Instant::now();
    let (mut ids, mut newest) = (0u64, 0u64);
    while started.elapsed() < budget {
        match batch {
            Some(size) => {
                let got = generator.next_ids(size).await?;
                newest = newest.max(got.last().copied().unwrap_or(0));
                ids += got.len() as u64;
            }
            None => {
                for _ in 0..IDS_PER_CLOCK_READ {
                    newest = generator.next_id().await?;
                }
                ids += IDS_PER_CLOCK_READ;
            }
        }
    }
    let run = IdRun { ids, elapsed: started.elapsed(), newest };
    generator.close().await?;
    client.close().await;
    Ok((run, worker))
}

fn with_option(url: &str, option: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{option}")
}

/// Remove the run's namespace (worker-id locks, marks) from the shared Redis.
fn clean_redis(url: &str, namespace: &str) -> Result<()> {
    let plain = url.split('?').next().unwrap_or(url);
    let mut conn = redis::Client::open(plain)?.get_connection()?;
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("*{namespace}*"))
            .arg("COUNT")
            .arg(1000)
            .query(&mut conn)?;
        if !keys.is_empty() {
            let _: () = redis::cmd("UNLINK").arg(keys).query(&mut conn)?;
        }
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}

/// The section: leased beside fixed, on SQLite and (when exported) Redis.
pub fn run(budget: Duration) -> Result<()> {
    println!(
        "# {SECTION}: Snowflake IDs/s on a worker id leased from the backend (Client::snowflake(None)) beside the \
         fixed-worker Snowflake::new, both against the Twitter layout's {} IDs/s per worker id; {:.2} s per figure",
        count(ceiling_per_sec()),
        budget.as_secs_f64()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let dir = tempfile::tempdir()?;
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let namespace = format!("bench-ids-{}-{nanos}", std::process::id());
    let mut targets = vec![("sqlite", format!("sqlite://{}", dir.path().join("leased.db").display()))];
    match std::env::var("POLYLOCK_TEST_REDIS_URL") {
        Ok(url) if !url.is_empty() => targets.push(("redis", url)),
        _ => line(SECTION, "redis", &["skipped: POLYLOCK_TEST_REDIS_URL is not exported".into()]),
    }
    for (backend, url) in targets {
        let url = with_option(&url, &format!("namespace={namespace}"));
        for (label, batch) in [("next_id", None), ("next_ids(10,000)", Some(BATCH))] {
            let (leased, worker) = match runtime.block_on(leased_run(&url, batch, budget)) {
                Ok(run) => run,
                Err(err) if backend == "redis" => {
                    line(SECTION, backend, &[format!("skipped: {err}")]);
                    break;
                }
                Err(err) => return Err(err),
            };
            let fixed = fixed_run(worker, batch, budget)?;
            line(
                SECTION,
                &format!("{backend}, {label}"),
                &[
                    leased.figure(&format!("leased (worker {worker})")),
                    fixed.figure("fixed"),
                    versus("leased", "fixed", leased.per_sec(), fixed.per_sec()),
                ],
            );
        }
        if backend == "redis" {
            if let Err(err) = clean_redis(&url, &namespace) {
                eprintln!("polylock-bench: could not remove the leased section's keys from redis: {err}");
            }
        }
    }
    Ok(())
}
