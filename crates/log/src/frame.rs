//! The record frame: how one log record is laid out inside a segment.
//!
//! ```text
//! offset  size  field
//!      0     4  payload length (u32 LE)
//!      4     4  crc32 over [lsn u64 LE, stream u32 LE, length u32 LE, payload]
//!      8     8  lsn (u64 LE): the record's own position in the log
//!     16     4  stream (u32 LE)
//!     20     n  payload
//! ```
//!
//! The checksum covers the LSN, so a frame that is intact but sitting at the
//! wrong position (stale bytes from an earlier life of the file, a misdirected
//! write) does not validate. Recovery relies on that to tell a torn tail from
//! damage in the middle of the log.

use crate::{Lsn, MAX_RECORD_BYTES};

/// Bytes in front of every payload.
pub(crate) const FRAME_HEADER_LEN: usize = 20;

/// Total bytes a record with `payload_len` bytes of payload occupies in the log.
/// Bytes a record with a payload of this size takes in the log (its LSN span).
pub fn frame_len(payload_len: usize) -> u64 {
    (FRAME_HEADER_LEN + payload_len) as u64
}

/// The decoded fixed-size part of a frame, before the payload is checked.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FrameHeader {
    pub payload_len: u32,
    pub crc: u32,
    pub lsn: Lsn,
    pub stream: u32,
}

impl FrameHeader {
    pub(crate) fn parse(bytes: &[u8; FRAME_HEADER_LEN]) -> FrameHeader {
        FrameHeader {
            payload_len: u32::from_le_bytes(bytes[0..4].try_into().unwrap()),
            crc: u32::from_le_bytes(bytes[4..8].try_into().unwrap()),
            lsn: u64::from_le_bytes(bytes[8..16].try_into().unwrap()),
            stream: u32::from_le_bytes(bytes[16..20].try_into().unwrap()),
        }
    }

    /// Checks the parts that can be checked without the payload. Callers run
    /// this before allocating or reading `payload_len` bytes, so a garbage
    /// length cannot make them allocate gigabytes.
    pub(crate) fn check_shape(&self, expected_lsn: Lsn) -> Result<(), String> {
        if self.payload_len as usize > MAX_RECORD_BYTES {
            return Err(format!("record length {} exceeds the {} byte limit", self.payload_len, MAX_RECORD_BYTES));
        }
        if self.lsn != expected_lsn {
            return Err(format!("record LSN mismatch: expected {expected_lsn}, found {}", self.lsn));
        }
        Ok(())
    }

    /// Verifies the checksum against the payload.
    pub(crate) fn check_payload(&self, payload: &[u8]) -> Result<(), String> {
        debug_assert_eq!(payload.len(), self.payload_len as usize);
        let hasher = payload_hasher(payload);
        let actual = frame_crc(self.lsn, self.stream, self.payload_len, &hasher);
        if actual != self.crc {
            return Err(format!("checksum mismatch (stored {:#010x}, computed {actual:#010x})", self.crc));
        }
        Ok(())
    }
}

/// CRC state over the payload alone. Appenders compute it before taking the
/// log's lock (the LSN is not known yet) and the lock holder folds it into the
/// frame checksum with `combine`, which costs O(log n) instead of O(n).
pub(crate) fn payload_hasher(payload: &[u8]) -> crc32fast::Hasher {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(payload);
    hasher
}

/// The frame checksum: crc32 over [lsn, stream, length, payload].
pub(crate) fn frame_crc(lsn: Lsn, stream: u32, payload_len: u32, payload_hasher: &crc32fast::Hasher) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&lsn.to_le_bytes());
    hasher.update(&stream.to_le_bytes());
    hasher.update(&payload_len.to_le_bytes());
    hasher.combine(payload_hasher);
    hasher.finalize()
}

/// Appends the frame for one record to `buf`.
pub(crate) fn encode_frame(
    buf: &mut Vec<u8>,
    lsn: Lsn,
    stream: u32,
    payload: &[u8],
    payload_hasher: &crc32fast::Hasher,
) {
    let payload_len = u32::try_from(payload.len()).expect("payload length checked by caller");
    let crc = frame_crc(lsn, stream, payload_len, payload_hasher);
    buf.reserve(FRAME_HEADER_LEN + payload.len());
    buf.extend_from_slice(&payload_len.to_le_bytes());
    buf.extend_from_slice(&crc.to_le_bytes());
    buf.extend_from_slice(&lsn.to_le_bytes());
    buf.extend_from_slice(&stream.to_le_bytes());
    buf.extend_from_slice(payload);
}

/// Validates the frame starting at `bytes[at..]`, which must carry
/// `expected_lsn`, and returns the offset one past it. On failure returns a
/// human-readable reason.
pub(crate) fn validate_in_buffer(bytes: &[u8], at: usize, expected_lsn: Lsn) -> Result<usize, String> {
    let available = bytes.len() - at;
    if available < FRAME_HEADER_LEN {
        return Err(format!("truncated record header ({available} of {FRAME_HEADER_LEN} bytes present)"));
    }
    let header_bytes: &[u8; FRAME_HEADER_LEN] = bytes[at..at + FRAME_HEADER_LEN].try_into().unwrap();
    let header = FrameHeader::parse(header_bytes);
    header.check_shape(expected_lsn)?;
    let payload_start = at + FRAME_HEADER_LEN;
    let payload_end = payload_start + header.payload_len as usize;
    if payload_end > bytes.len() {
        return Err(format!(
            "truncated record ({} of {} payload bytes present)",
            bytes.len() - payload_start,
            header.payload_len
        ));
    }
    header.check_payload(&bytes[payload_start..payload_end])?;
    Ok(payload_end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_then_validate() {
        let mut buf = vec![0xAA; 3];
        let payload = b"hello, log";
        encode_frame(&mut buf, 777, 5, payload, &payload_hasher(payload));
        assert_eq!(buf.len() as u64, 3 + frame_len(payload.len()));
        assert_eq!(validate_in_buffer(&buf, 3, 777), Ok(buf.len()));
        let header = FrameHeader::parse(buf[3..23].try_into().unwrap());
        assert_eq!((header.lsn, header.stream), (777, 5));
        assert_eq!(&buf[23..], payload);
    }

    #[test]
    fn wrong_position_or_flipped_bit_is_rejected() {
        let mut buf = Vec::new();
        encode_frame(&mut buf, 100, 1, b"abc", &payload_hasher(b"abc"));
        let err = validate_in_buffer(&buf, 0, 101).unwrap_err();
        assert!(err.contains("LSN mismatch"), "{err}");
        for i in 0..buf.len() {
            let mut damaged = buf.clone();
            damaged[i] ^= 0x01;
            assert!(validate_in_buffer(&damaged, 0, 100).is_err(), "byte {i}");
        }
        assert!(validate_in_buffer(&buf[..buf.len() - 1], 0, 100).is_err());
        assert!(validate_in_buffer(&buf[..10], 0, 100).is_err());
    }

    #[test]
    fn combined_crc_equals_straight_crc() {
        let payload: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
        let mut straight = crc32fast::Hasher::new();
        straight.update(&9u64.to_le_bytes());
        straight.update(&3u32.to_le_bytes());
        straight.update(&(payload.len() as u32).to_le_bytes());
        straight.update(&payload);
        assert_eq!(straight.finalize(), frame_crc(9, 3, payload.len() as u32, &payload_hasher(&payload)));
    }
}
