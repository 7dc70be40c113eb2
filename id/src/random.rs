//! Where ID generators get random bits. Injectable, like [`crate::Clock`], so tests can fix
//! them and WebAssembly can use the host's `crypto.getRandomValues`.

use crate::error::Result;

/// A cryptographically strong source of random bytes (RFC 9562 §6.9: UUIDs must not be
/// guessable from earlier ones).
pub trait Random: Send + Sync + 'static {
    fn fill(&self, bytes: &mut [u8]) -> Result<()>;
}

/// The operating system's generator (`getrandom(2)` on Linux), read a block at a time. Not
/// on `wasm32`, where the caller brings a source.
///
/// One system call per ID made UUIDv7 slower than `uuid::now_v7` (issue 39), so each thread
/// keeps a pool of [`POOL_BYTES`] bytes from the OS and hands them out once each: a byte
/// given out is erased from the pool, so memory read later does not show it. A request
/// longer than a quarter of the pool goes to the OS directly. After `fork()` the child's
/// copy of the pool is the parent's; a `pthread_atfork` handler counts forks, and a pool
/// filled before the latest fork is thrown away unread, so parent and child never share a
/// byte.
#[cfg(not(target_arch = "wasm32"))]
#[derive(Debug, Default, Clone, Copy)]
pub struct OsRandom;

/// Bytes each thread's pool holds (one `getrandom` call fills it).
#[cfg(not(target_arch = "wasm32"))]
pub const POOL_BYTES: usize = 256;

#[cfg(not(target_arch = "wasm32"))]
impl Random for OsRandom {
    fn fill(&self, bytes: &mut [u8]) -> Result<()> {
        if bytes.len() > POOL_BYTES / 4 {
            return os_fill(bytes);
        }
        pool::take(bytes)
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn os_fill(bytes: &mut [u8]) -> Result<()> {
    getrandom::fill(bytes).map_err(|err| {
        crate::IdError::new(crate::IdErrorKind::Randomness, format!("the system has no randomness: {err}"))
    })
}

#[cfg(not(target_arch = "wasm32"))]
mod pool {
    use std::cell::RefCell;

    use super::{os_fill, POOL_BYTES};
    use crate::error::Result;

    struct Pool {
        bytes: [u8; POOL_BYTES],
        /// Bytes at the front already handed out (and erased).
        used: usize,
        /// The fork count when it was filled.
        forks: u64,
    }

    thread_local! {
        static POOL: RefCell<Pool> = const { RefCell::new(Pool { bytes: [0; POOL_BYTES], used: POOL_BYTES, forks: 0 }) };
    }

    /// `out.len()` (at most `POOL_BYTES`) bytes from this thread's pool, refilled first when
    /// it has too few left or was filled in the parent of a fork.
    pub(super) fn take(out: &mut [u8]) -> Result<()> {
        let forks = forks::count();
        POOL.with(|pool| {
            let mut pool = pool.borrow_mut();
            if pool.used + out.len() > POOL_BYTES || pool.forks != forks {
                os_fill(&mut pool.bytes)?;
                pool.used = 0;
                pool.forks = forks;
            }
            let start = pool.used;
            let taken = &mut pool.bytes[start..start + out.len()];
            out.copy_from_slice(taken);
            taken.fill(0);
            pool.used += out.len();
            Ok(())
        })
    }

    #[cfg(unix)]
    pub(super) mod forks {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
        use std::sync::Once;

        static FORKS: AtomicU64 = AtomicU64::new(0);
        /// Set if the handler could not be registered (ENOMEM).
        static UNTRACKED: AtomicBool = AtomicBool::new(false);

        extern "C" fn in_child() {
            FORKS.fetch_add(1, Relaxed);
        }

        /// How many forks this process's line of ancestors made since the handler was
        /// registered (on the first call, so before any pool is filled).
        pub fn count() -> u64 {
            static REGISTER: Once = Once::new();
            REGISTER.call_once(|| {
                // SAFETY: the handler only bumps an atomic, which a fork child handler may.
                if unsafe { libc::pthread_atfork(None, None, Some(in_child)) } != 0 {
                    UNTRACKED.store(true, Relaxed);
                }
            });
            if UNTRACKED.load(Relaxed) {
                // A fork cannot be told apart: a new count on every call, so every take
                // reads the OS (correct, and as slow as before the pool).
                return FORKS.fetch_add(1, Relaxed) + 1;
            }
            FORKS.load(Relaxed)
        }
    }

    #[cfg(not(unix))]
    pub(super) mod forks {
        /// No `fork()` here.
        pub fn count() -> u64 {
            0
        }
    }
}

impl<R: Random> Random for std::sync::Arc<R> {
    fn fill(&self, bytes: &mut [u8]) -> Result<()> {
        (**self).fill(bytes)
    }
}

/// Random bits from `random`, as the low `bits` of a u128.
pub(crate) fn random_bits(random: &dyn Random, bits: u32) -> Result<u128> {
    // Only the bytes the bits need: a UUIDv7's 32-bit tail takes 4, not 16.
    let len = bits.min(128).div_ceil(8) as usize;
    let mut bytes = [0u8; 16];
    random.fill(&mut bytes[16 - len..])?;
    let value = u128::from_be_bytes(bytes);
    Ok(if bits >= 128 { value } else { value & ((1u128 << bits) - 1) })
}

/// Not random at all: counts up from a seed. For tests that need to know every bit.
#[derive(Debug, Default)]
pub struct CountingRandom(std::sync::atomic::AtomicU64);

impl CountingRandom {
    pub fn new(seed: u64) -> Self {
        CountingRandom(std::sync::atomic::AtomicU64::new(seed))
    }
}

impl Random for CountingRandom {
    fn fill(&self, bytes: &mut [u8]) -> Result<()> {
        let next = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = next.to_be_bytes()[i % 8];
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn the_pool_hands_each_byte_out_once_and_refills() {
        // Eight-byte draws over several pool fills: no two alike (a repeat of 64 random
        // bits is a pool handing out the same bytes twice).
        let mut seen = std::collections::HashSet::new();
        for _ in 0..4 * POOL_BYTES / 8 {
            let mut draw = [0u8; 8];
            OsRandom.fill(&mut draw).unwrap();
            assert!(seen.insert(draw), "a repeated draw");
        }
        // Large requests bypass the pool.
        let (mut a, mut b) = ([0u8; 200], [0u8; 200]);
        OsRandom.fill(&mut a).unwrap();
        OsRandom.fill(&mut b).unwrap();
        assert_ne!(a, b);
        assert_eq!(random_bits(&OsRandom, 4).unwrap() >> 4, 0);
    }

    /// A forked child must not hand out the bytes left in its parent's pool.
    #[cfg(all(unix, not(target_arch = "wasm32")))]
    #[test]
    fn a_forked_child_does_not_reuse_the_parents_pool() {
        let mut first = [0u8; 8];
        OsRandom.fill(&mut first).unwrap();
        let mut pipe = [0; 2];
        assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
        // SAFETY: the child only draws from the pool (no allocation, no lock), writes to a
        // pipe and exits with _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let mut draw = [0u8; 8];
            let ok = OsRandom.fill(&mut draw).is_ok();
            unsafe {
                libc::write(pipe[1], draw.as_ptr().cast(), if ok { 8 } else { 0 });
                libc::_exit(0);
            }
        }
        let mut parents = [0u8; 8];
        OsRandom.fill(&mut parents).unwrap();
        let mut childs = [0u8; 8];
        let read = unsafe { libc::read(pipe[0], childs.as_mut_ptr().cast(), 8) };
        unsafe {
            libc::waitpid(pid, std::ptr::null_mut(), 0);
            libc::close(pipe[0]);
            libc::close(pipe[1]);
        }
        assert_eq!(read, 8, "the child drew nothing");
        assert_ne!(parents, childs, "parent and child drew the same bytes after fork");
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn the_os_source_gives_different_bits_each_time() {
        let (a, b) = (random_bits(&OsRandom, 80).unwrap(), random_bits(&OsRandom, 80).unwrap());
        assert_ne!(a, b);
        assert!(a < 1u128 << 80 && b < 1u128 << 80);
    }
}
