//! One record inside a v2 batch: decoding as slices of the batch's bytes, and encoding.

use bytes::Bytes;

use super::wire::{varint_len, varlong_len, Reader};
use super::RecordError;

/// A decoded record. Key, value and headers are slices of the batch's (decompressed)
/// bytes: no copy is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Absolute offset: the batch's base offset plus the record's offset delta.
    pub offset: i64,
    /// Offset delta within the batch.
    pub offset_delta: i32,
    /// Create time (base timestamp + delta), or the batch's max timestamp under
    /// LogAppendTime.
    pub timestamp: i64,
    /// The record's sequence number, or -1 when the batch has no producer id.
    pub sequence: i32,
    /// Key; `None` is a null key (distinct from an empty one).
    pub key: Option<Bytes>,
    /// Value; `None` is a null value (a tombstone).
    pub value: Option<Bytes>,
    /// Headers, parsed lazily from this slice.
    pub headers: Headers,
}

/// A record's headers, validated at decode time and iterated without allocating.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Headers {
    raw: Bytes,
    count: u32,
}

/// One record header. The key is UTF-8 in Kafka's Java API; it is kept as bytes here
/// and [`Header::key_str`] checks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Header key (never null).
    pub key: Bytes,
    /// Header value; `None` is null.
    pub value: Option<Bytes>,
}

impl Header {
    /// The key as UTF-8, if it is valid UTF-8.
    pub fn key_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.key).ok()
    }
}

impl Headers {
    /// Number of headers.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Iterates the headers in wire order.
    pub fn iter(&self) -> HeaderIter<'_> {
        HeaderIter {
            raw: &self.raw,
            reader: Reader::new(&self.raw),
            left: self.count,
        }
    }
}

impl<'a> IntoIterator for &'a Headers {
    type Item = Header;
    type IntoIter = HeaderIter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Iterator over [`Headers`].
#[derive(Debug, Clone)]
pub struct HeaderIter<'a> {
    raw: &'a Bytes,
    reader: Reader<'a>,
    left: u32,
}

impl Iterator for HeaderIter<'_> {
    type Item = Header;

    fn next(&mut self) -> Option<Header> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // The headers were validated when the record was decoded, so these reads
        // succeed; a failure would end the iteration rather than panic.
        let key = nullable(&mut self.reader, self.raw, 0, "header key").ok()??;
        let value = nullable(&mut self.reader, self.raw, 0, "header value").ok()?;
        Some(Header { key, value })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

/// Reads a varint length then that many bytes; -1 (any negative) is null, as in Java.
#[inline]
fn nullable(
    r: &mut Reader<'_>,
    base: &Bytes,
    base_off: usize,
    what: &'static str,
) -> Result<Option<Bytes>, RecordError> {
    let len = r.varint(what)?;
    if len < 0 {
        return Ok(None);
    }
    let start = base_off + r.pos();
    r.take(len as usize, what)?;
    Ok(Some(if len == 0 {
        Bytes::new()
    } else {
        base.slice(start..start + len as usize)
    }))
}

/// Batch-level facts a record needs to compute its absolute fields.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordContext {
    pub(crate) base_offset: i64,
    pub(crate) base_timestamp: i64,
    pub(crate) log_append_time: Option<i64>,
    pub(crate) base_sequence: i32,
}

/// Decodes the record at `*pos` in `data` (a records section) and advances `*pos`.
#[inline]
pub(crate) fn decode_record(
    data: &Bytes,
    pos: &mut usize,
    ctx: &RecordContext,
) -> Result<Record, RecordError> {
    let mut r = Reader::new(&data[*pos..]);
    let len = r.varint("record length")?;
    if len < 0 {
        return Err(RecordError::InvalidLength {
            what: "record",
            length: i64::from(len),
        });
    }
    let body_start = *pos + r.pos();
    let len = len as usize;
    if len > r.remaining() {
        return Err(RecordError::truncated("record", len, r.remaining()));
    }
    let mut r = Reader::new(&data[body_start..body_start + len]);
    let _attributes = r.i8("record attributes")?;
    let timestamp_delta = r.varlong("timestamp delta")?;
    let offset_delta = r.varint("offset delta")?;
    let key = nullable(&mut r, data, body_start, "key")?;
    let value = nullable(&mut r, data, body_start, "value")?;
    let header_count = r.varint("header count")?;
    if header_count < 0 {
        return Err(RecordError::InvalidLength {
            what: "header count",
            length: i64::from(header_count),
        });
    }
    let headers_start = r.pos();
    // Each header takes at least two bytes; a count beyond that is caught as the reads
    // run out, and nothing is allocated from it.
    for _ in 0..header_count {
        let klen = r.varint("header key length")?;
        if klen < 0 {
            return Err(RecordError::NullHeaderKey);
        }
        r.take(klen as usize, "header key")?;
        let vlen = r.varint("header value length")?;
        if vlen >= 0 {
            r.take(vlen as usize, "header value")?;
        }
    }
    if r.remaining() != 0 {
        return Err(RecordError::RecordLengthMismatch {
            declared: len,
            actual: r.pos(),
        });
    }
    let headers = Headers {
        raw: if header_count == 0 {
            Bytes::new()
        } else {
            data.slice(body_start + headers_start..body_start + len)
        },
        count: header_count as u32,
    };
    *pos = body_start + len;
    Ok(Record {
        offset: ctx.base_offset.wrapping_add(i64::from(offset_delta)),
        offset_delta,
        timestamp: ctx
            .log_append_time
            .unwrap_or_else(|| ctx.base_timestamp.wrapping_add(timestamp_delta)),
        sequence: if ctx.base_sequence < 0 {
            -1
        } else {
            // Java's DefaultRecordBatch.incrementSequence: wraps past i32::MAX to 0.
            let s = i64::from(ctx.base_sequence) + i64::from(offset_delta);
            (s.rem_euclid(i64::from(i32::MAX) + 1)) as i32
        },
        key,
        value,
        headers,
    })
}

/// A record to encode, borrowing its data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NewRecord<'a> {
    /// Create time in milliseconds (ignored in favour of the batch's time under
    /// LogAppendTime by readers).
    pub timestamp: i64,
    /// Key; `None` writes a null key.
    pub key: Option<&'a [u8]>,
    /// Value; `None` writes a null value.
    pub value: Option<&'a [u8]>,
    /// Headers in order.
    pub headers: &'a [NewHeader<'a>],
}

/// A header to encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewHeader<'a> {
    /// Header key (UTF-8 for Java readers).
    pub key: &'a str,
    /// Header value; `None` writes null.
    pub value: Option<&'a [u8]>,
}

fn len_field(len: Option<usize>) -> Result<i32, RecordError> {
    match len {
        None => Ok(-1),
        Some(n) => i32::try_from(n).map_err(|_| RecordError::Unencodable("field over i32::MAX")),
    }
}

/// Writes the zig-zag varint `z` (already zig-zagged) at `buf[n..]`; returns the new
/// end. `buf` has room: callers stage at most 26 bytes in a 32-byte buffer.
#[inline(always)]
fn stage(buf: &mut [u8; 32], mut n: usize, mut z: u64) -> usize {
    while z >= 0x80 {
        buf[n & 31] = (z as u8 & 0x7F) | 0x80;
        n += 1;
        z >>= 7;
    }
    buf[n & 31] = z as u8;
    n + 1
}

/// Appends the first `n` staged bytes: copies the whole fixed-size buffer (inlined
/// moves, no `memcpy` call) and then cuts the length back.
#[inline(always)]
fn flush_staged(out: &mut Vec<u8>, buf: &[u8; 32], n: usize) {
    let at = out.len();
    out.extend_from_slice(buf);
    out.truncate(at + n);
}

#[inline(always)]
fn zz32(v: i32) -> u64 {
    u64::from(((v << 1) ^ (v >> 31)) as u32)
}

#[inline(always)]
fn zz64(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Slack [`write_record`] reserves past a record so staged fields can be copied as one
/// fixed-size block.
pub(crate) const WRITE_SLACK: usize = 32;

/// The length prefix of a record: the bytes after its length varint. Checks every
/// field against the wire format's limits (lengths and counts fit an `int32`), so
/// [`write_record`] can no longer fail.
#[inline]
pub(crate) fn record_body_len(
    rec: &NewRecord<'_>,
    timestamp_delta: i64,
    offset_delta: i32,
) -> Result<i32, RecordError> {
    let key_len = len_field(rec.key.map(<[u8]>::len))?;
    let value_len = len_field(rec.value.map(<[u8]>::len))?;
    let header_count =
        i32::try_from(rec.headers.len()).map_err(|_| RecordError::Unencodable("headers"))?;
    // u64 arithmetic: the sum of many i32-sized fields cannot overflow it.
    let mut body = 1
        + varlong_len(timestamp_delta) as u64
        + varint_len(offset_delta) as u64
        + varint_len(key_len) as u64
        + key_len.max(0) as u64
        + varint_len(value_len) as u64
        + value_len.max(0) as u64
        + varint_len(header_count) as u64;
    for h in rec.headers {
        let k = len_field(Some(h.key.len()))?;
        let v = len_field(h.value.map(<[u8]>::len))?;
        body += (varint_len(k) + k as usize + varint_len(v) + v.max(0) as usize) as u64;
    }
    i32::try_from(body).map_err(|_| RecordError::Unencodable("record over i32::MAX"))
}

/// Bytes a record with length prefix `body` takes, prefix included.
#[inline]
pub(crate) fn record_size(body: i32) -> usize {
    varint_len(body) + body as usize
}

/// Appends one record (length prefix included) whose prefix `body` came from
/// [`record_body_len`] for the same arguments. The small fields are staged on the stack
/// and appended together with the next key or value, so a record costs a few copies
/// rather than one push per byte.
#[inline]
pub(crate) fn write_record(
    out: &mut Vec<u8>,
    rec: &NewRecord<'_>,
    body: i32,
    timestamp_delta: i64,
    offset_delta: i32,
) {
    // Lengths were checked against i32::MAX by `record_body_len`.
    let nullable_len = |f: Option<&[u8]>| f.map_or(-1, |b| b.len() as i32);
    out.reserve(record_size(body) + WRITE_SLACK);
    let mut buf = [0u8; 32];
    // Length (5) + attributes (1) + timestamp delta (10) + offset delta (5) + key
    // length (5) = 26 bytes at most.
    let mut n = stage(&mut buf, 0, zz32(body));
    buf[n & 31] = 0;
    n = stage(&mut buf, n + 1, zz64(timestamp_delta));
    n = stage(&mut buf, n, zz32(offset_delta));
    n = stage(&mut buf, n, zz32(nullable_len(rec.key)));
    if let Some(k) = rec.key {
        flush_staged(out, &buf, n);
        out.extend_from_slice(k);
        n = 0;
    }
    n = stage(&mut buf, n, zz32(nullable_len(rec.value)));
    flush_staged(out, &buf, n);
    if let Some(v) = rec.value {
        out.extend_from_slice(v);
    }
    if rec.headers.is_empty() {
        out.push(0);
        return;
    }
    n = stage(&mut buf, 0, zz32(rec.headers.len() as i32));
    out.extend_from_slice(&buf[..n]);
    for h in rec.headers {
        n = stage(&mut buf, 0, zz32(h.key.len() as i32));
        out.extend_from_slice(&buf[..n]);
        out.extend_from_slice(h.key.as_bytes());
        n = stage(&mut buf, 0, zz32(nullable_len(h.value)));
        out.extend_from_slice(&buf[..n]);
        if let Some(v) = h.value {
            out.extend_from_slice(v);
        }
    }
}

/// Appends one record (length prefix included); on error nothing is written.
#[inline]
pub(crate) fn encode_record(
    out: &mut Vec<u8>,
    rec: &NewRecord<'_>,
    timestamp_delta: i64,
    offset_delta: i32,
) -> Result<(), RecordError> {
    let body = record_body_len(rec, timestamp_delta, offset_delta)?;
    write_record(out, rec, body, timestamp_delta, offset_delta);
    Ok(())
}
