//! Segment IDs per second from one process: polylock's Leaf-style generator on sqlite://
//! (ranges reserved in the database, one statement each, loaded in the background) beside the
//! same generator on mem:// (ranges from a counter in memory), with the same step. The ratio
//! is what the database costs once warm; the goal (issue 19) is within 90 % of memory.

use std::time::{Duration, Instant};

use polylock::{Client, SegmentOptions};

use crate::report::{line, rate, versus};
use crate::Result;

const SECTION: &str = "segments";
/// Leaf's default step.
const STEP: u64 = 1000;

/// IDs per second from one generator, calling `next_id` (or `next_ids(batch)`) for `budget`
/// after a warm-up that loads the first ranges.
async fn ids_per_sec(url: &str, budget: Duration, batch: usize) -> Result<(f64, u64)> {
    let client = Client::connect(url).await?;
    let generator = client.segments("bench", SegmentOptions { step: STEP, ..SegmentOptions::default() })?;
    generator.next_ids(2 * STEP as usize).await?;
    let started = Instant::now();
    let mut issued = 0u64;
    let mut last = 0;
    while started.elapsed() < budget {
        for _ in 0..64 {
            if batch == 1 {
                last = generator.next_id().await?;
                issued += 1;
            } else {
                let ids = generator.next_ids(batch).await?;
                last = *ids.last().unwrap_or(&last);
                issued += ids.len() as u64;
            }
        }
    }
    let per_sec = issued as f64 / started.elapsed().as_secs_f64();
    let step = generator.step();
    client.close().await;
    std::hint::black_box(last);
    Ok((per_sec, step))
}

pub fn run(budget: Duration) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let dir = tempfile::tempdir()?;
    let sqlite = format!("sqlite://{}", dir.path().join("segments.db").display());
    runtime.block_on(async {
        for (label, batch) in [("next_id", 1usize), ("next_ids(1000)", 1000)] {
            let (memory, _) = ids_per_sec("mem://bench-segments", budget, batch).await?;
            let (on_sqlite, step) = ids_per_sec(&sqlite, budget, batch).await?;
            line(
                SECTION,
                label,
                &[
                    rate("sqlite", on_sqlite, "IDs/s"),
                    rate("mem", memory, "IDs/s"),
                    versus("sqlite", "mem", on_sqlite, memory),
                    format!("step reached {step}"),
                ],
            );
        }
        Ok(())
    })
}
