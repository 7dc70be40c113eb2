//! JavaScript values to what the ID crate takes. A 64-bit ID is only ever read from a BigInt
//! or a decimal string, never from a Number, which cannot hold it exactly; small integers
//! (worker ids, widths, counts, milliseconds) may be Numbers, checked to be exact.

use wasm_bindgen::prelude::*;

use crate::errors::invalid_argument;

#[wasm_bindgen]
extern "C" {
    /// JavaScript's own rendering of a Number, for messages: Rust's float formatting would
    /// add about 20 KB to the module.
    #[wasm_bindgen(js_name = String)]
    fn number_text(number: f64) -> String;
}

/// Number.MAX_SAFE_INTEGER: above it a Number may not be the integer its writer meant.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

fn type_name(value: &JsValue) -> String {
    value.js_typeof().as_string().unwrap_or_default()
}

/// A 64-bit ID from a BigInt or a decimal string.
pub fn id_from_js(value: &JsValue) -> Result<u64, JsValue> {
    if value.is_bigint() {
        return u64::try_from(value.clone())
            .map_err(|_| invalid_argument("id must be a BigInt between 0n and 2n**64n - 1n"));
    }
    if let Some(text) = value.as_string() {
        return parse_decimal_id(&text).ok_or_else(|| {
            invalid_argument(&format!(
                "id must be a BigInt or a decimal string of an unsigned 64-bit integer, got '{text}'"
            ))
        });
    }
    Err(invalid_argument(&format!(
        "id must be a BigInt or a decimal string (a Number cannot hold a 64-bit ID exactly), got a {}",
        type_name(value)
    )))
}

/// An unsigned 64-bit decimal, surrounding spaces allowed, nothing else (no sign, no `0x`).
pub fn parse_decimal_id(text: &str) -> Option<u64> {
    let digits = text.trim();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// A non-negative integer that fits `u64`, from a Number (exact, at most 2^53 - 1) or a BigInt.
pub fn u64_from_number_or_bigint(what: &str, value: &JsValue) -> Result<u64, JsValue> {
    if value.is_bigint() {
        return u64::try_from(value.clone())
            .map_err(|_| invalid_argument(&format!("{what} must be a BigInt between 0n and 2n**64n - 1n")));
    }
    match value.as_f64() {
        Some(number) => exact_integer(what, number),
        None => Err(invalid_argument(&format!("{what} must be a non-negative integer, got a {}", type_name(value)))),
    }
}

/// A Number that is a non-negative integer, at most 2^53 - 1.
pub fn exact_integer(what: &str, number: f64) -> Result<u64, JsValue> {
    if number.is_finite() && number >= 0.0 && number.fract() == 0.0 && number <= MAX_SAFE_INTEGER {
        Ok(number as u64)
    } else {
        Err(invalid_argument(&format!("{what} must be a non-negative integer, got {}", number_text(number))))
    }
}

/// How many items a batch call makes: an exact integer up to `max`, so that a typo cannot
/// ask for gigabytes.
pub fn batch_size(what: &str, count: f64, max: u64) -> Result<usize, JsValue> {
    let count = exact_integer(what, count)?;
    if count > max {
        return Err(invalid_argument(&format!("{what} takes at most {max} at a time, got {count}")));
    }
    Ok(count as usize)
}

/// A string argument (a Number or `undefined` in its place is an error, not its text).
pub fn string_from_js(what: &str, value: &JsValue) -> Result<String, JsValue> {
    value.as_string().ok_or_else(|| invalid_argument(&format!("{what} must be a string, got a {}", type_name(value))))
}

/// An optional field of an options object: `undefined` and `null` are absent.
pub fn present(value: JsValue) -> Option<JsValue> {
    if value.is_undefined() || value.is_null() {
        None
    } else {
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_ids_are_digits_only() {
        assert_eq!(parse_decimal_id("1050118621198921728"), Some(1_050_118_621_198_921_728));
        assert_eq!(parse_decimal_id(" 18446744073709551615 "), Some(u64::MAX));
        for bad in ["", " ", "-1", "+1", "0x10", "1e3", "18446744073709551616", "1 2"] {
            assert_eq!(parse_decimal_id(bad), None, "{bad:?}");
        }
    }
}
