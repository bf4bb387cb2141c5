//! Hostile record batches: typed errors, bounded memory.
//!
//! One test function, so the peak-allocation measurements are not disturbed by other
//! tests running on parallel threads of this binary.

use bytes::Bytes;
use kafka_core::record::{
    compression, fuzz, BatchEncoder, BatchOptions, Compression, DecodeOptions, NewRecord,
    RecordBatch, RecordError,
};
use peak_alloc::PeakAlloc;

#[global_allocator]
static PEAK: PeakAlloc = PeakAlloc;

const MIB: usize = 1 << 20;

/// Wraps a records section in a v2 batch header with a valid CRC.
fn batch_with_payload(codec: Compression, payload: &[u8], count: i32) -> Bytes {
    let mut out = Vec::new();
    let _ = BatchEncoder::new()
        .encode(
            &BatchOptions::default(),
            [NewRecord {
                value: Some(b"x"),
                ..NewRecord::default()
            }],
            &mut out,
        )
        .unwrap();
    out.truncate(61);
    out.extend_from_slice(payload);
    let len = (out.len() - 12) as i32;
    out[8..12].copy_from_slice(&len.to_be_bytes());
    out[21..23].copy_from_slice(&i16::from(codec.id()).to_be_bytes());
    out[57..61].copy_from_slice(&count.to_be_bytes());
    fuzz::fix_crcs(&mut out);
    Bytes::from(out)
}

/// Decodes every record of `batch`, returning the first error and the peak heap bytes
/// allocated meanwhile (above what was live before).
fn decode_all(batch: &Bytes, opts: &DecodeOptions) -> (Result<usize, RecordError>, usize) {
    let base = PEAK.current_usage();
    PEAK.reset_peak_usage();
    let result = (|| {
        let (b, _) = RecordBatch::decode(batch, opts)?;
        let mut n = 0;
        for r in b.records()? {
            r?;
            n += 1;
        }
        Ok(n)
    })();
    (result, PEAK.peak_usage().saturating_sub(base))
}

fn claims_2_gib() -> Vec<(Compression, Vec<u8>)> {
    let mut cases = Vec::new();
    // snappy, bare raw block: varint uncompressed length 2^31.
    let mut raw = vec![0x80, 0x80, 0x80, 0x80, 0x08, 0x00];
    raw.resize(64, 0);
    cases.push((Compression::Snappy, raw.clone()));
    // snappy, xerial framing around the same block.
    let mut x = vec![
        0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1,
    ];
    x.extend_from_slice(&44i32.to_be_bytes());
    x.extend_from_slice(&raw[..44]);
    cases.push((Compression::Snappy, x));
    // zstd: single-segment frame, content size 2^31, one RLE block.
    let mut z = vec![0x28, 0xB5, 0x2F, 0xFD, 0xA0];
    z.extend_from_slice(&(1u32 << 31).to_le_bytes());
    z.extend_from_slice(&[0x03, 0x00, 0x10, 0x41]); // last, RLE, size 0x2000, byte 'A'
    z.resize(64, 0);
    cases.push((Compression::Zstd, z));
    // gzip: a real member whose trailer claims ISIZE 2^31.
    let mut g = Vec::new();
    compression::compress(Compression::Gzip, None, &[0u8; 100], &mut g).unwrap();
    let n = g.len();
    g[n - 4..].copy_from_slice(&(1u32 << 31).to_le_bytes());
    cases.push((Compression::Gzip, g));
    // lz4: frame with a content size of 2^31 and 4 MiB blocks; the header checksum is
    // found by trying all 256 values.
    let mut l = vec![0x04, 0x22, 0x4D, 0x18, 0x68, 0x70];
    l.extend_from_slice(&(1u64 << 31).to_le_bytes());
    l.push(0);
    let hc_at = l.len() - 1;
    l.extend_from_slice(&0x8000_0010u32.to_le_bytes()); // stored block of 16 bytes
    l.extend_from_slice(&[7; 16]);
    l.extend_from_slice(&0x0000_0010u32.to_le_bytes()); // compressed block, junk
    l.resize(64, 0xFF);
    for hc in 0..=255u8 {
        l[hc_at] = hc;
        let mut out = Vec::new();
        match compression::decompress(Compression::Lz4, 2, &l, MIB, &mut out) {
            Err(RecordError::Decompress { reason, .. }) if reason.contains("checksum") => {}
            _ => break,
        }
    }
    cases.push((Compression::Lz4, l));
    cases
}

#[test]
fn hostile_batches_fail_typed_with_bounded_memory() {
    let opts = DecodeOptions::default(); // 50 MiB cap

    // 1. A 64-byte compressed section claiming 2 GiB, per codec.
    for (codec, payload) in claims_2_gib() {
        assert!(payload.len() <= 64, "{codec:?}: {} bytes", payload.len());
        let batch = batch_with_payload(codec, &payload, 1);
        let (result, peak) = decode_all(&batch, &opts);
        assert!(result.is_err(), "{codec:?}: {result:?}");
        assert!(peak < 8 * MIB, "{codec:?}: peak {peak} bytes");
        eprintln!(
            "2 GiB claim, {codec:?}: {:?}, peak {peak} B",
            result.unwrap_err()
        );
    }

    // 2. Real bombs: 32 MiB of zeros per codec, decoded under a 1 MiB cap.
    let zeros = vec![0u8; 32 * MIB];
    let small_cap = DecodeOptions {
        max_decompressed_bytes: MIB,
        ..DecodeOptions::default()
    };
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let mut payload = Vec::new();
        compression::compress(codec, None, &zeros, &mut payload).unwrap();
        let batch = batch_with_payload(codec, &payload, 1);
        let (result, peak) = decode_all(&batch, &small_cap);
        assert_eq!(
            result,
            Err(RecordError::DecompressedTooLarge { cap: MIB }),
            "{codec:?}"
        );
        assert!(peak < 4 * MIB, "{codec:?}: peak {peak} bytes");
    }
    drop(zeros);

    // 3. Record counts of 2^31 (negative on the wire) and 2^31 - 1.
    let mut one = Vec::new();
    let _ = BatchEncoder::new()
        .encode(
            &BatchOptions::default(),
            [NewRecord {
                value: Some(b"v"),
                ..NewRecord::default()
            }],
            &mut one,
        )
        .unwrap();
    let body = &one[61..];
    let (result, peak) = decode_all(
        &batch_with_payload(Compression::None, body, i32::MIN),
        &opts,
    );
    assert_eq!(result, Err(RecordError::InvalidRecordCount(i32::MIN)));
    assert!(peak < 64 * 1024, "peak {peak}");
    let (result, peak) = decode_all(
        &batch_with_payload(Compression::None, body, i32::MAX),
        &opts,
    );
    assert_eq!(
        result,
        Err(RecordError::MissingRecords {
            claimed: i32::MAX,
            found: 1
        })
    );
    assert!(peak < 64 * 1024, "peak {peak}");
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let mut payload = Vec::new();
        compression::compress(codec, None, body, &mut payload).unwrap();
        let (result, _) = decode_all(&batch_with_payload(codec, &payload, i32::MAX), &opts);
        assert!(
            matches!(result, Err(RecordError::MissingRecords { found: 1, .. })),
            "{codec:?}"
        );
    }

    // 4. Truncated frames: the batch cut anywhere, and each codec's stream cut short
    //    (with the CRC fixed so the decompressor sees it).
    let full = batch_with_payload(Compression::None, body, 1);
    for cut in 0..full.len() {
        let (result, _) = decode_all(&full.slice(..cut), &opts);
        assert!(
            matches!(result, Err(RecordError::Truncated { .. })),
            "cut at {cut}: {result:?}"
        );
    }
    let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let mut payload = Vec::new();
        compression::compress(codec, None, &data, &mut payload).unwrap();
        for cut in [1, 10, payload.len() / 2, payload.len() - 1] {
            let batch = batch_with_payload(codec, &payload[..cut], 1);
            let (result, peak) = decode_all(&batch, &opts);
            assert!(result.is_err(), "{codec:?} cut {cut}");
            assert!(peak < 8 * MIB, "{codec:?}: peak {peak}");
        }
    }
}
