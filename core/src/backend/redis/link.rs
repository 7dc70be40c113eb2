//! The connections behind a Redis backend: one multiplexed, auto-pipelined connection for
//! commands and one RESP3 connection for pub/sub, both reconnecting by themselves. Behind
//! Sentinel, the master is looked up again when the one we know stops acting as master.

use std::sync::{Arc, RwLock};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{
    Client, ClientTlsConfig, ConnectionAddr, FromRedisValue, IntoConnectionInfo, PushInfo, RedisConnectionInfo,
    RedisError, ScriptInvocation, TlsCertificates,
};

use super::endpoint::{Endpoint, Topology};
use super::push::PushSender;
use crate::error::{Error, Result};
use crate::url::TlsFiles;

/// A connection that runs commands: a single server's, or a cluster's (routing by key).
#[derive(Clone)]
enum Connection {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

struct Connected {
    commands: Connection,
    subscriber: Connection,
}

pub(super) struct Link {
    endpoint: Endpoint,
    push: PushSender,
    current: RwLock<Arc<Connected>>,
    /// Behind Sentinel: how to find the master again after a failover.
    sentinel: Option<tokio::sync::Mutex<SentinelClient>>,
    /// Redis 7 clusters announce releases with SPUBLISH (sharded pub/sub), as Redisson does.
    pub sharded: bool,
}

impl Link {
    pub async fn connect(endpoint: Endpoint, push: PushSender) -> Result<Link> {
        endpoint.warn_if_password_exposed();
        let certs = endpoint.tls.as_ref().map(certificates).transpose()?;
        let mut sentinel = None;
        let connected = match &endpoint.topology {
            Topology::Single { host, port } => {
                let client = node_client(host, *port, certs.as_ref(), &endpoint.credentials(), endpoint.db)
                    .map_err(|e| map_error(&endpoint, e))?;
                connect_single(&endpoint, client, &push).await?
            }
            Topology::Cluster { nodes } => connect_cluster(&endpoint, nodes, certs, &push).await?,
            Topology::Sentinel { sentinels, master, sentinel_password } => {
                let mut client = sentinel_client(&endpoint, sentinels, master, sentinel_password.as_deref(), certs)
                    .map_err(|e| map_error(&endpoint, e))?;
                let master_client = client.async_get_client().await.map_err(|e| map_error(&endpoint, e))?;
                let connected = connect_single(&endpoint, master_client, &push).await?;
                sentinel = Some(tokio::sync::Mutex::new(client));
                connected
            }
        };
        let sharded =
            matches!(connected.commands, Connection::Cluster(_)) && server_major_version(&connected).await >= 7;
        Ok(Link { endpoint, push, current: RwLock::new(Arc::new(connected)), sentinel, sharded })
    }

    fn current(&self) -> Arc<Connected> {
        self.current.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Run a script (EVALSHA, loading it on NOSCRIPT). Behind Sentinel, a server that has
    /// stopped being the master sends us to look the master up again, once.
    pub async fn invoke<T: FromRedisValue>(&self, invocation: &ScriptInvocation<'_>) -> Result<T> {
        let connected = self.current();
        let run = || async {
            match &connected.commands {
                Connection::Single(c) => invocation.invoke_async(&mut c.clone()).await,
                Connection::Cluster(c) => invocation.invoke_async(&mut c.clone()).await,
            }
        };
        let result = match run().await {
            // The connection was found closed as the script was written (the server restarted
            // or dropped us since the last command): it never reached the server, and the
            // connection manager reconnects now, so sending it once more is safe.
            Err(err) if never_sent(&err) => {
                let scheme = scheme_of(&self.endpoint.redacted);
                crate::metrics::reconnected(scheme);
                tracing::info!(op = "reconnect", backend = scheme, url = %self.endpoint.redacted,
                    "the Redis connection was found closed; sending the script again on a new one");
                run().await
            }
            other => other,
        };
        match result {
            Err(err) if self.sentinel.is_some() && is_failover(&err) => {
                self.find_master(&connected).await?;
                match &self.current().commands {
                    Connection::Single(c) => invocation.invoke_async(&mut c.clone()).await,
                    Connection::Cluster(c) => invocation.invoke_async(&mut c.clone()).await,
                }
                .map_err(|e| map_error(&self.endpoint, e))
            }
            other => other.map_err(|e| map_error(&self.endpoint, e)),
        }
    }

    pub async fn subscribe(&self, channel: &str) -> Result<()> {
        let result = match self.current().subscriber.clone() {
            Connection::Single(mut c) => c.subscribe(channel).await,
            Connection::Cluster(mut c) if self.sharded => c.ssubscribe(channel).await,
            Connection::Cluster(mut c) => c.subscribe(channel).await,
        };
        result.map_err(|e| map_error(&self.endpoint, e))
    }

    pub async fn unsubscribe(&self, channel: &str) -> Result<()> {
        let result = match self.current().subscriber.clone() {
            Connection::Single(mut c) => c.unsubscribe(channel).await,
            Connection::Cluster(mut c) if self.sharded => c.sunsubscribe(channel).await,
            Connection::Cluster(mut c) => c.unsubscribe(channel).await,
        };
        result.map_err(|e| map_error(&self.endpoint, e))
    }

    /// The command releases are announced with, as scripts take it.
    pub fn publish_command(&self) -> &'static str {
        if self.sharded {
            "spublish"
        } else {
            "publish"
        }
    }

    /// Ask Sentinel for the master and reconnect to it, unless another caller already did
    /// since `seen` was current. Subscriptions follow through `resubscribed`.
    async fn find_master(&self, seen: &Arc<Connected>) -> Result<()> {
        let Some(sentinel) = &self.sentinel else { return Ok(()) };
        let mut sentinel = sentinel.lock().await;
        if !Arc::ptr_eq(seen, &self.current()) {
            return Ok(());
        }
        let client = sentinel.async_get_client().await.map_err(|e| map_error(&self.endpoint, e))?;
        let connected = connect_single(&self.endpoint, client, &self.push).await?;
        let scheme = scheme_of(&self.endpoint.redacted);
        crate::metrics::failed_over(scheme);
        tracing::warn!(op = "failover", backend = scheme, url = %self.endpoint.redacted,
            "Redis Sentinel named a master again; now talking to it");
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(connected);
        // Waiters re-subscribe when they next wait; tell them their channels went quiet.
        let _ = self.push.send(PushInfo { kind: redis::PushKind::Disconnection, data: vec![] });
        Ok(())
    }

    pub fn redacted_url(&self) -> &str {
        &self.endpoint.redacted
    }

    /// A Redis Cluster (`redis+cluster://` or `rediss+cluster://`), whose keys are spread
    /// over its masters.
    pub fn is_cluster(&self) -> bool {
        matches!(self.endpoint.topology, Topology::Cluster { .. })
    }
}

fn manager_config(endpoint: &Endpoint) -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(endpoint.timeout))
        .set_response_timeout(Some(endpoint.timeout))
        .set_number_of_retries(2)
}

async fn connect_single(endpoint: &Endpoint, client: Client, push: &PushSender) -> Result<Connected> {
    let commands = ConnectionManager::new_with_config(client.clone(), manager_config(endpoint))
        .await
        .map_err(|e| map_error(endpoint, e))?;
    let push = push.clone();
    let subscriber_config = manager_config(endpoint)
        .set_push_sender(move |info: PushInfo| push.send(info).map_err(|_| redis::aio::SendError))
        .set_automatic_resubscription();
    let subscriber = ConnectionManager::new_with_config(with_resp3(client, endpoint)?, subscriber_config)
        .await
        .map_err(|e| map_error(endpoint, e))?;
    Ok(Connected { commands: Connection::Single(commands), subscriber: Connection::Single(subscriber) })
}

async fn connect_cluster(
    endpoint: &Endpoint,
    nodes: &[(String, u16)],
    certs: Option<TlsCertificates>,
    push: &PushSender,
) -> Result<Connected> {
    // Addresses, not URLs: the credentials are set below as they are, whatever they hold.
    let addrs: Vec<ConnectionAddr> = nodes.iter().map(|(host, port)| tcp_addr(host, *port, certs.is_some())).collect();
    let builder = |resp3: bool| {
        let mut builder = ClusterClientBuilder::new(addrs.clone())
            .connection_timeout(endpoint.timeout)
            .response_timeout(endpoint.timeout);
        if let Some(user) = &endpoint.username {
            builder = builder.username(user);
        }
        if let Some(password) = &endpoint.password {
            builder = builder.password(password);
        }
        if let Some(certs) = &certs {
            builder = builder.certs(certs.clone());
        }
        if resp3 {
            let push = push.clone();
            builder = builder
                .use_protocol(redis::ProtocolVersion::RESP3)
                .push_sender(move |info: PushInfo| push.send(info).map_err(|_| redis::aio::SendError));
        }
        builder.build()
    };
    let connect = |resp3: bool| async move { builder(resp3)?.get_async_connection().await };
    let commands = connect(false).await.map_err(|e| map_error(endpoint, e))?;
    let subscriber = connect(true).await.map_err(|e| map_error(endpoint, e))?;
    Ok(Connected { commands: Connection::Cluster(commands), subscriber: Connection::Cluster(subscriber) })
}

/// The CA and client certificate of `tls`, read now.
pub(in crate::backend) fn certificates(tls: &TlsFiles) -> Result<TlsCertificates> {
    let pem = tls.read()?;
    Ok(TlsCertificates {
        client_tls: pem.identity.map(|(client_cert, client_key)| ClientTlsConfig { client_cert, client_key }),
        root_cert: pem.ca,
    })
}

/// A user name and password, as decoded from a URL.
pub(in crate::backend) struct Credentials<'a> {
    pub username: Option<&'a str>,
    pub password: Option<&'a str>,
}

/// A client of one server, built from parsed parts rather than a URL, so that a password
/// may hold any character. `certs`: over TLS, checking the server's certificate and name.
pub(in crate::backend) fn node_client(
    host: &str,
    port: u16,
    certs: Option<&TlsCertificates>,
    credentials: &Credentials<'_>,
    db: i64,
) -> redis::RedisResult<Client> {
    let addr = tcp_addr(host, port, certs.is_some());
    let mut settings = RedisConnectionInfo::default().set_db(db);
    if let Some(username) = credentials.username {
        settings = settings.set_username(username);
    }
    if let Some(password) = credentials.password {
        settings = settings.set_password(password);
    }
    let info = addr.into_connection_info()?.set_redis_settings(settings);
    match certs {
        Some(certs) => Client::build_with_tls(info, certs.clone()),
        None => Client::open(info),
    }
}

fn sentinel_client(
    endpoint: &Endpoint,
    sentinels: &[(String, u16)],
    master: &str,
    sentinel_password: Option<&str>,
    certs: Option<TlsCertificates>,
) -> redis::RedisResult<SentinelClient> {
    // Over TLS, the sentinels too: rediss+sentinel:// is TLS on every connection.
    let addrs = sentinels.iter().map(|(host, port)| tcp_addr(host, *port, certs.is_some()));
    let mut builder = SentinelClientBuilder::new(addrs, master, SentinelServerType::Master)?
        .set_client_to_redis_db(endpoint.db)
        .set_client_to_redis_tcp_settings(redis::io::tcp::TcpSettings::default());
    if let Some(user) = &endpoint.username {
        builder = builder.set_client_to_redis_username(user);
    }
    if let Some(password) = &endpoint.password {
        builder = builder.set_client_to_redis_password(password);
    }
    if let Some(password) = sentinel_password {
        builder = builder.set_client_to_sentinel_password(password);
    }
    if let Some(certs) = certs {
        builder = builder
            .set_client_to_redis_tls_mode(redis::TlsMode::Secure)
            .set_client_to_redis_certificates(certs.clone())
            .set_client_to_sentinel_tls_mode(redis::TlsMode::Secure)
            .set_client_to_sentinel_certificates(certs);
    }
    builder.build()
}

/// A server's address, over TLS (its certificate and name checked) or plain TCP.
fn tcp_addr(host: &str, port: u16, tls: bool) -> ConnectionAddr {
    match tls {
        true => ConnectionAddr::TcpTls { host: host.to_string(), port, insecure: false, tls_params: None },
        false => ConnectionAddr::Tcp(host.to_string(), port),
    }
}

/// The same server over RESP3, which the pub/sub connection needs for push messages.
fn with_resp3(client: Client, endpoint: &Endpoint) -> Result<Client> {
    let info = client.get_connection_info().clone();
    let settings = info.redis_settings().clone().set_protocol(redis::ProtocolVersion::RESP3);
    Client::open(info.set_redis_settings(settings)).map_err(|e| map_error(endpoint, e))
}

async fn server_major_version(connected: &Connected) -> u32 {
    let Connection::Cluster(c) = &connected.commands else { return 0 };
    let info: redis::RedisResult<String> = redis::cmd("INFO").arg("server").query_async(&mut c.clone()).await;
    info.ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("redis_version:"))
                .and_then(|v| v.split('.').next())
                .and_then(|major| major.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Whether a command failed before any of it reached the server: the write found the
/// connection closed (EPIPE) or not connected. redis-rs keeps the io::Error private, so its
/// message is what tells.
/// The scheme of a redacted URL, as metrics label the backend.
fn scheme_of(redacted: &str) -> &str {
    redacted.split_once("://").map_or("redis", |(scheme, _)| scheme)
}

fn never_sent(err: &RedisError) -> bool {
    let text = err.to_string().to_ascii_lowercase();
    err.is_io_error() && (text.contains("broken pipe") || text.contains("not connected"))
}

/// A server that is no longer the master (READONLY) or no longer there.
fn is_failover(err: &RedisError) -> bool {
    err.code() == Some("READONLY") || err.is_io_error() || err.is_connection_dropped() || err.is_connection_refusal()
}

pub(super) fn map_error(endpoint: &Endpoint, err: RedisError) -> Error {
    let url = &endpoint.redacted;
    if err.kind() == redis::ErrorKind::AuthenticationFailed
        || matches!(err.code(), Some("WRONGPASS" | "NOAUTH" | "NOPERM"))
    {
        return Error::connection(format!(
            "redis at {url} rejected the credentials; check the user name and password in the URL"
        ));
    }
    if err.is_io_error() || err.is_connection_refusal() || err.is_timeout() || err.is_connection_dropped() {
        return Error::connection(format!("cannot reach redis at {url}; is it running and reachable?"))
            .with_source(err);
    }
    if err.to_string().contains("DB index is out of range") {
        return Error::invalid_argument(format!(
            "redis at {url} has no database {}; the database is the URL's path (/0 to /15 by default, \
             the server's 'databases' setting)",
            endpoint.db
        ));
    }
    if err.code() == Some("POLYLOCK_CONFLICT") {
        // scripts.rs `guarded`: the name holds another primitive's key, or a foreign one.
        let what = err.detail().unwrap_or("a key of another layout");
        return Error::conflict(format!(
            "{what}: another primitive, or an application that is not polylock or Redisson, holds this \
             name; use another name (redis at {url})"
        ));
    }
    if err.kind() == redis::ErrorKind::MasterNameNotFoundBySentinel {
        return Error::connection(format!("no sentinel of {url} knows that master name"));
    }
    Error::backend(format!("redis at {url} failed")).with_source(err)
}
