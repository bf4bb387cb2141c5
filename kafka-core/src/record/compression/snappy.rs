//! snappy in the xerial snappy-java stream framing (what Kafka writes), or one bare raw
//! block (what snappy-java falls back to when the xerial magic is absent).

use super::Compression;
use crate::record::RecordError;

/// `0x82 "SNAPPY" 0x00`.
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// Magic, then `int32 version = 1`, then `int32 min compatible version = 1`.
const XERIAL_HEADER_LEN: usize = 16;
/// Uncompressed bytes per xerial chunk (snappy-java's default block size).
const XERIAL_BLOCK: usize = 32 * 1024;

fn corrupt(reason: impl std::fmt::Display) -> RecordError {
    RecordError::Decompress {
        codec: Compression::Snappy,
        reason: reason.to_string(),
    }
}

pub(super) fn decompress(input: &[u8], cap: usize, out: &mut Vec<u8>) -> Result<(), RecordError> {
    let start = out.len();
    let result = decompress_inner(input, cap, start, out);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

fn decompress_inner(
    input: &[u8],
    cap: usize,
    start: usize,
    out: &mut Vec<u8>,
) -> Result<(), RecordError> {
    if input.is_empty() {
        return Err(corrupt("empty input"));
    }
    if input.len() < XERIAL_HEADER_LEN || input[..8] != XERIAL_MAGIC {
        return raw_block(input, cap, start, out);
    }
    let mut rest = &input[XERIAL_HEADER_LEN..];
    while !rest.is_empty() {
        // snappy-java tolerates concatenated streams: a header may follow a chunk.
        if rest.len() >= XERIAL_HEADER_LEN && rest[..8] == XERIAL_MAGIC {
            rest = &rest[XERIAL_HEADER_LEN..];
            continue;
        }
        let Some((len_bytes, tail)) = rest.split_first_chunk::<4>() else {
            return Err(RecordError::truncated("snappy chunk length", 4, rest.len()));
        };
        let len = i32::from_be_bytes(*len_bytes);
        if len < 0 {
            return Err(corrupt(format_args!("negative chunk length {len}")));
        }
        let len = len as usize;
        if len > tail.len() {
            return Err(RecordError::truncated("snappy chunk", len, tail.len()));
        }
        raw_block(&tail[..len], cap, start, out)?;
        rest = &tail[len..];
    }
    Ok(())
}

/// Decompresses one raw snappy block, checking its declared length against the cap
/// before allocating.
fn raw_block(block: &[u8], cap: usize, start: usize, out: &mut Vec<u8>) -> Result<(), RecordError> {
    let claimed = snap::raw::decompress_len(block).map_err(corrupt)?;
    let produced = out.len() - start;
    if claimed > cap - produced {
        return Err(RecordError::DecompressedTooLarge { cap });
    }
    let at = out.len();
    super::reserve_within(out, claimed, start.saturating_add(cap));
    out.resize(at + claimed, 0);
    let n = snap::raw::Decoder::new()
        .decompress(block, &mut out[at..])
        .map_err(corrupt)?;
    out.truncate(at + n);
    Ok(())
}

pub(super) fn compress(input: &[u8], out: &mut Vec<u8>) -> Result<(), RecordError> {
    out.extend_from_slice(&XERIAL_MAGIC);
    out.extend_from_slice(&1i32.to_be_bytes());
    out.extend_from_slice(&1i32.to_be_bytes());
    let mut encoder = snap::raw::Encoder::new();
    for chunk in input.chunks(XERIAL_BLOCK) {
        let len_at = out.len();
        out.extend_from_slice(&[0; 4]);
        let at = out.len();
        out.resize(at + snap::raw::max_compress_len(chunk.len()), 0);
        let n = encoder
            .compress(chunk, &mut out[at..])
            .map_err(|e| RecordError::Compress {
                codec: Compression::Snappy,
                reason: e.to_string(),
            })?;
        out.truncate(at + n);
        out[len_at..at].copy_from_slice(&(n as u32).to_be_bytes());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_block_claiming_2_gib_is_rejected_before_allocating() {
        // A varint length of 2^31 followed by junk: 64 bytes in all.
        let mut input = vec![0x80, 0x80, 0x80, 0x80, 0x08];
        input.resize(64, 0);
        let mut out = Vec::new();
        assert_eq!(
            decompress(&input, 1 << 20, &mut out),
            Err(RecordError::DecompressedTooLarge { cap: 1 << 20 })
        );
        assert_eq!(out.capacity(), 0);
    }

    #[test]
    fn xerial_and_raw_round_trip() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let mut framed = Vec::new();
        compress(&data, &mut framed).unwrap();
        assert_eq!(&framed[..8], &XERIAL_MAGIC);
        let mut out = Vec::new();
        decompress(&framed, usize::MAX, &mut out).unwrap();
        assert_eq!(out, data);
        let raw = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        out.clear();
        decompress(&raw, usize::MAX, &mut out).unwrap();
        assert_eq!(out, data);
        out.clear();
        assert_eq!(
            decompress(&framed, 50_000, &mut out),
            Err(RecordError::DecompressedTooLarge { cap: 50_000 })
        );
    }
}
