//! The `sqlite` section's floor: the SQLite work one lock+unlock pair needs at minimum, done
//! directly with rusqlite from one thread, with polylock's durability settings (WAL,
//! `synchronous=NORMAL`, the default auto-checkpoint). A SQLite-backed lock cannot go faster
//! than this on the machine, whatever the layer above it does.
//!
//! A pair is two write transactions, as a lock whose row is the truth needs:
//! 1. `BEGIN IMMEDIATE`; draw the next fencing token (an upsert of the counter row with
//!    `RETURNING`); write the hold's row; `COMMIT`;
//! 2. delete the hold's row (one autocommit statement).
//!
//! The statements are prepared once; nothing is read before writing, nothing is checked.

use std::time::{Duration, Instant};

use rusqlite::{params, Connection, OpenFlags, TransactionBehavior};

use crate::measure::Throughput;
use crate::Result;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS floor_holds (
    name TEXT PRIMARY KEY, owner TEXT NOT NULL, token INTEGER NOT NULL, lease_until_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS floor_fencing (name TEXT PRIMARY KEY, token INTEGER NOT NULL) WITHOUT ROWID;
";

/// Pairs of bare write transactions on one name from one thread until `budget` has passed.
pub fn measure(path: &std::path::Path, budget: Duration) -> Result<Throughput> {
    // polylock's open flags: the connection is used by one thread at a time.
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.execute_batch(SCHEMA)?;
    let started = Instant::now();
    let deadline = started + budget;
    let mut pairs = 0;
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let token: i64 = tx
            .prepare_cached(
                "INSERT INTO floor_fencing (name, token) VALUES ('same', 1)
                 ON CONFLICT (name) DO UPDATE SET token = token + 1 RETURNING token",
            )?
            .query_row([], |row| row.get(0))?;
        tx.prepare_cached(
            "INSERT INTO floor_holds (name, owner, token, lease_until_ms) VALUES ('same', 'floor', ?1, ?2)",
        )?
        .execute(params![token, 30_000])?;
        tx.commit()?;
        conn.prepare_cached("DELETE FROM floor_holds WHERE name = 'same'")?.execute([])?;
        pairs += 1;
        if Instant::now() >= deadline {
            break;
        }
    }
    Ok(Throughput { per_worker: vec![pairs], elapsed: started.elapsed(), held: Duration::ZERO })
}
