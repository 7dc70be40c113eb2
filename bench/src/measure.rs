//! How throughput is measured: workers repeat an operation until a time budget is spent,
//! and count what they got done. Both sides of every comparison go through the same code.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use crate::Result;

/// What one or more workers got done in one measurement.
#[derive(Debug, Clone, Default)]
pub struct Throughput {
    /// Operations done by each worker, in worker order.
    pub per_worker: Vec<u64>,
    /// The longest worker's wall time (workers start together).
    pub elapsed: Duration,
    /// Time spent holding a lock, summed over workers; zero where that means nothing.
    pub held: Duration,
}

impl Throughput {
    pub fn ops(&self) -> u64 {
        self.per_worker.iter().sum()
    }

    pub fn per_sec(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.ops() as f64 / secs
        } else {
            0.0
        }
    }

    /// The smallest and largest share of all operations that one worker did (1/N each is fair).
    pub fn share_range(&self) -> (f64, f64) {
        let total = self.ops().max(1) as f64;
        let min = self.per_worker.iter().copied().min().unwrap_or(0);
        let max = self.per_worker.iter().copied().max().unwrap_or(0);
        (min as f64 / total, max as f64 / total)
    }

    /// Time inside the lock, over all workers, divided by wall time: how much of the time
    /// somebody held it. The rest went to handing it over.
    pub fn utilisation(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.held.as_secs_f64() / secs
        } else {
            0.0
        }
    }

    /// Several workers' results as one measurement.
    pub fn combine(parts: impl IntoIterator<Item = Throughput>) -> Throughput {
        parts.into_iter().fold(Throughput::default(), |mut all, part| {
            all.per_worker.extend(part.per_worker);
            all.elapsed = all.elapsed.max(part.elapsed);
            all.held += part.held;
            all
        })
    }
}

/// Run an operation over and over on `threads` OS threads, started together, until `budget`
/// has passed. `make_op(thread)` builds each thread's operation on that thread; an
/// operation returns how many units of work it did, so it can batch between clock reads.
pub fn on_threads<Op>(threads: usize, budget: Duration, make_op: impl Fn(usize) -> Op + Sync) -> Result<Throughput>
where
    Op: FnMut() -> Result<u64>,
{
    let start_line = Barrier::new(threads);
    let results: Vec<Result<(Instant, u64, Instant)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|thread| {
                let (make_op, start_line) = (&make_op, &start_line);
                scope.spawn(move || {
                    let mut op = make_op(thread);
                    start_line.wait();
                    let started = Instant::now();
                    let mut done = 0;
                    while started.elapsed() < budget {
                        done += op()?;
                    }
                    Ok((started, done, Instant::now()))
                })
            })
            .collect();
        workers.into_iter().map(|worker| worker.join().map_err(|_| "a benchmark thread panicked")?).collect()
    });
    let results = results.into_iter().collect::<Result<Vec<_>>>()?;
    // From the first thread's start to the last one's end: threads woken by the barrier
    // do not all start at the same instant.
    let first_start = results.iter().map(|(started, _, _)| *started).min();
    let last_end = results.iter().map(|(_, _, ended)| *ended).max();
    let elapsed = match (first_start, last_end) {
        (Some(first), Some(last)) => last - first,
        _ => Duration::ZERO,
    };
    Ok(Throughput { per_worker: results.iter().map(|(_, done, _)| *done).collect(), elapsed, held: Duration::ZERO })
}
