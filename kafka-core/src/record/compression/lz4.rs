//! lz4 in Kafka's subset of the LZ4 frame format (`Lz4BlockOutputStream` /
//! `Lz4BlockInputStream`): independent blocks, no content checksum on write, the
//! content size and checksums skipped on read, and the pre-KAFKA-3160 header checksum
//! (computed over the magic too) tolerated for magic 0.

use super::Compression;
use crate::record::RecordError;

const MAGIC: u32 = 0x184D_2204;
/// FLG written by Kafka: version 01, independent blocks, nothing else.
const FLG_WRITE: u8 = 0x60;
/// BD written by Kafka: 64 KiB maximum block.
const BD_WRITE: u8 = 0x40;
const BLOCK_64K: usize = 64 * 1024;
const UNCOMPRESSED_BIT: u32 = 0x8000_0000;

fn corrupt(reason: impl std::fmt::Display) -> RecordError {
    RecordError::Decompress {
        codec: Compression::Lz4,
        reason: reason.to_string(),
    }
}

pub(super) fn decompress(
    input: &[u8],
    broken_header_checksum: bool,
    cap: usize,
    out: &mut Vec<u8>,
) -> Result<(), RecordError> {
    let start = out.len();
    let result = decompress_inner(input, broken_header_checksum, cap, start, out);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

fn take<'a>(rest: &mut &'a [u8], n: usize, what: &'static str) -> Result<&'a [u8], RecordError> {
    if rest.len() < n {
        return Err(RecordError::truncated(what, n, rest.len()));
    }
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    Ok(head)
}

fn u32_le(rest: &mut &[u8], what: &'static str) -> Result<u32, RecordError> {
    let b = take(rest, 4, what)?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn decompress_inner(
    input: &[u8],
    broken_header_checksum: bool,
    cap: usize,
    start: usize,
    out: &mut Vec<u8>,
) -> Result<(), RecordError> {
    let mut rest = input;
    if u32_le(&mut rest, "lz4 magic")? != MAGIC {
        return Err(corrupt("bad lz4 frame magic"));
    }
    let descriptor_start = input.len() - rest.len();
    let flg = take(&mut rest, 1, "lz4 FLG")?[0];
    let bd = take(&mut rest, 1, "lz4 BD")?[0];
    if flg >> 6 != 1 {
        return Err(corrupt("unsupported lz4 frame version"));
    }
    if flg & 0x03 != 0 || bd & 0x8F != 0 {
        return Err(corrupt("reserved lz4 descriptor bits set"));
    }
    if flg & 0x20 == 0 {
        return Err(corrupt("dependent block stream is unsupported"));
    }
    let block_checksum = flg & 0x10 != 0;
    let content_size = flg & 0x08 != 0;
    let max_block = match (bd >> 4) & 0x07 {
        4 => 64 * 1024,
        5 => 256 * 1024,
        6 => 1024 * 1024,
        7 => 4 * 1024 * 1024,
        _ => return Err(corrupt("unsupported lz4 block size")),
    };
    if content_size {
        take(&mut rest, 8, "lz4 content size")?;
    }
    let descriptor_end = input.len() - rest.len();
    let hc = take(&mut rest, 1, "lz4 header checksum")?[0];
    if !broken_header_checksum {
        let expected = (xxh32(&input[descriptor_start..descriptor_end], 0) >> 8) as u8;
        if hc != expected {
            return Err(corrupt("lz4 frame descriptor checksum mismatch"));
        }
    }
    loop {
        let word = u32_le(&mut rest, "lz4 block size")?;
        let size = (word & !UNCOMPRESSED_BIT) as usize;
        if size == 0 {
            // End mark; anything after it (a content checksum) is ignored, as Kafka does.
            return Ok(());
        }
        if size > max_block {
            return Err(corrupt("lz4 block larger than the frame's maximum"));
        }
        let block = take(&mut rest, size, "lz4 block")?;
        let room = cap - (out.len() - start);
        if word & UNCOMPRESSED_BIT != 0 {
            if size > room {
                return Err(RecordError::DecompressedTooLarge { cap });
            }
            super::reserve_within(out, size, start.saturating_add(cap));
            out.extend_from_slice(block);
        } else {
            // LZ4 expands at most 255:1, so a small block never needs the frame's
            // full block size.
            let bound = max_block.min(size.saturating_mul(255).saturating_add(64));
            let want = bound.min(room);
            let at = out.len();
            super::reserve_within(out, want, start.saturating_add(cap));
            out.resize(at + want, 0);
            match lz4_flex::block::decompress_into(block, &mut out[at..]) {
                Ok(n) => out.truncate(at + n),
                Err(e) => {
                    out.truncate(at);
                    return Err(if room < bound {
                        RecordError::DecompressedTooLarge { cap }
                    } else {
                        corrupt(e)
                    });
                }
            }
        }
        if block_checksum {
            take(&mut rest, 4, "lz4 block checksum")?;
        }
    }
}

pub(super) fn compress(input: &[u8], out: &mut Vec<u8>) -> Result<(), RecordError> {
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.push(FLG_WRITE);
    out.push(BD_WRITE);
    out.push((xxh32(&[FLG_WRITE, BD_WRITE], 0) >> 8) as u8);
    for chunk in input.chunks(BLOCK_64K) {
        let size_at = out.len();
        out.extend_from_slice(&[0; 4]);
        let at = out.len();
        out.resize(
            at + lz4_flex::block::get_maximum_output_size(chunk.len()),
            0,
        );
        let n = lz4_flex::block::compress_into(chunk, &mut out[at..]).map_err(|e| {
            RecordError::Compress {
                codec: Compression::Lz4,
                reason: e.to_string(),
            }
        })?;
        let word = if n >= chunk.len() {
            // Incompressible: store the block as is.
            out.truncate(at);
            out.extend_from_slice(chunk);
            chunk.len() as u32 | UNCOMPRESSED_BIT
        } else {
            out.truncate(at + n);
            n as u32
        };
        out[size_at..at].copy_from_slice(&word.to_le_bytes());
    }
    out.extend_from_slice(&0u32.to_le_bytes());
    Ok(())
}

const P1: u32 = 0x9E37_79B1;
const P2: u32 = 0x85EB_CA77;
const P3: u32 = 0xC2B2_AE3D;
const P4: u32 = 0x27D4_EB2F;
const P5: u32 = 0x1656_67B1;

/// XXH32, used only for the frame descriptor checksum (a handful of bytes).
fn xxh32(data: &[u8], seed: u32) -> u32 {
    let mut rest = data;
    let mut h = if data.len() >= 16 {
        let mut v = [
            seed.wrapping_add(P1).wrapping_add(P2),
            seed.wrapping_add(P2),
            seed,
            seed.wrapping_sub(P1),
        ];
        while rest.len() >= 16 {
            for (i, lane) in v.iter_mut().enumerate() {
                let w = u32::from_le_bytes([
                    rest[4 * i],
                    rest[4 * i + 1],
                    rest[4 * i + 2],
                    rest[4 * i + 3],
                ]);
                *lane = lane
                    .wrapping_add(w.wrapping_mul(P2))
                    .rotate_left(13)
                    .wrapping_mul(P1);
            }
            rest = &rest[16..];
        }
        v[0].rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18))
    } else {
        seed.wrapping_add(P5)
    };
    h = h.wrapping_add(data.len() as u32);
    while rest.len() >= 4 {
        let w = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
        h = h
            .wrapping_add(w.wrapping_mul(P3))
            .rotate_left(17)
            .wrapping_mul(P4);
        rest = &rest[4..];
    }
    for &b in rest {
        h = h
            .wrapping_add(u32::from(b).wrapping_mul(P5))
            .rotate_left(11)
            .wrapping_mul(P1);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P2);
    h ^= h >> 13;
    h = h.wrapping_mul(P3);
    h ^ (h >> 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xxh32_known_values() {
        assert_eq!(xxh32(b"", 0), 0x02CC_5D05);
        assert_eq!(xxh32(b"a", 0), 0x550D_7456);
        assert_eq!(xxh32(b"abc", 0), 0x32D1_53FF);
        assert_eq!(
            xxh32(b"Nobody inspects the spammish repetition", 0),
            0xE229_3B2F
        );
    }

    #[test]
    fn kafka_header_checksum() {
        // Kafka writes 04 22 4D 18 60 40 82 for FLG 0x60, BD 0x40.
        assert_eq!((xxh32(&[0x60, 0x40], 0) >> 8) as u8, 0x82);
    }

    #[test]
    fn round_trip_and_cap() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 13) as u8).collect();
        let mut framed = Vec::new();
        compress(&data, &mut framed).unwrap();
        let mut out = Vec::new();
        decompress(&framed, false, usize::MAX, &mut out).unwrap();
        assert_eq!(out, data);
        out.clear();
        assert_eq!(
            decompress(&framed, false, 100_000, &mut out),
            Err(RecordError::DecompressedTooLarge { cap: 100_000 })
        );
        assert!(out.is_empty());
        // Incompressible input is stored.
        let noise: Vec<u8> = (0..70_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        framed.clear();
        compress(&noise, &mut framed).unwrap();
        out.clear();
        decompress(&framed, false, usize::MAX, &mut out).unwrap();
        assert_eq!(out, noise);
        // Truncated frame.
        out.clear();
        assert!(matches!(
            decompress(&framed[..framed.len() - 5], false, usize::MAX, &mut out),
            Err(RecordError::Truncated { .. })
        ));
    }
}
