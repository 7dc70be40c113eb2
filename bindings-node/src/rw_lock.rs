//! `RwLock`: the two sides of a read-write lock, each a `Lock`.

use napi_derive::napi;

use polylock::kit::LockTarget;

use crate::lock::Lock;

/// A read-write lock: `read` is shared (any number of holders while nobody writes), `write`
/// is exclusive. Each side is used like a `Lock`. The writer may also read (a downgrade); a
/// reader asking for the write side is refused at once with `POLYLOCK_INVALID_ARGUMENT`.
#[napi(js_name = "RwLock")]
pub struct ReadWriteLock {
    rw: polylock::RwLock,
}

impl ReadWriteLock {
    pub fn new(rw: polylock::RwLock) -> Self {
        ReadWriteLock { rw }
    }
}

#[napi]
impl ReadWriteLock {
    /// The shared side.
    #[napi(getter)]
    pub fn read(&self) -> Lock {
        Lock::new(LockTarget::Read(self.rw.clone()))
    }

    /// The exclusive side.
    #[napi(getter)]
    pub fn write(&self) -> Lock {
        Lock::new(LockTarget::Write(self.rw.clone()))
    }

    #[napi(getter)]
    pub fn name(&self) -> String {
        self.rw.name().to_string()
    }
}
