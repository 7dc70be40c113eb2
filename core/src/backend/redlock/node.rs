//! One independent Redis server of a RedLock, in the token layout of node-redlock and
//! redsync: the key is the lock's name, its value a random token of the hold, written by
//! `SET key token NX PX lease`, extended by compare-and-pexpire and released by
//! compare-and-delete. Every call is bounded by the caller's per-node timeout, so a stopped
//! or partitioned server costs one timeout per vote and never hangs a caller.

use std::sync::LazyLock;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, Script};

use crate::error::{Error, Result};

/// Compare-and-pexpire, as node-redlock's and redsync's extend. KEYS: lock. ARGV: token,
/// lease ms. Returns 1 if extended.
static EXTEND: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
",
    )
});

/// Compare-and-delete, as node-redlock's and redsync's release. KEYS: lock. ARGV: token.
/// Returns 1 if this token's key was deleted.
static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
",
    )
});

pub(super) struct Node {
    /// `host:port`, for messages (credentials never appear here).
    pub shown: String,
    client: Client,
    connection: tokio::sync::Mutex<Option<MultiplexedConnection>>,
}

impl Node {
    pub fn new(shown: String, client: Client) -> Node {
        Node { shown, client, connection: tokio::sync::Mutex::new(None) }
    }

    /// The node's connection, made on first use and again after it broke.
    pub async fn connection(&self, limit: Duration) -> Result<MultiplexedConnection> {
        let mut cached = self.connection.lock().await;
        if let Some(connection) = cached.as_ref() {
            return Ok(connection.clone());
        }
        let config = AsyncConnectionConfig::new().set_connection_timeout(Some(limit)).set_response_timeout(None);
        let connecting = self.client.get_multiplexed_async_connection_with_config(&config);
        let connection = match tokio::time::timeout(limit, connecting).await {
            Ok(Ok(connection)) => connection,
            Ok(Err(err)) => return Err(self.error(err)),
            Err(_) => return Err(Error::connection(format!("redis at {} did not answer in time", self.shown))),
        };
        *cached = Some(connection.clone());
        Ok(connection)
    }

    /// `SET key token NX PX lease`: true if this node granted the lock.
    pub async fn set_if_absent(&self, key: &str, token: &str, lease_ms: u64, limit: Duration) -> Result<bool> {
        let mut command = redis::cmd("SET");
        command.arg(key).arg(token).arg("NX").arg("PX").arg(lease_ms);
        let answer: Option<String> =
            self.bounded(limit, |mut c| async move { command.query_async(&mut c).await }).await?;
        Ok(answer.is_some())
    }

    /// Compare-and-pexpire: true if the key still held `token` and now has `lease_ms` left.
    pub async fn extend(&self, key: &str, token: &str, lease_ms: u64, limit: Duration) -> Result<bool> {
        let mut invocation = EXTEND.prepare_invoke();
        invocation.key(key).arg(token).arg(lease_ms);
        let extended: i64 = self.bounded(limit, |mut c| async move { invocation.invoke_async(&mut c).await }).await?;
        Ok(extended == 1)
    }

    /// Compare-and-delete: true if the key held `token` and is gone now.
    pub async fn release(&self, key: &str, token: &str, limit: Duration) -> Result<bool> {
        let mut invocation = RELEASE.prepare_invoke();
        invocation.key(key).arg(token);
        let released: i64 = self.bounded(limit, |mut c| async move { invocation.invoke_async(&mut c).await }).await?;
        Ok(released == 1)
    }

    /// Whether the key exists on this node (whoever holds it).
    pub async fn exists(&self, key: &str, limit: Duration) -> Result<bool> {
        let mut command = redis::cmd("EXISTS");
        command.arg(key);
        let count: i64 = self.bounded(limit, |mut c| async move { command.query_async(&mut c).await }).await?;
        Ok(count > 0)
    }

    /// Run one request within `limit`, connecting first if needed. A request that times out
    /// leaves the connection as it is, so that a later release on it runs after it, in order,
    /// when the server answers again; a broken connection is dropped and made anew next time.
    async fn bounded<T, F, Fut>(&self, limit: Duration, request: F) -> Result<T>
    where
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        let started = tokio::time::Instant::now();
        let connection = self.connection(limit).await?;
        let left = limit.saturating_sub(started.elapsed());
        match tokio::time::timeout(left, request(connection)).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(err)) => {
                if err.is_unrecoverable_error() || err.is_connection_dropped() || err.is_io_error() {
                    *self.connection.lock().await = None;
                }
                Err(self.error(err))
            }
            Err(_) => Err(Error::connection(format!("redis at {} did not answer in time", self.shown))),
        }
    }

    fn error(&self, err: redis::RedisError) -> Error {
        let what = if err.is_io_error() || err.is_connection_refusal() || err.is_timeout() {
            Error::connection(format!("redis at {} is unreachable", self.shown))
        } else {
            Error::backend(format!("redis at {} answered an error", self.shown))
        };
        what.with_source(err)
    }
}
