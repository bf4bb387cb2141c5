//! Entry points for the record fuzz targets (`fuzz/`) and their corpus replay in
//! `cargo test`. Each runs a decoder to completion on arbitrary bytes; the only
//! outcomes allowed are `Ok` or a typed error. They panic (deliberately: that is a
//! fuzzer finding) when an invariant breaks, e.g. output above the cap or our own
//! compressed output failing to decompress; nothing else in the crate calls them.

use bytes::Bytes;

use super::header::{ATTRIBUTES_OFFSET, CRC_OFFSET, LOG_OVERHEAD, MAGIC_OFFSET};
use super::{compression, Batch, Batches, Compression, ControlRecord, DecodeOptions};

/// Decompression cap used by the fuzz entry points.
pub const FUZZ_CAP: usize = 4 << 20;

/// The `record_batch` fuzz target: the first byte picks the mode (low bit set: fix
/// the CRCs first, see [`record_set`]), the rest is a record set.
pub fn record_batch(data: &[u8]) {
    if let Some((&mode, rest)) = data.split_first() {
        record_set(rest, mode & 1 == 1);
    }
}

/// Decodes `data` as a record set and touches every record; returns how many records
/// decoded. With `fix_crc`, every v2 batch's CRC-32C and every legacy message's CRC-32
/// is first rewritten to match, so mutations reach the decompressors and record
/// parsers.
pub fn record_set(data: &[u8], fix_crc: bool) -> usize {
    let mut buf = data.to_vec();
    if fix_crc {
        fix_crcs(&mut buf);
    }
    let opts = DecodeOptions {
        max_decompressed_bytes: FUZZ_CAP,
        verify_crc: true,
    };
    let mut n = 0;
    for batch in Batches::new(Bytes::from(buf), opts) {
        let Ok(batch) = batch else { break };
        match batch {
            Batch::V2(b) => {
                let Ok(records) = b.records() else { continue };
                for r in records {
                    let Ok(r) = r else { break };
                    n += 1;
                    touch(&r);
                    if b.is_control() {
                        let _ = ControlRecord::decode(&r);
                    }
                }
            }
            Batch::Legacy(b) => {
                let Ok(records) = b.records() else { continue };
                for r in records {
                    let Ok(r) = r else { break };
                    n += 1;
                    touch(&r);
                }
            }
        }
    }
    n
}

fn touch(r: &super::Record) {
    let mut x = r.offset ^ r.timestamp;
    x ^= r.key.as_ref().map_or(0, |k| k.len() as i64);
    x ^= r.value.as_ref().map_or(0, |v| v.len() as i64);
    for h in &r.headers {
        x ^= h.key.len() as i64 ^ h.value.map_or(0, |v| v.len() as i64);
    }
    std::hint::black_box(x);
}

/// Rewrites the checksums of the entries in `buf` in place, walking them as
/// [`Batches`] does (stops at the first entry that does not fit).
pub fn fix_crcs(buf: &mut [u8]) {
    let mut pos = 0;
    while buf.len() - pos >= LOG_OVERHEAD + 9 {
        let s = &buf[pos..];
        let size = i32::from_be_bytes([s[8], s[9], s[10], s[11]]);
        if size < 0 {
            return;
        }
        let total = LOG_OVERHEAD + size as usize;
        if total > s.len() || total <= MAGIC_OFFSET {
            return;
        }
        let entry = &mut buf[pos..pos + total];
        match entry[MAGIC_OFFSET] {
            2 if total >= ATTRIBUTES_OFFSET => {
                let crc = crc32c::crc32c(&entry[ATTRIBUTES_OFFSET..]);
                entry[CRC_OFFSET..ATTRIBUTES_OFFSET].copy_from_slice(&crc.to_be_bytes());
            }
            0 | 1 => {
                let crc = crc32fast::hash(&entry[MAGIC_OFFSET..]);
                entry[LOG_OVERHEAD..MAGIC_OFFSET].copy_from_slice(&crc.to_be_bytes());
            }
            _ => return,
        }
        pos += total;
    }
}

/// Runs one decompressor on `data` under [`FUZZ_CAP`]; returns the output length.
/// `magic` matters only for lz4 (0 selects Kafka's old header checksum).
pub fn decompress(codec: Compression, magic: i8, data: &[u8]) -> Option<usize> {
    let mut out = Vec::new();
    compression::decompress(codec, magic, data, FUZZ_CAP, &mut out).ok()?;
    assert!(out.len() <= FUZZ_CAP, "decompressor exceeded its cap");
    Some(out.len())
}

/// The fuzz target for one codec: the first input byte picks the lz4 magic variant,
/// the rest is the compressed payload. Also checks that compressing the output again
/// and decompressing it gives the same bytes.
pub fn decompressor(codec: Compression, data: &[u8]) {
    let Some((&flags, payload)) = data.split_first() else {
        return;
    };
    let magic = if flags & 1 == 1 { 0 } else { 2 };
    let mut out = Vec::new();
    if compression::decompress(codec, magic, payload, FUZZ_CAP, &mut out).is_err() {
        return;
    }
    assert!(out.len() <= FUZZ_CAP, "decompressor exceeded its cap");
    if out.len() > 256 * 1024 {
        return;
    }
    let mut again = Vec::new();
    if compression::compress(codec, Some(1), &out, &mut again).is_ok() {
        let mut back = Vec::new();
        // A failure here is a finding: our own output must always decompress.
        compression::decompress(codec, 2, &again, FUZZ_CAP, &mut back)
            .expect("our own compressed output must decompress");
        assert_eq!(back, out, "round trip changed the data");
    }
}
