//! The `redlock://` URL of a list of independent Redis servers, for `redlock(urls, name)` in
//! `index.js`: the core's one rule (`polylock::kit::redlock_url`), so every language accepts
//! and refuses the same entries.

use napi_derive::napi;

use crate::errors::IntoNapiResult;

/// `redlock://h1:p1,h2:p2,...` from entries that are each `host:port` or
/// `redis://[user:password@]host:port`; the servers must share one set of credentials.
#[napi]
pub fn redlock_url(urls: Vec<String>) -> napi::Result<String> {
    polylock::kit::redlock_url::redlock_url(&urls).into_napi()
}
