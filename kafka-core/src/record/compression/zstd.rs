//! zstd frames, as zstd-jni's `ZstdInputStream` reads them (one or more frames).

use super::{read_bounded, Compression};
use crate::record::RecordError;

pub(super) fn decompress(input: &[u8], cap: usize, out: &mut Vec<u8>) -> Result<(), RecordError> {
    // The frame's declared content size is never used to size the output.
    let err = |e: std::io::Error| RecordError::Decompress {
        codec: Compression::Zstd,
        reason: e.to_string(),
    };
    let mut decoder = zstd::stream::read::Decoder::with_buffer(input).map_err(err)?;
    // The window a frame may ask for: enough for any frame Kafka's producers write
    // (2^22 at least), no more than the output cap needs, and at most zstd's default
    // limit of 2^27.
    let cap_log = usize::BITS - cap.max(1).leading_zeros();
    decoder.window_log_max(cap_log.clamp(22, 27)).map_err(err)?;
    read_bounded(
        decoder,
        Compression::Zstd,
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
    let err = |e: std::io::Error| RecordError::Compress {
        codec: Compression::Zstd,
        reason: e.to_string(),
    };
    let mut enc = zstd::stream::write::Encoder::new(out, level.unwrap_or(3)).map_err(err)?;
    std::io::Write::write_all(&mut enc, input).map_err(err)?;
    enc.finish().map_err(err)?;
    Ok(())
}

/// A zstd compression context kept across batches (creating one per batch costs an
/// allocation and table setup each time).
pub(super) struct Context {
    level: i32,
    compressor: zstd::bulk::Compressor<'static>,
}

/// Like [`compress`], reusing `ctx`; writes a single frame with its content size.
pub(super) fn compress_reusing(
    ctx: &mut Option<Context>,
    input: &[u8],
    level: Option<i32>,
    out: &mut Vec<u8>,
) -> Result<(), RecordError> {
    let err = |e: std::io::Error| RecordError::Compress {
        codec: Compression::Zstd,
        reason: e.to_string(),
    };
    let level = level.unwrap_or(3);
    let compressor = match ctx {
        Some(c) if c.level == level => &mut c.compressor,
        _ => {
            let compressor = zstd::bulk::Compressor::new(level).map_err(err)?;
            &mut ctx.insert(Context { level, compressor }).compressor
        }
    };
    let at = out.len();
    out.resize(at + zstd::zstd_safe::compress_bound(input.len()), 0);
    match compressor.compress_to_buffer(input, &mut out[at..]) {
        Ok(n) => {
            out.truncate(at + n);
            Ok(())
        }
        Err(e) => {
            out.truncate(at);
            Err(err(e))
        }
    }
}
