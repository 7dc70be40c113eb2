//! What polylock counts, for operators: acquisitions and their wait, hold times, renewals and
//! how late they ran, losses by reason, and backend errors by [`ErrorKind`], labelled by the
//! backend's URL scheme and the kind of hold (`reentrant`, `fair`, `token`, `lease`, `read`,
//! `write`, `semaphore`).
//!
//! No exporter here: [`snapshot`] returns plain numbers every binding can hand out, and
//! [`render_prometheus`] writes Prometheus' text format once for the CLI's `serve-metrics`
//! and for bindings that serve it themselves. Counting costs a few relaxed atomic adds per
//! operation whether or not anyone reads; reading takes one lock over the list of series.
//!
//! Two views of the same counts: the process-wide one ([`snapshot`], every client summed by
//! label) and each client's own (`Client::metrics`).
//!
//! A leaf: it imports nothing of the crate but the error table.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::error::ErrorKind;

/// The upper bounds of every histogram's buckets, in seconds (Prometheus' `le`), beside the
/// implicit `+Inf`: from a tenth of a millisecond (a mem:// or SQLite grant) to a minute.
pub const BUCKETS_SECONDS: [f64; 18] =
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

/// The same bounds in microseconds, as observations are kept.
const BUCKETS_MICROS: [u64; 18] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000,
    5_000_000, 10_000_000, 30_000_000, 60_000_000,
];

/// Why holds are lost, as labels (the variants of `LostReason`, in snake case).
pub const LOST_REASONS: [&str; 5] = ["lease_expired", "taken", "renewal_failed", "session_ended", "client_closed"];

/// How acquisitions end, as labels.
pub const ACQUIRE_OUTCOMES: [&str; 5] = ["acquired", "reentered", "timeout", "error", "cancelled"];

/// A duration in milliseconds to the microsecond, as log fields show it.
pub(crate) fn millis(duration: Duration) -> f64 {
    duration.as_micros() as f64 / 1e3
}

/// How one acquisition ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Acquired = 0,
    Reentered = 1,
    Timeout = 2,
    Error = 3,
    Cancelled = 4,
}

impl Outcome {
    pub fn label(self) -> &'static str {
        ACQUIRE_OUTCOMES[self as usize]
    }
}

/// A histogram of fixed buckets: a count per bucket, the sum and the count.
#[derive(Default)]
struct Histogram {
    buckets: [AtomicU64; BUCKETS_MICROS.len() + 1],
    sum_micros: AtomicU64,
}

impl Histogram {
    fn observe(&self, value: Duration) {
        let micros = u64::try_from(value.as_micros()).unwrap_or(u64::MAX);
        let bucket = BUCKETS_MICROS.partition_point(|&bound| bound < micros);
        self.buckets[bucket].fetch_add(1, Relaxed);
        self.sum_micros.fetch_add(micros, Relaxed);
    }

    fn read(&self) -> HistogramSnapshot {
        let buckets: Vec<u64> = self.buckets.iter().map(|b| b.load(Relaxed)).collect();
        HistogramSnapshot {
            count: buckets.iter().sum(),
            sum_seconds: self.sum_micros.load(Relaxed) as f64 / 1e6,
            buckets,
        }
    }
}

/// The counters of one (backend, kind) label pair.
#[derive(Default)]
struct Counts {
    acquires: [AtomicU64; ACQUIRE_OUTCOMES.len()],
    acquire_wait: Histogram,
    hold_time: Histogram,
    releases: AtomicU64,
    renewals: AtomicU64,
    renewal_failures: AtomicU64,
    renewal_lateness: Histogram,
    lost: [AtomicU64; LOST_REASONS.len()],
    errors: [AtomicU64; ErrorKind::ALL.len()],
}

impl Counts {
    fn read(&self, backend: &str, kind: &str) -> SeriesSnapshot {
        let load = |counters: &[AtomicU64]| counters.iter().map(|c| c.load(Relaxed)).collect::<Vec<_>>();
        SeriesSnapshot {
            backend: backend.to_string(),
            kind: kind.to_string(),
            acquires: ACQUIRE_OUTCOMES.iter().map(|o| o.to_string()).zip(load(&self.acquires)).collect(),
            acquire_wait: self.acquire_wait.read(),
            hold_time: self.hold_time.read(),
            releases: self.releases.load(Relaxed),
            renewals: self.renewals.load(Relaxed),
            renewal_failures: self.renewal_failures.load(Relaxed),
            renewal_lateness: self.renewal_lateness.read(),
            lost: LOST_REASONS.iter().map(|r| r.to_string()).zip(load(&self.lost)).collect(),
            errors: ErrorKind::ALL.iter().map(|k| k.as_str().to_string()).zip(load(&self.errors)).collect(),
        }
    }
}

/// The counters of one backend (connections), by scheme.
#[derive(Default)]
struct BackendCounts {
    connects: AtomicU64,
    connect_failures: AtomicU64,
    reconnects: AtomicU64,
    failovers: AtomicU64,
}

/// Where one client's operations on one (backend, kind) are counted: its own counters and
/// the process-wide ones of the same labels. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Series {
    own: Arc<Counts>,
    all: Arc<Counts>,
}

impl Series {
    fn both(&self, each: impl Fn(&Counts)) {
        if !ENABLED.load(Relaxed) {
            return;
        }
        each(&self.own);
        each(&self.all);
    }

    pub fn acquire(&self, outcome: Outcome, waited: Duration) {
        self.both(|c| {
            c.acquires[outcome as usize].fetch_add(1, Relaxed);
            if matches!(outcome, Outcome::Acquired) {
                c.acquire_wait.observe(waited);
            }
        });
    }

    pub fn release(&self, held: Option<Duration>) {
        self.both(|c| {
            c.releases.fetch_add(1, Relaxed);
            if let Some(held) = held {
                c.hold_time.observe(held);
            }
        });
    }

    pub fn renewal(&self, lateness: Duration) {
        self.both(|c| {
            c.renewals.fetch_add(1, Relaxed);
            c.renewal_lateness.observe(lateness);
        });
    }

    pub fn renewal_failed(&self) {
        self.both(|c| {
            c.renewal_failures.fetch_add(1, Relaxed);
        });
    }

    /// `reason` is one of [`LOST_REASONS`].
    pub fn lost(&self, reason: &str) {
        let index = LOST_REASONS.iter().position(|r| *r == reason).unwrap_or(LOST_REASONS.len() - 1);
        self.both(|c| {
            c.lost[index].fetch_add(1, Relaxed);
        });
    }

    pub fn error(&self, kind: ErrorKind) {
        let index = ErrorKind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
        self.both(|c| {
            c.errors[index].fetch_add(1, Relaxed);
        });
    }
}

/// What a hold is of, as its events and counts name it: made once per handle, carried by the
/// hold's lost latch.
pub(crate) struct Subject {
    pub name: Arc<str>,
    /// The URL scheme.
    pub backend: Arc<str>,
    pub kind: &'static str,
    pub series: Series,
}

impl std::fmt::Debug for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subject")
            .field("name", &self.name)
            .field("backend", &self.backend)
            .field("kind", &self.kind)
            .finish()
    }
}

/// One client's series, by kind, made when it connects.
pub(crate) struct ClientMetrics {
    backend: String,
    series: Mutex<Vec<(&'static str, Series)>>,
    connection: Arc<BackendCounts>,
}

impl ClientMetrics {
    pub fn new(backend: &str) -> ClientMetrics {
        ClientMetrics {
            backend: backend.to_string(),
            series: Mutex::default(),
            connection: registry().backend(backend),
        }
    }

    /// The series of `kind` (a `HoldKind::metric_label`): looked up when a handle is made.
    pub fn series(&self, kind: &'static str) -> Series {
        let mut series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, found)) = series.iter().find(|(k, _)| *k == kind) {
            return found.clone();
        }
        let made = Series { own: Arc::default(), all: registry().counts(&self.backend, kind) };
        series.push((kind, made.clone()));
        made
    }

    /// This client's counts alone (its connection counters are the backend's, process-wide).
    pub fn snapshot(&self) -> Snapshot {
        let series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        Snapshot {
            series: series.iter().map(|(kind, s)| s.own.read(&self.backend, kind)).collect(),
            backends: vec![read_backend(&self.backend, &self.connection)],
        }
    }
}

/// Whether operations are counted: on unless [`set_enabled`] turned it off.
static ENABLED: AtomicBool = AtomicBool::new(true);

/// Turn the counting of operations on or off for the whole process (on by default). Off
/// leaves one relaxed load per operation; the counts read so far stay as they are.
pub fn set_enabled(enabled: bool) {
    ENABLED.store(enabled, Relaxed);
}

/// Whether operations are being counted (see [`set_enabled`]).
pub fn is_enabled() -> bool {
    ENABLED.load(Relaxed)
}

/// Count a connection made (or refused) to the backend of `scheme`.
pub(crate) fn connected(scheme: &str, ok: bool) {
    let counts = registry().backend(scheme);
    if ok { &counts.connects } else { &counts.connect_failures }.fetch_add(1, Relaxed);
}

/// Count a reconnection of a backend's session or connection (ZooKeeper, Redis).
#[cfg(any(feature = "redis", feature = "zookeeper"))]
pub(crate) fn reconnected(scheme: &str) {
    registry().backend(scheme).reconnects.fetch_add(1, Relaxed);
}

/// Count a fail-over: the backend found another server to talk to (Redis Sentinel's master).
#[cfg(feature = "redis")]
pub(crate) fn failed_over(scheme: &str) {
    registry().backend(scheme).failovers.fetch_add(1, Relaxed);
}

type Labelled<T> = Vec<(String, &'static str, Arc<T>)>;

#[derive(Default)]
struct Registry {
    counts: Mutex<Labelled<Counts>>,
    backends: Mutex<Vec<(String, Arc<BackendCounts>)>>,
}

impl Registry {
    fn counts(&self, backend: &str, kind: &'static str) -> Arc<Counts> {
        let mut all = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, found)) = all.iter().find(|(b, k, _)| b == backend && *k == kind) {
            return found.clone();
        }
        let made = Arc::<Counts>::default();
        all.push((backend.to_string(), kind, made.clone()));
        made
    }

    fn backend(&self, backend: &str) -> Arc<BackendCounts> {
        let mut all = self.backends.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, found)) = all.iter().find(|(b, _)| b == backend) {
            return found.clone();
        }
        let made = Arc::<BackendCounts>::default();
        all.push((backend.to_string(), made.clone()));
        made
    }
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Registry::default)
}

fn read_backend(backend: &str, counts: &BackendCounts) -> BackendSnapshot {
    BackendSnapshot {
        backend: backend.to_string(),
        connects: counts.connects.load(Relaxed),
        connect_failures: counts.connect_failures.load(Relaxed),
        reconnects: counts.reconnects.load(Relaxed),
        failovers: counts.failovers.load(Relaxed),
    }
}

/// Every count of this process, every client summed by label. Labels appear once something
/// of theirs was made (a client connected, a handle of that kind made), zeros included.
pub fn snapshot() -> Snapshot {
    let registry = registry();
    let mut series: Vec<SeriesSnapshot> = {
        let all = registry.counts.lock().unwrap_or_else(|e| e.into_inner());
        all.iter().map(|(backend, kind, counts)| counts.read(backend, kind)).collect()
    };
    series.sort_by(|a, b| (&a.backend, &a.kind).cmp(&(&b.backend, &b.kind)));
    let mut backends: Vec<BackendSnapshot> = {
        let all = registry.backends.lock().unwrap_or_else(|e| e.into_inner());
        all.iter().map(|(backend, counts)| read_backend(backend, counts)).collect()
    };
    backends.sort_by(|a, b| a.backend.cmp(&b.backend));
    Snapshot { series, backends }
}

/// [`snapshot`] in Prometheus' text exposition format (version 0.0.4).
pub fn prometheus_text() -> String {
    render_prometheus(&snapshot())
}

/// Counts at one moment. Plain data: every binding can copy it into its own types.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Snapshot {
    /// One per (backend, kind).
    pub series: Vec<SeriesSnapshot>,
    /// One per backend scheme.
    pub backends: Vec<BackendSnapshot>,
}

impl Snapshot {
    /// The series of `backend` and `kind`, if there is one.
    pub fn series(&self, backend: &str, kind: &str) -> Option<&SeriesSnapshot> {
        self.series.iter().find(|s| s.backend == backend && s.kind == kind)
    }

    /// The connection counts of `backend`, if there are any.
    pub fn backend(&self, backend: &str) -> Option<&BackendSnapshot> {
        self.backends.iter().find(|b| b.backend == backend)
    }
}

/// The counts of one (backend, kind).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SeriesSnapshot {
    /// The URL scheme: `mem`, `sqlite`, `redis`, `redis+cluster`, `etcd`, `zk`, `postgres`...
    pub backend: String,
    /// `reentrant`, `fair`, `token`, `lease`, `read`, `write` or `semaphore`.
    pub kind: String,
    /// Acquisitions by outcome ([`ACQUIRE_OUTCOMES`]): a reentry joins a hold the owner has.
    pub acquires: Vec<(String, u64)>,
    /// How long granted acquisitions waited (reentries excluded).
    pub acquire_wait: HistogramSnapshot,
    /// How long holds lasted, from the grant to the release that gave them back.
    pub hold_time: HistogramSnapshot,
    /// Releases that gave a hold back (the last of a reentrant hold's), lost or not.
    pub releases: u64,
    /// Watchdog renewals that succeeded.
    pub renewals: u64,
    /// Watchdog renewals that failed (retried until the lease runs out).
    pub renewal_failures: u64,
    /// How long after its due time each renewal went out (a third of the lease after the
    /// last one): a loaded runtime shows here before holds are lost.
    pub renewal_lateness: HistogramSnapshot,
    /// Holds lost, by reason ([`LOST_REASONS`]).
    pub lost: Vec<(String, u64)>,
    /// Errors of store calls (acquire, renew, release), by [`ErrorKind::as_str`].
    pub errors: Vec<(String, u64)>,
}

impl SeriesSnapshot {
    /// Acquisitions that ended with `outcome` (one of [`ACQUIRE_OUTCOMES`]).
    pub fn acquires(&self, outcome: &str) -> u64 {
        lookup(&self.acquires, outcome)
    }

    /// Holds lost for `reason` (one of [`LOST_REASONS`]).
    pub fn lost(&self, reason: &str) -> u64 {
        lookup(&self.lost, reason)
    }

    /// Store errors of `kind`.
    pub fn errors(&self, kind: ErrorKind) -> u64 {
        lookup(&self.errors, kind.as_str())
    }
}

fn lookup(pairs: &[(String, u64)], label: &str) -> u64 {
    pairs.iter().find(|(l, _)| l == label).map_or(0, |(_, n)| *n)
}

/// A histogram at one moment: `buckets[i]` counts the observations at most
/// `BUCKETS_SECONDS[i]` and above the bound before it; the last one those above a minute.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HistogramSnapshot {
    pub buckets: Vec<u64>,
    pub count: u64,
    pub sum_seconds: f64,
}

/// Connection counts of one backend scheme, process-wide.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BackendSnapshot {
    pub backend: String,
    /// Clients connected.
    pub connects: u64,
    /// Connections refused or failed (bad URL options included).
    pub connect_failures: u64,
    /// Sessions or connections re-established after a drop (ZooKeeper, Redis).
    pub reconnects: u64,
    /// Another server taken over (Redis Sentinel's new master).
    pub failovers: u64,
}

/// Which histogram or count of a series (or a backend) a family shows.
type HistogramOf = fn(&SeriesSnapshot) -> &HistogramSnapshot;
type CountOf = fn(&SeriesSnapshot) -> u64;
type BackendCountOf = fn(&BackendSnapshot) -> u64;

/// `snapshot` in Prometheus' text exposition format (version 0.0.4): every family with its
/// `# HELP` and `# TYPE`, counters ending in `_total`, histograms in seconds.
pub fn render_prometheus(snapshot: &Snapshot) -> String {
    let mut out = String::new();
    let labels = |s: &SeriesSnapshot| format!("backend=\"{}\",kind=\"{}\"", escape(&s.backend), escape(&s.kind));
    let family = |out: &mut String, name: &str, kind: &str, help: &str| {
        let _ = writeln!(out, "# HELP polylock_{name} {help}");
        let _ = writeln!(out, "# TYPE polylock_{name} {kind}");
    };
    family(&mut out, "acquires_total", "counter", "Acquisitions by outcome.");
    for s in &snapshot.series {
        for (outcome, n) in &s.acquires {
            let _ = writeln!(out, "polylock_acquires_total{{{},outcome=\"{outcome}\"}} {n}", labels(s));
        }
    }
    let histograms: [(&str, &str, HistogramOf); 3] = [
        ("acquire_wait_seconds", "How long granted acquisitions waited.", |s| &s.acquire_wait),
        ("hold_seconds", "How long holds lasted, from grant to release.", |s| &s.hold_time),
        ("renewal_lateness_seconds", "How long after its due time each watchdog renewal went out.", |s| {
            &s.renewal_lateness
        }),
    ];
    for (name, help, pick) in histograms {
        family(&mut out, name, "histogram", help);
        for s in &snapshot.series {
            write_histogram(&mut out, name, &labels(s), pick(s));
        }
    }
    let counters: [(&str, &str, CountOf); 3] = [
        ("releases_total", "Holds given back (lost or not).", |s| s.releases),
        ("renewals_total", "Watchdog renewals that succeeded.", |s| s.renewals),
        ("renewal_failures_total", "Watchdog renewals that failed (retried within the lease).", |s| s.renewal_failures),
    ];
    for (name, help, pick) in counters {
        family(&mut out, name, "counter", help);
        for s in &snapshot.series {
            let _ = writeln!(out, "polylock_{name}{{{}}} {}", labels(s), pick(s));
        }
    }
    family(&mut out, "lost_total", "counter", "Holds lost, by reason.");
    for s in &snapshot.series {
        for (reason, n) in &s.lost {
            let _ = writeln!(out, "polylock_lost_total{{{},reason=\"{reason}\"}} {n}", labels(s));
        }
    }
    family(&mut out, "backend_errors_total", "counter", "Errors of store calls, by error kind.");
    for s in &snapshot.series {
        for (error, n) in s.errors.iter().filter(|(_, n)| *n > 0) {
            let _ = writeln!(out, "polylock_backend_errors_total{{{},error=\"{error}\"}} {n}", labels(s));
        }
    }
    let backend_counters: [(&str, &str, BackendCountOf); 4] = [
        ("connects_total", "Clients connected.", |b| b.connects),
        ("connect_failures_total", "Connections that failed.", |b| b.connect_failures),
        ("reconnects_total", "Sessions or connections re-established.", |b| b.reconnects),
        ("failovers_total", "Another server taken over (Sentinel's new master).", |b| b.failovers),
    ];
    for (name, help, pick) in backend_counters {
        family(&mut out, name, "counter", help);
        for b in &snapshot.backends {
            let _ = writeln!(out, "polylock_{name}{{backend=\"{}\"}} {}", escape(&b.backend), pick(b));
        }
    }
    out
}

fn write_histogram(out: &mut String, name: &str, labels: &str, h: &HistogramSnapshot) {
    let mut cumulative = 0;
    for (i, n) in h.buckets.iter().enumerate() {
        cumulative += n;
        let le = BUCKETS_SECONDS.get(i).map_or_else(|| "+Inf".to_string(), |b| b.to_string());
        let _ = writeln!(out, "polylock_{name}_bucket{{{labels},le=\"{le}\"}} {cumulative}");
    }
    let _ = writeln!(out, "polylock_{name}_sum{{{labels}}} {}", h.sum_seconds);
    let _ = writeln!(out, "polylock_{name}_count{{{labels}}} {}", h.count);
}

/// A label value as the text format wants it: backslash, quote and newline escaped.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_counts_each_observation_in_its_bucket() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(100)); // on the first bound: in it
        h.observe(Duration::from_micros(101));
        h.observe(Duration::from_secs(120)); // beyond the last bound: +Inf
        let read = h.read();
        assert_eq!(read.count, 3);
        assert_eq!(read.buckets[0], 1);
        assert_eq!(read.buckets[1], 1);
        assert_eq!(read.buckets[BUCKETS_SECONDS.len()], 1);
        assert!((read.sum_seconds - 120.000201).abs() < 1e-9);
    }

    #[test]
    fn prometheus_text_has_cumulative_buckets_and_escaped_labels() {
        let metrics = ClientMetrics::new("test\"scheme");
        let series = metrics.series("reentrant");
        series.acquire(Outcome::Acquired, Duration::from_millis(3));
        series.acquire(Outcome::Acquired, Duration::from_secs(2));
        series.acquire(Outcome::Timeout, Duration::from_secs(1));
        series.lost("taken");
        series.error(ErrorKind::Connection);
        let text = render_prometheus(&metrics.snapshot());
        let labels = "backend=\"test\\\"scheme\",kind=\"reentrant\"";
        for line in [
            format!("polylock_acquires_total{{{labels},outcome=\"acquired\"}} 2"),
            format!("polylock_acquires_total{{{labels},outcome=\"timeout\"}} 1"),
            format!("polylock_acquire_wait_seconds_bucket{{{labels},le=\"0.0025\"}} 0"),
            format!("polylock_acquire_wait_seconds_bucket{{{labels},le=\"0.005\"}} 1"),
            format!("polylock_acquire_wait_seconds_bucket{{{labels},le=\"2.5\"}} 2"),
            format!("polylock_acquire_wait_seconds_bucket{{{labels},le=\"+Inf\"}} 2"),
            format!("polylock_acquire_wait_seconds_count{{{labels}}} 2"),
            format!("polylock_acquire_wait_seconds_sum{{{labels}}} 2.003"),
            format!("polylock_lost_total{{{labels},reason=\"taken\"}} 1"),
            format!("polylock_backend_errors_total{{{labels},error=\"CONNECTION\"}} 1"),
            "# TYPE polylock_hold_seconds histogram".to_string(),
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
        // The process-wide view has them too, under the same labels.
        let all = snapshot();
        let s = all.series("test\"scheme", "reentrant").expect("registered");
        assert!(s.acquires("acquired") >= 2 && s.lost("taken") >= 1);
    }
}
