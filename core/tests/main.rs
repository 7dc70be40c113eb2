//! polylock's integration suites, one module per file, linked into one test binary (one link
//! of the core instead of one per file). Each suite runs against the real servers of
//! tests/services; run one with `cargo test --release -p polylock --test integration NAME::`.
//! A new suite: a file here, a `mod` line below, and `use crate::common;` inside it.

mod common;

mod election;
mod election_interop;
mod etcd;
mod etcd_rw_semaphore;
mod ids_segments;
mod ids_snowflake_lease;
mod latch;
mod lock_contract;
mod multi_lock;
mod observe;
mod redis;
mod redis_rw_semaphore;
mod redlock;
mod rw_lock_and_semaphore;
mod sql;
mod sql_handoff;
mod sql_rw_semaphore;
mod sql_shedlock;
mod tls;
mod transport_retry;
mod values_and_idempotency;
mod values_processes;
mod zk_rw_semaphore;
mod zookeeper;
