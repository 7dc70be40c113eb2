//! The Lua that runs inside Redis, and the key names it runs on. The reentrant lock is
//! Redisson's RLock protocol (hash per lock, field per owner, hold count as value, unlock
//! message "0" on `redisson_lock__channel:{name}`), fenced with Redisson's RFencedLock
//! counter; the fair lock is Redisson's RedissonFairLock queue; the token lock is the
//! `SET NX PX` lock of redis-py and node-redlock. Key layouts are the incumbents' exactly,
//! so each side excludes the other; the scripts are our own.

use std::sync::LazyLock;

use redis::Script;

/// Redisson's `prefixName`: keys that belong to a lock share its hash slot through a
/// `{name}` hash tag (or the name's own tag, if it has one).
pub(super) fn prefixed(prefix: &str, name: &str) -> String {
    if name.contains('{') {
        format!("{prefix}:{name}")
    } else {
        format!("{prefix}:{{{name}}}")
    }
}

/// Every Redis key and channel that belongs to one lock. Each is made when a script needs it:
/// a call uses two or three of the five, and making all of them was a visible share of a
/// lock+unlock pair's CPU.
pub(super) struct LockKeys<'a> {
    /// The lock itself: a hash (reentrant, fair) or a string (token).
    pub lock: &'a str,
}

impl<'a> LockKeys<'a> {
    pub fn new(name: &'a str) -> Self {
        LockKeys { lock: name }
    }

    /// Where a full release is announced.
    pub fn channel(&self) -> String {
        prefixed("redisson_lock__channel", self.lock)
    }

    /// The fencing counter, shared with Redisson's RFencedLock.
    pub fn token(&self) -> String {
        prefixed("redisson_lock_token", self.lock)
    }

    /// Fair lock: the queue of waiting owners.
    pub fn queue(&self) -> String {
        prefixed("redisson_lock_queue", self.lock)
    }

    /// Fair lock: the waiting owners' deadlines.
    pub fn timeouts(&self) -> String {
        prefixed("redisson_lock_timeout", self.lock)
    }

    /// The fair lock's private wake-up channel of one waiting owner.
    pub fn waiter_channel(&self, field: &str) -> String {
        format!("{}:{field}", self.channel())
    }
}

/// Put before a script that draws from the fencing counter `counter` (a KEYS entry): a
/// counter that does not exist (a new name, or a server that restarted without persistence
/// and forgot it) starts at the server's clock in microseconds, above every token issued
/// before, as long as the server's clock does not go back and a name is granted fewer than a
/// million times a second. Redisson's RFencedLock keeps counting from there. Runs before the
/// script's first write, as TIME must on servers that replicate scripts verbatim (Redis < 5).
pub(super) fn floored_counter(counter: &str, body: &str) -> String {
    format!(
        r"
if redis.call('exists', {counter}) == 0 then
  if redis.replicate_commands then redis.replicate_commands() end
  local now = redis.call('time')
  redis.call('set', {counter}, now[1] .. string.format('%06d', tonumber(now[2])))
end
{body}"
    )
}

/// What a polylock or Redisson layout keeps at a name (`KEYS[1]` of a script), as
/// [`guarded`] tells them apart by the key's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// A hash without a `mode` field: Redisson's RLock or fair lock.
    LockHash,
    /// A hash with `mode`: Redisson's RReadWriteLock.
    RwHash,
    /// A string that is not a number: a token lock (redis-py, node-redlock, polylock's `Token`).
    TokenString,
    /// A string that is a number: a semaphore's count, a plain semaphore, a countdown latch.
    Number,
}

impl Shape {
    fn lua_name(self) -> &'static str {
        match self {
            Shape::LockHash => "lock",
            Shape::RwHash => "rw",
            Shape::TokenString => "token",
            Shape::Number => "number",
        }
    }
}

/// `body`, run only if the name (`KEYS[1]`) is absent or holds one of the `accepted` shapes.
/// Anything else fails the script at once with the error `POLYLOCK_CONFLICT <what holds the
/// name>` (link.rs maps it to kind `Conflict`), before the body reads or writes a thing: so a
/// semaphore never meets a mutex's hash as `WRONGTYPE` (a `Backend` error, for ever), a lock
/// never waits for a key no lock layout writes, and a force-unlock never deletes a key that is
/// no lock. Only reads run before `body`, as `floored_counter` requires of what precedes it.
pub(super) fn guarded(accepted: &[Shape], body: &str) -> String {
    let accepted: Vec<String> = accepted.iter().map(|shape| format!("shape == '{}'", shape.lua_name())).collect();
    format!(
        r"
do
  local t = redis.call('type', KEYS[1])['ok']
  local shape = t
  if t == 'hash' then
    if redis.call('hexists', KEYS[1], 'mode') == 1 then shape = 'rw' else shape = 'lock' end
  elseif t == 'string' then
    if string.match(redis.call('get', KEYS[1]), '^%-?%d+$') then shape = 'number' else shape = 'token' end
  end
  if not (shape == 'none' or {accepted}) then
    local what = {{
      lock = 'a lock (a Redisson RLock or fair lock hash)',
      rw = 'a read-write lock (a Redisson RReadWriteLock hash)',
      token = 'a token lock (a string: redis-py, node-redlock or polylock token lock)',
      number = 'a semaphore, latch or counter (a number)',
    }}
    return redis.error_reply('POLYLOCK_CONFLICT the Redis key ' .. KEYS[1] .. ' is ' ..
      (what[shape] or ('a ' .. t .. ', which no polylock or Redisson layout writes')))
  end
end
{body}",
        accepted = accepted.join(" or ")
    )
}

/// Redisson's unlock message.
pub(super) const UNLOCK_MESSAGE: &str = "0";

/// KEYS: lock, token. ARGV: lease ms, field.
/// Returns {-1, token} when acquired, else {pttl of the holder, -1}. The token after the one
/// returned is drawn too and set aside for a local handoff (Backend::reserves_next_token).
pub(super) static REENTRANT_ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&guarded(
        &[Shape::LockHash],
        &floored_counter(
            "KEYS[2]",
            r"
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local token = redis.call('incrby', KEYS[2], 2) - 1
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {-1, token}
end
return {redis.call('pttl', KEYS[1]), -1}
",
        ),
    ))
});

/// Count one more hold of an owner that already holds the lock, as Redisson does.
/// KEYS: lock. ARGV: field. Returns 1 if the owner still held it, else 0.
pub(super) static REENTRANT_REENTER: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], 1)
  return 1
end
return 0
",
    )
});

/// Redisson's renewal. KEYS: lock. ARGV: lease ms, field. Returns 1 if renewed, else 0.
pub(super) static HASH_RENEW: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 1
end
return 0
",
    )
});

/// Give back one hold. KEYS: lock, channel. ARGV: field, holds left after this one,
/// publish command ('publish' or 'spublish'), unlock message.
/// Returns -1 if the owner no longer held it, else the holds left.
pub(super) static REENTRANT_RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return -1
end
if tonumber(ARGV[2]) > 0 then
  return redis.call('hincrby', KEYS[1], ARGV[1], -1)
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], ARGV[4])
return 0
",
    )
});

/// Hand the lock from one owner to another of the same client without freeing it, so no
/// unlock message goes out. Also taken when the new owner already holds it (its own attempt,
/// abandoned in flight, won after the old owner's lease ran out).
/// KEYS: lock, token. ARGV: from field, to field, lease ms. Returns the new owner's token,
/// the one the old owner's hold set aside, and sets the next one aside; or -1.
pub(super) static REENTRANT_TRANSFER: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('del', KEYS[1])
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[3])
  return redis.call('incr', KEYS[2]) - 1
end
return -1
",
    )
});

/// A fair-lock script: Redisson's preamble that drops the waiters at the head of the queue
/// whose turn came and went (KEYS[2] = queue, KEYS[3] = timeouts; `now` is the ARGV holding
/// the caller's clock in ms), then `body`.
fn fair_text(now: &str, body: &str) -> String {
    format!(
        r"
while true do
  local first = redis.call('lindex', KEYS[2], 0)
  if first == false then break end
  local timeout = tonumber(redis.call('zscore', KEYS[3], first))
  if timeout <= tonumber({now}) then
    redis.call('zrem', KEYS[3], first)
    redis.call('lpop', KEYS[2])
  else
    break
  end
end
{body}"
    )
}

fn fair_script(now: &str, body: &str) -> Script {
    Script::new(&fair_text(now, body))
}

/// [`fair_script`] that runs only on a lock hash (or nothing) at the name.
fn guarded_fair_script(now: &str, body: &str) -> Script {
    Script::new(&guarded(&[Shape::LockHash], &fair_text(now, body)))
}

/// [`fair_script`] for the acquire, whose counter (KEYS[4]) is floored first.
fn fair_acquire_script(now: &str, body: &str) -> Script {
    Script::new(&guarded(&[Shape::LockHash], &floored_counter("KEYS[4]", &fair_text(now, body))))
}

/// The fair lock's attempt: Redisson's queue discipline with a fencing counter.
/// KEYS: lock, queue, timeouts, token. ARGV: lease ms, field, thread wait ms, now ms.
/// Returns {-1, token} when acquired, else {ms to wait, -1}.
pub(super) static FAIR_ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    fair_acquire_script(
        "ARGV[4]",
        r"
-- free, and nobody ahead of us: take it
if redis.call('exists', KEYS[1]) == 0
   and (redis.call('exists', KEYS[2]) == 0 or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], ARGV[2])
  local waiting = redis.call('zrange', KEYS[3], 0, -1)
  for i = 1, #waiting, 1 do
    redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), waiting[i])
  end
  local token = redis.call('incr', KEYS[4])
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {-1, token}
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local token = redis.call('incr', KEYS[4])
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {-1, token}
end
-- already queued: wait about as long as our deadline says
local timeout = redis.call('zscore', KEYS[3], ARGV[2])
if timeout ~= false then
  return {timeout - tonumber(ARGV[3]) - tonumber(ARGV[4]), -1}
end
-- join the queue behind the last waiter (or behind the holder's lease)
local last = redis.call('lindex', KEYS[2], -1)
local ttl
if last ~= false and last ~= ARGV[2] then
  ttl = tonumber(redis.call('zscore', KEYS[3], last)) - tonumber(ARGV[4])
else
  ttl = redis.call('pttl', KEYS[1])
end
local deadline = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4])
if redis.call('zadd', KEYS[3], deadline, ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2])
end
return {ttl, -1}
",
    )
});

/// A fair waiter gives up: leave the queue and give the time back to those behind.
/// KEYS: queue, timeouts. ARGV: field, thread wait ms.
pub(super) static FAIR_LEAVE_QUEUE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local queue = redis.call('lrange', KEYS[1], 0, -1)
local i = 1
while i <= #queue and queue[i] ~= ARGV[1] do i = i + 1 end
i = i + 1
while i <= #queue do
  redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[i])
  i = i + 1
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])
return 1
",
    )
});

/// Fair release: as the reentrant one, but the next waiter in line is woken on its own
/// channel. KEYS: lock, queue, timeouts, channel. ARGV: field, holds left, publish command,
/// unlock message, now ms. Returns -1 if not held by the owner, else the holds left.
pub(super) static FAIR_RELEASE: LazyLock<Script> = LazyLock::new(|| {
    fair_script(
        "ARGV[5]",
        r"
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return -1
end
if tonumber(ARGV[2]) > 0 then
  return redis.call('hincrby', KEYS[1], ARGV[1], -1)
end
redis.call('del', KEYS[1])
local next = redis.call('lindex', KEYS[2], 0)
if next ~= false then
  redis.call(ARGV[3], KEYS[4] .. ':' .. next, ARGV[4])
end
return 0
",
    )
});

/// redis-py / node-redlock acquire, fenced. KEYS: lock, token. ARGV: owner token, lease ms.
/// Returns {-1, fencing token} when acquired, else {pttl of the holder, -1}. As with
/// REENTRANT_ACQUIRE, the next token is set aside for a local handoff.
pub(super) static TOKEN_ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&guarded(
        &[Shape::TokenString],
        &floored_counter(
            "KEYS[2]",
            r"
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {-1, redis.call('incrby', KEYS[2], 2) - 1}
end
return {redis.call('pttl', KEYS[1]), -1}
",
        ),
    ))
});

/// The token lock's handoff: compare-and-set. KEYS: lock, token. ARGV: from token, to
/// token, lease ms. Returns the new owner's token as REENTRANT_TRANSFER does, or -1 if
/// neither owner holds the key.
pub(super) static TOKEN_TRANSFER: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local holder = redis.call('get', KEYS[1])
if holder == ARGV[1] or holder == ARGV[2] then
  redis.call('set', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return redis.call('incr', KEYS[2]) - 1
end
return -1
",
    )
});

/// Compare-and-pexpire. KEYS: lock. ARGV: owner token, lease ms. Returns 1 if renewed.
pub(super) static TOKEN_RENEW: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
",
    )
});

/// Compare-and-delete, then wake polylock waiters (redis-py's own waiters poll).
/// KEYS: lock, channel. ARGV: owner token, publish command, unlock message.
/// Returns 1 if released, 0 if the key was no longer ours.
pub(super) static TOKEN_RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call(ARGV[2], KEYS[2], ARGV[3])
  return 1
end
return 0
",
    )
});

/// Redisson's `isLocked`. KEYS: lock. Returns 1 if the lock exists, else 0.
pub(super) static IS_LOCKED: LazyLock<Script> = LazyLock::new(|| Script::new("return redis.call('exists', KEYS[1])"));

/// Redisson's `remainTimeToLive`. KEYS: lock. Returns the PTTL: -2 if free, -1 if no expiry.
pub(super) static REMAINING_LEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new("return redis.call('pttl', KEYS[1])"));

/// Redisson's `forceUnlock` of an RLock (and of a token lock): delete whoever holds it and
/// announce the release. KEYS: lock, channel. ARGV: publish command, unlock message.
/// Returns 1 if there was a lock to delete, else 0. A key that is no mutex (a read-write
/// lock, a semaphore, a key of another application) is refused, never deleted.
pub(super) static FORCE_UNLOCK: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&guarded(
        &[Shape::LockHash, Shape::TokenString],
        r"
if redis.call('del', KEYS[1]) == 1 then
  redis.call(ARGV[1], KEYS[2], ARGV[2])
  return 1
end
return 0
",
    ))
});

/// Redisson's fair `forceUnlock`: drop stale waiters, delete the lock and wake the first
/// waiter in line on its own channel. KEYS: lock, queue, timeouts, channel.
/// ARGV: publish command, unlock message, now ms. Returns 1 if there was a lock to delete.
pub(super) static FAIR_FORCE_UNLOCK: LazyLock<Script> = LazyLock::new(|| {
    guarded_fair_script(
        "ARGV[3]",
        r"
if redis.call('del', KEYS[1]) == 1 then
  local next = redis.call('lindex', KEYS[2], 0)
  if next ~= false then
    redis.call(ARGV[1], KEYS[4] .. ':' .. next, ARGV[2])
  end
  return 1
end
return 0
",
    )
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_share_the_lock_hash_slot_as_redisson_names_them() {
        let keys = LockKeys::new("orders:42");
        assert_eq!(keys.lock, "orders:42");
        assert_eq!(keys.channel(), "redisson_lock__channel:{orders:42}");
        assert_eq!(keys.token(), "redisson_lock_token:{orders:42}");
        assert_eq!(keys.queue(), "redisson_lock_queue:{orders:42}");
        assert_eq!(keys.timeouts(), "redisson_lock_timeout:{orders:42}");
        assert_eq!(keys.waiter_channel("u:1"), "redisson_lock__channel:{orders:42}:u:1");
        assert_eq!(prefixed("redisson_lock_token", "{user}:7"), "redisson_lock_token:{user}:7");
    }
}
