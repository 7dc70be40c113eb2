//! The peers: redis-py's `Lock` and node-redlock, what Python and Node services use today.
//! Each runs as a script (bench/redis/peers/, compiled into this binary) in an environment
//! of its own, set up on first use in a cache directory outside the repository and reused
//! while the pinned requirements are unchanged:
//!
//! - `<cache>/venv`: `python3 -m venv`, then `pip install -r requirements.txt`
//! - `<cache>/node`: package.json and package-lock.json, then `npm ci`
//!
//! `<cache>` is `$POLYLOCK_BENCH_CACHE`, else `~/.cache/polylock/bench-peers` (or under
//! `$XDG_CACHE_HOME`). A script prints one JSON line; the figures are computed here.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::contended::Timeline;
use super::server::RedisTarget;
use crate::measure::Throughput;
use crate::Result;

const REQUIREMENTS: &str = include_str!("../../redis/peers/requirements.txt");
const REDIS_PY_SCRIPT: &str = include_str!("../../redis/peers/redis_py_bench.py");
const PACKAGE_JSON: &str = include_str!("../../redis/peers/package.json");
const PACKAGE_LOCK: &str = include_str!("../../redis/peers/package-lock.json");
const REDLOCK_SCRIPT: &str = include_str!("../../redis/peers/node_redlock_bench.mjs");
/// What a set-up environment records, to be compared with what this build wants.
const STAMP: &str = ".polylock-bench-stamp";
/// Time a peer gets beyond its measuring window to start, connect and report.
const START_UP_ALLOWANCE: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// `redis.asyncio`, one task per worker: how a Python service gets concurrency today.
    RedisPyAsyncio,
    /// The synchronous client, one thread per worker.
    RedisPyThreads,
    /// node-redlock v5 on one ioredis client, one async loop per worker.
    NodeRedlock,
}

impl Peer {
    pub const ALL: [Peer; 3] = [Peer::RedisPyAsyncio, Peer::RedisPyThreads, Peer::NodeRedlock];

    pub fn name(self) -> &'static str {
        match self {
            Peer::RedisPyAsyncio => "redis-py-asyncio",
            Peer::RedisPyThreads => "redis-py-threads",
            Peer::NodeRedlock => "node-redlock",
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub enum Workload {
    /// Each worker on a name of its own.
    Uncontended,
    /// Every worker on one name.
    Contended,
}

/// What a peer says about itself: library versions and lock settings.
#[derive(Debug, Clone, Deserialize)]
pub struct PeerInfo {
    pub version: String,
    pub settings: String,
}

/// The JSON line a peer prints; members not named here (`peer`, `mode`) are ignored.
#[derive(Debug, Deserialize)]
struct Report<Figures> {
    #[serde(flatten)]
    info: PeerInfo,
    #[serde(flatten)]
    figures: Figures,
    /// The longest worker's wall time, on the script's monotonic clock.
    elapsed_ns: u64,
}

/// The uncontended workload's figures: lock+unlock pairs per worker.
#[derive(Debug, Deserialize)]
struct Pairs {
    pairs: Vec<u64>,
}

/// The contended workload's figures: per worker, its holds as flat
/// (acquire returned, release called) nanoseconds.
#[derive(Debug, Deserialize)]
struct Holds {
    holds: Vec<Vec<u64>>,
}

/// The report in the last line of `stdout` that starts like a JSON object.
fn report_in<Figures: DeserializeOwned>(stdout: &str) -> Result<Report<Figures>> {
    let line = stdout.lines().rfind(|line| line.starts_with('{')).ok_or("printed no JSON")?;
    Ok(serde_json::from_str(line)?)
}

/// The peers' environments, each set up or the reason it could not be.
pub struct PeerEnvs {
    cache: PathBuf,
    python: std::result::Result<PathBuf, String>,
    node: std::result::Result<PathBuf, String>,
}

impl PeerEnvs {
    /// Set up whatever is missing or out of date; say so, since the first time takes a while.
    pub fn prepare() -> Result<PeerEnvs> {
        let cache = cache_dir()?;
        let python = ensure_venv(&cache).map_err(|e| format!("redis-py's environment: {e}"));
        let node = ensure_node(&cache).map_err(|e| format!("node-redlock's environment: {e}"));
        Ok(PeerEnvs { cache, python, node })
    }

    pub fn cache(&self) -> &Path {
        &self.cache
    }

    /// Lock and release on per-worker names under `prefix` for `budget`: pairs per worker
    /// over the group's wall time.
    pub fn uncontended(
        &self,
        peer: Peer,
        target: &RedisTarget,
        prefix: &str,
        workers: usize,
        budget: Duration,
    ) -> Result<(PeerInfo, Throughput)> {
        let report: Report<Pairs> = self.run(peer, target, Workload::Uncontended, prefix, workers, budget)?;
        let elapsed = Duration::from_nanos(report.elapsed_ns);
        Ok((report.info, Throughput { per_worker: report.figures.pairs, elapsed, held: Duration::ZERO }))
    }

    /// The contended workload on the name `prefix`: every worker's holds.
    pub fn contended(
        &self,
        peer: Peer,
        target: &RedisTarget,
        prefix: &str,
        workers: usize,
        budget: Duration,
    ) -> Result<(PeerInfo, Timeline)> {
        let report: Report<Holds> = self.run(peer, target, Workload::Contended, prefix, workers, budget)?;
        let elapsed = Duration::from_nanos(report.elapsed_ns);
        Ok((report.info, Timeline::from_flat(report.figures.holds, elapsed)?))
    }

    fn run<Figures: DeserializeOwned>(
        &self,
        peer: Peer,
        target: &RedisTarget,
        workload: Workload,
        prefix: &str,
        workers: usize,
        budget: Duration,
    ) -> Result<Report<Figures>> {
        let mut command = match peer {
            Peer::RedisPyAsyncio | Peer::RedisPyThreads => {
                let python = self.python.as_ref().map_err(String::clone)?;
                let script = self.cache.join("redis_py_bench.py");
                write_if_changed(&script, REDIS_PY_SCRIPT)?;
                let mut command = Command::new(python);
                let mode = if peer == Peer::RedisPyAsyncio { "asyncio" } else { "threads" };
                command.arg(script).args(["--mode", mode]);
                command
            }
            Peer::NodeRedlock => {
                // Next to its node_modules, where `import "redlock"` looks.
                let script = self.node.as_ref().map_err(String::clone)?.join("node_redlock_bench.mjs");
                write_if_changed(&script, REDLOCK_SCRIPT)?;
                let mut command = Command::new("node");
                command.arg(script);
                command
            }
        };
        let workload = match workload {
            Workload::Uncontended => "uncontended",
            Workload::Contended => "contended",
        };
        command.args(["--url", target.url(), "--workload", workload, "--prefix", prefix]);
        command.args(["--seconds", &budget.as_secs_f64().to_string(), "--workers", &workers.to_string()]);
        let output = output_within(command, budget + START_UP_ALLOWANCE)
            .map_err(|e| format!("{} ({workload}): {e}", peer.name()))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() {
            return Err(format!("{} ({workload}) failed ({}): {}", peer.name(), output.status, tail(&output)).into());
        }
        Ok(report_in(&stdout).map_err(|e| format!("{} ({workload}): {e}: {}", peer.name(), tail(&output)))?)
    }
}

fn cache_dir() -> Result<PathBuf> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty()).map(PathBuf::from);
    if let Some(dir) = non_empty("POLYLOCK_BENCH_CACHE") {
        return Ok(dir);
    }
    let base = non_empty("XDG_CACHE_HOME")
        .or_else(|| non_empty("HOME").map(|home| home.join(".cache")))
        .ok_or("set POLYLOCK_BENCH_CACHE (or HOME) to say where the peers' environments go")?;
    Ok(base.join("polylock").join("bench-peers"))
}

/// `<cache>/venv` with the pinned redis-py; its python.
fn ensure_venv(cache: &Path) -> Result<PathBuf> {
    let venv = cache.join("venv");
    let python = venv.join("bin").join("python");
    let stamp = stamp_of(&[REQUIREMENTS]);
    if python.exists() && fs::read_to_string(venv.join(STAMP)).ok() == Some(stamp.clone()) {
        return Ok(python);
    }
    println!("# redis: setting up redis-py in {} (first use or new requirements.txt)", venv.display());
    if venv.exists() {
        fs::remove_dir_all(&venv)?;
    }
    fs::create_dir_all(cache)?;
    run_quietly(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    let requirements = venv.join("requirements.txt");
    fs::write(&requirements, REQUIREMENTS)?;
    run_quietly(
        Command::new(&python)
            .args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--quiet", "-r"])
            .arg(&requirements),
    )?;
    fs::write(venv.join(STAMP), stamp)?;
    Ok(python)
}

/// `<cache>/node` with the pinned redlock and ioredis; the directory.
fn ensure_node(cache: &Path) -> Result<PathBuf> {
    let dir = cache.join("node");
    let stamp = stamp_of(&[PACKAGE_JSON, PACKAGE_LOCK]);
    if dir.join("node_modules").exists() && fs::read_to_string(dir.join(STAMP)).ok() == Some(stamp.clone()) {
        return Ok(dir);
    }
    println!("# redis: setting up node-redlock in {} (first use or new package-lock.json)", dir.display());
    fs::create_dir_all(&dir)?;
    let _ = fs::remove_file(dir.join(STAMP));
    fs::write(dir.join("package.json"), PACKAGE_JSON)?;
    fs::write(dir.join("package-lock.json"), PACKAGE_LOCK)?;
    run_quietly(Command::new("npm").arg("ci").arg("--prefix").arg(&dir).args([
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
    ]))?;
    fs::write(dir.join(STAMP), stamp)?;
    Ok(dir)
}

/// FNV-1a over the pinned files: stable across builds and Rust versions.
fn stamp_of(files: &[&str]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in files.iter().flat_map(|file| file.bytes().chain([0])) {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("fnv1a64 {hash:016x}\n")
}

fn write_if_changed(path: &Path, content: &str) -> Result<()> {
    if fs::read_to_string(path).ok().as_deref() != Some(content) {
        fs::write(path, content)?;
    }
    Ok(())
}

/// Run a set-up step, showing its output only if it fails.
fn run_quietly(command: &mut Command) -> Result<()> {
    let program = command.get_program().to_string_lossy().into_owned();
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {program} ({e}); is it installed and on PATH?"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!("{program} failed ({}): {}", output.status, tail(&output)).into())
    }
}

/// The last lines of what a process printed, for an error message.
fn tail(output: &Output) -> String {
    let text = format!("{}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let lines: Vec<&str> = text.lines().filter(|line| !line.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(12)..].join("\n  ")
}

/// Run `command` to the end, or kill it once `limit` has passed.
fn output_within(mut command: Command, limit: Duration) -> Result<Output> {
    let program = command.get_program().to_string_lossy().into_owned();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {program} ({e}); is it installed and on PATH?"))?;
    // Drain both pipes while waiting, so a chatty child never blocks on a full pipe.
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > limit {
            kill(&mut child);
            return Err(format!("{program} did not finish within {} s; stopped it", limit.as_secs()).into());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let joined = |reader: std::thread::JoinHandle<Vec<u8>>| reader.join().unwrap_or_default();
    Ok(Output { status, stdout: joined(stdout), stderr: joined(stderr) })
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_follow_the_pinned_files() {
        assert_eq!(stamp_of(&["redis==8.1.0\n"]), stamp_of(&["redis==8.1.0\n"]));
        assert_ne!(stamp_of(&["redis==8.1.0\n"]), stamp_of(&["redis==8.0.1\n"]));
        // File boundaries count: ["ab", "c"] is not ["a", "bc"].
        assert_ne!(stamp_of(&["ab", "c"]), stamp_of(&["a", "bc"]));
    }

    #[test]
    fn reads_what_the_peers_print() {
        let stdout = "npm notice\n{\"peer\":\"redis-py\",\"version\":\"redis-py 8.1.0\",\"mode\":\"asyncio\",\
                      \"settings\":\"sleep=0.1s\",\"holds\":[[1,2,3,4],[]],\"elapsed_ns\":1006908435}\n";
        let report: Report<Holds> = report_in(stdout).unwrap();
        assert_eq!((report.info.version.as_str(), report.info.settings.as_str()), ("redis-py 8.1.0", "sleep=0.1s"));
        assert_eq!((report.figures.holds, report.elapsed_ns), (vec![vec![1, 2, 3, 4], vec![]], 1_006_908_435));
        let pairs = r#"{"peer":"node-redlock","version":"v","settings":"s","pairs":[10,12],"elapsed_ns":5}"#;
        let report: Report<Pairs> = report_in(pairs).unwrap();
        assert_eq!((report.figures.pairs, report.elapsed_ns), (vec![10, 12], 5));
        // The other workload's report, a missing member, a fraction, or no JSON at all.
        assert!(report_in::<Holds>(pairs).is_err());
        assert!(report_in::<Pairs>(r#"{"version":"v","settings":"s","pairs":[1]}"#).is_err());
        assert!(report_in::<Pairs>(r#"{"version":"v","settings":"s","pairs":[1.5],"elapsed_ns":5}"#).is_err());
        assert!(report_in::<Pairs>("Traceback (most recent call last):\n").is_err());
    }

    #[test]
    fn slow_children_are_stopped() {
        let mut command = Command::new("sleep");
        command.arg("10");
        let started = Instant::now();
        assert!(output_within(command, Duration::from_millis(100)).is_err());
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
