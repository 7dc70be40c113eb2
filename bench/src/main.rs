//! polylock-bench: polylock side by side with what a Rust user would pick instead, printed
//! as figures and ratios. It never judges them: it exits 0 whatever the numbers are, and
//! non-zero only when something fails.
//!
//! ```text
//! polylock-bench [snowflake|ids|sqlite|observe|redis|etcd|zookeeper|postgres|mysql|election|all] [--quick] [--url redis://...]
//!                [--etcd-url etcd://...]
//! ```

mod election_failover;
mod etcd;
mod flock;
mod ids_leased;
mod lock_side;
mod locks;
mod measure;
mod observe_cost;
mod polylock_side;
mod process_handoffs;
mod redis;
mod report;
mod segments;
mod segments_servers;
mod snowflake;
mod sql;
mod sqlite_floor;
mod uuid_ulid;
mod values_cas;
mod zookeeper;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use locks::LockBudget;
use redis::{RedisBudget, RedisTarget};
use sql::{Database, SqlBudget};
use zookeeper::ZkBudget;

/// Every error ends the run with a message and a non-zero exit.
pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

const USAGE: &str =
    "usage: polylock-bench [snowflake|ids|sqlite|observe|redis|etcd|zookeeper|postgres|mysql|election|all] [--quick] [--url redis://...]
                      [--etcd-url etcd://...]

  snowflake  IDs/s of polylock's Snowflake beside rs-snowflake, against the 4096/ms ceiling;
             segment IDs/s from one process on sqlite:// beside mem://
  ids        segment IDs/s from 1 and 8 processes on sqlite, postgres, mysql and redis beside
             mem://, with the server's own statement counts per 1,000 IDs; Snowflake on a
             leased worker id beside a fixed one; UUIDv7 and ULID beside the uuid crate
             (servers from $POLYLOCK_TEST_*_URL; one not exported is skipped)
  sqlite     lock+unlock pairs/s of polylock on sqlite:// beside flock(2), in one process
             and across 4 processes
  observe    what tracing and metrics cost: lock+unlock pairs/s on mem:// and sqlite:// with
             both off, then metrics on, a subscriber at warn, one at debug (JSON to a sink)
  redis      polylock on Redis beside redis-py's Lock and node-redlock, with redis-benchmark's
             ceiling: pairs/s with 64 workers on a name each, and 8 workers contending for
             one name (utilisation, hand-over latency, shares); skipped if no redis answers
  etcd       polylock on etcd: lock+unlock p50/p99 and pairs/s beside the same server's raw
             put+delete floor, and 8 clients contending for one name; skipped if no etcd answers
  zookeeper  polylock on ZooKeeper beside the same server's raw create+delete round trip
             (p50/p99, pairs/s), and 8 sessions contending (1 ms in, 1 ms out) for one name;
             server: $POLYLOCK_TEST_ZOOKEEPER_URL, else zk://127.0.0.1:12181; skipped if none
  postgres   polylock's session and lease locks on PostgreSQL beside SELECT 1 and the advisory
             lock written by hand with sqlx: p50/p99 and pairs/s; 8 workers contending for one
             name ($POLYLOCK_TEST_POSTGRES_URL, else services.sh's); skipped if none answers
  mysql      the same on MySQL/MariaDB with GET_LOCK ($POLYLOCK_TEST_MARIADB_URL)
  election   leader election fail-over per backend: a leader process SIGKILLed, the time until
             the waiting process leads, beside the session TTL/timeout or lease (2 s) bounding it;
             servers from the $POLYLOCK_TEST_*_URL variables; a backend with no server is skipped
  all        every section (the default)
  --quick    a smoke run for CI: about 1 s per section, about 10 s for redis
  --url URL  the redis section's server (default: $POLYLOCK_TEST_REDIS_URL, else
             redis://127.0.0.1:16379, which tests/services/services.sh start redis runs)
  --etcd-url URL  the etcd section's server (default: $POLYLOCK_TEST_ETCD_URL, else
             etcd://127.0.0.1:12379, which tests/services/services.sh start etcd runs)

Figures and ratios (polylock / peer) from one run; nothing passes or fails.";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sections {
    Snowflake,
    Ids,
    Sqlite,
    Observe,
    Redis,
    Etcd,
    Zookeeper,
    Postgres,
    MySql,
    Election,
    All,
}

/// How long each measurement runs.
#[derive(Debug, Clone, Copy)]
struct Budget {
    name: &'static str,
    /// Each of the seven snowflake figures.
    per_id_figure: Duration,
    locks: LockBudget,
    redis: RedisBudget,
    etcd: etcd::EtcdBudget,
    zookeeper: ZkBudget,
    sql: SqlBudget,
    /// Fail-overs measured per backend in the election section.
    election_rounds: usize,
}

/// About 40 s for snowflake and sqlite, as much again for redis.
const FULL: Budget = Budget {
    name: "full",
    per_id_figure: Duration::from_secs(2),
    locks: LockBudget {
        in_process: Duration::from_secs(2),
        processes: Duration::from_secs(5),
        process_start: Duration::from_millis(500),
    },
    redis: RedisBudget {
        ceiling_requests: 500_000,
        uncontended: Duration::from_secs(3),
        contended: Duration::from_secs(5),
    },
    etcd: etcd::EtcdBudget { latency: Duration::from_secs(3), contended: Duration::from_secs(5) },
    zookeeper: ZkBudget { uncontended: Duration::from_secs(3), contended: Duration::from_secs(5) },
    sql: SqlBudget { series: Duration::from_secs(2), contended: Duration::from_secs(3) },
    election_rounds: 3,
};

/// About 1 s per section, about 10 s for redis (its peers start interpreters).
const QUICK: Budget = Budget {
    name: "quick",
    per_id_figure: Duration::from_millis(130),
    locks: LockBudget {
        in_process: Duration::from_millis(100),
        processes: Duration::from_millis(150),
        process_start: Duration::from_millis(120),
    },
    redis: RedisBudget {
        ceiling_requests: 50_000,
        uncontended: Duration::from_millis(500),
        contended: Duration::from_secs(1),
    },
    etcd: etcd::EtcdBudget { latency: Duration::from_millis(500), contended: Duration::from_secs(1) },
    zookeeper: ZkBudget { uncontended: Duration::from_millis(300), contended: Duration::from_millis(500) },
    sql: SqlBudget { series: Duration::from_millis(150), contended: Duration::from_millis(300) },
    election_rounds: 1,
};

// Made once per run, so the size of the Bench variant costs nothing.
#[allow(clippy::large_enum_variant)]
enum Invocation {
    /// `redis` is the redis section's server, when that section runs.
    Bench {
        sections: Sections,
        budget: Budget,
        redis: Option<Box<RedisTarget>>,
        /// The etcd section's server, when that section runs.
        etcd: Option<String>,
    },
    Worker(Vec<String>),
    SegmentWorker(Vec<String>),
    ElectionCandidate(Vec<String>),
    Help,
}

fn parse_args(args: Vec<String>) -> std::result::Result<Invocation, String> {
    if args.first().map(String::as_str) == Some(locks::WORKER_COMMAND) {
        return Ok(Invocation::Worker(args[1..].to_vec()));
    }
    if args.first().map(String::as_str) == Some(segments_servers::WORKER_COMMAND) {
        return Ok(Invocation::SegmentWorker(args[1..].to_vec()));
    }
    if args.first().map(String::as_str) == Some(election_failover::CANDIDATE_COMMAND) {
        return Ok(Invocation::ElectionCandidate(args[1..].to_vec()));
    }
    let mut sections = None;
    let mut budget = FULL;
    let mut url = None;
    let mut etcd_url = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => budget = QUICK,
            "-h" | "--help" => return Ok(Invocation::Help),
            "--url" => url = Some(args.next().ok_or("--url needs a value: redis://host:port")?),
            "--etcd-url" => etcd_url = Some(args.next().ok_or("--etcd-url needs a value: etcd://host:port")?),
            "snowflake" | "ids" | "sqlite" | "observe" | "redis" | "etcd" | "zookeeper" | "postgres" | "mysql"
            | "election" | "all"
                if sections.is_some() =>
            {
                return Err(format!("name one section, not several (got '{arg}' too)"));
            }
            "snowflake" => sections = Some(Sections::Snowflake),
            "ids" => sections = Some(Sections::Ids),
            "sqlite" => sections = Some(Sections::Sqlite),
            "observe" => sections = Some(Sections::Observe),
            "redis" => sections = Some(Sections::Redis),
            "etcd" => sections = Some(Sections::Etcd),
            "zookeeper" => sections = Some(Sections::Zookeeper),
            "postgres" => sections = Some(Sections::Postgres),
            "mysql" => sections = Some(Sections::MySql),
            "election" => sections = Some(Sections::Election),
            "all" => sections = Some(Sections::All),
            other => match other.strip_prefix("--url=") {
                Some(value) => url = Some(value.to_string()),
                None => return Err(format!("unknown argument '{}'", polylock::url::redact(other))),
            },
        }
    }
    let sections = sections.unwrap_or(Sections::All);
    let redis = match sections {
        Sections::Redis | Sections::All => Some(Box::new(RedisTarget::parse(&url.unwrap_or_else(redis::default_url))?)),
        Sections::Snowflake
        | Sections::Ids
        | Sections::Sqlite
        | Sections::Observe
        | Sections::Etcd
        | Sections::Zookeeper
        | Sections::Postgres
        | Sections::MySql
        | Sections::Election => None,
    };
    let etcd = matches!(sections, Sections::Etcd | Sections::All).then(|| etcd_url.unwrap_or_else(etcd::default_url));
    Ok(Invocation::Bench { sections, budget, redis, etcd })
}

fn run(sections: Sections, budget: Budget, redis: Option<&RedisTarget>, etcd: Option<&str>) -> Result<()> {
    let cores = std::thread::available_parallelism().map(|n| n.get().to_string()).unwrap_or_else(|_| "unknown".into());
    println!(
        "polylock-bench {}: {} run on {cores} cores (available_parallelism); one-run figures, not averaged; \
         ratios are polylock/peer (above 1x polylock is faster); figures, not pass/fail",
        env!("CARGO_PKG_VERSION"),
        budget.name
    );
    let started = Instant::now();
    if matches!(sections, Sections::Snowflake | Sections::All) {
        snowflake::run(budget.per_id_figure)?;
        segments::run(budget.per_id_figure)?;
    }
    if matches!(sections, Sections::Ids | Sections::All) {
        // #19: segments on every server from 1 and 8 processes, leased Snowflake, UUIDv7/ULID
        segments_servers::run(budget.per_id_figure.max(Duration::from_millis(300)))?;
        ids_leased::run(budget.per_id_figure)?;
        uuid_ulid::run(budget.per_id_figure)?;
    }
    if matches!(sections, Sections::Sqlite | Sections::All) {
        locks::run(budget.locks)?;
    }
    if matches!(sections, Sections::Observe | Sections::All) {
        observe_cost::run(budget.per_id_figure)?;
    }
    if let Some(target) = redis {
        redis::run(budget.redis, target)?;
    }
    if let Some(url) = etcd {
        etcd::run(budget.etcd, url)?;
    }
    if matches!(sections, Sections::Zookeeper | Sections::All) {
        zookeeper::run(budget.zookeeper, &zookeeper::default_url())?;
    }
    for (section, db) in [(Sections::Postgres, Database::Postgres), (Sections::MySql, Database::MySql)] {
        if matches!(sections, Sections::All) || sections == section {
            sql::run(db, budget.sql, &db.default_url())?;
        }
    }
    if matches!(sections, Sections::Election | Sections::All) {
        election_failover::run(budget.election_rounds)?;
    }
    if matches!(sections, Sections::Redis | Sections::Postgres | Sections::All) {
        values_cas::run(budget.per_id_figure)?; // #22: CAS increments, idempotent run vs by hand
    }
    println!("# done in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

fn main() -> ExitCode {
    let invocation = match parse_args(std::env::args().skip(1).collect()) {
        Ok(invocation) => invocation,
        Err(message) => {
            eprintln!("polylock-bench: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let result = match invocation {
        Invocation::Help => {
            println!("{USAGE}");
            Ok(())
        }
        Invocation::Worker(args) => locks::worker_main(&args),
        Invocation::SegmentWorker(args) => segments_servers::worker_main(&args),
        Invocation::ElectionCandidate(args) => election_failover::candidate_main(&args),
        Invocation::Bench { sections, budget, redis, etcd } => run(sections, budget, redis.as_deref(), etcd.as_deref()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("polylock-bench: error: {err}");
            ExitCode::FAILURE
        }
    }
}
