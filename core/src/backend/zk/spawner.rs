//! Where zookeeper-client starts its session task.
//!
//! The library spawns through the `spawns` crate, which finds tokio in a table the linker
//! assembles (linkme). A C program linked against the static libpolylock.a drops that table's
//! entry, because nothing refers to it, and every connect then panicked with "no spawner".
//! Polling the connect under an explicit spawner needs no linker help.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;

use spawns_core::{Spawn, Task};

struct Tokio;

impl Spawn for Tokio {
    fn spawn(&self, task: Task) {
        tokio::spawn(Box::into_pin(task.future));
    }
}

/// `future`, polled with tokio as the spawner of whatever zookeeper-client spawns meanwhile.
pub(super) async fn on_tokio<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    std::future::poll_fn(|cx| -> Poll<F::Output> {
        let _scope = spawns_core::enter(&Tokio);
        future.as_mut().poll(cx)
    })
    .await
}
