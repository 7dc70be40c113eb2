//! Versioned values and idempotency keys (issue 22), side by side with the same done by hand:
//!
//! - compare-and-set increments per second of one counter, one client, on every backend that
//!   answers (`Value::get` + `Value::compare_and_set`, which reads once more to carry a fenced
//!   value's token); on PostgreSQL beside the hand-written `@Version` increment (a `SELECT`,
//!   then `UPDATE ... SET version = version + 1 WHERE name = $1 AND version = $2`);
//! - idempotent `run` calls per second on Redis and PostgreSQL, each call on a new key (claim,
//!   work that does nothing, complete) and on a finished key (a replay), beside the same by
//!   hand: Redis `SET key NX PX` then `SET key response`, and `GET` for a replay; PostgreSQL
//!   `INSERT ... ON CONFLICT DO NOTHING` then `UPDATE`, and a `SELECT` for a replay.
//!
//! Servers come from `$POLYLOCK_TEST_*_URL` (tests/services defaults); one that does not
//! answer is skipped with a line saying so. Figures only, never a pass or a fail.

use std::time::{Duration, Instant};

use polylock::{Client, ErrorKind};
use sqlx::postgres::PgPoolOptions;

use crate::report::{line, rate, versus};
use crate::Result;

const SECTION: &str = "values";

fn env_url(var: &str, default: &str) -> String {
    std::env::var(var).ok().filter(|url| !url.is_empty()).unwrap_or_else(|| default.to_string())
}

/// Every backend's URL, each in a namespace of this run's own.
fn backends(dir: &std::path::Path) -> Vec<(&'static str, String)> {
    let private = format!("bench-values-{}", std::process::id());
    let mut urls =
        vec![("mem", format!("mem://{private}")), ("sqlite", format!("sqlite://{}", dir.join("values.db").display()))];
    for (name, var, default) in [
        ("redis", "POLYLOCK_TEST_REDIS_URL", "redis://127.0.0.1:16379"),
        ("postgres", "POLYLOCK_TEST_POSTGRES_URL", "postgres://polylock:polylock@127.0.0.1:15432/polylock"),
        ("mysql", "POLYLOCK_TEST_MARIADB_URL", "mysql://polylock:polylock@127.0.0.1:13306/polylock"),
        ("etcd", "POLYLOCK_TEST_ETCD_URL", "etcd://127.0.0.1:12379"),
        ("zookeeper", "POLYLOCK_TEST_ZOOKEEPER_URL", "zk://127.0.0.1:12181"),
    ] {
        let url = env_url(var, default);
        let sep = if url.contains('?') { '&' } else { '?' };
        urls.push((name, format!("{url}{sep}namespace={private}")));
    }
    urls
}

/// Increments per second of one counter by polylock's compare-and-set, for `budget`.
async fn cas_increments(client: &Client, budget: Duration) -> Result<f64> {
    let counter = client.value("bench-counter")?;
    counter.create(&0u64.to_be_bytes()).await?;
    let started = Instant::now();
    let mut done = 0u64;
    while started.elapsed() < budget {
        let current = counter.get().await?.ok_or("the counter vanished")?;
        let n = u64::from_be_bytes(current.value.as_slice().try_into()?);
        match counter.compare_and_set(current.version, &(n + 1).to_be_bytes()).await {
            Ok(_) => done += 1,
            Err(err) if err.kind() == ErrorKind::Conflict => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(done as f64 / started.elapsed().as_secs_f64())
}

/// Idempotent `run` calls per second: on a new key each call, then on one finished key.
async fn runs(client: &Client, budget: Duration) -> Result<(f64, f64)> {
    let idem = client.idempotency("bench")?;
    let started = Instant::now();
    let mut fresh = 0u64;
    while started.elapsed() < budget {
        idem.run(&format!("k{fresh}"), b"fp", None, || async { Ok::<_, polylock::Error>(b"done".to_vec()) }).await?;
        fresh += 1;
    }
    let fresh_rate = fresh as f64 / started.elapsed().as_secs_f64();
    let started = Instant::now();
    let mut replays = 0u64;
    while started.elapsed() < budget {
        idem.run("k0", b"fp", None, || async { Err::<Vec<u8>, _>(polylock::Error::backend("ran twice")) }).await?;
        replays += 1;
    }
    Ok((fresh_rate, replays as f64 / started.elapsed().as_secs_f64()))
}

/// The same by hand on Redis: `SET NX PX` to claim, `SET` the response; `GET` to replay.
fn redis_by_hand(url: &str, budget: Duration) -> Result<(f64, f64)> {
    let plain = url.split('?').next().unwrap_or(url);
    let mut conn = redis::Client::open(plain)?.get_connection()?;
    let prefix = format!("bench-hand-idem:{}:", std::process::id());
    let started = Instant::now();
    let mut fresh = 0u64;
    while started.elapsed() < budget {
        let key = format!("{prefix}{fresh}");
        let claimed: Option<String> =
            redis::cmd("SET").arg(&key).arg("in-progress").arg("NX").arg("PX").arg(60_000).query(&mut conn)?;
        if claimed.is_some() {
            let _: () = redis::cmd("SET").arg(&key).arg("done").arg("PX").arg(86_400_000).query(&mut conn)?;
        }
        fresh += 1;
    }
    let fresh_rate = fresh as f64 / started.elapsed().as_secs_f64();
    let started = Instant::now();
    let mut replays = 0u64;
    let first = format!("{prefix}0");
    while started.elapsed() < budget {
        let got: Option<String> = redis::cmd("GET").arg(&first).query(&mut conn)?;
        std::hint::black_box(got);
        replays += 1;
    }
    let replay_rate = replays as f64 / started.elapsed().as_secs_f64();
    for n in 0..fresh {
        let _: () = redis::cmd("UNLINK").arg(format!("{prefix}{n}")).query(&mut conn)?;
    }
    Ok((fresh_rate, replay_rate))
}

/// PostgreSQL by hand: the `@Version` increment, and an idempotency row claimed by
/// `INSERT ... ON CONFLICT DO NOTHING`, completed by `UPDATE`, replayed by `SELECT`.
async fn postgres_by_hand(url: &str, budget: Duration) -> Result<(f64, (f64, f64))> {
    let plain = url.split('?').next().unwrap_or(url);
    let pool = PgPoolOptions::new().max_connections(1).connect(plain).await?;
    let table = format!("bench_hand_values_{}", std::process::id());
    sqlx::query(&format!(
        "CREATE TABLE IF NOT EXISTS {table} (name TEXT PRIMARY KEY, value BYTEA, version BIGINT NOT NULL)"
    ))
    .execute(&pool)
    .await?;
    sqlx::query(&format!("INSERT INTO {table} (name, value, version) VALUES ('counter', $1, 1)"))
        .bind(0u64.to_be_bytes().to_vec())
        .execute(&pool)
        .await?;
    let (select, update) = (
        format!("SELECT value, version FROM {table} WHERE name = 'counter'"),
        format!("UPDATE {table} SET value = $1, version = version + 1 WHERE name = 'counter' AND version = $2"),
    );
    let started = Instant::now();
    let mut done = 0u64;
    while started.elapsed() < budget {
        let (value, version): (Vec<u8>, i64) = sqlx::query_as(&select).fetch_one(&pool).await?;
        let n = u64::from_be_bytes(value.as_slice().try_into()?);
        let written = sqlx::query(&update).bind((n + 1).to_be_bytes().to_vec()).bind(version).execute(&pool).await?;
        done += written.rows_affected();
    }
    let increments = done as f64 / started.elapsed().as_secs_f64();

    let (claim, complete, replay) = (
        format!("INSERT INTO {table} (name, value, version) VALUES ($1, NULL, 1) ON CONFLICT DO NOTHING"),
        format!("UPDATE {table} SET value = $2, version = version + 1 WHERE name = $1 AND version = 1"),
        format!("SELECT value FROM {table} WHERE name = $1"),
    );
    let started = Instant::now();
    let mut fresh = 0u64;
    while started.elapsed() < budget {
        let key = format!("k{fresh}");
        if sqlx::query(&claim).bind(&key).execute(&pool).await?.rows_affected() == 1 {
            sqlx::query(&complete).bind(&key).bind(b"done".to_vec()).execute(&pool).await?;
        }
        fresh += 1;
    }
    let fresh_rate = fresh as f64 / started.elapsed().as_secs_f64();
    let started = Instant::now();
    let mut replays = 0u64;
    while started.elapsed() < budget {
        let got: Option<Vec<u8>> = sqlx::query_scalar(&replay).bind("k0").fetch_one(&pool).await?;
        std::hint::black_box(got);
        replays += 1;
    }
    let replay_rate = replays as f64 / started.elapsed().as_secs_f64();
    sqlx::query(&format!("DROP TABLE {table}")).execute(&pool).await?;
    pool.close().await;
    Ok((increments, (fresh_rate, replay_rate)))
}

pub fn run(budget: Duration) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let dir = tempfile::tempdir()?;
    runtime.block_on(async {
        for (backend, url) in backends(dir.path()) {
            let client = match Client::connect(&url).await {
                Ok(client) => client,
                Err(err) => {
                    line(SECTION, backend, &[format!("skipped: {err}")]);
                    continue;
                }
            };
            let ours = cas_increments(&client, budget).await?;
            let mut cells = vec![rate("polylock", ours, "CAS increments/s")];
            if backend == "postgres" {
                let (hand, (hand_fresh, hand_replay)) = postgres_by_hand(&url, budget).await?;
                cells.push(rate("by hand", hand, "increments/s"));
                cells.push(versus("polylock", "by hand", ours, hand));
                line(SECTION, &format!("{backend} cas"), &cells);
                let (fresh, replay) = runs(&client, budget).await?;
                idempotency_lines(backend, (fresh, replay), (hand_fresh, hand_replay), "INSERT NX + UPDATE / SELECT");
            } else if backend == "redis" {
                line(SECTION, &format!("{backend} cas"), &cells);
                let (fresh, replay) = runs(&client, budget).await?;
                let hand = redis_by_hand(&url, budget)?;
                idempotency_lines(backend, (fresh, replay), hand, "SET NX + SET / GET");
            } else {
                line(SECTION, &format!("{backend} cas"), &cells);
            }
            client.close().await;
        }
        Ok(())
    })
}

fn idempotency_lines(backend: &str, ours: (f64, f64), hand: (f64, f64), how: &str) {
    for (label, our_rate, hand_rate) in [("new key", ours.0, hand.0), ("replay", ours.1, hand.1)] {
        line(
            SECTION,
            &format!("{backend} run, {label}"),
            &[
                rate("polylock", our_rate, "calls/s"),
                rate(&format!("by hand ({how})"), hand_rate, "calls/s"),
                versus("polylock", "by hand", our_rate, hand_rate),
            ],
        );
    }
}
