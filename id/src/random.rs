//! Where ID generators get random bits. Injectable, like [`crate::Clock`], so tests can fix
//! them and WebAssembly can use the host's `crypto.getRandomValues`.

use crate::error::Result;

/// A cryptographically strong source of random bytes (RFC 9562 §6.9: UUIDs must not be
/// guessable from earlier ones).
pub trait Random: Send + Sync + 'static {
    fn fill(&self, bytes: &mut [u8]) -> Result<()>;
}

/// The operating system's generator (`getrandom(2)` on Linux). Not on `wasm32`, where the
/// caller brings a source.
#[cfg(not(target_arch = "wasm32"))]
#[derive(Debug, Default, Clone, Copy)]
pub struct OsRandom;

#[cfg(not(target_arch = "wasm32"))]
impl Random for OsRandom {
    fn fill(&self, bytes: &mut [u8]) -> Result<()> {
        getrandom::fill(bytes).map_err(|err| {
            crate::IdError::new(crate::IdErrorKind::Randomness, format!("the system has no randomness: {err}"))
        })
    }
}

impl<R: Random> Random for std::sync::Arc<R> {
    fn fill(&self, bytes: &mut [u8]) -> Result<()> {
        (**self).fill(bytes)
    }
}

/// Random bits from `random`, as the low `bits` of a u128.
pub(crate) fn random_bits(random: &dyn Random, bits: u32) -> Result<u128> {
    let mut bytes = [0u8; 16];
    random.fill(&mut bytes)?;
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
    fn the_os_source_gives_different_bits_each_time() {
        let (a, b) = (random_bits(&OsRandom, 80).unwrap(), random_bits(&OsRandom, 80).unwrap());
        assert_ne!(a, b);
        assert!(a < 1u128 << 80 && b < 1u128 << 80);
    }
}
