//! Section 3: polylock on Redis beside what Python and Node services use today, redis-py's
//! `Lock` and node-redlock, in one run on one redis-server, with the server's own ceiling
//! for scale:
//!
//! - ceiling: redis-benchmark's rate of pipelined Redisson-style acquire scripts;
//! - uncontended: lock+unlock pairs/s, [`UNCONTENDED_WORKERS`] workers on a name each;
//! - contended: [`contended::WORKERS`] workers on one name: utilisation, hand-over latency,
//!   and each worker's share, from every side's timeline of holds by the same function.
//!
//! Keys live under `polylock-bench:<pid>:` and are deleted at the end.

mod ceiling;
pub(crate) mod contended;
mod peers;
mod read_locks;
mod server;

use std::sync::Arc;
use std::time::Duration;

use polylock::LockKind;

use self::contended::ContendedStats;
use self::peers::{Peer, PeerEnvs, PeerInfo};
pub use self::server::RedisTarget;
use crate::locks::tasks_on_own_names;
use crate::polylock_side::{PolylockSide, LEASE};
use crate::report::{count, line, millis, percent, rate, ratio, versus};
use crate::Result;

const SECTION: &str = "redis";
/// Workers in the uncontended workload, each on its own name.
pub const UNCONTENDED_WORKERS: usize = 64;
/// Where the section looks for a server unless told otherwise.
pub const DEFAULT_URL: &str = "redis://127.0.0.1:16379";
/// How long the first look at the server may take before the section is skipped.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// `$POLYLOCK_TEST_REDIS_URL` (set by tests/services/services.sh env), else [`DEFAULT_URL`].
pub fn default_url() -> String {
    std::env::var("POLYLOCK_TEST_REDIS_URL").ok().filter(|url| !url.is_empty()).unwrap_or_else(|| DEFAULT_URL.into())
}

/// How long each kind of figure is measured.
#[derive(Debug, Clone, Copy)]
pub struct RedisBudget {
    /// Acquire scripts redis-benchmark sends for the ceiling.
    pub ceiling_requests: u64,
    /// Each uncontended figure.
    pub uncontended: Duration,
    /// Each contended figure.
    pub contended: Duration,
}

/// Measure and print section 3, or print why it was skipped when no server answers.
pub fn run(budget: RedisBudget, target: &RedisTarget) -> Result<()> {
    let mut connection = match target.connect(PROBE_TIMEOUT) {
        Ok(connection) => connection,
        Err(err) => {
            let advice = "start one with tests/services/services.sh start redis, or pass --url";
            println!("{SECTION:<10} skipped: no redis answers at {} ({err}); {advice}", target.shown());
            return Ok(());
        }
    };
    let prefix = format!("polylock-bench:{}", std::process::id());
    let mut section = Section::start(budget, target, &prefix)?;
    section.ceiling(&mut connection);
    section.uncontended();
    section.read_locks();
    section.contended();
    let failures = section.finish();
    // Locks are gone once released; fencing counters and the ceiling's locks are not.
    let cleanup = target
        .connect(PROBE_TIMEOUT)
        .and_then(|mut fresh| server::delete_matching(&mut fresh, &format!("*{prefix}:*")));
    if let Err(err) = cleanup {
        println!("# {SECTION}: could not delete this run's keys ({prefix}:*): {err}");
    }
    match failures.as_slice() {
        [] => Ok(()),
        [only] => Err(only.clone().into()),
        [first, rest @ ..] => Err(format!("{first} (and {} more failures above)", rest.len()).into()),
    }
}

/// One run of the section: what it needs, and what it has found so far.
struct Section<'a> {
    budget: RedisBudget,
    target: &'a RedisTarget,
    prefix: &'a str,
    runtime: tokio::runtime::Runtime,
    /// `None` when this build of polylock cannot reach Redis (said once, not a failure).
    polylock: Option<PolylockSide>,
    envs: PeerEnvs,
    pair_ceiling: Option<f64>,
    /// Peers whose versions and settings have been printed.
    described: Vec<Peer>,
    /// Figures that could not be measured, each already printed on its line.
    failures: Vec<String>,
}

impl<'a> Section<'a> {
    fn start(budget: RedisBudget, target: &'a RedisTarget, prefix: &'a str) -> Result<Self> {
        println!(
            "# {SECTION}: polylock beside redis-py's Lock and node-redlock, all on {}; ceiling = redis-benchmark \
             pipelining a Redisson-style acquire script (EVALSHA, -P {} -c {}, {} requests), halved for lock+unlock \
             pairs; uncontended = lock+unlock pairs/s, {UNCONTENDED_WORKERS} workers on a name each, {} s; \
             contended = {} workers on one name, each: acquire, hold {} ms, release, {} ms outside, {} s",
            target.shown(),
            ceiling::PIPELINE,
            ceiling::CLIENTS,
            count(budget.ceiling_requests as f64),
            budget.uncontended.as_secs_f64(),
            contended::WORKERS,
            contended::HOLD.as_millis(),
            contended::OUTSIDE.as_millis(),
            budget.contended.as_secs_f64(),
        );
        let envs = PeerEnvs::prepare()?;
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        let polylock = match runtime.block_on(PolylockSide::connect(target.url())) {
            Ok(side) => {
                let settings = format!(
                    "polylock {}: Client on {}, reentrant locks, lease {} s or the watchdog (lease {} s, renewed \
                     every third); each worker its own Lock handle (owner); waiters woken by pub/sub",
                    env!("CARGO_PKG_VERSION"),
                    target.shown(),
                    LEASE.as_secs(),
                    polylock::DEFAULT_WATCHDOG_LEASE.as_secs()
                );
                line(SECTION, "settings", &[settings]);
                Some(side)
            }
            Err(err) => {
                println!("{SECTION:<10} polylock: redis backend not available: {err}");
                None
            }
        };
        Ok(Section {
            budget,
            target,
            prefix,
            runtime,
            polylock,
            envs,
            pair_ceiling: None,
            described: Vec::new(),
            failures: Vec::new(),
        })
    }

    /// The measurement's value, or its error printed on `label`'s line and kept for the end.
    fn record<T>(&mut self, label: &str, who: &str, result: Result<T>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(err) => {
                line(SECTION, label, &[format!("{who} failed: {err}")]);
                self.failures.push(format!("{SECTION} {label}, {who}: {err}"));
                None
            }
        }
    }

    /// Print a peer's versions and settings the first time it reports.
    fn describe(&mut self, peer: Peer, info: &PeerInfo) {
        if !self.described.contains(&peer) {
            self.described.push(peer);
            line(SECTION, "settings", &[format!("{}: {}; {}", peer.name(), info.version, info.settings)]);
        }
    }

    /// A polylock side for `lease` (`None`: the watchdog), if polylock reaches Redis.
    fn polylock_side(&self, lease: Option<Duration>) -> Option<Arc<PolylockSide>> {
        self.polylock.as_ref().map(|side| Arc::new(side.with(LockKind::Reentrant, lease)))
    }

    fn ceiling(&mut self, connection: &mut ::redis::Connection) {
        let label = "ceiling";
        let measured = ceiling::measure(self.target, connection, self.prefix, self.budget.ceiling_requests);
        let Some(ceiling) = self.record(label, "redis-benchmark", measured) else { return };
        self.pair_ceiling = Some(ceiling.pairs_per_sec());
        let cells = [
            rate("redis-benchmark EVALSHA acquire", ceiling.acquires_per_sec, "ops/s"),
            rate("pair ceiling (÷2)", ceiling.pairs_per_sec(), "pairs/s"),
        ];
        line(SECTION, label, &cells);
    }

    fn of_pair_ceiling(&self, pairs_per_sec: f64) -> String {
        format!("{} pair ceiling", ratio(pairs_per_sec / self.pair_ceiling.unwrap_or(f64::NAN)))
    }

    fn uncontended(&mut self) {
        let label = format!("{UNCONTENDED_WORKERS} workers, a name each");
        let budget = self.budget.uncontended;
        let mut polylock = Vec::new();
        for (who, lease) in [("polylock lease 30s", Some(LEASE)), ("polylock watchdog", None)] {
            let Some(side) = self.polylock_side(lease) else { continue };
            let key = who.replace(' ', "-");
            let names = (0..UNCONTENDED_WORKERS).map(|i| format!("{}:uncontended:{key}:{i}", self.prefix));
            let measured = self.runtime.block_on(tasks_on_own_names(side, names, budget));
            let Some(result) = self.record(&label, who, measured) else { continue };
            line(SECTION, &label, &[rate(who, result.per_sec(), "pairs/s"), self.of_pair_ceiling(result.per_sec())]);
            polylock.push((who, result.per_sec()));
        }
        for peer in Peer::ALL {
            let prefix = format!("{}:uncontended:{}", self.prefix, peer.name());
            let measured = self.envs.uncontended(peer, self.target, &prefix, UNCONTENDED_WORKERS, budget);
            let Some((info, result)) = self.record(&label, peer.name(), measured) else { continue };
            self.describe(peer, &info);
            let peer_rate = result.per_sec();
            let mut cells = vec![rate(peer.name(), peer_rate, "pairs/s"), self.of_pair_ceiling(peer_rate)];
            cells.push(match polylock.as_slice() {
                [] => versus("polylock", peer.name(), f64::NAN, peer_rate),
                [(_, lease_rate), others @ ..] => {
                    let mut cell = versus("polylock", peer.name(), *lease_rate, peer_rate);
                    for (who, rate) in others {
                        let setting = who.trim_start_matches("polylock ");
                        cell.push_str(&format!(" ({setting} {})", ratio(rate / peer_rate)));
                    }
                    cell
                }
            });
            line(SECTION, &label, &cells);
        }
    }

    fn contended(&mut self) {
        let label = format!("{} workers, one name", contended::WORKERS);
        let budget = self.budget.contended;
        let mut polylock = None;
        if let Some(side) = self.polylock_side(Some(LEASE)) {
            let name = format!("{}:contended:polylock", self.prefix);
            let measured = self.runtime.block_on(contended::on_one_name(side, &name, budget));
            if let Some(timeline) = self.record(&label, "polylock", measured) {
                let stats = ContendedStats::of(&timeline);
                line(SECTION, &label, &contended_cells("polylock", &stats));
                polylock = Some(stats);
            }
        }
        for peer in Peer::ALL {
            let name = format!("{}:contended:{}", self.prefix, peer.name());
            let measured = self.envs.contended(peer, self.target, &name, contended::WORKERS, budget);
            let Some((info, timeline)) = self.record(&label, peer.name(), measured) else { continue };
            self.describe(peer, &info);
            let stats = ContendedStats::of(&timeline);
            let mut cells = contended_cells(peer.name(), &stats);
            let (our_utilisation, our_rate) = match &polylock {
                Some(ours) => (ours.utilisation(), ours.holds.per_sec()),
                None => (f64::NAN, f64::NAN),
            };
            cells.push(format!(
                "{} utilisation, {} holds/s",
                versus("polylock", peer.name(), our_utilisation, stats.utilisation()),
                ratio(our_rate / stats.holds.per_sec())
            ));
            line(SECTION, &label, &cells);
        }
    }

    fn finish(self) -> Vec<String> {
        if let Some(side) = &self.polylock {
            self.runtime.block_on(side.close());
        }
        println!("# {SECTION}: peers' environments are cached in {}", self.envs.cache().display());
        self.failures
    }
}

/// One side's contended figures, in the same order for every side.
fn contended_cells(who: &str, stats: &ContendedStats) -> Vec<String> {
    let (min, max) = stats.holds.share_range();
    let latency = |value: Option<Duration>| value.map(millis).unwrap_or_else(|| "n/a".into());
    let mut cells = vec![
        format!("{who} utilisation {}", percent(stats.utilisation())),
        format!("handoff p50 {} p99 {}", latency(stats.handoff_p50), latency(stats.handoff_p99)),
        format!(
            "share min {} max {} (fair {})",
            percent(min),
            percent(max),
            percent(1.0 / stats.holds.per_worker.len().max(1) as f64)
        ),
        format!("{} holds/s, mean hold {}", count(stats.holds.per_sec()), millis(stats.mean_hold())),
    ];
    if stats.overlaps > 0 {
        cells.push(format!("OVERLAPPING HOLDS: {} began before the previous holder released", stats.overlaps));
    }
    cells
}

#[cfg(test)]
mod tests {
    use super::contended::Timeline;
    use super::*;

    #[test]
    fn contended_cells_read_well() {
        let timeline =
            Timeline::from_flat(vec![vec![0, 1_000_000, 1_500_000, 2_500_000]], Duration::from_millis(4)).unwrap();
        let cells = contended_cells("polylock", &ContendedStats::of(&timeline));
        assert_eq!(cells[0], "polylock utilisation 50.0%");
        assert_eq!(cells[1], "handoff p50 0.500 ms p99 0.500 ms");
        assert_eq!(cells[2], "share min 100.0% max 100.0% (fair 100.0%)");
        assert_eq!(cells[3], "500 holds/s, mean hold 1.00 ms");
    }
}
