//! `polylock demo`: the main job on the embedded default. Worker processes contend for one
//! lock and, under it, increment a counter kept in a plain file with no locking of its own.
//! Without mutual exclusion increments get lost; with it the count comes out exact. Each
//! worker also records (token, start, end) of every hold, and the parent checks that no two
//! holds overlapped in time and that tokens grew with time.

use std::fmt::Write as _;
use std::fs;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use polylock::Client;
use tokio::process::Command;

use crate::exit;

#[derive(Args)]
pub struct DemoArgs {
    /// How many worker processes contend
    #[arg(long, default_value_t = 8)]
    workers: u32,
    /// How many increments each worker makes
    #[arg(long, default_value_t = 500)]
    iterations: u32,
    /// Name of the lock they contend for
    #[arg(long, default_value = "polylock-demo")]
    lock: String,
}

#[derive(Args)]
pub struct WorkerArgs {
    #[arg(long)]
    dir: PathBuf,
    #[arg(long)]
    index: u32,
    #[arg(long)]
    iterations: u32,
    #[arg(long)]
    lock: String,
}

/// One hold as a worker saw it: fencing token, and monotonic-clock nanoseconds (one clock for
/// every process on the host) when the critical section started and ended.
#[derive(Debug, Clone, Copy)]
struct Hold {
    token: u64,
    start_ns: u64,
    end_ns: u64,
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn counter_path(dir: &Path) -> PathBuf {
    dir.join("counter")
}

fn read_counter(dir: &Path) -> u64 {
    fs::read_to_string(counter_path(dir)).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
}

pub async fn demo(url: &str, args: DemoArgs) -> u8 {
    if args.workers == 0 || args.iterations == 0 {
        return exit::fail(&polylock::Error::invalid_argument("--workers and --iterations must be at least 1"));
    }
    // Connect once up front so that a bad URL fails here, clearly, and not in 8 workers.
    match Client::connect(url).await {
        Ok(client) => client.close().await,
        Err(err) => return exit::fail(&err),
    }
    let dir = match tempdir() {
        Ok(dir) => dir,
        Err(err) => {
            eprintln!("polylock: cannot create a scratch directory: {err}");
            return exit::SOFTWARE;
        }
    };
    let code = run_demo(url, &args, &dir).await;
    let _ = fs::remove_dir_all(&dir);
    code
}

async fn run_demo(url: &str, args: &DemoArgs, dir: &Path) -> u8 {
    let expected = u64::from(args.workers) * u64::from(args.iterations);
    println!(
        "polylock demo: {} worker processes x {} increments under lock '{}' on {}",
        args.workers,
        args.iterations,
        args.lock,
        polylock::url::redact(url)
    );
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(err) => {
            eprintln!("polylock: cannot find my own executable: {err}");
            return exit::SOFTWARE;
        }
    };
    let started = Instant::now();
    let mut children = Vec::new();
    for index in 0..args.workers {
        let child = Command::new(&exe)
            .arg("--url")
            .arg(url)
            .arg("demo-worker")
            .arg("--dir")
            .arg(dir)
            .arg("--index")
            .arg(index.to_string())
            .arg("--iterations")
            .arg(args.iterations.to_string())
            .arg("--lock")
            .arg(&args.lock)
            .kill_on_drop(true)
            .spawn();
        match child {
            Ok(child) => children.push(child),
            Err(err) => {
                eprintln!("polylock: cannot start worker {index}: {err}");
                return exit::SOFTWARE;
            }
        }
    }
    let mut failed_workers = 0;
    {
        let progress = Progress::new(expected);
        let waits = async {
            for child in &mut children {
                if !child.wait().await.map(|s| s.success()).unwrap_or(false) {
                    failed_workers += 1;
                }
            }
        };
        tokio::pin!(waits);
        let mut tick = tokio::time::interval(progress.period());
        loop {
            tokio::select! {
                _ = &mut waits => break,
                _ = tick.tick() => progress.show(read_counter(dir), started.elapsed()),
            }
        }
        progress.finish();
    }
    let elapsed = started.elapsed();
    let actual = read_counter(dir);
    let holds = match read_ledgers(dir, args.workers) {
        Ok(holds) => holds,
        Err(err) => {
            eprintln!("polylock: cannot read the workers' ledgers: {err}");
            return exit::SOFTWARE;
        }
    };
    let check = check_ledger(&holds);
    println!("expected count:          {expected}");
    println!("actual count:            {actual}");
    println!("fencing-token overlaps:  {}", check.overlaps);
    println!("fencing-token inversions: {}", check.inversions);
    println!(
        "acquisitions per second: {:.0} ({} in {:.2}s)",
        holds.len() as f64 / elapsed.as_secs_f64(),
        holds.len(),
        elapsed.as_secs_f64()
    );
    let ok = failed_workers == 0 && actual == expected && holds.len() as u64 == expected && check.is_clean();
    if ok {
        println!("result: OK, every increment survived and no two holders overlapped");
        0
    } else {
        println!("result: FAILED ({failed_workers} workers failed)");
        1
    }
}

pub async fn worker(url: &str, args: WorkerArgs) -> u8 {
    let client = match Client::connect(url).await {
        Ok(client) => client,
        Err(err) => return exit::fail(&err),
    };
    let lock = match client.lock(&args.lock) {
        Ok(lock) => lock,
        Err(err) => return exit::fail(&err),
    };
    let mut ledger = String::new();
    for _ in 0..args.iterations {
        let guard = match lock.acquire().await {
            Ok(guard) => guard,
            Err(err) => return exit::fail(&err),
        };
        let start_ns = monotonic_ns();
        // The unprotected read-modify-write that the lock makes safe.
        let next = read_counter(&args.dir) + 1;
        if let Err(err) = fs::write(counter_path(&args.dir), next.to_string()) {
            eprintln!("polylock: worker {} cannot write the counter: {err}", args.index);
            return exit::SOFTWARE;
        }
        let end_ns = monotonic_ns();
        let _ = writeln!(ledger, "{} {start_ns} {end_ns}", guard.fencing_token());
        if let Err(err) = guard.release().await {
            return exit::fail(&err);
        }
    }
    client.close().await;
    match fs::write(args.dir.join(format!("ledger-{}", args.index)), ledger) {
        Ok(()) => 0,
        Err(err) => {
            eprintln!("polylock: worker {} cannot write its ledger: {err}", args.index);
            exit::SOFTWARE
        }
    }
}

fn read_ledgers(dir: &Path, workers: u32) -> std::io::Result<Vec<Hold>> {
    let mut holds = Vec::new();
    for index in 0..workers {
        let text = fs::read_to_string(dir.join(format!("ledger-{index}"))).unwrap_or_default();
        for line in text.lines() {
            let fields: Vec<u64> = line.split(' ').filter_map(|f| f.parse().ok()).collect();
            if let [token, start_ns, end_ns] = fields[..] {
                holds.push(Hold { token, start_ns, end_ns });
            } else {
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("bad ledger line '{line}'")));
            }
        }
    }
    Ok(holds)
}

#[derive(Debug, Default, PartialEq, Eq)]
struct LedgerCheck {
    /// Holds that began before the previous hold (in time) ended.
    overlaps: usize,
    /// Holds whose token is not greater than the token of the hold before them in time.
    inversions: usize,
}

impl LedgerCheck {
    fn is_clean(&self) -> bool {
        self.overlaps == 0 && self.inversions == 0
    }
}

fn check_ledger(holds: &[Hold]) -> LedgerCheck {
    let mut by_time = holds.to_vec();
    by_time.sort_by_key(|h| (h.start_ns, h.token));
    let mut check = LedgerCheck::default();
    for pair in by_time.windows(2) {
        if pair[1].start_ns < pair[0].end_ns {
            check.overlaps += 1;
        }
        if pair[1].token <= pair[0].token {
            check.inversions += 1;
        }
    }
    check
}

/// A progress line: redrawn in place on a terminal, one line a second otherwise.
struct Progress {
    expected: u64,
    terminal: bool,
}

impl Progress {
    fn new(expected: u64) -> Self {
        Progress { expected, terminal: std::io::stderr().is_terminal() }
    }

    fn period(&self) -> Duration {
        if self.terminal {
            Duration::from_millis(200)
        } else {
            Duration::from_secs(1)
        }
    }

    fn show(&self, done: u64, elapsed: Duration) {
        let rate = done as f64 / elapsed.as_secs_f64().max(1e-3);
        let line = format!(
            "progress: {done}/{} increments ({:.0}%), {rate:.0} acquisitions/s",
            self.expected,
            100.0 * done as f64 / self.expected as f64
        );
        if self.terminal {
            eprint!("\r{line}   ");
        } else if done > 0 {
            eprintln!("{line}");
        }
    }

    fn finish(&self) {
        if self.terminal {
            eprintln!();
        }
    }
}

fn tempdir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("polylock-demo-{}-{}", std::process::id(), monotonic_ns()));
    fs::create_dir(&dir)?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(token: u64, start_ns: u64, end_ns: u64) -> Hold {
        Hold { token, start_ns, end_ns }
    }

    #[test]
    fn a_clean_ledger_passes() {
        let holds = [hold(1, 0, 10), hold(2, 10, 20), hold(5, 25, 30)];
        assert!(check_ledger(&holds).is_clean());
    }

    #[test]
    fn overlaps_and_inversions_are_counted() {
        let overlapping = [hold(1, 0, 10), hold(2, 5, 20)];
        assert_eq!(check_ledger(&overlapping), LedgerCheck { overlaps: 1, inversions: 0 });
        let inverted = [hold(2, 0, 10), hold(1, 11, 20)];
        assert_eq!(check_ledger(&inverted), LedgerCheck { overlaps: 0, inversions: 1 });
    }
}
