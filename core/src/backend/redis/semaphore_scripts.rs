//! The Lua of semaphores, in Redisson's RPermitExpirableSemaphore layout, and the keys it
//! runs on: a counter at the name (permits available), a sorted set `{name}:timeout` of the
//! permits taken (member = the permit id as 16 raw bytes, as Redisson writes it; score = when
//! its lease ends, in ms), and the channel `redisson_sc:{name}`, where the count available is
//! published whenever permits come back.
//!
//! As Redisson's, every script first takes back the permits whose lease has ended. Unlike
//! Redisson's, whose scores come from each client's clock, these scripts read the time from
//! the server (`TIME`). The count is set as `trySetPermits` does (only if the counter does not
//! exist); a name whose count (available + taken) differs from the one asked for is refused.
//! Each grant draws a fencing token from the name's one counter (see scripts.rs).

use std::sync::LazyLock;

use redis::Script;

use super::scripts::{floored_counter, guarded, prefixed, Shape};

/// Every Redis key and channel of one semaphore.
pub(super) struct SemaphoreKeys<'a> {
    /// The count of permits available.
    pub counter: &'a str,
}

impl<'a> SemaphoreKeys<'a> {
    pub fn new(name: &'a str) -> Self {
        SemaphoreKeys { counter: name }
    }

    /// Redisson's `suffixName(name, "timeout")`: the permits taken, by lease end.
    pub fn timeouts(&self) -> String {
        if self.counter.contains('{') {
            format!("{}:timeout", self.counter)
        } else {
            format!("{{{}}}:timeout", self.counter)
        }
    }

    /// Redisson's semaphore channel, shared with its RSemaphore.
    pub fn channel(&self) -> String {
        prefixed("redisson_sc", self.counter)
    }

    /// The name's fencing counter (one per name, shared with the locks of the name).
    pub fn token(&self) -> String {
        prefixed("redisson_lock_token", self.counter)
    }
}

/// Redisson's preamble: take back the permits whose lease ended by the server's clock, and
/// announce the count available. Leaves `now` (server ms) for the body. KEYS[1] = counter,
/// KEYS[2] = timeouts, KEYS[3] = channel; `publish` names the ARGV with the publish command.
fn reclaiming(publish: &str, body: &str) -> String {
    format!(
        r"
if redis.replicate_commands then redis.replicate_commands() end
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local expired = redis.call('zrangebyscore', KEYS[2], 0, now)
if #expired > 0 then
  for _, id in ipairs(expired) do redis.call('zrem', KEYS[2], id) end
  local value = redis.call('incrby', KEYS[1], #expired)
  if tonumber(value) > 0 then redis.call({publish}, KEYS[3], value) end
end
{body}"
    )
}

/// Take one permit. KEYS: counter, timeouts, channel, token.
/// ARGV: permits in all, lease ms, permit id, publish command.
/// Returns {-1, token} when taken; {ms until the soonest lease ends (-1 if none does), -1}
/// when every permit is taken; {-2, permits in all} when the name has another count.
pub(super) static ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&guarded(
        &[Shape::Number],
        &floored_counter(
            "KEYS[4]",
            &reclaiming(
                "ARGV[4]",
                r"
local permits = tonumber(ARGV[1])
local available = redis.call('get', KEYS[1])
if available == false then
  available = math.max(permits - redis.call('zcard', KEYS[2]), 0)
  redis.call('set', KEYS[1], available)
  redis.call(ARGV[4], KEYS[3], available)
else
  available = tonumber(available)
end
local total = available + redis.call('zcard', KEYS[2])
if total ~= permits then return {-2, total} end
if available >= 1 then
  redis.call('decr', KEYS[1])
  redis.call('zadd', KEYS[2], now + tonumber(ARGV[2]), ARGV[3])
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then redis.call('pexpire', KEYS[2], ttl) end
  return {-1, redis.call('incr', KEYS[4])}
end
local soonest = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
if soonest[2] ~= nil then
  return {math.max(tonumber(soonest[2]) - now, 0), -1}
end
return {-3, -1}
",
            ),
        ),
    ))
});

/// Extend a permit's lease (Redisson's `updateLeaseTime`). KEYS: counter, timeouts, channel.
/// ARGV: lease ms, permit id, publish command. Returns 1 if renewed, 0 if the permit is gone.
pub(super) static RENEW: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&reclaiming(
        "ARGV[3]",
        r"
if redis.call('zscore', KEYS[2], ARGV[2]) == false then return 0 end
redis.call('zadd', KEYS[2], now + tonumber(ARGV[1]), ARGV[2])
return 1
",
    ))
});

/// Give a permit back. KEYS: counter, timeouts, channel. ARGV: permit id, publish command.
/// Returns 1 if released, 0 if the permit was gone (its lease had ended).
pub(super) static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&reclaiming(
        "ARGV[2]",
        r"
if redis.call('zrem', KEYS[2], ARGV[1]) == 0 then return 0 end
local value = redis.call('incr', KEYS[1])
redis.call(ARGV[2], KEYS[3], value)
return 1
",
    ))
});

/// Whether any permit is taken. KEYS: timeouts. Returns the number of live permits.
pub(super) static TAKEN: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
return redis.call('zcount', KEYS[1], '(' .. now, '+inf')
",
    )
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_redissons_and_share_one_hash_slot() {
        let keys = SemaphoreKeys::new("pool:db");
        assert_eq!(keys.counter, "pool:db");
        assert_eq!(keys.timeouts(), "{pool:db}:timeout");
        assert_eq!(keys.channel(), "redisson_sc:{pool:db}");
        assert_eq!(keys.token(), "redisson_lock_token:{pool:db}");
        let tagged = SemaphoreKeys::new("{pool}:db");
        assert_eq!(tagged.timeouts(), "{pool}:db:timeout");
        assert_eq!(tagged.channel(), "redisson_sc:{pool}:db");
    }
}
