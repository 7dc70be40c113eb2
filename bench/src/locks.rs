//! Section 2: lock+unlock pairs per second, polylock on `sqlite://` beside an exclusive
//! `flock(2)`, through the same workloads and the same measuring loop. Each pair holds the
//! lock for ~0: acquire, then release at once.
//!
//! Across processes, the bench re-runs its own binary as hidden `lock-worker`s that wait for
//! a common start time, loop on one lock name until a common end time, and print what they
//! did on one line for this process to add up.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::flock::Flock;
use crate::lock_side::LockSide;
use crate::measure::Throughput;
use crate::polylock_side::PolylockSide;
use crate::process_handoffs::{self, Handoffs};
use crate::report::{count, line, millis, percent, rate, versus};
use crate::sqlite_floor;
use crate::Result;

const SECTION: &str = "sqlite";
/// Names the single task cycles through in the "many names" workload.
const ROUND_ROBIN_NAMES: usize = 256;
/// Tasks in one process, each on its own name.
const TASKS: usize = 8;
/// OS processes contending for one name.
const PROCESSES: usize = 4;
/// The subcommand a worker process is started with.
pub const WORKER_COMMAND: &str = "lock-worker";

/// Which side a worker process runs, by the name it is given on its command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SideKind {
    Polylock,
    Flock,
}

impl SideKind {
    fn as_str(self) -> &'static str {
        match self {
            SideKind::Polylock => "polylock",
            SideKind::Flock => "flock",
        }
    }

    fn parse(text: &str) -> Result<Self> {
        match text {
            "polylock" => Ok(SideKind::Polylock),
            "flock" => Ok(SideKind::Flock),
            other => Err(format!("unknown lock side '{other}'; use polylock or flock").into()),
        }
    }
}

/// How long each kind of figure is measured.
#[derive(Debug, Clone, Copy)]
pub struct LockBudget {
    /// Each in-process figure.
    pub in_process: Duration,
    /// The common window of the contending processes.
    pub processes: Duration,
    /// Head start for the processes to launch and connect before the window opens.
    pub process_start: Duration,
}

/// Lock and release `handles` round-robin, holding each for ~0, until `deadline` (at least
/// one pair). `held` adds up the time from each acquire returning to its release returning.
/// With `timeline`, each hold's start and end (release called) go there too, on the
/// system-wide monotonic clock.
async fn lock_unlock_loop<S: LockSide>(
    side: &S,
    handles: &[S::Handle],
    deadline: Instant,
    mut timeline: Option<&mut Vec<[u64; 2]>>,
) -> Result<Throughput> {
    let started = Instant::now();
    let mut pairs = 0;
    let mut held = Duration::ZERO;
    for handle in handles.iter().cycle() {
        let holding = side.acquire(handle).await?;
        let acquired_at = Instant::now();
        let began = timeline.is_some().then(process_handoffs::monotonic_ns);
        let ending = timeline.is_some().then(process_handoffs::monotonic_ns);
        side.release(holding).await?;
        held += acquired_at.elapsed();
        if let (Some(timeline), Some(began), Some(ending)) = (timeline.as_deref_mut(), began, ending) {
            timeline.push([began, ending]);
        }
        pairs += 1;
        if Instant::now() >= deadline {
            break;
        }
    }
    Ok(Throughput { per_worker: vec![pairs], elapsed: started.elapsed(), held })
}

async fn handles<S: LockSide>(side: &S, names: impl IntoIterator<Item = String>) -> Result<Vec<S::Handle>> {
    let mut handles = Vec::new();
    for name in names {
        handles.push(side.handle(&name).await?);
    }
    Ok(handles)
}

/// The in-process figures of one side.
struct InProcess {
    same_name: Throughput,
    round_robin: Throughput,
    tasks: Throughput,
}

async fn measure_in_process<S: LockSide>(side: Arc<S>, budget: Duration) -> Result<InProcess> {
    let same = handles(&*side, ["same".to_string()]).await?;
    let same_name = lock_unlock_loop(&*side, &same, Instant::now() + budget, None).await?;

    let many = handles(&*side, (0..ROUND_ROBIN_NAMES).map(|i| format!("name-{i}"))).await?;
    let round_robin = lock_unlock_loop(&*side, &many, Instant::now() + budget, None).await?;

    let tasks = tasks_on_own_names(side, (0..TASKS).map(|task| format!("task-{task}")), budget).await?;
    Ok(InProcess { same_name, round_robin, tasks })
}

/// One tokio task per name, each locking and unlocking its own name until `budget` has
/// passed; pairs/s is all pairs over the group's wall time.
pub async fn tasks_on_own_names<S: LockSide>(
    side: Arc<S>,
    names: impl IntoIterator<Item = String>,
    budget: Duration,
) -> Result<Throughput> {
    let mut own_names = Vec::new();
    for name in names {
        own_names.push(handles(&*side, [name]).await?);
    }
    // One deadline for all tasks, and the group's wall time as the elapsed time: a side
    // whose calls never wait keeps its worker thread busy, so its tasks take turns rather
    // than run side by side, and only the group's clock sees that.
    let started = Instant::now();
    let deadline = started + budget;
    let tasks: Vec<_> = own_names
        .into_iter()
        .map(|own| {
            let side = side.clone();
            tokio::spawn(async move { lock_unlock_loop(&*side, &own, deadline, None).await })
        })
        .collect();
    let mut per_task = Vec::new();
    for task in tasks {
        per_task.push(task.await.map_err(|e| format!("a benchmark task failed: {e}"))??);
    }
    Ok(Throughput { elapsed: started.elapsed(), ..Throughput::combine(per_task) })
}

fn unix_ms_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// What the contending processes of one side did together.
struct Contended {
    pairs: Throughput,
    handoffs: Handoffs,
}

/// Start `processes` workers of `side` on one lock name, wait for them, and add up. Each
/// writes its timeline of holds into `timelines`.
fn contend_across_processes(
    side: SideKind,
    target: &str,
    processes: usize,
    budget: LockBudget,
    timelines: &Path,
) -> Result<Contended> {
    let exe = std::env::current_exe()?;
    let start_at = unix_ms_now() + budget.process_start.as_millis() as u64;
    let until = start_at + budget.processes.as_millis() as u64;
    let mut workers = Vec::new();
    let mut timeline_files = Vec::new();
    for worker in 0..processes {
        let timeline_file = timelines.join(format!("{}-{worker}.holds", side.as_str()));
        let worker = Command::new(&exe)
            .args([WORKER_COMMAND, "--side", side.as_str(), "--target", target, "--name", "contended"])
            .args(["--start-at-ms", &start_at.to_string(), "--until-ms", &until.to_string()])
            .args([std::ffi::OsStr::new("--timeline"), timeline_file.as_os_str()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start a worker process {}: {e}", exe.display()))?;
        workers.push(worker);
        timeline_files.push(timeline_file);
    }
    // Wait for every worker before judging any, so none is left running on an early return.
    let outputs: Vec<_> = workers.into_iter().map(|worker| worker.wait_with_output()).collect();
    let mut results = Vec::new();
    for output in outputs {
        let output = output?;
        if !output.status.success() {
            return Err(format!(
                "a {} worker process failed ({}): {}",
                side.as_str(),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            )
            .into());
        }
        results.push(parse_worker_report(&String::from_utf8_lossy(&output.stdout))?);
    }
    let per_worker = timeline_files.iter().map(|file| process_handoffs::read(file)).collect::<Result<Vec<_>>>()?;
    Ok(Contended { pairs: Throughput::combine(results), handoffs: Handoffs::of(&per_worker) })
}

/// The one line a worker prints: `lock-worker pairs=N held_ns=N elapsed_ns=N`.
fn worker_report(result: &Throughput) -> String {
    format!(
        "{WORKER_COMMAND} pairs={} held_ns={} elapsed_ns={}",
        result.ops(),
        result.held.as_nanos(),
        result.elapsed.as_nanos()
    )
}

fn parse_worker_report(stdout: &str) -> Result<Throughput> {
    let report = stdout
        .lines()
        .find(|line| line.starts_with(WORKER_COMMAND))
        .ok_or_else(|| format!("a worker printed no report: {stdout:?}"))?;
    let field = |key: &str| -> Result<u64> {
        let value = report
            .split_whitespace()
            .find_map(|part| part.strip_prefix(key)?.strip_prefix('='))
            .ok_or_else(|| format!("a worker's report has no {key}: {report:?}"))?;
        Ok(value.parse().map_err(|e| format!("a worker's {key} is not a number ({e}): {report:?}"))?)
    };
    Ok(Throughput {
        per_worker: vec![field("pairs")?],
        held: Duration::from_nanos(field("held_ns")?),
        elapsed: Duration::from_nanos(field("elapsed_ns")?),
    })
}

/// The arguments of a worker process.
struct WorkerArgs {
    side: SideKind,
    target: String,
    name: String,
    start_at_ms: u64,
    until_ms: u64,
    /// Where the worker writes its holds.
    timeline: PathBuf,
}

impl WorkerArgs {
    fn parse(args: &[String]) -> Result<Self> {
        let value = |flag: &str| -> Result<&str> {
            let at = args.iter().position(|arg| arg == flag).ok_or_else(|| format!("{WORKER_COMMAND} needs {flag}"))?;
            Ok(args.get(at + 1).ok_or_else(|| format!("{flag} needs a value"))?)
        };
        let number = |flag: &str| -> Result<u64> {
            Ok(value(flag)?.parse().map_err(|e| format!("{flag} must be a whole number: {e}"))?)
        };
        Ok(WorkerArgs {
            side: SideKind::parse(value("--side")?)?,
            target: value("--target")?.to_string(),
            name: value("--name")?.to_string(),
            start_at_ms: number("--start-at-ms")?,
            until_ms: number("--until-ms")?,
            timeline: PathBuf::from(value("--timeline")?),
        })
    }
}

/// The hidden `lock-worker` subcommand: one process's share of the cross-process workload.
pub fn worker_main(args: &[String]) -> Result<()> {
    let args = WorkerArgs::parse(args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let mut timeline = Vec::new();
    let result = runtime.block_on(async {
        match args.side {
            SideKind::Polylock => {
                let side = PolylockSide::connect(&args.target).await?;
                let result = work_one_name(&side, &args, &mut timeline).await;
                side.close().await;
                result
            }
            SideKind::Flock => work_one_name(&Flock::new(&args.target), &args, &mut timeline).await,
        }
    })?;
    process_handoffs::write(&args.timeline, &timeline)?;
    println!("{}", worker_report(&result));
    Ok(())
}

async fn work_one_name<S: LockSide>(side: &S, args: &WorkerArgs, timeline: &mut Vec<[u64; 2]>) -> Result<Throughput> {
    let handle = side.handle(&args.name).await?;
    tokio::time::sleep(Duration::from_millis(args.start_at_ms.saturating_sub(unix_ms_now()))).await;
    let deadline = Instant::now() + Duration::from_millis(args.until_ms.saturating_sub(unix_ms_now()));
    lock_unlock_loop(side, std::slice::from_ref(&handle), deadline, Some(timeline)).await
}

/// All figures of one side.
struct SideFigures {
    in_process: InProcess,
    processes: Contended,
}

fn measure_side<S: LockSide>(
    runtime: &tokio::runtime::Runtime,
    side: Arc<S>,
    kind: SideKind,
    target: &str,
    budget: LockBudget,
    timelines: &Path,
) -> Result<SideFigures> {
    let in_process = runtime.block_on(measure_in_process(side, budget.in_process))?;
    let processes = contend_across_processes(kind, target, PROCESSES, budget, timelines)?;
    Ok(SideFigures { in_process, processes })
}

/// Measure and print section 2 in a fresh temporary directory.
pub fn run(budget: LockBudget) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("bench.db").display());
    let flock_dir = dir.path().join("flock");
    std::fs::create_dir(&flock_dir)?;
    let flock_target = path_text(&flock_dir)?;
    println!(
        "# {SECTION}: lock+unlock pairs/s, each lock held ~0; polylock = Client on {url} with a fixed 30 s \
         lease (no watchdog); peer = flock(2) LOCK_EX, one file per name in {flock_target}; {} s per in-process \
         figure, {} s window for {PROCESSES} processes",
        budget.in_process.as_secs_f64(),
        budget.processes.as_secs_f64()
    );

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    // Connecting creates the schema, before any worker process opens the file.
    let polylock = Arc::new(runtime.block_on(PolylockSide::connect(&url))?);
    // The floor right before and right after polylock's figures; the better of the two counts,
    // so that a busy moment of the machine never lowers the floor.
    let floor_before = sqlite_floor::measure(&dir.path().join("floor.db"), budget.in_process)?;
    let ours = measure_side(&runtime, polylock.clone(), SideKind::Polylock, &url, budget, dir.path());
    runtime.block_on(polylock.close());
    let ours = ours?;
    let floor_after = sqlite_floor::measure(&dir.path().join("floor.db"), budget.in_process)?;
    let floor = if floor_after.per_sec() > floor_before.per_sec() { floor_after } else { floor_before };
    let flock = Arc::new(Flock::new(&flock_dir));
    let peer = measure_side(&runtime, flock, SideKind::Flock, &flock_target, budget, dir.path())?;

    let compare = |label: &str, ours: &Throughput, peer: &Throughput| {
        let cells = [
            rate("polylock", ours.per_sec(), "pairs/s"),
            rate("flock", peer.per_sec(), "pairs/s"),
            versus("polylock", "flock", ours.per_sec(), peer.per_sec()),
        ];
        line(SECTION, label, &cells);
    };
    compare("1 task, same name", &ours.in_process.same_name, &peer.in_process.same_name);
    compare(
        &format!("1 task, {ROUND_ROBIN_NAMES} names in turn"),
        &ours.in_process.round_robin,
        &peer.in_process.round_robin,
    );
    compare(&format!("{TASKS} tasks, a name each"), &ours.in_process.tasks, &peer.in_process.tasks);
    line(
        SECTION,
        "floor, 1 thread, same name",
        &[
            rate("bare rusqlite", floor.per_sec(), "pairs/s (2 write transactions each)"),
            rate("polylock 1 task, same name", ours.in_process.same_name.per_sec(), "pairs/s"),
            versus("polylock", "floor", ours.in_process.same_name.per_sec(), floor.per_sec()),
        ],
    );
    compare(&format!("{PROCESSES} processes, one name"), &ours.processes.pairs, &peer.processes.pairs);

    let share = |who: &str, figures: &Throughput| {
        let (min, max) = figures.share_range();
        format!("{who} min {} max {}", percent(min), percent(max))
    };
    let fair = percent(1.0 / PROCESSES as f64);
    line(
        SECTION,
        &format!("{PROCESSES} processes, pairs/worker"),
        &[share("polylock", &ours.processes.pairs), share("flock", &peer.processes.pairs), format!("fair {fair} each")],
    );
    let utilisation =
        |who: &str, figures: &Throughput| format!("{who} {} of wall time held", percent(figures.utilisation()));
    line(
        SECTION,
        &format!("{PROCESSES} processes, utilisation"),
        &[utilisation("polylock", &ours.processes.pairs), utilisation("flock", &peer.processes.pairs)],
    );
    let handoffs = |who: &str, contended: &Contended| {
        let p50 = |d: Option<Duration>| d.map_or_else(|| "n/a".to_string(), millis);
        let handoffs = &contended.handoffs;
        format!(
            "{who} p50 {}, to another process p50 {} ({} such)",
            p50(handoffs.all_p50),
            p50(handoffs.cross_p50),
            count(handoffs.cross_count as f64)
        )
    };
    line(
        SECTION,
        &format!("{PROCESSES} processes, handoff"),
        &[handoffs("polylock", &ours.processes), handoffs("flock", &peer.processes)],
    );
    Ok(())
}

fn path_text(path: &Path) -> Result<String> {
    Ok(path.to_str().ok_or_else(|| format!("the temporary path {} is not UTF-8", path.display()))?.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_reports_round_trip() {
        let sent =
            Throughput { per_worker: vec![42], elapsed: Duration::from_millis(1500), held: Duration::from_micros(7) };
        let got = parse_worker_report(&format!("noise\n{}\n", worker_report(&sent))).unwrap();
        assert_eq!(got.per_worker, vec![42]);
        assert_eq!(got.elapsed, sent.elapsed);
        assert_eq!(got.held, sent.held);
    }
}
