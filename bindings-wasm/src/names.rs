//! How a lock name becomes what each SQL database locks on (`polylock_id::sql_names`), so a
//! browser or an edge worker computes the same PostgreSQL advisory key, MySQL lock name and
//! ShedLock row as every other polylock binding.

use polylock_id::sql_names;
use wasm_bindgen::prelude::*;

use crate::convert::string_from_js;

/// The `pg_advisory_lock(bigint)` key of a lock name: the first 8 bytes of SHA-256(name as
/// UTF-8), read as a big-endian signed 64-bit integer.
#[wasm_bindgen(js_name = postgresAdvisoryKey)]
pub fn postgres_advisory_key(#[wasm_bindgen(unchecked_param_type = "string")] name: JsValue) -> Result<i64, JsValue> {
    Ok(sql_names::postgres_advisory_key(&string_from_js("name", &name)?))
}

/// The MySQL/MariaDB `GET_LOCK` name of a lock name: the name itself when it is at most 64
/// characters and lowercase, else `polylock:` and 48 hex digits of its SHA-256.
#[wasm_bindgen(js_name = mysqlLockName)]
pub fn mysql_lock_name(#[wasm_bindgen(unchecked_param_type = "string")] name: JsValue) -> Result<String, JsValue> {
    Ok(sql_names::mysql_lock_name(&string_from_js("name", &name)?))
}

/// ShedLock's `shedlock.name` of a lease lock: the name itself when it is at most 64
/// characters, else the hashed form of `mysqlLockName`.
#[wasm_bindgen(js_name = shedlockName)]
pub fn shedlock_name(#[wasm_bindgen(unchecked_param_type = "string")] name: JsValue) -> Result<String, JsValue> {
    Ok(sql_names::lease_name(&string_from_js("name", &name)?))
}
