//! Bounds-checked reading and writing of the primitives used inside batches:
//! big-endian fixed-width integers and zig-zag varints.

use super::RecordError;

/// A cursor over a byte slice; every read is checked against the remaining bytes.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], RecordError> {
        if n > self.remaining() {
            return Err(RecordError::truncated(what, n, self.remaining()));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], RecordError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }

    pub(crate) fn i8(&mut self, what: &'static str) -> Result<i8, RecordError> {
        Ok(i8::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn i16(&mut self, what: &'static str) -> Result<i16, RecordError> {
        Ok(i16::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn i32(&mut self, what: &'static str) -> Result<i32, RecordError> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, RecordError> {
        Ok(u32::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn i64(&mut self, what: &'static str) -> Result<i64, RecordError> {
        Ok(i64::from_be_bytes(self.array(what)?))
    }

    /// A zig-zag varint of at most 5 bytes (Java `ByteUtils.readVarint`: bits past the
    /// 32nd in the fifth byte are dropped, as Java does).
    #[inline]
    pub(crate) fn varint(&mut self, what: &'static str) -> Result<i32, RecordError> {
        // Fast path: one byte.
        if let Some(&b) = self.buf.get(self.pos) {
            if b & 0x80 == 0 {
                self.pos += 1;
                let v = u32::from(b);
                return Ok(((v >> 1) as i32) ^ -((v & 1) as i32));
            }
        }
        let mut value: u32 = 0;
        for i in 0..5 {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(RecordError::truncated(what, 1, 0));
            };
            self.pos += 1;
            value |= u32::from(b & 0x7F) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(((value >> 1) as i32) ^ -((value & 1) as i32));
            }
        }
        Err(RecordError::BadVarint(what))
    }

    /// A zig-zag varlong of at most 10 bytes (Java `ByteUtils.readVarlong`).
    #[inline]
    pub(crate) fn varlong(&mut self, what: &'static str) -> Result<i64, RecordError> {
        if let Some(&b) = self.buf.get(self.pos) {
            if b & 0x80 == 0 {
                self.pos += 1;
                let v = u64::from(b);
                return Ok(((v >> 1) as i64) ^ -((v & 1) as i64));
            }
        }
        let mut value: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(RecordError::truncated(what, 1, 0));
            };
            self.pos += 1;
            value |= u64::from(b & 0x7F) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(((value >> 1) as i64) ^ -((value & 1) as i64));
            }
        }
        Err(RecordError::BadVarint(what))
    }
}

/// Bytes a zig-zag varint of `v` takes.
#[inline]
pub(crate) fn varint_len(v: i32) -> usize {
    let z = ((v << 1) ^ (v >> 31)) as u32;
    // Each byte carries 7 bits; at least one byte.
    let bits = 32 - (z | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Bytes a zig-zag varlong of `v` takes.
#[inline]
pub(crate) fn varlong_len(v: i64) -> usize {
    let z = ((v << 1) ^ (v >> 63)) as u64;
    let bits = 64 - (z | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Appends the zig-zag varint encoding of `v`.
#[cfg(test)]
pub(crate) fn put_varint(out: &mut Vec<u8>, v: i32) {
    let mut z = ((v << 1) ^ (v >> 31)) as u32;
    if z < 0x80 {
        out.push(z as u8);
        return;
    }
    while z >= 0x80 {
        out.push((z as u8 & 0x7F) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// Appends the zig-zag varlong encoding of `v`.
#[cfg(test)]
pub(crate) fn put_varlong(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8 & 0x7F) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trip_and_lengths() {
        for v in [0, 1, -1, 63, -64, 64, -65, 8191, 8192, i32::MAX, i32::MIN] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v), "{v}");
            let mut r = Reader::new(&out);
            assert_eq!(r.varint("t").unwrap(), v);
            assert_eq!(r.remaining(), 0);
        }
        for v in [0i64, 1, -1, 1 << 40, -(1 << 40), i64::MAX, i64::MIN] {
            let mut out = Vec::new();
            put_varlong(&mut out, v);
            assert_eq!(out.len(), varlong_len(v), "{v}");
            let mut r = Reader::new(&out);
            assert_eq!(r.varlong("t").unwrap(), v);
        }
    }

    #[test]
    fn known_encodings() {
        let mut out = Vec::new();
        put_varint(&mut out, -1);
        put_varint(&mut out, 300);
        assert_eq!(out, [0x01, 0xD8, 0x04]);
    }

    #[test]
    fn overlong_varints_are_errors() {
        assert!(matches!(
            Reader::new(&[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]).varint("x"),
            Err(RecordError::BadVarint(_))
        ));
        assert!(matches!(
            Reader::new(&[0xFF; 11]).varlong("x"),
            Err(RecordError::BadVarint(_))
        ));
        assert!(matches!(
            Reader::new(&[0x80]).varint("x"),
            Err(RecordError::Truncated { .. })
        ));
    }
}
