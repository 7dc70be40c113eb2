//! The backends, one folder or file each, and the URL scheme that picks one. A backend
//! implements the store interface (`crate::spi`) and imports nothing from the engine or
//! the primitives.

mod etcd;
mod mem;
pub(crate) mod poll;
mod redis;
pub mod sql;
mod sqlite;
mod successors;
mod zk;

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::spi::Store;
use crate::url::ConnectUrl;

/// Open the backend a URL names, taking the options it knows from the URL.
pub(crate) async fn open(url: &mut ConnectUrl) -> Result<Arc<dyn Store>> {
    match url.scheme() {
        "mem" => Ok(Arc::new(mem::MemBackend::open(url)?)),
        "sqlite" => Ok(Arc::new(sqlite::SqliteBackend::open(url).await?)),
        "redis" | "rediss" | "redis+cluster" | "redis+sentinel" => Ok(Arc::new(redis::RedisBackend::open(url).await?)),
        "zk" => Ok(Arc::new(zk::ZkBackend::open(url).await?)),
        "etcd" | "etcds" | "etcd+tls" => Ok(Arc::new(etcd::EtcdBackend::open(url).await?)),
        "postgres" | "postgresql" => Ok(Arc::new(sql::PgBackend::open(url).await?)),
        "mysql" | "mariadb" => Ok(Arc::new(sql::MySqlBackend::open(url).await?)),
        other => Err(Error::invalid_argument(format!(
            "unknown URL scheme '{other}' in {}; use one of mem, sqlite, redis, rediss, redis+cluster, \
             redis+sentinel, etcd, etcds, zk, postgres, mysql, mariadb",
            url.redacted()
        ))),
    }
}
