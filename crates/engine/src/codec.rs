//! A tiny little-endian binary encoder/decoder for log records, checkpoint
//! records and catalog entries. Hand-written because the formats are few,
//! fixed and on the hot commit path.

use crate::error::{EngineError, Result};

#[derive(Default)]
pub struct Encoder {
    pub buf: Vec<u8>,
}

impl Encoder {
    pub fn with_capacity(n: usize) -> Self {
        Encoder { buf: Vec::with_capacity(n) }
    }
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    pub fn u16(&mut self, v: u16) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn bytes(&mut self, v: &[u8]) {
        self.u32(v.len() as u32);
        self.buf.extend_from_slice(v);
    }
    pub fn str(&mut self, v: &str) {
        self.bytes(v.as_bytes());
    }
}

pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Where the bytes came from, for error messages.
    origin: u64,
}

impl<'a> Decoder<'a> {
    pub fn new(buf: &'a [u8], origin: u64) -> Self {
        Decoder { buf, pos: 0, origin }
    }

    pub fn error(&self, reason: impl Into<String>) -> EngineError {
        EngineError::CorruptRecord { lsn: self.origin, reason: format!("{} (at byte {})", reason.into(), self.pos) }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.buf.len() - self.pos < n {
            return Err(self.error(format!("truncated: wanted {n} more bytes")));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    pub fn string(&mut self) -> Result<String> {
        let b = self.bytes()?;
        String::from_utf8(b.to_vec()).map_err(|_| self.error("invalid UTF-8 in a name"))
    }
    pub fn is_done(&self) -> bool {
        self.pos == self.buf.len()
    }
}
