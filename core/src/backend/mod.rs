//! The backends, one folder or file each, and the URL scheme that picks one. A backend
//! implements the store interface (`crate::spi`) and imports nothing from the engine or
//! the primitives.

#[cfg(any(feature = "etcd", feature = "zookeeper"))]
mod checked_counts;
#[cfg(feature = "etcd")]
mod etcd;
mod mem;
pub(crate) mod poll;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "redis")]
mod redlock;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod sql;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
mod successors;
#[cfg(feature = "zookeeper")]
mod zk;

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::spi::Store;
use crate::url::ConnectUrl;

/// Open the backend a URL names, taking the options it knows from the URL.
pub(crate) async fn open(url: &mut ConnectUrl) -> Result<Arc<dyn Store>> {
    match url.scheme() {
        "mem" => Ok(Arc::new(mem::MemBackend::open(url)?)),
        #[cfg(feature = "sqlite")]
        "sqlite" => Ok(Arc::new(sqlite::SqliteBackend::open(url).await?)),
        #[cfg(feature = "redis")]
        "redis" | "rediss" | "redis+cluster" | "rediss+cluster" | "redis+sentinel" | "rediss+sentinel" => {
            Ok(Arc::new(redis::RedisBackend::open(url).await?))
        }
        #[cfg(feature = "redis")]
        "redlock" | "redlocks" => Ok(Arc::new(redlock::RedLockBackend::open(url).await?)),
        #[cfg(feature = "zookeeper")]
        "zk" => Ok(Arc::new(zk::ZkBackend::open(url).await?)),
        #[cfg(feature = "etcd")]
        "etcd" | "etcds" | "etcd+tls" => Ok(Arc::new(etcd::EtcdBackend::open(url).await?)),
        #[cfg(feature = "postgres")]
        "postgres" | "postgresql" => Ok(Arc::new(sql::PgBackend::open(url).await?)),
        #[cfg(feature = "mysql")]
        "mysql" | "mariadb" => Ok(Arc::new(sql::MySqlBackend::open(url).await?)),
        scheme if feature_of(scheme).is_some() => Err(Error::unsupported(format!(
            "this build of polylock has no {scheme}:// backend; build the polylock crate with its '{}' feature",
            feature_of(scheme).unwrap_or_default()
        ))),
        other => Err(Error::invalid_argument(format!(
            "unknown URL scheme '{other}' in {}; use one of mem, sqlite, redis, rediss, redis+cluster, \
             rediss+cluster, redis+sentinel, rediss+sentinel, redlock, redlocks, etcd, etcds, zk, postgres, mysql, mariadb",
            url.redacted()
        ))),
    }
}

/// The cargo feature that brings the backend of a URL scheme.
fn feature_of(scheme: &str) -> Option<&'static str> {
    match scheme {
        "sqlite" => Some("sqlite"),
        "redis" | "rediss" | "redis+cluster" | "rediss+cluster" | "redis+sentinel" | "rediss+sentinel" | "redlock"
        | "redlocks" => Some("redis"),
        "zk" => Some("zookeeper"),
        "etcd" | "etcds" | "etcd+tls" => Some("etcd"),
        "postgres" | "postgresql" => Some("postgres"),
        "mysql" | "mariadb" => Some("mysql"),
        _ => None,
    }
}
