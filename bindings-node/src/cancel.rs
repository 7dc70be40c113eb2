//! The native end of an AbortSignal: `index.js` makes one of these per acquisition that has
//! a signal and calls `cancel()` when the signal fires; the acquisition then stops waiting
//! and, like any cancelled acquisition in the core, leaves nothing held.

use napi_derive::napi;
use tokio_util::sync::CancellationToken;

/// @internal How `index.js` passes an AbortSignal to the native side; not part of the API.
#[napi]
pub struct AcquireCancel {
    token: CancellationToken,
}

impl Default for AcquireCancel {
    fn default() -> Self {
        Self::new()
    }
}

#[napi]
impl AcquireCancel {
    #[napi(constructor)]
    pub fn new() -> Self {
        AcquireCancel { token: CancellationToken::new() }
    }

    #[napi]
    pub fn cancel(&self) {
        self.token.cancel();
    }

    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }
}
