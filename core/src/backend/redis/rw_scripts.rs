//! The Lua of read-write locks, in Redisson's RReadWriteLock layout, and the keys it runs on.
//!
//! One hash per lock (key = the name): field `mode` = `read` | `write`, reader fields
//! `<client uuid>:<owner>` = hold count, writer field `<client uuid>:<owner>:write` = hold
//! count. Each read hold n of an owner also has a key `{name}:<client uuid>:<owner>:rwlock_timeout:<n>`
//! with its own expiry: Redisson recomputes the hash's expiry from these keys when a reader
//! leaves, so a reader without them is invisible to Redisson and would be deleted under it.
//! Releases are announced on `redisson_rwlock:{name}`: `0` when the last reader leaves, `1`
//! when the last writer does. Fencing tokens come from the name's one counter,
//! `redisson_lock_token:{name}`, shared with the mutex (see scripts.rs).
//!
//! Where these scripts differ from Redisson's, it is only where Redisson's would let a hold
//! look alive after its lease: a renewal or re-entry of a reader whose timeout keys have all
//! expired reports the hold gone, and a name whose hash has no `mode` (a plain RLock on the
//! same name) is busy rather than taken over.

use std::sync::LazyLock;

use redis::Script;

use super::scripts::{floored_counter, guarded, prefixed, Shape};

/// The message Redisson's read unlock publishes (its `LockPubSub.UNLOCK_MESSAGE`).
pub(super) const READ_UNLOCK_MESSAGE: &str = "0";
/// The message Redisson's write unlock publishes (`LockPubSub.READ_UNLOCK_MESSAGE`, which
/// wakes every waiter).
pub(super) const WRITE_UNLOCK_MESSAGE: &str = "1";

/// How long a waiting writer's mark keeps new polylock readers out after its last attempt,
/// with writer preference on: longer than the longest pause between a waiter's attempts.
pub(super) const WRITER_MARK_MS: u64 = 1000;

/// Every Redis key and channel of one read-write lock.
pub(super) struct RwKeys<'a> {
    /// The lock's hash.
    pub hash: &'a str,
}

impl<'a> RwKeys<'a> {
    pub fn new(name: &'a str) -> Self {
        RwKeys { hash: name }
    }

    /// Where releases are announced, shared with Redisson's read and write locks.
    pub fn channel(&self) -> String {
        prefixed("redisson_rwlock", self.hash)
    }

    /// The name's fencing counter (the mutex's too: one counter per name).
    pub fn token(&self) -> String {
        prefixed("redisson_lock_token", self.hash)
    }

    /// Redisson's `getKeyPrefix`: `{name}`, or the name itself when it has a hash tag.
    pub fn key_prefix(&self) -> String {
        if self.hash.contains('{') {
            self.hash.to_string()
        } else {
            format!("{{{}}}", self.hash)
        }
    }

    /// Redisson's `getReadWriteTimeoutNamePrefix`: the read holds of `field` are this
    /// prefix followed by `:<n>`.
    pub fn timeout_prefix(&self, field: &str) -> String {
        format!("{}:{field}:rwlock_timeout", self.key_prefix())
    }

    /// Writer preference only (polylock's own, unknown to Redisson): a waiting writer's mark.
    pub fn writer_mark(&self) -> String {
        format!("{}:polylock_writer_waiting", self.key_prefix())
    }
}

/// The writer field of an owner's reader field.
pub(super) fn write_field(read_field: &str) -> String {
    format!("{read_field}:write")
}

/// Take the read side for an owner that has no read hold yet: Redisson's read lock, plus a
/// fencing token and optional writer preference.
/// KEYS: hash, token, timeout prefix of the owner, writer mark.
/// ARGV: lease ms, reader field, writer field, '1' to give way to a waiting writer.
/// Returns {-1, token} when acquired, else {ms the holder's lease has left, -1}.
pub(super) static READ_ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&guarded(
        &[Shape::RwHash],
        &floored_counter(
            "KEYS[2]",
            r"
local mode = redis.call('hget', KEYS[1], 'mode')
local downgrade = mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1
if ARGV[4] == '1' and not downgrade then
  local marked = redis.call('pttl', KEYS[4])
  if marked > 0 then return {marked, -1} end
end
if mode == false then
  if redis.call('exists', KEYS[1]) == 1 then
    return {redis.call('pttl', KEYS[1]), -1}
  end
  redis.call('hset', KEYS[1], 'mode', 'read')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[3] .. ':1', 1, 'px', ARGV[1])
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {-1, redis.call('incr', KEYS[2])}
end
if mode == 'read' or downgrade then
  -- a count left by an earlier hold of this owner whose lease ran out: start over
  local stale = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
  if stale then
    for i = 1, stale do redis.call('del', KEYS[3] .. ':' .. i) end
  end
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[3] .. ':1', 1, 'px', ARGV[1])
  local remain = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], math.max(remain, tonumber(ARGV[1])))
  return {-1, redis.call('incr', KEYS[2])}
end
return {redis.call('pttl', KEYS[1]), -1}
",
        ),
    ))
});

/// Take the write side for an owner that has no write hold yet: Redisson's write lock, plus
/// a fencing token and optional writer preference (a busy writer leaves its mark).
/// KEYS: hash, token, writer mark. ARGV: lease ms, writer field, '1' to leave a mark, mark ms.
/// Returns {-1, token} when acquired, else {ms the holders' leases have left, -1}.
pub(super) static WRITE_ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&guarded(
        &[Shape::RwHash],
        &floored_counter(
            "KEYS[2]",
            r"
local mode = redis.call('hget', KEYS[1], 'mode')
local mine = mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1
if (mode == false and redis.call('exists', KEYS[1]) == 0) or mine then
  redis.call('hset', KEYS[1], 'mode', 'write')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  local remain = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], math.max(remain, tonumber(ARGV[1])))
  if redis.call('get', KEYS[3]) == ARGV[2] then redis.call('del', KEYS[3]) end
  return {-1, redis.call('incr', KEYS[2])}
end
if ARGV[3] == '1' then
  local marker = redis.call('get', KEYS[3])
  if marker == false or marker == ARGV[2] then
    redis.call('set', KEYS[3], ARGV[2], 'px', ARGV[4])
  end
end
return {redis.call('pttl', KEYS[1]), -1}
",
        ),
    ))
});

/// A writer that stops waiting takes its mark away. KEYS: writer mark. ARGV: writer field.
pub(super) static WITHDRAW_WRITER_MARK: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
",
    )
});

/// Count one more read hold of an owner that holds the read side: its own timeout key, with
/// what is left of the owner's lease (its holds share one lease).
/// KEYS: hash, timeout prefix of the owner. ARGV: reader field.
/// Returns 1 if the owner still held it, else 0.
pub(super) static READ_REENTER: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local count = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if count == nil then return 0 end
local left = -2
for i = 1, count do
  left = math.max(left, redis.call('pttl', KEYS[2] .. ':' .. i))
end
if left <= 0 then return 0 end
local n = redis.call('hincrby', KEYS[1], ARGV[1], 1)
redis.call('set', KEYS[2] .. ':' .. n, 1, 'px', left)
return 1
",
    )
});

/// Count one more write hold. KEYS: hash. ARGV: writer field. Returns 1 if still held.
pub(super) static WRITE_REENTER: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('hget', KEYS[1], 'mode') == 'write' and redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], 1)
  return 1
end
return 0
",
    )
});

/// The watchdog's renewal of a reader: every timeout key of the owner and the hash (never
/// shortened: other readers' leases may be longer).
/// KEYS: hash, timeout prefix of the owner. ARGV: lease ms, reader field.
/// Returns 1 if renewed, 0 if the hold is gone (its field, or all of its timeout keys).
pub(super) static READ_RENEW: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local count = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
if count == nil then return 0 end
local alive = false
for i = 1, count do
  if redis.call('exists', KEYS[2] .. ':' .. i) == 1 then alive = true break end
end
if not alive then return 0 end
for i = 1, count do
  redis.call('set', KEYS[2] .. ':' .. i, 1, 'px', ARGV[1])
end
redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1])))
return 1
",
    )
});

/// The watchdog's renewal of the writer. KEYS: hash. ARGV: lease ms, writer field.
/// Returns 1 if renewed, else 0.
pub(super) static WRITE_RENEW: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('hget', KEYS[1], 'mode') == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1])))
  return 1
end
return 0
",
    )
});

/// Give back one read hold: Redisson's read unlock. When the owner's last hold goes, the
/// hash's expiry is recomputed from every reader's timeout keys; if none is alive and no
/// writer holds (a downgrade), the hash goes and `0` is published.
/// KEYS: hash, channel, timeout prefix of the owner, key prefix.
/// ARGV: reader field, holds left after this one, publish command, message.
/// Returns the holds left, or -1 if the owner's hold was gone (expired or taken).
pub(super) static READ_RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then return -1 end
local count = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if count == nil then return -1 end
local alive = false
for i = 1, count do
  if redis.call('exists', KEYS[3] .. ':' .. i) == 1 then alive = true break end
end
if alive and tonumber(ARGV[2]) > 0 then
  local left = redis.call('hincrby', KEYS[1], ARGV[1], -1)
  redis.call('del', KEYS[3] .. ':' .. (left + 1))
  return left
end
local outcome = 0
if not alive then outcome = -1 end
for i = 1, count do redis.call('del', KEYS[3] .. ':' .. i) end
redis.call('hdel', KEYS[1], ARGV[1])
if redis.call('hlen', KEYS[1]) > 1 then
  local remain = -3
  for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
    local holds = tonumber(redis.call('hget', KEYS[1], field))
    if type(holds) == 'number' then
      for i = holds, 1, -1 do
        remain = math.max(remain, redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. i))
      end
    end
  end
  if remain > 0 then
    redis.call('pexpire', KEYS[1], remain)
    return outcome
  end
  if mode == 'write' then return outcome end
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], ARGV[4])
return outcome
",
    )
});

/// Give back one write hold: Redisson's write unlock. The last one deletes the hash and
/// publishes `1`, or, if the writer also reads (a downgrade), turns the lock to read mode.
/// KEYS: hash, channel. ARGV: writer field, holds left after this one, publish command,
/// message. Returns the holds left, or -1 if the owner's hold was gone.
pub(super) static WRITE_RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('hget', KEYS[1], 'mode') ~= 'write' or redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return -1
end
if tonumber(ARGV[2]) > 0 then
  return redis.call('hincrby', KEYS[1], ARGV[1], -1)
end
redis.call('hdel', KEYS[1], ARGV[1])
if redis.call('hlen', KEYS[1]) == 1 then
  redis.call('del', KEYS[1])
  redis.call(ARGV[3], KEYS[2], ARGV[4])
else
  redis.call('hset', KEYS[1], 'mode', 'read')
end
return 0
",
    )
});

/// Redisson's `isLocked` of each side. KEYS: hash. ARGV: 'read' or 'write'. Returns 1 or 0.
pub(super) static IS_LOCKED: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local mode = redis.call('hget', KEYS[1], 'mode')
if ARGV[1] == 'write' then
  if mode == 'write' then return 1 end
  return 0
end
if mode == 'read' or (mode == 'write' and redis.call('hlen', KEYS[1]) > 2) then return 1 end
return 0
",
    )
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_redissons_and_share_one_hash_slot() {
        let keys = RwKeys::new("orders:42");
        assert_eq!(keys.hash, "orders:42");
        assert_eq!(keys.channel(), "redisson_rwlock:{orders:42}");
        assert_eq!(keys.token(), "redisson_lock_token:{orders:42}");
        assert_eq!(keys.timeout_prefix("u:7"), "{orders:42}:u:7:rwlock_timeout");
        assert_eq!(write_field("u:7"), "u:7:write");
        // A name with its own hash tag keeps it (Redisson's suffixName and prefixName).
        let tagged = RwKeys::new("{user}:7");
        assert_eq!(tagged.timeout_prefix("u:7"), "{user}:7:u:7:rwlock_timeout");
        assert_eq!(tagged.channel(), "redisson_rwlock:{user}:7");
        assert_eq!(tagged.writer_mark(), "{user}:7:polylock_writer_waiting");
    }
}
