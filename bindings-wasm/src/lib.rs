//! polylock-wasm: polylock's ID algorithms and SQL lock-name mappings for JavaScript hosts
//! without sockets (browsers, edge workers, Deno) and for Node, compiled to WebAssembly with
//! wasm-bindgen. Everything here translates: the algorithms are `polylock-id`'s, the clock is
//! `Date.now()` and the randomness `crypto.getRandomValues` (`host`).
//!
//! IDs cross as BigInt (accepted as BigInt or decimal string, never as Number); UUIDv7 and
//! ULID as text; errors as `Error`s with the Node binding's `code`s (`errors`).

mod convert;
mod errors;
mod host;
mod names;
mod snowflake;
mod text;
mod uuid_ulid;

#[cfg(test)]
mod vectors;
