//! UUIDv7 and ULID text, written on the stack and handed to JavaScript as a string in one
//! step. A returned Rust `String` costs an allocation here and a free call from JavaScript
//! per ID, which made `ulid()` slower than the pure-JavaScript `ulid` package; the forms are
//! polylock-id's (`format_uuid`, `format_ulid`), which the tests below compare them with.

use wasm_bindgen::JsValue;

const HEX: &[u8; 16] = b"0123456789abcdef";
const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// `8-4-4-4-12` lowercase hex digits.
pub fn uuid_bytes(value: u128) -> [u8; 36] {
    // Two u64 halves: wasm32 has no 128-bit shifts, and a shift by a variable amount of a
    // u128 is a library call per digit.
    let mut digits = [0u8; 32];
    write_digits(&mut digits[..16], (value >> 64) as u64, 4, HEX);
    write_digits(&mut digits[16..], value as u64, 4, HEX);
    let mut out = [b'-'; 36];
    out[..8].copy_from_slice(&digits[..8]);
    out[9..13].copy_from_slice(&digits[8..12]);
    out[14..18].copy_from_slice(&digits[12..16]);
    out[19..23].copy_from_slice(&digits[16..20]);
    out[24..].copy_from_slice(&digits[20..]);
    out
}

/// 26 characters of Crockford's base32: 10 for the 48-bit timestamp (50 bits, the top 2
/// always 0), then 8 for each half of the 80 random bits.
pub fn ulid_bytes(value: u128) -> [u8; 26] {
    const LOW_40: u128 = (1 << 40) - 1;
    let mut out = [0u8; 26];
    write_digits(&mut out[..10], (value >> 80) as u64, 5, CROCKFORD);
    write_digits(&mut out[10..18], ((value >> 40) & LOW_40) as u64, 5, CROCKFORD);
    write_digits(&mut out[18..], (value & LOW_40) as u64, 5, CROCKFORD);
    out
}

/// The low `out.len() * bits` bits of `value`, most significant first, `bits` per digit.
fn write_digits(out: &mut [u8], mut value: u64, bits: u32, alphabet: &[u8]) {
    let mask = (1u64 << bits) - 1;
    for byte in out.iter_mut().rev() {
        *byte = alphabet[(value & mask) as usize];
        value >>= bits;
    }
}

fn ascii_to_js(bytes: &[u8]) -> JsValue {
    // Always ASCII (from the two alphabets above), so this never falls back to "".
    JsValue::from_str(std::str::from_utf8(bytes).unwrap_or_default())
}

pub fn uuid_to_js(value: u128) -> JsValue {
    ascii_to_js(&uuid_bytes(value))
}

pub fn ulid_to_js(value: u128) -> JsValue {
    ascii_to_js(&ulid_bytes(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use polylock_id::{format_ulid, format_uuid};

    #[test]
    fn the_same_text_as_polylock_id() {
        let mut value = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210u128;
        for _ in 0..10_000 {
            assert_eq!(std::str::from_utf8(&uuid_bytes(value)).unwrap(), format_uuid(value));
            assert_eq!(std::str::from_utf8(&ulid_bytes(value)).unwrap(), format_ulid(value));
            value = value.wrapping_mul(0x2545_f491_4f6c_dd1d_9e37_79b9_7f4a_7c15).wrapping_add(1);
        }
        for value in [0, u128::MAX] {
            assert_eq!(std::str::from_utf8(&uuid_bytes(value)).unwrap(), format_uuid(value));
            assert_eq!(std::str::from_utf8(&ulid_bytes(value)).unwrap(), format_ulid(value));
        }
    }
}
