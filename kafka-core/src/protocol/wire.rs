//! Wire primitives shared by the generated codecs: fixed-width integers, varints, strings,
//! bytes and array lengths in their classic and compact (flexible-version) forms.
//!
//! Readers take `&mut Bytes` and advance it; every read checks the remaining length first,
//! so malformed input yields a [`DecodeError`] and never a panic. `bytes` and `records`
//! values are zero-copy slices of the input.

use bytes::{Buf, Bytes};

use super::error::{DecodeError, EncodeError};
use super::types::{RawTaggedField, Uuid};

/// Upper bound on elements pre-allocated for an array before any is decoded; larger
/// arrays grow as their elements actually arrive.
pub(crate) const PREALLOC_LIMIT: usize = 1024;

/// Where encoded bytes go: a buffer, or a counter that only measures.
pub trait Sink {
    /// Appends `bytes`.
    fn put_slice(&mut self, bytes: &[u8]);
}

impl Sink for Vec<u8> {
    #[inline]
    fn put_slice(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// A [`Sink`] that counts bytes without storing them; used to size messages and tagged fields.
#[derive(Debug, Default, Clone, Copy)]
pub struct ByteCounter(pub usize);

impl Sink for ByteCounter {
    #[inline]
    fn put_slice(&mut self, bytes: &[u8]) {
        self.0 += bytes.len();
    }
}

// ---- writers ------------------------------------------------------------------------

#[inline]
pub(crate) fn put_bool<S: Sink>(s: &mut S, v: bool) {
    s.put_slice(&[v as u8]);
}
#[inline]
pub(crate) fn put_i8<S: Sink>(s: &mut S, v: i8) {
    s.put_slice(&v.to_be_bytes());
}
#[inline]
pub(crate) fn put_i16<S: Sink>(s: &mut S, v: i16) {
    s.put_slice(&v.to_be_bytes());
}
#[inline]
pub(crate) fn put_i32<S: Sink>(s: &mut S, v: i32) {
    s.put_slice(&v.to_be_bytes());
}
#[inline]
pub(crate) fn put_i64<S: Sink>(s: &mut S, v: i64) {
    s.put_slice(&v.to_be_bytes());
}
#[inline]
pub(crate) fn put_u16<S: Sink>(s: &mut S, v: u16) {
    s.put_slice(&v.to_be_bytes());
}
#[inline]
#[allow(dead_code)] // `uint32` is in the schema language but no 4.3.1 schema uses it.
pub(crate) fn put_u32<S: Sink>(s: &mut S, v: u32) {
    s.put_slice(&v.to_be_bytes());
}
#[inline]
pub(crate) fn put_f64<S: Sink>(s: &mut S, v: f64) {
    s.put_slice(&v.to_be_bytes());
}
#[inline]
pub(crate) fn put_uuid<S: Sink>(s: &mut S, v: &Uuid) {
    s.put_slice(v.as_bytes());
}

/// Writes an unsigned LEB128 varint (at most five bytes).
#[inline]
pub(crate) fn put_uvarint<S: Sink>(s: &mut S, mut v: u32) {
    let mut buf = [0u8; 5];
    let mut i = 0;
    while v >= 0x80 {
        buf[i] = (v as u8) | 0x80;
        v >>= 7;
        i += 1;
    }
    buf[i] = v as u8;
    s.put_slice(&buf[..=i]);
}

/// Writes a length prefix: `int16`/`int32` in classic form, `uvarint(len + 1)` in compact.
fn put_len_prefix<S: Sink>(
    s: &mut S,
    len: usize,
    compact: bool,
    classic_max: usize,
) -> Result<(), EncodeError> {
    if len > classic_max {
        return Err(EncodeError::TooLong { length: len });
    }
    if compact {
        put_uvarint(s, len as u32 + 1);
    } else if classic_max == i16::MAX as usize {
        put_i16(s, len as i16);
    } else {
        put_i32(s, len as i32);
    }
    Ok(())
}

pub(crate) fn put_str<S: Sink>(s: &mut S, v: &str, compact: bool) -> Result<(), EncodeError> {
    put_len_prefix(s, v.len(), compact, i16::MAX as usize)?;
    s.put_slice(v.as_bytes());
    Ok(())
}

pub(crate) fn put_opt_str<S: Sink>(
    s: &mut S,
    v: Option<&str>,
    compact: bool,
) -> Result<(), EncodeError> {
    match v {
        Some(v) => put_str(s, v, compact),
        None if compact => {
            put_uvarint(s, 0);
            Ok(())
        }
        None => {
            put_i16(s, -1);
            Ok(())
        }
    }
}

pub(crate) fn put_bytes<S: Sink>(s: &mut S, v: &[u8], compact: bool) -> Result<(), EncodeError> {
    put_len_prefix(s, v.len(), compact, i32::MAX as usize - 1)?;
    s.put_slice(v);
    Ok(())
}

/// Writes an array count.
pub(crate) fn put_array_len<S: Sink>(
    s: &mut S,
    len: usize,
    compact: bool,
) -> Result<(), EncodeError> {
    put_len_prefix(s, len, compact, i32::MAX as usize - 1)
}

/// Writes the null marker of a nullable bytes or array value.
pub(crate) fn put_null_len<S: Sink>(s: &mut S, compact: bool) {
    if compact {
        put_uvarint(s, 0);
    } else {
        put_i32(s, -1);
    }
}

/// Writes the unknown tagged fields whose tag is below `below`, advancing the iterator,
/// so that known and preserved unknown fields come out in ascending tag order.
pub(crate) fn put_raw_tags_below<'a, S: Sink, I>(
    s: &mut S,
    raw: &mut std::iter::Peekable<I>,
    below: u32,
) where
    I: Iterator<Item = &'a RawTaggedField>,
{
    while let Some(f) = raw.next_if(|f| f.tag < below) {
        put_uvarint(s, f.tag);
        put_uvarint(s, f.data.len() as u32);
        s.put_slice(&f.data);
    }
}

// ---- readers ------------------------------------------------------------------------

#[inline]
fn need(b: &Bytes, n: usize) -> Result<(), DecodeError> {
    if b.remaining() < n {
        Err(DecodeError::Truncated {
            needed: n,
            remaining: b.remaining(),
        })
    } else {
        Ok(())
    }
}

#[inline]
pub(crate) fn get_bool(b: &mut Bytes) -> Result<bool, DecodeError> {
    need(b, 1)?;
    Ok(b.get_u8() != 0)
}
#[inline]
pub(crate) fn get_i8(b: &mut Bytes) -> Result<i8, DecodeError> {
    need(b, 1)?;
    Ok(b.get_i8())
}
#[inline]
pub(crate) fn get_i16(b: &mut Bytes) -> Result<i16, DecodeError> {
    need(b, 2)?;
    Ok(b.get_i16())
}
#[inline]
pub(crate) fn get_i32(b: &mut Bytes) -> Result<i32, DecodeError> {
    need(b, 4)?;
    Ok(b.get_i32())
}
#[inline]
pub(crate) fn get_i64(b: &mut Bytes) -> Result<i64, DecodeError> {
    need(b, 8)?;
    Ok(b.get_i64())
}
#[inline]
pub(crate) fn get_u16(b: &mut Bytes) -> Result<u16, DecodeError> {
    need(b, 2)?;
    Ok(b.get_u16())
}
#[inline]
#[allow(dead_code)] // See `put_u32`.
pub(crate) fn get_u32(b: &mut Bytes) -> Result<u32, DecodeError> {
    need(b, 4)?;
    Ok(b.get_u32())
}
#[inline]
pub(crate) fn get_f64(b: &mut Bytes) -> Result<f64, DecodeError> {
    need(b, 8)?;
    Ok(b.get_f64())
}
#[inline]
pub(crate) fn get_uuid(b: &mut Bytes) -> Result<Uuid, DecodeError> {
    need(b, 16)?;
    let mut v = [0u8; 16];
    b.copy_to_slice(&mut v);
    Ok(Uuid::from_bytes(v))
}

/// Reads an unsigned varint of at most five bytes that fits in 32 bits.
pub(crate) fn get_uvarint(b: &mut Bytes) -> Result<u32, DecodeError> {
    let mut value: u32 = 0;
    for i in 0..5 {
        need(b, 1)?;
        let byte = b.get_u8();
        if i == 4 && byte > 0x0f {
            return Err(DecodeError::BadVarint);
        }
        value |= u32::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(DecodeError::BadVarint)
}

/// Takes exactly `n` bytes as a zero-copy slice.
pub(crate) fn take(b: &mut Bytes, n: usize) -> Result<Bytes, DecodeError> {
    need(b, n)?;
    Ok(b.split_to(n))
}

/// Reads a length prefix; `None` is the null marker. `int16` when `short`, else `int32`.
fn get_len_prefix(
    b: &mut Bytes,
    compact: bool,
    short: bool,
    field: &'static str,
) -> Result<Option<usize>, DecodeError> {
    let len: i64 = if compact {
        i64::from(get_uvarint(b)?) - 1
    } else if short {
        i64::from(get_i16(b)?)
    } else {
        i64::from(get_i32(b)?)
    };
    match len {
        -1 => Ok(None),
        l if l < -1 || (short && l > i64::from(i16::MAX)) => {
            Err(DecodeError::BadLength { field, length: l })
        }
        l => Ok(Some(l as usize)),
    }
}

fn utf8(raw: Bytes, field: &'static str) -> Result<String, DecodeError> {
    String::from_utf8(raw.to_vec()).map_err(|_| DecodeError::InvalidUtf8 { field })
}

pub(crate) fn get_opt_str(
    b: &mut Bytes,
    compact: bool,
    field: &'static str,
) -> Result<Option<String>, DecodeError> {
    match get_len_prefix(b, compact, true, field)? {
        None => Ok(None),
        Some(n) => Ok(Some(utf8(take(b, n)?, field)?)),
    }
}

pub(crate) fn get_str(
    b: &mut Bytes,
    compact: bool,
    field: &'static str,
) -> Result<String, DecodeError> {
    get_opt_str(b, compact, field)?.ok_or(DecodeError::UnexpectedNull { field })
}

pub(crate) fn get_opt_bytes(
    b: &mut Bytes,
    compact: bool,
    field: &'static str,
) -> Result<Option<Bytes>, DecodeError> {
    match get_len_prefix(b, compact, false, field)? {
        None => Ok(None),
        Some(n) => Ok(Some(take(b, n)?)),
    }
}

pub(crate) fn get_bytes(
    b: &mut Bytes,
    compact: bool,
    field: &'static str,
) -> Result<Bytes, DecodeError> {
    get_opt_bytes(b, compact, field)?.ok_or(DecodeError::UnexpectedNull { field })
}

/// Reads an array count; `None` is null. A count larger than the remaining bytes is
/// refused before anything is allocated (every element takes at least one byte).
pub(crate) fn get_opt_array_len(
    b: &mut Bytes,
    compact: bool,
    field: &'static str,
) -> Result<Option<usize>, DecodeError> {
    match get_len_prefix(b, compact, false, field)? {
        Some(n) if n > b.remaining() => Err(DecodeError::CountTooLarge {
            field,
            count: n as u64,
            remaining: b.remaining(),
        }),
        other => Ok(other),
    }
}

pub(crate) fn get_array_len(
    b: &mut Bytes,
    compact: bool,
    field: &'static str,
) -> Result<usize, DecodeError> {
    get_opt_array_len(b, compact, field)?.ok_or(DecodeError::UnexpectedNull { field })
}

/// Reads the count of a tagged-field section, bounded by the remaining bytes.
pub(crate) fn get_tag_count(b: &mut Bytes) -> Result<u32, DecodeError> {
    let n = get_uvarint(b)?;
    if n as usize > b.remaining() {
        return Err(DecodeError::CountTooLarge {
            field: "tagged fields",
            count: u64::from(n),
            remaining: b.remaining(),
        });
    }
    Ok(n)
}

/// Reads one tagged-field header and returns `(tag, value bytes)`.
pub(crate) fn get_tagged(b: &mut Bytes) -> Result<(u32, Bytes), DecodeError> {
    let tag = get_uvarint(b)?;
    let size = get_uvarint(b)? as usize;
    Ok((tag, take(b, size)?))
}

/// Checks that a known tagged field's value used exactly its declared size.
pub(crate) fn tagged_done(
    data: &Bytes,
    declared: usize,
    field: &'static str,
) -> Result<(), DecodeError> {
    if data.has_remaining() {
        Err(DecodeError::TaggedSizeMismatch {
            field,
            declared,
            used: declared - data.remaining(),
        })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uvarint_round_trips_and_rejects_overlong() {
        for v in [0u32, 1, 127, 128, 300, 16_383, 16_384, u32::MAX] {
            let mut out = Vec::new();
            put_uvarint(&mut out, v);
            assert_eq!(get_uvarint(&mut Bytes::from(out)).unwrap(), v);
        }
        let mut bad = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        assert_eq!(get_uvarint(&mut bad), Err(DecodeError::BadVarint));
        let mut overflow = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x10]);
        assert_eq!(get_uvarint(&mut overflow), Err(DecodeError::BadVarint));
        let mut short = Bytes::from_static(&[0x80]);
        assert!(matches!(
            get_uvarint(&mut short),
            Err(DecodeError::Truncated { .. })
        ));
    }

    #[test]
    fn huge_array_count_is_refused_before_allocating() {
        let mut b = Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 0, 0]);
        assert!(matches!(
            get_array_len(&mut b, false, "x"),
            Err(DecodeError::CountTooLarge {
                count: 2_147_483_647,
                ..
            })
        ));
    }

    #[test]
    fn strings_classic_compact_null_and_bad() {
        let mut out = Vec::new();
        put_str(&mut out, "hé", false).unwrap();
        put_opt_str(&mut out, None, true).unwrap();
        put_str(&mut out, "", true).unwrap();
        let mut b = Bytes::from(out);
        assert_eq!(get_str(&mut b, false, "a").unwrap(), "hé");
        assert_eq!(get_opt_str(&mut b, true, "b").unwrap(), None);
        assert_eq!(get_str(&mut b, true, "c").unwrap(), "");
        let mut neg = Bytes::from_static(&[0xff, 0xfe]);
        assert!(matches!(
            get_str(&mut neg, false, "d"),
            Err(DecodeError::BadLength { length: -2, .. })
        ));
        let mut utf = Bytes::from_static(&[0, 1, 0xff]);
        assert_eq!(
            get_str(&mut utf, false, "e"),
            Err(DecodeError::InvalidUtf8 { field: "e" })
        );
        let mut null = Bytes::from_static(&[0xff, 0xff]);
        assert_eq!(
            get_str(&mut null, false, "f"),
            Err(DecodeError::UnexpectedNull { field: "f" })
        );
    }

    #[test]
    fn bytes_are_zero_copy_slices() {
        let input = Bytes::from_static(&[0, 0, 0, 3, b'a', b'b', b'c']);
        let mut b = input.clone();
        let v = get_bytes(&mut b, false, "v").unwrap();
        assert_eq!(&v[..], b"abc");
        assert_eq!(v.as_ptr(), input[4..].as_ptr());
    }
}
