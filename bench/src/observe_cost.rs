//! What observing costs: lock+unlock pairs per second on mem:// and sqlite:// in one task
//! (a current-thread runtime, so a thread-local subscriber sees every event), with tracing
//! and metrics off, then with each switched on, as ratios to the plain run.
//!
//! Rows: `bare` (no subscriber, counting off: the floor); `metrics` (counting on, the
//! default); `tracing warn` (a subscriber that keeps warnings only, as `-v` is not given: the
//! events are filtered at their call sites); `tracing debug` (every event formatted as JSON
//! into a sink, the most a subscriber does short of I/O); then the bindings' log bridge
//! (`kit::log_bridge`) installed with its level off, and at debug with every record turned
//! into the line a binding hands on. Figures, not asserts.

use std::time::{Duration, Instant};

use polylock::{AcquireOptions, Client};
use tracing::level_filters::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::Layer;

use crate::report::{count, line, ratio};
use crate::Result;

const SECTION: &str = "observe";

pub fn run(budget: Duration) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let sqlite = format!("sqlite://{}", dir.path().join("observe.db").display());
    let backends = [("mem", "mem://bench-observe".to_string()), ("sqlite", sqlite)];
    let mut bares = Vec::new();
    for (backend, url) in &backends {
        let bare = measure(url, budget, false, None)?;
        bares.push(bare);
        let url = url.as_str();
        let rows = [
            ("metrics", measure(url, budget, true, None)?),
            ("tracing warn", measure(url, budget, false, Some(LevelFilter::WARN))?),
            ("tracing debug", measure(url, budget, false, Some(LevelFilter::DEBUG))?),
            ("metrics + tracing debug", measure(url, budget, true, Some(LevelFilter::DEBUG))?),
        ];
        line(SECTION, &format!("{backend} bare"), &[format!("{} pairs/s", count(bare))]);
        for (label, rate) in rows {
            line(
                SECTION,
                &format!("{backend} {label}"),
                &[format!("{} pairs/s", count(rate)), format!("{label}/bare {}", ratio(rate / bare))],
            );
        }
    }
    // Last, as it stays for the process: the bindings' log bridge (kit::log_bridge) with its
    // sink routed but the level off (a binding's default where logs are off: Node, C, Ruby),
    // then at debug with every record written as a line, as a binding hands it on.
    let sink: polylock::kit::log_bridge::LogSink = std::sync::Arc::new(|record| {
        std::hint::black_box(record.line());
    });
    polylock::kit::log_bridge::route(sink, None)?;
    for ((backend, url), bare) in backends.iter().zip(bares) {
        let off = measure(url, budget, false, None)?;
        polylock::kit::log_bridge::set_level(Some(polylock::kit::log_bridge::LogLevel::Debug));
        let debug = measure(url, budget, false, None)?;
        polylock::kit::log_bridge::set_level(None);
        for (label, rate) in [("binding log bridge off", off), ("binding log bridge debug", debug)] {
            line(
                SECTION,
                &format!("{backend} {label}"),
                &[format!("{} pairs/s", count(rate)), format!("{label}/bare {}", ratio(rate / bare))],
            );
        }
    }
    polylock::kit::log_bridge::unroute();
    polylock::metrics::set_enabled(true);
    Ok(())
}

/// Pairs per second in one task for `budget`, with counting `metrics` and a subscriber at
/// `tracing` (none if `None`) on this thread.
fn measure(url: &str, budget: Duration, metrics: bool, tracing: Option<LevelFilter>) -> Result<f64> {
    polylock::metrics::set_enabled(metrics);
    let _guard = tracing.map(|level| {
        let layer = tracing_subscriber::fmt::layer().json().with_writer(std::io::sink).with_filter(level);
        tracing::subscriber::set_default(tracing_subscriber::registry().with(layer))
    });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let client = Client::connect(url).await?;
        let lock = client.lock("observe-cost")?;
        let options = AcquireOptions::default().lease(Duration::from_secs(30));
        // Warm up: the first pairs open files and fill caches.
        for _ in 0..100 {
            lock.acquire_with(options).await?.release().await?;
        }
        let started = Instant::now();
        let mut pairs = 0u64;
        while started.elapsed() < budget {
            for _ in 0..32 {
                lock.acquire_with(options).await?.release().await?;
            }
            pairs += 32;
        }
        let rate = pairs as f64 / started.elapsed().as_secs_f64();
        client.close().await;
        Ok(rate)
    })
}
