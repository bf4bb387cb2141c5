//! gzip (RFC 1952), as `java.util.zip.GZIPInputStream` reads it: one or more members.

use std::io::Write;

use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;

use super::{read_bounded, Compression};
use crate::record::RecordError;

pub(super) fn decompress(input: &[u8], cap: usize, out: &mut Vec<u8>) -> Result<(), RecordError> {
    read_bounded(
        MultiGzDecoder::new(input),
        Compression::Gzip,
        input.len().saturating_mul(4),
        cap,
        out,
    )
}

pub(super) fn compress(
    input: &[u8],
    level: Option<i32>,
    out: &mut Vec<u8>,
) -> Result<(), RecordError> {
    let level = level.unwrap_or(6).clamp(0, 9) as u32;
    let err = |e: std::io::Error| RecordError::Compress {
        codec: Compression::Gzip,
        reason: e.to_string(),
    };
    let mut enc = GzEncoder::new(out, flate2::Compression::new(level));
    enc.write_all(input).map_err(err)?;
    enc.finish().map_err(err)?;
    Ok(())
}

/// A deflate context kept across batches (creating one per batch allocates and clears
/// its window and hash tables each time).
pub(super) struct Context {
    level: u32,
    deflate: flate2::Compress,
}

/// Like [`compress`], reusing `ctx`: the same gzip member `GzEncoder` writes (header
/// with mtime 0, raw deflate, CRC-32 and size trailer).
pub(super) fn compress_reusing(
    ctx: &mut Option<Context>,
    input: &[u8],
    level: Option<i32>,
    out: &mut Vec<u8>,
) -> Result<(), RecordError> {
    let level = level.unwrap_or(6).clamp(0, 9) as u32;
    let deflate = match ctx {
        Some(c) if c.level == level => {
            c.deflate.reset();
            &mut c.deflate
        }
        _ => {
            let deflate = flate2::Compress::new(flate2::Compression::new(level), false);
            &mut ctx.insert(Context { level, deflate }).deflate
        }
    };
    let start = out.len();
    // XFL as flate2 and zlib write it: 2 for the slowest level, 4 for the fastest.
    let xfl = match level {
        9 => 2,
        0 | 1 => 4,
        _ => 0,
    };
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, xfl, 0xff]);
    out.reserve(input.len() + input.len() / 8 + 64);
    let mut consumed = 0;
    loop {
        if out.capacity() == out.len() {
            out.reserve(64 * 1024);
        }
        let before = deflate.total_in();
        let status = deflate
            .compress_vec(&input[consumed..], out, flate2::FlushCompress::Finish)
            .map_err(|e| {
                out.truncate(start);
                RecordError::Compress {
                    codec: Compression::Gzip,
                    reason: e.to_string(),
                }
            });
        consumed += (deflate.total_in() - before) as usize;
        if status? == flate2::Status::StreamEnd {
            break;
        }
    }
    out.extend_from_slice(&crc32fast::hash(input).to_le_bytes());
    out.extend_from_slice(&(input.len() as u32).to_le_bytes());
    Ok(())
}
