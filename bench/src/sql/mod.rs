//! Sections `postgres` and `mysql`: polylock's session and lease locks beside what a user
//! would write by hand with sqlx on one connection (`pg_advisory_lock` + `pg_advisory_unlock`,
//! `GET_LOCK` + `RELEASE_LOCK`), with a raw `SELECT 1` round trip as the floor, all measured
//! on one server in one run; then [`contended::WORKERS`] workers contending for one name.
//!
//! Rows live under the namespace `plbench-<pid>` and are deleted at the end.

use std::sync::Arc;
use std::time::{Duration, Instant};

use polylock::{AcquireOptions, Client, LockKind};
use sqlx::{Connection, Executor};

use crate::polylock_side::{PolylockSide, LEASE};
use crate::redis::contended::{self, ContendedStats};
use crate::report::{count, line, millis, ratio};
use crate::Result;

/// A published laptop figure for a PostgreSQL advisory lock+unlock, for scale.
const PUBLISHED_PG_PAIR: Duration = Duration::from_micros(1620);
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Copy)]
pub struct SqlBudget {
    /// Each latency series (SELECT 1, raw pairs, polylock pairs per kind).
    pub series: Duration,
    /// Each contended run.
    pub contended: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Database {
    Postgres,
    MySql,
}

impl Database {
    fn section(self) -> &'static str {
        match self {
            Database::Postgres => "postgres",
            Database::MySql => "mysql",
        }
    }

    /// `$POLYLOCK_TEST_POSTGRES_URL` / `$POLYLOCK_TEST_MARIADB_URL`, else the services.sh defaults.
    pub fn default_url(self) -> String {
        let (var, default) = match self {
            Database::Postgres => {
                ("POLYLOCK_TEST_POSTGRES_URL", "postgres://polylock:polylock@127.0.0.1:15432/polylock")
            }
            Database::MySql => ("POLYLOCK_TEST_MARIADB_URL", "mysql://polylock:polylock@127.0.0.1:13306/polylock"),
        };
        std::env::var(var).ok().filter(|url| !url.is_empty()).unwrap_or_else(|| default.to_string())
    }
}

/// One connection of the hand-written side.
enum Raw {
    Postgres(sqlx::PgConnection),
    MySql(sqlx::MySqlConnection),
}

impl Raw {
    async fn connect(db: Database, url: &str) -> Result<Raw> {
        let url = url.replacen("mariadb://", "mysql://", 1);
        Ok(match db {
            Database::Postgres => Raw::Postgres(sqlx::PgConnection::connect(&url).await?),
            Database::MySql => Raw::MySql(sqlx::MySqlConnection::connect(&url).await?),
        })
    }

    async fn select_one(&mut self) -> Result<()> {
        match self {
            Raw::Postgres(conn) => conn.execute("SELECT 1").await.map(|_| ())?,
            Raw::MySql(conn) => conn.execute("SELECT 1").await.map(|_| ())?,
        }
        Ok(())
    }

    /// The session lock written by hand: lock, then unlock, on this connection.
    async fn lock_unlock(&mut self, name: &str) -> Result<()> {
        match self {
            Raw::Postgres(conn) => {
                let key = polylock::sql_names::postgres_advisory_key(name);
                sqlx::query("SELECT pg_advisory_lock($1)").bind(key).execute(&mut *conn).await?;
                sqlx::query("SELECT pg_advisory_unlock($1)").bind(key).execute(&mut *conn).await?;
            }
            Raw::MySql(conn) => {
                sqlx::query("SELECT GET_LOCK(?, -1)").bind(name).execute(&mut *conn).await?;
                sqlx::query("SELECT RELEASE_LOCK(?)").bind(name).execute(&mut *conn).await?;
            }
        }
        Ok(())
    }

    async fn cleanup(&mut self, prefix: &str) -> Result<()> {
        let pattern = format!("{prefix}:%");
        for table in ["shedlock", "polylock_fencing"] {
            let sql = match self {
                Raw::Postgres(_) => format!("DELETE FROM {table} WHERE name LIKE $1"),
                Raw::MySql(_) => format!("DELETE FROM {table} WHERE name LIKE ?"),
            };
            match self {
                Raw::Postgres(conn) => sqlx::query(&sql).bind(&pattern).execute(&mut *conn).await.map(|_| ())?,
                Raw::MySql(conn) => sqlx::query(&sql).bind(&pattern).execute(&mut *conn).await.map(|_| ())?,
            }
        }
        Ok(())
    }
}

/// Latencies of one series, run one after another until the budget is spent.
struct Series {
    sorted: Vec<Duration>,
    elapsed: Duration,
}

/// Run `$op` (a future of `Result<()>`) back to back until `$budget` is spent (at least ten
/// times), timing each.
macro_rules! series {
    ($budget:expr, $op:expr) => {{
        let mut latencies = Vec::new();
        let started = Instant::now();
        while started.elapsed() < $budget || latencies.len() < 10 {
            let at = Instant::now();
            $op.await?;
            latencies.push(at.elapsed());
        }
        let elapsed = started.elapsed();
        latencies.sort();
        Series { sorted: latencies, elapsed }
    }};
}

impl Series {
    fn percentile(&self, fraction: f64) -> Duration {
        let rank = ((self.sorted.len() as f64 * fraction).ceil() as usize).clamp(1, self.sorted.len());
        self.sorted[rank - 1]
    }

    fn per_sec(&self) -> f64 {
        self.sorted.len() as f64 / self.elapsed.as_secs_f64()
    }

    fn cells(&self, who: &str) -> String {
        format!(
            "{who} p50 {} p99 {} {}/s",
            millis(self.percentile(0.5)),
            millis(self.percentile(0.99)),
            count(self.per_sec())
        )
    }
}

/// Measure and print one database's section, or say why it was skipped.
pub fn run(db: Database, budget: SqlBudget, url: &str) -> Result<()> {
    let section = db.section();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let shown = polylock::url::redact(url);
    let probe = runtime.block_on(async { tokio::time::timeout(PROBE_TIMEOUT, Raw::connect(db, url)).await });
    let mut raw = match probe {
        Ok(Ok(raw)) => raw,
        Ok(Err(err)) => {
            println!("{section:<10} skipped: no database answers at {shown} ({err}); start one with tests/services/services.sh");
            return Ok(());
        }
        Err(_) => {
            println!("{section:<10} skipped: no database answered at {shown} within {}s", PROBE_TIMEOUT.as_secs());
            return Ok(());
        }
    };
    let prefix = format!("plbench-{}", std::process::id());
    println!(
        "# {section}: on {shown}; one task, lock+unlock pairs back to back, {} s each: SELECT 1 round trip (the \
         floor), the session lock written by hand with sqlx on one connection, polylock session (reentrant) and \
         lease (ShedLock table) locks with a {} s lease; contended = {} workers on one name, hold {} ms, {} ms \
         outside, {} s; ratios are polylock/peer latency (above 1x polylock is slower)",
        budget.series.as_secs_f64(),
        LEASE.as_secs(),
        contended::WORKERS,
        contended::HOLD.as_millis(),
        contended::OUTSIDE.as_millis(),
        budget.contended.as_secs_f64(),
    );
    let result = runtime.block_on(measure(db, budget, url, &prefix, &mut raw));
    if let Err(err) = runtime.block_on(raw.cleanup(&prefix)) {
        println!("# {section}: could not delete this run's rows ({prefix}:%): {err}");
    }
    result
}

async fn measure(db: Database, budget: SqlBudget, url: &str, prefix: &str, raw: &mut Raw) -> Result<()> {
    let section = db.section();
    let floor = series!(budget.series, raw.select_one());
    line(section, "SELECT 1", &[floor.cells("sqlx")]);
    let by_hand_name = format!("{prefix}:by-hand");
    let by_hand = series!(budget.series, raw.lock_unlock(&by_hand_name));
    let p50 = |s: &Series| s.percentile(0.5).as_secs_f64();
    line(
        section,
        "session lock by hand",
        &[by_hand.cells("sqlx"), format!("pair/SELECT 1 {}", ratio(p50(&by_hand) / p50(&floor)))],
    );
    let client = Client::connect(&format!("{url}?namespace={prefix}")).await?;
    for (kind, label) in [(LockKind::Reentrant, "polylock session lock"), (LockKind::Lease, "polylock lease lock")] {
        let lock = client.lock("pairs")?.with_kind(kind)?;
        let options = AcquireOptions::default().lease(LEASE);
        let ours = series!(budget.series, async { Result::Ok(lock.acquire_with(options).await?.release().await?) });
        let mut cells = vec![
            ours.cells("polylock"),
            format!("polylock/by hand {}", ratio(p50(&ours) / p50(&by_hand))),
            format!("pair/SELECT 1 {}", ratio(p50(&ours) / p50(&floor))),
        ];
        if db == Database::Postgres {
            cells.push(format!(
                "vs published {} laptop figure {}",
                millis(PUBLISHED_PG_PAIR),
                ratio(p50(&ours) / PUBLISHED_PG_PAIR.as_secs_f64())
            ));
        }
        line(section, label, &cells);
    }
    let side = PolylockSide::connect(&format!("{url}?namespace={prefix}")).await?;
    for (kind, label) in [(LockKind::Reentrant, "contended session"), (LockKind::Lease, "contended lease")] {
        let timeline = contended::on_one_name(
            Arc::new(side.with(kind, Some(LEASE))),
            &format!("contended-{kind}"),
            budget.contended,
        )
        .await?;
        contended::report(section, label, &ContendedStats::of(&timeline))?;
    }
    side.close().await;
    client.close().await;
    Ok(())
}
