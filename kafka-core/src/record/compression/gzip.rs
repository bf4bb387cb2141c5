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
