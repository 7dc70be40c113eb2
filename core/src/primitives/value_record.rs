//! How a versioned value is laid out in its store: one tag byte, then, for a value written
//! fenced, the highest fencing token it has accepted (8 bytes, big-endian), then the
//! caller's bytes. Every backend's `VersionStore` keeps these bytes as they are.

use crate::error::{Error, Result};

const PLAIN: u8 = 0;
const FENCED: u8 = 1;

/// One stored value: the caller's bytes and, once it has been written fenced, the highest
/// token it has accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ValueRecord {
    pub fence: Option<u64>,
    pub payload: Vec<u8>,
}

impl ValueRecord {
    pub fn encode(fence: Option<u64>, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(payload.len() + 9);
        match fence {
            None => out.push(PLAIN),
            Some(token) => {
                out.push(FENCED);
                out.extend_from_slice(&token.to_be_bytes());
            }
        }
        out.extend_from_slice(payload);
        out
    }

    /// `name` is for the message when the bytes were not written by polylock.
    pub fn decode(name: &str, bytes: &[u8]) -> Result<ValueRecord> {
        let not_ours = || {
            Error::backend(format!(
                "the stored value '{name}' is not in polylock's layout (a tag byte 0 or 1 first); \
                 was it written by something else?"
            ))
        };
        match bytes.split_first() {
            Some((&PLAIN, payload)) => Ok(ValueRecord { fence: None, payload: payload.to_vec() }),
            Some((&FENCED, rest)) if rest.len() >= 8 => {
                let (token, payload) = rest.split_at(8);
                let token = u64::from_be_bytes(token.try_into().map_err(|_| not_ours())?);
                Ok(ValueRecord { fence: Some(token), payload: payload.to_vec() })
            }
            _ => Err(not_ours()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        for fence in [None, Some(0), Some(7), Some(u64::MAX)] {
            for payload in [&b""[..], b"hello", &[0, 1, 2, 255]] {
                let bytes = ValueRecord::encode(fence, payload);
                let back = ValueRecord::decode("v", &bytes).unwrap();
                assert_eq!(back, ValueRecord { fence, payload: payload.to_vec() });
            }
        }
    }

    #[test]
    fn foreign_bytes_are_a_backend_error() {
        for bytes in [&b""[..], b"\x02abc", b"\x01short"] {
            let err = ValueRecord::decode("v", bytes).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::Backend);
        }
    }
}
