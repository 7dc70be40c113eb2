//! Reading Redis lock layouts for the operator, whoever wrote them: Redisson's RLock and fair
//! lock hashes (`<client uuid>:<thread id>` = hold count; the fair queue's length is the
//! waiters), redis-py's and node-redlock's token strings, and the name's fencing counter
//! `redisson_lock_token:{name}`. Holders' tokens are not stored in these layouts, so only the
//! counter is shown. Listing SCANs for lock hashes a page at a time (never KEYS).

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use redis::Script;

use super::scripts::LockKeys;
use super::{script_with, Layout, RedisBackend};
use crate::error::{Error, Result};
use crate::spi::{InspectStore, ListedLock, LockKind, LockStatus};

/// KEYS: lock, token counter, fair queue. Returns {type, pttl, counter or '', queue length,
/// {field, value, ...} of a hash, or {value} of a string}.
static STATUS: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local kind = redis.call('type', KEYS[1])['ok']
local counter = redis.call('get', KEYS[2]) or ''
local waiting = redis.call('llen', KEYS[3])
local content = {}
if kind == 'hash' then
  content = redis.call('hgetall', KEYS[1])
elseif kind == 'string' then
  content = {redis.call('get', KEYS[1])}
end
return {kind, redis.call('pttl', KEYS[1]), counter, waiting, content}
",
    )
});

/// ARGV: cursor, MATCH pattern. One SCAN page; returns {next cursor, {lock hash key, ...}}:
/// hashes whose fields are Redisson holders (`<uuid>:<thread id>`), not read-write locks.
static LIST_PAGE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local page = redis.call('scan', ARGV[1], 'MATCH', ARGV[2], 'COUNT', 500, 'TYPE', 'hash')
local found = {}
for _, key in ipairs(page[2]) do
  if string.sub(key, 1, 9) ~= 'redisson_' and redis.call('hexists', key, 'mode') == 0 then
    local fields = redis.call('hkeys', key)
    if #fields > 0 and string.match(fields[1], '^[%x%-]+:%d+$') then
      table.insert(found, key)
    end
  end
end
return {page[1], found}
",
    )
});

/// A Redis glob matching exactly the keys that start with `prefix`.
fn prefix_pattern(prefix: &str) -> String {
    let mut pattern = String::with_capacity(prefix.len() + 1);
    for c in prefix.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('*');
    pattern
}

#[async_trait]
impl InspectStore for RedisBackend {
    async fn status(&self, key: &str, kind: LockKind) -> Result<LockStatus> {
        let layout = Layout::of(kind)?;
        let keys = LockKeys::new(key);
        let invocation = script_with(&STATUS, &[keys.lock, &keys.token(), &keys.queue()]);
        let (found, pttl, counter, queued, content): (String, i64, String, u64, Vec<String>) =
            self.link.invoke(&invocation).await?;
        let mut status = LockStatus {
            token_counter: counter.parse().ok(),
            layout: match layout {
                Layout::Hash => "Redisson RLock hash",
                Layout::FairHash => "Redisson fair lock hash and queue",
                Layout::TokenString => "SET NX PX token string (redis-py, node-redlock)",
            },
            waiters: (layout == Layout::FairHash).then_some(queued),
            ..LockStatus::default()
        };
        let expected = if layout == Layout::TokenString { "string" } else { "hash" };
        if found == "none" {
            return Ok(status);
        }
        if content.chunks(2).any(|pair| pair[0] == "mode") {
            return Err(Error::invalid_argument(format!("'{key}' on Redis is a read-write lock, not a mutex")));
        }
        if found != expected {
            return Err(Error::invalid_argument(format!(
                "'{key}' on Redis is a {found}, not the layout of a {kind} lock (a {expected}); try another --kind"
            )));
        }
        status.held = true;
        status.remaining_lease = Some(match pttl {
            ms if ms < 0 => Duration::MAX, // no expiry: kept until deleted
            ms => Duration::from_millis(ms as u64),
        });
        match layout {
            Layout::TokenString => status.holder = content.into_iter().next(),
            Layout::Hash | Layout::FairHash => {
                let holds: Vec<String> = content.chunks(2).map(|pair| format!("{} x{}", pair[0], pair[1])).collect();
                status.holder = content.first().cloned();
                if let Some(count) = content.get(1) {
                    status.details.push(("hold count", count.clone()));
                }
                if holds.len() > 1 {
                    status.details.push(("all fields", holds.join(", ")));
                }
            }
        }
        Ok(status)
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ListedLock>> {
        // By the topology, not the URL's text: `rediss+cluster://` scanned one master only.
        if self.link.is_cluster() {
            return Err(Error::unsupported(
                "listing locks is not offered on Redis Cluster: its keys are spread over the masters, \
                 and a script sees one; use 'polylock status NAME' for a lock you know",
            ));
        }
        let pattern = prefix_pattern(prefix);
        let mut cursor = "0".to_string();
        let mut locks = Vec::new();
        loop {
            let mut invocation = LIST_PAGE.prepare_invoke();
            invocation.arg(&cursor).arg(&pattern);
            let (next, keys): (String, Vec<String>) = self.link.invoke(&invocation).await?;
            locks.extend(keys.into_iter().map(|key| ListedLock { key, kind: LockKind::Reentrant, held: true }));
            if next == "0" {
                break;
            }
            cursor = next;
        }
        Ok(locks)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn prefix_patterns_escape_glob_characters() {
        assert_eq!(super::prefix_pattern("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\*");
    }
}
