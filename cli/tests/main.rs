//! The CLI's integration suites, one module per file, linked into one test binary. They run
//! the built `polylock` binary against the real servers of tests/services; run one with
//! `cargo test --release -p polylock-cli --test cli NAME::`.
//! A new suite: a file here, a `mod` line below, and `use crate::common;` inside it.

mod common;

mod admin;
mod cli;
mod elect;
mod etcd;
mod ids_backends;
mod observe;
mod redis;
mod redlock;
mod rw_and_semaphore;
mod rw_and_semaphore_servers;
mod sql;
mod zookeeper;
