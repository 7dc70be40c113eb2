//! Rust side of the binding's benchmark: the same workload as bench/bench_pairs.c, on the
//! `polylock` core crate directly (no FFI), so bench.sh can print the C/Rust ratio.
//!
//!   cargo run --release -p polylock-c --example rust_pairs -- URL THREADS SECONDS LEASE_MS [MODE]
//!
//! THREADS workers share one client on a runtime shaped like the binding's (2 workers);
//! worker i loops acquire(wait forever, LEASE_MS) + release on its own name until a common
//! deadline, after a short warm-up. LEASE_MS 0 means the watchdog. MODE:
//!   task      (default) each worker is a tokio task: how a Rust program uses the core.
//!   block_on  each worker is an OS thread calling `Runtime::block_on` once per call, as the
//!             C binding does; the gap to `task` is the cost of hopping onto the runtime,
//!             the gap to C is the FFI boundary itself.
//! Prints one line: pairs_per_sec=<float> pairs=<n> threads=<t>

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use polylock::{AcquireOptions, Client, Lock, Result};

const WARMUP: Duration = Duration::from_millis(300);

/// One worker's count and the span it measured.
type Span = (u64, Instant, Instant);

async fn pair(lock: &Lock, options: AcquireOptions) -> Result<()> {
    lock.acquire_with(options).await?.release().await
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 && args.len() != 6 {
        eprintln!("usage: {} URL THREADS SECONDS LEASE_MS [task|block_on]", args[0]);
        std::process::exit(2);
    }
    let url = args[1].clone();
    let workers: usize = args[2].parse().expect("THREADS is a number");
    let seconds = Duration::from_secs_f64(args[3].parse().expect("SECONDS is a number"));
    let lease_ms: u64 = args[4].parse().expect("LEASE_MS is a number");
    let mode = args.get(5).map_or("task", String::as_str).to_owned();
    let options = AcquireOptions { wait: None, lease: (lease_ms > 0).then(|| Duration::from_millis(lease_ms)) };
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a tokio runtime");

    let run = || -> Result<Vec<Span>> {
        let client = runtime.block_on(Client::connect(&url))?;
        let locks = (0..workers)
            .map(|index| client.lock(&format!("bench:rust:{}:{index}", std::process::id())))
            .collect::<Result<Vec<Lock>>>()?;
        let spans = match mode.as_str() {
            "task" => runtime.block_on(async {
                let barrier = Arc::new(tokio::sync::Barrier::new(workers));
                let handles: Vec<_> = locks
                    .into_iter()
                    .map(|lock| {
                        let barrier = barrier.clone();
                        tokio::spawn(async move {
                            let warm_until = Instant::now() + WARMUP;
                            while Instant::now() < warm_until {
                                pair(&lock, options).await?;
                            }
                            barrier.wait().await;
                            let (started, mut pairs) = (Instant::now(), 0);
                            while Instant::now() < started + seconds {
                                pair(&lock, options).await?;
                                pairs += 1;
                            }
                            Ok::<Span, polylock::Error>((pairs, started, Instant::now()))
                        })
                    })
                    .collect();
                let mut spans = Vec::new();
                for handle in handles {
                    spans.push(handle.await.expect("bench task panicked")?);
                }
                Ok::<_, polylock::Error>(spans)
            })?,
            "block_on" => {
                let barrier = Barrier::new(workers);
                std::thread::scope(|scope| {
                    let handles: Vec<_> = locks
                        .iter()
                        .map(|lock| {
                            let (runtime, barrier) = (&runtime, &barrier);
                            scope.spawn(move || {
                                let warm_until = Instant::now() + WARMUP;
                                while Instant::now() < warm_until {
                                    runtime.block_on(lock.acquire_with(options))?.detach();
                                    runtime.block_on(lock.release())?;
                                }
                                barrier.wait();
                                let (started, mut pairs) = (Instant::now(), 0);
                                while Instant::now() < started + seconds {
                                    // Two block_on calls per pair, as polylock_lock_acquire
                                    // and polylock_lock_release make.
                                    runtime.block_on(lock.acquire_with(options))?.detach();
                                    runtime.block_on(lock.release())?;
                                    pairs += 1;
                                }
                                Ok::<Span, polylock::Error>((pairs, started, Instant::now()))
                            })
                        })
                        .collect();
                    handles.into_iter().map(|h| h.join().expect("bench thread panicked")).collect::<Result<Vec<_>>>()
                })?
            }
            other => {
                eprintln!("rust_pairs: unknown mode {other}");
                std::process::exit(2);
            }
        };
        runtime.block_on(client.close());
        Ok(spans)
    };
    match run() {
        Ok(spans) => {
            let pairs: u64 = spans.iter().map(|s| s.0).sum();
            let first = spans.iter().map(|s| s.1).min().expect("at least one worker");
            let last = spans.iter().map(|s| s.2).max().expect("at least one worker");
            let wall = last.duration_since(first).as_secs_f64();
            println!("pairs_per_sec={:.1} pairs={pairs} threads={workers}", pairs as f64 / wall);
        }
        Err(err) => {
            eprintln!("rust_pairs: {err}");
            std::process::exit(1);
        }
    }
}
