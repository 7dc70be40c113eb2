//! The ceiling: how many lock acquisitions per second this redis-server can run at all.
//! `redis-benchmark` sends pipelined EVALSHA of a Redisson-style reentrant acquire with a
//! fencing counter: the server-side work of one acquisition and nothing else, no client
//! logic, no waiting for replies between requests. A release costs about the same script
//! on the server, so half the figure is the ceiling for lock+unlock pairs.

use std::process::Command;

use ::redis::{Connection, Script};

use super::server::RedisTarget;
use crate::Result;

/// Redisson's RLock acquire (hash key = lock name, field = "<client uuid>:<thread id>" with
/// the hold count, PEXPIRE for the lease; nil on success, else the holder's remaining TTL),
/// plus the INCR of a fencing counter that every new hold does.
/// KEYS[1] lock name, KEYS[2] fencing counter; ARGV[1] lease in ms, ARGV[2] owner field.
const ACQUIRE_SCRIPT: &str = "\
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  redis.call('incr', KEYS[2])
  return nil
end
return redis.call('pttl', KEYS[1])";
/// Requests in flight per connection.
pub const PIPELINE: u32 = 16;
/// Connections.
pub const CLIENTS: u32 = 50;
/// Lock names the requests spread over at random.
const NAMES: u32 = 10_000;
const LEASE_MS: &str = "30000";
/// One owner for every request: each is a fresh or reentrant acquisition, both of which
/// take the success path that a lock+unlock pair pays for.
const OWNER: &str = "4a1b7c9e-2f3d-4e5a-8b6c-0d9e8f7a6b5c:1";

/// Acquisitions per second at the server's limit.
#[derive(Debug, Clone, Copy)]
pub struct Ceiling {
    pub acquires_per_sec: f64,
}

impl Ceiling {
    /// A lock+unlock pair is two such scripts.
    pub fn pairs_per_sec(&self) -> f64 {
        self.acquires_per_sec / 2.0
    }
}

/// Run `requests` acquisitions through redis-benchmark on names under `prefix`.
pub fn measure(target: &RedisTarget, connection: &mut Connection, prefix: &str, requests: u64) -> Result<Ceiling> {
    let sha = Script::new(ACQUIRE_SCRIPT).load(connection)?;
    // `__rand_int__` becomes a random number below NAMES in each request, independently
    // in each argument: the counter is some name's, which costs the same.
    let name = format!("{prefix}:ceiling:__rand_int__");
    let counter = format!("redisson_lock_token:{{{prefix}:ceiling:__rand_int__}}");
    let mut command = Command::new("redis-benchmark");
    command.args(["-h", target.host(), "-p", &target.port().to_string(), "--dbnum", &target.db().to_string()]);
    if let Some(password) = target.password() {
        command.args(["-a", password]);
    }
    if let Some(user) = target.username() {
        command.args(["--user", user]);
    }
    command.args(["-n", &requests.to_string(), "-P", &PIPELINE.to_string(), "-c", &CLIENTS.to_string()]);
    command.args(["-r", &NAMES.to_string(), "--csv", "EVALSHA", &sha, "2", &name, &counter, LEASE_MS, OWNER]);
    let output = command.output().map_err(|e| {
        format!("cannot run redis-benchmark ({e}); it comes with the redis-tools package (tests/services/services.sh start redis installs it)")
    })?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!("redis-benchmark failed ({}): {}", output.status, stderr.trim()).into());
    }
    Ok(Ceiling { acquires_per_sec: parse_csv_rps(&stdout)? })
}

/// The requests per second from `--csv` output: the row after the header, second column.
fn parse_csv_rps(stdout: &str) -> Result<f64> {
    let row = stdout
        .lines()
        .find(|line| line.starts_with("\"EVALSHA"))
        .ok_or_else(|| format!("redis-benchmark printed no result row: {stdout:?}"))?;
    let rps = row.split("\",\"").nth(1).ok_or_else(|| format!("redis-benchmark's row has no rps: {row:?}"))?;
    Ok(rps.trim_matches('"').parse().map_err(|e| format!("redis-benchmark's rps '{rps}' is not a number: {e}"))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_csv_row() {
        let stdout =
            "\"test\",\"rps\",\"avg_latency_ms\"\n\"EVALSHA 0540 2 a:{x} b 30000 u:1\",\"110011.00\",\"7.065\"\n";
        assert_eq!(parse_csv_rps(stdout).unwrap(), 110_011.0);
        assert!(parse_csv_rps("\"test\",\"rps\"\n").is_err());
    }
}
