//! `redlock://[user:password@]h1:p1,h2:p2,h3:p3[?node_timeout=50ms]`: the RedLock algorithm
//! over N independent Redis servers (no replication between them), each in the token layout
//! that node-redlock and redsync use (node.rs), so they and polylock exclude each other on
//! the same resource. `redlocks://` is the same over TLS to every server (`?ca=` the CA's PEM
//! file, default the system's roots; `cert=` and `key=` a client certificate): each server's
//! certificate and name are checked.
//!
//! Its one lock kind is `Token`: a mutex whose hold is one random token written to every
//! node, held while a majority of nodes have it. One attempt (votes.rs) asks every node in
//! parallel, each within the per-node timeout; the lock is held only if a majority granted
//! it AND validity is left: lease − elapsed − drift > 0, drift = lease × 1 % + 2 ms, elapsed
//! on the monotonic clock. Any failed attempt is released on EVERY node, those that refused,
//! erred or timed out included, before a retry after a random delay. An extension follows
//! the same rule, and a failed one loses the hold (and releases it everywhere).
//!
//! There are no fencing tokens: a majority of independent counters is no counter that only
//! grows, so [`Store::fencing_tokens`] is false, and the number each grant carries only
//! tells this process's holds apart. Reentrancy, the watchdog and loss reporting are the
//! engine's, as on every backend.

mod node;
mod votes;

use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use crate::backend::redis::{node_client, Credentials};
use crate::error::{Error, Result};
use crate::spi::{
    AcquireRequest, Acquired, Capabilities, ExclusiveStore, HeldLock, HoldStore, LockKind, Release, Renewal, Store,
};
use crate::url::{percent_decode, ConnectUrl, TlsFiles};
use node::Node;
use votes::Votes;

/// Retry delays between attempts: node-redlock's 200 ms ± 100 ms jitter, redsync's [50, 250).
const RETRY_DELAY_MS: std::ops::Range<u64> = 50..250;
/// The per-node timeout, unless the URL sets `node_timeout`: redsync's 5 % of the lease,
/// kept between these bounds.
const NODE_TIMEOUT_SHARE: u32 = 20;
const NODE_TIMEOUT_MIN: Duration = Duration::from_millis(5);
const NODE_TIMEOUT_MAX: Duration = Duration::from_secs(1);
/// How long connecting to the nodes may take when the client is made.
const CONNECT_LIMIT: Duration = Duration::from_secs(2);

/// Numbers that tell this process's RedLock holds apart (the engine keys holds by them);
/// never reused, never fencing tokens.
static NEXT_HOLD_NUMBER: AtomicU64 = AtomicU64::new(1);

pub(crate) struct RedLockBackend {
    nodes: Arc<[Arc<Node>]>,
    /// URL option `node_timeout`; `None`: a twentieth of each lease.
    node_timeout: Option<Duration>,
}

/// The random token a hold wrote to the nodes, and the lease it was taken with (which sets
/// the per-node timeout of its release).
struct HoldToken {
    token: String,
    lease: Duration,
}

impl RedLockBackend {
    pub(crate) async fn open(url: &mut ConnectUrl) -> Result<Self> {
        let redacted = url.redacted().to_string();
        let node_timeout = url.take_duration("node_timeout")?;
        if node_timeout.is_some_and(|t| t.is_zero()) {
            return Err(Error::invalid_argument("URL option 'node_timeout' must be positive"));
        }
        let bad = |why: String| Error::invalid_argument(format!("{why} in {redacted}"));
        let tls = TlsFiles::take(url, url.scheme() == "redlocks", "redlocks")?;
        // Every option is taken by now: an unknown one is refused before any connection.
        url.ensure_no_options_left()?;
        let certs = tls.as_ref().map(crate::backend::redis::certificates).transpose()?;
        let target = url.target().to_string();
        let (userinfo, hosts) = match target.rsplit_once('@') {
            Some((userinfo, hosts)) => (Some(userinfo.to_string()), hosts.to_string()),
            None => (None, target.clone()),
        };
        // Decoded here and handed to the client as they are: any character may be in them.
        let (username, password) = match userinfo.as_deref().map(|info| info.split_once(':').unwrap_or((info, ""))) {
            None => (None, None),
            Some((user, password)) => (
                Some(percent_decode(user)).filter(|u| !u.is_empty()),
                Some(percent_decode(password)).filter(|p| !p.is_empty()),
            ),
        };
        let credentials = Credentials { username: username.as_deref(), password: password.as_deref() };
        let hosts = hosts.trim_end_matches('/');
        if hosts.contains('/') {
            return Err(bad("a redlock:// URL names servers only (no database or path)".into()));
        }
        let mut nodes = Vec::new();
        let mut names = Vec::new();
        for host in hosts.split(',').map(str::trim) {
            let (name, port) =
                host.rsplit_once(':').ok_or_else(|| bad(format!("'{host}' needs a port (host:port)")))?;
            let port: u16 = port.parse().map_err(|_| bad(format!("'{port}' is not a port number")))?;
            if name.is_empty() {
                return Err(bad("empty host".into()));
            }
            let host = name.strip_prefix('[').and_then(|v6| v6.strip_suffix(']')).unwrap_or(name);
            let client = node_client(host, port, certs.as_ref(), &credentials, 0)
                .map_err(|_| bad(format!("'{name}:{port}' is not a usable Redis address")))?;
            names.push(name.to_string());
            nodes.push(Arc::new(Node::new(format!("{name}:{port}"), client)));
        }
        if nodes.is_empty() || hosts.is_empty() {
            return Err(bad("a redlock:// URL needs at least one host:port".into()));
        }
        refuse_duplicate_nodes(&nodes).await.map_err(&bad)?;
        crate::url::warn_unverified_password(
            "redlock",
            &redacted,
            names.iter().map(String::as_str),
            password.is_some(),
            tls.is_some(),
            "use redlocks:// (TLS to every server, the certificate checked against the system's roots or \
             ?ca=/path/ca.pem)",
        );
        let backend = RedLockBackend { nodes: nodes.into(), node_timeout };
        // A majority must be reachable now; the others are connected to when they answer.
        let mut reachable = 0;
        let mut first_error = None;
        for (node, outcome) in backend
            .votes(CONNECT_LIMIT, |node, limit| async move { node.connection(limit).await.map(|_| true) })
            .await
            .answers
        {
            match outcome {
                Ok(_) => reachable += 1,
                Err(err) => {
                    first_error.get_or_insert((node.shown.clone(), err));
                }
            }
        }
        if reachable < backend.quorum() {
            let (shown, err) = first_error.expect("fewer reachable than a quorum means one failed");
            return Err(Error::connection(format!(
                "only {reachable} of {} RedLock servers are reachable ({shown}: {}); a majority is needed",
                backend.nodes.len(),
                err.message()
            )));
        }
        Ok(backend)
    }

    fn quorum(&self) -> usize {
        self.nodes.len() / 2 + 1
    }

    fn node_timeout(&self, lease: Duration) -> Duration {
        self.node_timeout.unwrap_or_else(|| (lease / NODE_TIMEOUT_SHARE).clamp(NODE_TIMEOUT_MIN, NODE_TIMEOUT_MAX))
    }

    /// Ask every node at once, each within `limit`.
    async fn votes<F, Fut>(&self, limit: Duration, ask: F) -> Votes
    where
        F: Fn(Arc<Node>, Duration) -> Fut,
        Fut: std::future::Future<Output = Result<bool>> + Send + 'static,
    {
        Votes::collect(&self.nodes, limit, ask).await
    }

    /// Compare-and-delete `token` on every node, whatever each answered before.
    async fn release_everywhere(&self, key: &str, token: &str, limit: Duration) -> Votes {
        let (key, token) = (Arc::<str>::from(key), Arc::<str>::from(token));
        self.votes(limit, move |node, limit| {
            let (key, token) = (key.clone(), token.clone());
            async move { node.release(&key, &token, limit).await }
        })
        .await
    }

    /// One RedLock attempt: the granted hold's token and when its validity started counting
    /// (start − drift, so that start + lease − drift is where the engine ends it).
    async fn attempt(&self, key: &str, token: &str, lease: Duration) -> Result<Option<Instant>> {
        let limit = self.node_timeout(lease);
        let lease_ms = millis(lease);
        let started = Instant::now();
        let (shared_key, shared_token) = (Arc::<str>::from(key), Arc::<str>::from(token));
        let votes = self
            .votes(limit, move |node, limit| {
                let (key, token) = (shared_key.clone(), shared_token.clone());
                async move { node.set_if_absent(&key, &token, lease_ms, limit).await }
            })
            .await;
        if votes.granted() >= self.quorum() && validity_left(lease, started).is_some() {
            return Ok(Some(started.checked_sub(drift(lease)).unwrap_or(started)));
        }
        self.release_everywhere(key, token, limit).await;
        if votes.errors() > self.nodes.len() - self.quorum() {
            // No majority could answer at all: say so rather than wait as if it were busy.
            if let Some(err) = votes.first_error() {
                return Err(Error::new(
                    err.kind(),
                    format!(
                        "no majority of the {} RedLock servers answered ({} failed; first: {})",
                        self.nodes.len(),
                        votes.errors(),
                        err.message()
                    ),
                ));
            }
        }
        Ok(None)
    }
}

/// The clock drift RedLock allows for: 1 % of the lease plus 2 ms.
/// Refuse a list that names one server twice, by name or by any address a name resolves to
/// (`localhost:6379` and `127.0.0.1:6379`): one server's vote would count twice, so a
/// majority of the list is no majority of servers, and with all names one server every
/// attempt fails. A name that does not resolve is compared by name only; connecting to it
/// then fails as usual.
async fn refuse_duplicate_nodes(nodes: &[Arc<Node>]) -> std::result::Result<(), String> {
    let mut seen: Vec<(&str, Vec<std::net::SocketAddr>)> = Vec::with_capacity(nodes.len());
    for node in nodes {
        let shown = node.shown.as_str();
        let addresses: Vec<_> = match tokio::time::timeout(CONNECT_LIMIT, tokio::net::lookup_host(shown)).await {
            Ok(Ok(found)) => found.collect(),
            _ => Vec::new(),
        };
        for (other, other_addresses) in &seen {
            let same_address = addresses.iter().find(|a| other_addresses.contains(a));
            if other.eq_ignore_ascii_case(shown) || same_address.is_some() {
                let at = same_address.map(|a| format!(" (both are {a})")).unwrap_or_default();
                return Err(format!(
                    "the RedLock servers '{other}' and '{shown}' are one server{at}: each must be named once, \
                     or one server's vote counts twice"
                ));
            }
        }
        seen.push((shown, addresses));
    }
    Ok(())
}

fn drift(lease: Duration) -> Duration {
    lease / 100 + Duration::from_millis(2)
}

/// lease − elapsed − drift, if positive.
fn validity_left(lease: Duration, started: Instant) -> Option<Duration> {
    lease.checked_sub(started.elapsed())?.checked_sub(drift(lease)).filter(|left| !left.is_zero())
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

fn hold_token(held: &HeldLock) -> Result<(&str, Duration)> {
    held.state
        .as_deref()
        .and_then(|state: &(dyn Any + Send + Sync)| state.downcast_ref::<HoldToken>())
        .map(|hold| (hold.token.as_str(), hold.lease))
        .ok_or_else(|| Error::internal("a RedLock hold without its token"))
}

fn only_token_kind(kind: LockKind) -> Result<()> {
    match kind {
        LockKind::Token => Ok(()),
        LockKind::Reentrant | LockKind::Fair | LockKind::Lease => {
            Err(Error::unsupported(format!("the redlock backend offers only token locks, not {kind} locks")))
        }
    }
}

#[async_trait]
impl HoldStore for RedLockBackend {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Option<Acquired>> {
        only_token_kind(request.kind)?;
        let token = uuid::Uuid::new_v4().simple().to_string();
        loop {
            if request.cancel.is_cancelled() {
                return Ok(None);
            }
            if let Some(attempt_started) = self.attempt(&request.key, &token, request.lease).await? {
                let number = NEXT_HOLD_NUMBER.fetch_add(1, Ordering::Relaxed);
                let state: Arc<dyn Any + Send + Sync> = Arc::new(HoldToken { token, lease: request.lease });
                return Ok(Some(Acquired { token: number, attempt_started, state: Some(state) }));
            }
            let delay = Duration::from_millis(fastrand::u64(RETRY_DELAY_MS));
            let wake = match request.deadline {
                Some(deadline) if Instant::now() >= deadline => return Ok(None),
                Some(deadline) => deadline.min(Instant::now() + delay),
                None => Instant::now() + delay,
            };
            tokio::select! {
                _ = tokio::time::sleep_until(wake) => {}
                _ = request.cancel.cancelled() => return Ok(None),
            }
        }
    }

    async fn renew(&self, held: &HeldLock, lease: Duration) -> Result<Renewal> {
        only_token_kind(held.kind)?;
        let (token, _) = hold_token(held)?;
        let limit = self.node_timeout(lease);
        let lease_ms = millis(lease);
        let started = Instant::now();
        let (key, shared_token) = (Arc::<str>::from(held.key.as_str()), Arc::<str>::from(token));
        let votes = self
            .votes(limit, move |node, limit| {
                let (key, token) = (key.clone(), shared_token.clone());
                async move { node.extend(&key, &token, lease_ms, limit).await }
            })
            .await;
        if votes.granted() >= self.quorum() && validity_left(lease, started).is_some() {
            return Ok(Renewal::Renewed);
        }
        // A failed extension is a lost hold: give back what is left of it everywhere.
        self.release_everywhere(&held.key, token, limit).await;
        Ok(Renewal::Gone)
    }

    async fn release(&self, held: &HeldLock, holds_left: u32) -> Result<Release> {
        only_token_kind(held.kind)?;
        if holds_left > 0 {
            return Ok(Release::Released);
        }
        let (token, lease) = hold_token(held)?;
        let limit = self.node_timeout(lease);
        let votes = self.release_everywhere(&held.key, token, limit).await;
        if votes.granted() > 0 {
            return Ok(Release::Released);
        }
        match votes.first_error() {
            Some(err) if votes.errors() == self.nodes.len() => Err(err),
            _ => Ok(Release::Gone),
        }
    }

    /// Whether a majority of the nodes have the key, whoever wrote it.
    async fn is_locked(&self, key: &str, kind: LockKind) -> Result<bool> {
        only_token_kind(kind)?;
        let key = Arc::<str>::from(key);
        let votes = self
            .votes(NODE_TIMEOUT_MAX, move |node, limit| {
                let key = key.clone();
                async move { node.exists(&key, limit).await }
            })
            .await;
        if votes.errors() > self.nodes.len() - self.quorum() {
            return Err(votes.first_error().unwrap_or_else(|| Error::connection("no RedLock majority answered")));
        }
        Ok(votes.granted() >= self.quorum())
    }
}

#[async_trait]
impl Store for RedLockBackend {
    fn capabilities(&self) -> Capabilities {
        Capabilities::locks_only("redlock", &[LockKind::Token])
    }

    fn locks(self: Arc<Self>) -> Arc<ExclusiveStore> {
        self
    }

    fn fencing_tokens(&self) -> bool {
        false
    }
}
