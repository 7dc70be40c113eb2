//! Segment IDs per second on every backend with counters, from one process and from 8
//! processes on one tag, beside memory speed (`mem://`), with the database's load counted by
//! the database itself (issue 19).
//!
//! Each process is a child of this bench (the hidden `segment-worker` subcommand): it
//! connects, takes `SegmentGenerator` on the shared tag with Leaf's step (1000), warms up
//! (`next_ids(2000)`, the first ranges loaded), says READY, and on GO calls `next_id()` in a
//! loop for the window; it reports the IDs it took in the window and overall, then closes its
//! client and exits. The parent starts the windows together, adds the processes' rates, and
//! reads the server's own counters before the processes start and after they have exited
//! (a PostgreSQL backend writes its statistics when its connection ends), so the load covers
//! everything the processes did: connecting, warming up, the window, closing. It is divided by
//! every ID they took. Ranges reserved by the background loader and never used count too.
//!
//! The counters, per backend:
//! - SQLite (the bench's own file): ranges reserved, counted by a trigger on `leaf_alloc`
//!   that the bench adds before polylock opens the file (one reservation is one statement).
//! - PostgreSQL: `pg_stat_database.xact_commit` (every statement outside a transaction is one)
//!   and `pg_stat_user_tables` row writes to `leaf_alloc` (`n_tup_ins + n_tup_upd`).
//!   `pg_stat_statements` would say which statements, but it needs
//!   `shared_preload_libraries`, which the test server does not load.
//! - MySQL/MariaDB: the global status (`information_schema.GLOBAL_STATUS`, as `SHOW GLOBAL
//!   STATUS` shows it) `Questions` and `Com_insert` (the reservation is
//!   `INSERT … ON DUPLICATE KEY UPDATE`) and `Com_update`.
//! - Redis: `INFO` `total_commands_processed` and the `incrby` calls of `INFO commandstats`
//!   (the reservation is one `EVALSHA` of a script that runs `INCRBY` and `GET`).
//!
//! Server counters are server-wide: whatever else runs against the same server at the same
//! time counts too, and so do the bench's own probes (one or two statements per reading).
//! Read them on a quiet server.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use polylock::{Client, SegmentOptions};

use crate::report::{count, line, rate, ratio};
use crate::Result;

/// The hidden subcommand a segment process runs.
pub const WORKER_COMMAND: &str = "segment-worker";

const SECTION: &str = "segments";
/// Leaf's default step.
const STEP: u64 = 1000;
/// The goal of issue 19: within 90 % of memory speed once warm.
const GOAL: f64 = 0.9;
/// How long a process may take to say READY or DONE.
const PATIENCE: Duration = Duration::from_secs(60);

/// Where a backend's load is read from.
enum Load {
    /// mem://: nothing to count.
    None,
    /// The trigger's count in this SQLite file.
    Sqlite(PathBuf),
    Postgres(String),
    MySql(String),
    Redis(String),
}

struct Backend {
    name: &'static str,
    url: String,
    load: Load,
}

/// A reading of a backend's counters: the server-wide one and the one scoped to reservations.
#[derive(Debug, Clone, Copy, Default)]
struct Reading {
    wide: u64,
    scoped: u64,
    /// MariaDB's Com_update, beside Com_insert.
    extra: u64,
}

impl Load {
    /// Names of `wide` and `scoped`; `None` where there is no such counter.
    fn labels(&self) -> (Option<&'static str>, Option<&'static str>) {
        match self {
            Load::None => (None, None),
            Load::Sqlite(_) => (None, Some("ranges reserved")),
            Load::Postgres(_) => (Some("xact_commit"), Some("leaf_alloc row writes")),
            Load::MySql(_) => (Some("Questions"), Some("Com_insert")),
            Load::Redis(_) => (Some("commands"), Some("INCRBY")),
        }
    }

    async fn read(&self) -> Result<Reading> {
        match self {
            Load::None => Ok(Reading::default()),
            Load::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path)?;
                let n: i64 = conn.query_row("SELECT n FROM bench_reservations", [], |row| row.get(0))?;
                Ok(Reading { scoped: n as u64, ..Reading::default() })
            }
            Load::Postgres(url) => {
                use sqlx::Connection;
                let mut conn = sqlx::PgConnection::connect(url).await?;
                let (wide, scoped): (i64, i64) = sqlx::query_as(
                    "SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
                            (SELECT COALESCE(SUM(n_tup_ins + n_tup_upd), 0)::bigint FROM pg_stat_user_tables
                              WHERE relname = 'leaf_alloc')",
                )
                .fetch_one(&mut conn)
                .await?;
                conn.close().await?;
                Ok(Reading { wide: wide as u64, scoped: scoped as u64, extra: 0 })
            }
            Load::MySql(url) => {
                use sqlx::Connection;
                let mut conn = sqlx::MySqlConnection::connect(url).await?;
                let rows: Vec<(String, String)> = sqlx::query_as(
                    "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
                      WHERE VARIABLE_NAME IN ('QUESTIONS', 'COM_INSERT', 'COM_UPDATE')",
                )
                .fetch_all(&mut conn)
                .await?;
                conn.close().await?;
                let get = |name: &str| -> u64 {
                    rows.iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case(name))
                        .and_then(|(_, v)| v.parse().ok())
                        .unwrap_or(0)
                };
                Ok(Reading { wide: get("Questions"), scoped: get("Com_insert"), extra: get("Com_update") })
            }
            Load::Redis(url) => {
                let mut conn = redis::Client::open(url.as_str())?.get_connection()?;
                let stats: String = redis::cmd("INFO").arg("stats").query(&mut conn)?;
                let commands: String = redis::cmd("INFO").arg("commandstats").query(&mut conn)?;
                let field = |text: &str, key: &str| -> u64 {
                    text.lines()
                        .find_map(|l| l.strip_prefix(key))
                        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).find(|s| !s.is_empty()))
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(0)
                };
                Ok(Reading {
                    wide: field(&stats, "total_commands_processed:"),
                    scoped: field(&commands, "cmdstat_incrby:calls="),
                    extra: 0,
                })
            }
        }
    }

    /// Remove the run's tag from a shared server.
    async fn clean(&self, tag: &str) -> Result<()> {
        match self {
            Load::None | Load::Sqlite(_) => {}
            Load::Postgres(url) => {
                use sqlx::Connection;
                let mut conn = sqlx::PgConnection::connect(url).await?;
                sqlx::query("DELETE FROM leaf_alloc WHERE biz_tag = $1").bind(tag).execute(&mut conn).await?;
                conn.close().await?;
            }
            Load::MySql(url) => {
                use sqlx::Connection;
                let mut conn = sqlx::MySqlConnection::connect(url).await?;
                sqlx::query("DELETE FROM leaf_alloc WHERE biz_tag = ?").bind(tag).execute(&mut conn).await?;
                conn.close().await?;
            }
            Load::Redis(url) => {
                let mut conn = redis::Client::open(url.as_str())?.get_connection()?;
                let _: () = redis::cmd("UNLINK").arg(format!("polylock_counter:{{{tag}}}")).query(&mut conn)?;
            }
        }
        Ok(())
    }
}

fn plain(url: &str) -> String {
    url.split('?').next().unwrap_or(url).to_string()
}

/// The SQLite file, with Leaf's table made as polylock makes it, and a trigger counting every
/// reservation (polylock's is an upsert: an insert the first time, an update after).
fn sqlite_file(dir: &Path) -> Result<PathBuf> {
    let path = dir.join("segments.db");
    let conn = rusqlite::Connection::open(&path)?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE IF NOT EXISTS leaf_alloc (biz_tag TEXT PRIMARY KEY, max_id INTEGER NOT NULL DEFAULT 1,
             step INTEGER NOT NULL, description TEXT, update_time TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP);
         CREATE TABLE bench_reservations (n INTEGER NOT NULL);
         INSERT INTO bench_reservations VALUES (0);
         CREATE TRIGGER bench_reserve_insert AFTER INSERT ON leaf_alloc
             BEGIN UPDATE bench_reservations SET n = n + 1; END;
         CREATE TRIGGER bench_reserve_update AFTER UPDATE OF max_id ON leaf_alloc
             BEGIN UPDATE bench_reservations SET n = n + 1; END;",
    )?;
    Ok(path)
}

/// A server backend: its name, the variable with its URL, and how its load is read.
type ServerBackend = (&'static str, &'static str, fn(String) -> Load);

/// The backends: mem:// and SQLite always, a server when its `POLYLOCK_TEST_*_URL` is
/// exported (else a line says it is skipped).
fn backends(dir: &Path) -> Result<Vec<Backend>> {
    let sqlite = sqlite_file(dir)?;
    let mut all = vec![
        Backend { name: "mem", url: "mem://bench-segments".into(), load: Load::None },
        Backend { name: "sqlite", url: format!("sqlite://{}", sqlite.display()), load: Load::Sqlite(sqlite) },
    ];
    let servers: [ServerBackend; 3] = [
        ("postgres", "POLYLOCK_TEST_POSTGRES_URL", Load::Postgres),
        ("mysql", "POLYLOCK_TEST_MARIADB_URL", Load::MySql),
        ("redis", "POLYLOCK_TEST_REDIS_URL", Load::Redis),
    ];
    for (name, var, load) in servers {
        match std::env::var(var) {
            Ok(url) if !url.is_empty() => all.push(Backend { name, load: load(plain(&url)), url }),
            _ => line(SECTION, name, &[format!("skipped: {var} is not exported")]),
        }
    }
    Ok(all)
}

/// A segment process and its stdout lines.
struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Worker {
    fn start(url: &str, tag: &str, window: Duration) -> Result<Worker> {
        let window_ms = window.as_millis().to_string();
        let mut child = Command::new(std::env::current_exe()?)
            .args([WORKER_COMMAND, url, tag, window_ms.as_str()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let stdin = child.stdin.take();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(std::result::Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Ok(Worker { child, stdin, lines })
    }

    fn expect(&self, word: &str) -> Result<String> {
        let line = self
            .lines
            .recv_timeout(PATIENCE)
            .map_err(|_| format!("a segment process did not say {word} within {PATIENCE:?}"))?;
        if line.starts_with(word) {
            Ok(line)
        } else {
            Err(format!("a segment process said '{line}', not {word}").into())
        }
    }

    fn go(&mut self) -> Result<()> {
        let stdin = self.stdin.as_mut().ok_or("no stdin")?;
        stdin.write_all(b"GO\n")?;
        stdin.flush()?;
        Ok(())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What `processes` processes did on one backend.
struct Outcome {
    /// Σ each process's window IDs ÷ its window.
    per_sec: f64,
    /// Every ID taken, warm-up included.
    ids: u64,
    /// The step the generators had reached (the largest).
    step: u64,
    load: Option<(Reading, Reading)>,
}

fn field(report: &str, key: &str) -> Result<u64> {
    report
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("no {key}= in a segment process's report '{report}'").into())
}

fn measure(
    runtime: &tokio::runtime::Runtime,
    backend: &Backend,
    tag: &str,
    processes: usize,
    window: Duration,
) -> Result<Outcome> {
    let before = runtime.block_on(backend.load.read())?;
    let mut workers = (0..processes).map(|_| Worker::start(&backend.url, tag, window)).collect::<Result<Vec<_>>>()?;
    for worker in &workers {
        worker.expect("READY")?;
    }
    for worker in &mut workers {
        worker.go()?;
    }
    let (mut per_sec, mut ids, mut step) = (0.0, 0, 0);
    for worker in &workers {
        let report = worker.expect("DONE")?;
        let window_ids = field(&report, "window_ids")?;
        let window_ns = field(&report, "window_ns")?.max(1);
        per_sec += window_ids as f64 / (window_ns as f64 / 1e9);
        ids += field(&report, "ids")?;
        step = step.max(field(&report, "step")?);
    }
    for worker in &mut workers {
        drop(worker.stdin.take());
        let status = worker.child.wait()?;
        if !status.success() {
            return Err(format!("a segment process on {} ended with {status}", backend.name).into());
        }
    }
    drop(workers);
    let load = match backend.load {
        Load::None => None,
        _ => {
            // A PostgreSQL backend writes its statistics as its connection ends, just after the
            // client has gone.
            if matches!(backend.load, Load::Postgres(_)) {
                std::thread::sleep(Duration::from_millis(300));
            }
            Some((before, runtime.block_on(backend.load.read())?))
        }
    };
    Ok(Outcome { per_sec, ids, step, load })
}

fn per_thousand(delta: u64, ids: u64) -> String {
    let value = delta as f64 * 1000.0 / ids.max(1) as f64;
    if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.4}")
    }
}

fn load_cells(load: &Load, outcome: &Outcome) -> Vec<String> {
    let Some((before, after)) = outcome.load else { return Vec::new() };
    let (wide, scoped) = load.labels();
    let mut cells = Vec::new();
    if let Some(label) = scoped {
        let delta = after.scoped.saturating_sub(before.scoped);
        cells.push(format!("{label} {} = {} per 1,000 IDs", count(delta as f64), per_thousand(delta, outcome.ids)));
    }
    if matches!(load, Load::MySql(_)) {
        let delta = after.extra.saturating_sub(before.extra);
        cells.push(format!("Com_update {}", count(delta as f64)));
    }
    if let Some(label) = wide {
        let delta = after.wide.saturating_sub(before.wide);
        cells.push(format!(
            "server-wide {label} {} = {} per 1,000 IDs",
            count(delta as f64),
            per_thousand(delta, outcome.ids)
        ));
    }
    cells
}

/// The section: every backend, 1 and 8 processes, beside mem://.
pub fn run(window: Duration) -> Result<()> {
    println!(
        "# {SECTION}: segment IDs/s (next_id in a loop, warm), from 1 and 8 processes on one tag, step {STEP} \
         (adaptive), {:.2} s window; /mem is the ratio to the same processes on mem:// (8 processes there: \
         8 counters in memory), goal >= {GOAL:.2}x; load = the server's own counters over the processes' whole \
         life (connect, warm-up, window, close) / every ID they took (server-wide counters include other clients)",
        window.as_secs_f64()
    );
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let dir = tempfile::tempdir()?;
    let backends = backends(dir.path())?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let mut memory = [0.0f64; 2];
    for backend in &backends {
        let tag = format!("bench-seg-{}-{nanos}-{}", std::process::id(), backend.name);
        let reachable = runtime.block_on(async {
            let client = Client::connect(&backend.url).await?;
            client.close().await;
            Ok::<_, polylock::Error>(())
        });
        if let Err(err) = reachable {
            line(SECTION, backend.name, &[format!("skipped: {err}")]);
            continue;
        }
        for (slot, processes) in [1usize, 8].into_iter().enumerate() {
            let outcome = measure(&runtime, backend, &tag, processes, window)?;
            let label = format!("{} {processes} process{}", backend.name, if processes == 1 { "" } else { "es" });
            let mut cells = vec![rate("polylock", outcome.per_sec, "IDs/s")];
            if backend.name == "mem" {
                memory[slot] = outcome.per_sec;
                cells.push("memory speed (the reference)".into());
            } else if memory[slot] > 0.0 {
                let of_memory = outcome.per_sec / memory[slot];
                cells.push(format!(
                    "/mem {} (goal {GOAL:.2}x: {})",
                    ratio(of_memory),
                    if of_memory >= GOAL { "met" } else { "not met" }
                ));
            }
            cells.push(format!(
                "{} IDs in all, step reached {}",
                count(outcome.ids as f64),
                count(outcome.step as f64)
            ));
            cells.extend(load_cells(&backend.load, &outcome));
            line(SECTION, &label, &cells);
        }
        if let Err(err) = runtime.block_on(backend.load.clean(&tag)) {
            eprintln!("polylock-bench: could not remove the segments tag {tag} from {}: {err}", backend.name);
        }
    }
    Ok(())
}

/// The hidden `segment-worker URL TAG WINDOW_MS` subcommand: warm up, say READY, wait for GO
/// on stdin, take IDs for the window, say `DONE window_ids=… window_ns=… ids=… step=…`.
pub fn worker_main(args: &[String]) -> Result<()> {
    let [url, tag, window_ms] = args else {
        return Err(format!("usage: {WORKER_COMMAND} URL TAG WINDOW_MS").into());
    };
    let window = Duration::from_millis(window_ms.parse()?);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async {
        let client = Client::connect(url).await?;
        let generator = client.segments(tag, SegmentOptions { step: STEP, ..SegmentOptions::default() })?;
        let mut ids = generator.next_ids(2 * STEP as usize).await?.len() as u64;
        println!("READY");
        let mut go = String::new();
        tokio::task::spawn_blocking(move || std::io::stdin().read_line(&mut go)).await??;
        let started = Instant::now();
        let mut window_ids = 0u64;
        let mut last = 0;
        while started.elapsed() < window {
            for _ in 0..256 {
                last = generator.next_id().await?;
            }
            window_ids += 256;
        }
        let window_ns = started.elapsed().as_nanos();
        ids += window_ids;
        std::hint::black_box(last);
        println!("DONE window_ids={window_ids} window_ns={window_ns} ids={ids} step={}", generator.step());
        drop(generator);
        client.close().await;
        Ok(())
    })
}
