//! How one idempotency key is laid out in its store, as a versioned value:
//! `b'I'`, status (1 byte), token, in-progress-until and expires-at (8 bytes each,
//! big-endian; times in milliseconds since the Unix epoch), the fingerprint's length
//! (4 bytes) and bytes, then the stored response.

use crate::error::{Error, Result};

const MAGIC: u8 = b'I';
const HEADER: usize = 1 + 1 + 8 + 8 + 8 + 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    InProgress,
    Completed,
    /// Given up by its attempt (`Ticket::abandon`): the next `begin` runs again. Kept
    /// rather than deleted so that the next attempt's token still grows.
    Abandoned,
}

impl Status {
    fn byte(self) -> u8 {
        match self {
            Status::InProgress => b'P',
            Status::Completed => b'C',
            Status::Abandoned => b'A',
        }
    }

    fn from_byte(byte: u8) -> Option<Status> {
        match byte {
            b'P' => Some(Status::InProgress),
            b'C' => Some(Status::Completed),
            b'A' => Some(Status::Abandoned),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IdempotencyRecord {
    pub status: Status,
    /// Grows with every attempt that takes the key (a takeover of a crashed attempt, a run
    /// after an abandoned or expired one); identifies the attempt.
    pub token: u64,
    pub in_progress_until_ms: u64,
    pub expires_at_ms: u64,
    pub fingerprint: Vec<u8>,
    pub response: Vec<u8>,
}

impl IdempotencyRecord {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + self.fingerprint.len() + self.response.len());
        out.push(MAGIC);
        out.push(self.status.byte());
        out.extend_from_slice(&self.token.to_be_bytes());
        out.extend_from_slice(&self.in_progress_until_ms.to_be_bytes());
        out.extend_from_slice(&self.expires_at_ms.to_be_bytes());
        // Fingerprints are limited to far less than 4 GiB by `Idempotency::begin`.
        out.extend_from_slice(&(self.fingerprint.len() as u32).to_be_bytes());
        out.extend_from_slice(&self.fingerprint);
        out.extend_from_slice(&self.response);
        out
    }

    pub fn decode(key: &str, bytes: &[u8]) -> Result<IdempotencyRecord> {
        let not_ours = || Error::backend(format!("the stored idempotency record '{key}' is not in polylock's layout"));
        if bytes.len() < HEADER || bytes[0] != MAGIC {
            return Err(not_ours());
        }
        let status = Status::from_byte(bytes[1]).ok_or_else(not_ours)?;
        let u64_at = |at: usize| u64::from_be_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let fingerprint_len = u32::from_be_bytes(bytes[26..30].try_into().expect("4 bytes")) as usize;
        let rest = &bytes[HEADER..];
        if rest.len() < fingerprint_len {
            return Err(not_ours());
        }
        let (fingerprint, response) = rest.split_at(fingerprint_len);
        Ok(IdempotencyRecord {
            status,
            token: u64_at(2),
            in_progress_until_ms: u64_at(10),
            expires_at_ms: u64_at(18),
            fingerprint: fingerprint.to_vec(),
            response: response.to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        for status in [Status::InProgress, Status::Completed, Status::Abandoned] {
            let record = IdempotencyRecord {
                status,
                token: 42,
                in_progress_until_ms: 1_700_000_000_000,
                expires_at_ms: u64::MAX,
                fingerprint: b"sha256:abc".to_vec(),
                response: vec![0, 1, 2, 3],
            };
            assert_eq!(IdempotencyRecord::decode("k", &record.encode()).unwrap(), record);
        }
    }

    #[test]
    fn foreign_bytes_are_a_backend_error() {
        assert_eq!(IdempotencyRecord::decode("k", b"Ixyz").unwrap_err().kind(), crate::ErrorKind::Backend);
        let mut bad = IdempotencyRecord {
            status: Status::Completed,
            token: 1,
            in_progress_until_ms: 0,
            expires_at_ms: 0,
            fingerprint: vec![1; 10],
            response: vec![],
        }
        .encode();
        bad.truncate(HEADER + 3);
        assert!(IdempotencyRecord::decode("k", &bad).is_err());
    }
}
