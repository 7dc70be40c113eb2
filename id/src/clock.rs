//! Where ID generators read the time. Injectable, so tests can move the clock backwards.

use std::sync::atomic::{AtomicU64, Ordering};

/// Milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + 'static {
    fn now_ms(&self) -> u64;
}

/// The wall clock. Not on `wasm32`, where `SystemTime::now` panics: there the caller brings
/// a clock (the WebAssembly binding reads `Date.now()`).
#[cfg(not(target_arch = "wasm32"))]
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

#[cfg(not(target_arch = "wasm32"))]
impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        use std::time::{SystemTime, UNIX_EPOCH};
        // A clock before 1970 reads as 0, which every generator rejects as before its epoch.
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
    }
}

/// Let a little time pass while waiting for a clock to catch up: about a millisecond where
/// threads can sleep, a short spin on `wasm32` (which cannot), whose `Date.now()` moves on
/// regardless.
pub(crate) fn pause() {
    #[cfg(not(target_arch = "wasm32"))]
    std::thread::sleep(std::time::Duration::from_millis(1));
    #[cfg(target_arch = "wasm32")]
    for _ in 0..10_000 {
        std::hint::spin_loop();
    }
}

/// A clock that moves only when told to: for tests of rollback and exhaustion.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    pub fn new(now_ms: u64) -> Self {
        ManualClock(AtomicU64::new(now_ms))
    }

    pub fn set(&self, now_ms: u64) {
        self.0.store(now_ms, Ordering::SeqCst);
    }

    pub fn advance(&self, by_ms: u64) {
        self.0.fetch_add(by_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

impl<C: Clock> Clock for std::sync::Arc<C> {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }
}
