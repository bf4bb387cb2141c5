//! Unit tests across the record module: round trips, hostile input, legacy sets.

use bytes::Bytes;

use super::*;

type Sample = (
    i64,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(String, Option<Vec<u8>>)>,
);

fn sample_records() -> Vec<Sample> {
    vec![
        (
            1_700_000_000_000,
            Some(b"k1".to_vec()),
            Some(b"v1".to_vec()),
            vec![],
        ),
        (
            1_700_000_000_005,
            None,
            Some(b"value".to_vec()),
            vec![("h".into(), Some(b"x".to_vec()))],
        ),
        (
            1_699_999_999_000,
            Some(vec![]),
            None,
            vec![("a".into(), None), ("".into(), Some(vec![]))],
        ),
        (
            1_700_000_000_001,
            Some(vec![7; 300]),
            Some(vec![9; 70_000]),
            vec![],
        ),
    ]
}

fn encode_sample(opts: &BatchOptions) -> Vec<u8> {
    let recs = sample_records();
    let headers: Vec<Vec<NewHeader<'_>>> = recs
        .iter()
        .map(|r| {
            r.3.iter()
                .map(|(k, v)| NewHeader {
                    key: k,
                    value: v.as_deref(),
                })
                .collect()
        })
        .collect();
    let mut out = vec![0xAA; 3]; // existing content must be kept
    let enc = BatchEncoder::new()
        .encode(
            opts,
            recs.iter().zip(&headers).map(|(r, h)| NewRecord {
                timestamp: r.0,
                key: r.1.as_deref(),
                value: r.2.as_deref(),
                headers: h,
            }),
            &mut out,
        )
        .unwrap();
    assert_eq!(enc.start, 3);
    assert_eq!(&out[..3], &[0xAA; 3]);
    out.split_off(3)
}

#[test]
fn round_trip_every_codec_and_flag() {
    for codec in Compression::ALL {
        for ts in [TimestampType::CreateTime, TimestampType::LogAppendTime] {
            for (pid, txn) in [(-1, false), (42, false), (42, true)] {
                let opts = BatchOptions {
                    base_offset: 1000,
                    compression: codec,
                    timestamp_type: ts,
                    log_append_time: 1_800_000_000_000,
                    transactional: txn,
                    producer_id: pid,
                    producer_epoch: if pid < 0 { -1 } else { 3 },
                    base_sequence: if pid < 0 { -1 } else { i32::MAX - 1 },

                    ..BatchOptions::default()
                };
                let bytes = Bytes::from(encode_sample(&opts));
                let (batch, used) = RecordBatch::decode(&bytes, &DecodeOptions::default()).unwrap();
                assert_eq!(used, bytes.len());
                let h = batch.header();
                assert_eq!(h.records_count, 4);
                assert_eq!(h.last_offset_delta, 3);
                assert_eq!(h.base_timestamp, 1_700_000_000_000);
                assert_eq!(h.attributes.compression, codec);
                assert_eq!(h.attributes.transactional, txn);
                let expect_max = match ts {
                    TimestampType::CreateTime => 1_700_000_000_005,
                    TimestampType::LogAppendTime => 1_800_000_000_000,
                };
                assert_eq!(h.max_timestamp, expect_max);
                let recs: Vec<Record> = batch.records().unwrap().map(Result::unwrap).collect();
                for (i, (r, want)) in recs.iter().zip(sample_records()).enumerate() {
                    assert_eq!(r.offset, 1000 + i as i64);
                    let ts_want = if ts == TimestampType::CreateTime {
                        want.0
                    } else {
                        expect_max
                    };
                    assert_eq!(r.timestamp, ts_want);
                    assert_eq!(r.key.as_deref(), want.1.as_deref());
                    assert_eq!(r.value.as_deref(), want.2.as_deref());
                    let hs: Vec<(String, Option<Vec<u8>>)> = r
                        .headers
                        .iter()
                        .map(|h| (h.key_str().unwrap().to_owned(), h.value.map(|v| v.to_vec())))
                        .collect();
                    assert_eq!(hs, want.3);
                    let seq_want = match (pid, i) {
                        (-1, _) => -1,
                        (_, 0) => i32::MAX - 1,
                        (_, 1) => i32::MAX,
                        (_, n) => n as i32 - 2,
                    };
                    assert_eq!(r.sequence, seq_want);
                }
                assert_eq!(recs.len(), 4);
            }
        }
    }
}

#[test]
fn uncompressed_values_are_slices_of_the_input() {
    let bytes = Bytes::from(encode_sample(&BatchOptions::default()));
    let (batch, _) = RecordBatch::decode(&bytes, &DecodeOptions::default()).unwrap();
    let range = bytes.as_ptr_range();
    for r in batch.records().unwrap() {
        if let Some(v) = r.unwrap().value.filter(|v| !v.is_empty()) {
            assert!(range.contains(&v.as_ptr()));
        }
    }
}

#[test]
fn crc_is_checked_before_decompressing() {
    let mut raw = encode_sample(&BatchOptions {
        compression: Compression::Gzip,
        ..BatchOptions::default()
    });
    let last = raw.len() - 10;
    raw[last] ^= 0xFF;
    let err =
        RecordBatch::decode(&Bytes::from(raw.clone()), &DecodeOptions::default()).unwrap_err();
    assert!(matches!(err, RecordError::CrcMismatch { .. }), "{err:?}");
    // With a fixed CRC the damage reaches the decompressor, which reports it.
    fuzz::fix_crcs(&mut raw);
    let (batch, _) = RecordBatch::decode(&Bytes::from(raw), &DecodeOptions::default()).unwrap();
    assert!(batch.records().is_err());
}

#[test]
fn partition_leader_epoch_is_outside_the_crc() {
    let mut raw = encode_sample(&BatchOptions::default());
    raw[12..16].copy_from_slice(&7i32.to_be_bytes());
    let (batch, _) = RecordBatch::decode(&Bytes::from(raw), &DecodeOptions::default()).unwrap();
    assert_eq!(batch.header().partition_leader_epoch, 7);
}

fn with_count(count: i32) -> Bytes {
    let mut raw = encode_sample(&BatchOptions::default());
    raw[57..61].copy_from_slice(&count.to_be_bytes());
    fuzz::fix_crcs(&mut raw);
    Bytes::from(raw)
}

#[test]
fn record_count_of_2_pow_31_is_a_typed_error() {
    // 2^31 does not fit an int32: on the wire it reads as i32::MIN.
    let err = RecordBatch::decode(&with_count(i32::MIN), &DecodeOptions::default()).unwrap_err();
    assert_eq!(err, RecordError::InvalidRecordCount(i32::MIN));
    // 2^31 - 1 parses, and the records run out after four.
    let (batch, _) = RecordBatch::decode(&with_count(i32::MAX), &DecodeOptions::default()).unwrap();
    let results: Vec<_> = batch.records().unwrap().collect();
    assert_eq!(results.len(), 5);
    assert_eq!(
        results[4],
        Err(RecordError::MissingRecords {
            claimed: i32::MAX,
            found: 4
        })
    );
    // Fewer claimed than present: trailing bytes.
    let (batch, _) = RecordBatch::decode(&with_count(2), &DecodeOptions::default()).unwrap();
    let results: Vec<_> = batch.records().unwrap().collect();
    assert!(matches!(results[2], Err(RecordError::TrailingBytes(_))));
}

#[test]
fn truncated_batches_are_typed_errors_and_partial_tails() {
    let raw = encode_sample(&BatchOptions::default());
    for cut in [0, 5, 11, 12, 40, 60, raw.len() - 1] {
        let b = Bytes::copy_from_slice(&raw[..cut]);
        let err = RecordBatch::decode(&b, &DecodeOptions::default()).unwrap_err();
        assert!(
            matches!(err, RecordError::Truncated { .. }),
            "{cut}: {err:?}"
        );
        let mut it = Batches::new(b, DecodeOptions::default());
        assert!(it.next().is_none());
        assert_eq!(it.has_partial_tail(), cut > 0);
    }
    // Two batches then a partial third.
    let mut set = raw.clone();
    set.extend_from_slice(&raw);
    set.extend_from_slice(&raw[..30]);
    let mut it = Batches::new(Bytes::from(set), DecodeOptions::default());
    assert_eq!(it.by_ref().filter(|b| b.is_ok()).count(), 2);
    assert!(it.has_partial_tail());
}

#[test]
fn decompressed_size_is_capped_per_codec() {
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let raw = Bytes::from(encode_sample(&BatchOptions {
            compression: codec,
            ..BatchOptions::default()
        }));
        let opts = DecodeOptions {
            max_decompressed_bytes: 10_000,
            ..DecodeOptions::default()
        };
        let (batch, _) = RecordBatch::decode(&raw, &opts).unwrap();
        assert_eq!(
            batch.records().unwrap_err(),
            RecordError::DecompressedTooLarge { cap: 10_000 },
            "{codec:?}"
        );
    }
}

#[test]
fn control_records_round_trip() {
    for marker in [
        ControlRecord::EndTransaction {
            commit: true,
            coordinator_epoch: 17,
        },
        ControlRecord::EndTransaction {
            commit: false,
            coordinator_epoch: -1,
        },
        ControlRecord::Other {
            kind: ControlRecordType::Unknown(99),
            value: None,
        },
    ] {
        let mut out = Vec::new();
        let opts = BatchOptions {
            producer_id: 5,
            producer_epoch: 1,
            ..BatchOptions::default()
        };
        let _ = marker.encode_batch(&opts, 123, &mut out).unwrap();
        let (batch, _) = RecordBatch::decode(&Bytes::from(out), &DecodeOptions::default()).unwrap();
        assert!(batch.is_control());
        let r = batch.records().unwrap().next().unwrap().unwrap();
        assert_eq!(ControlRecord::decode(&r).unwrap(), marker);
    }
}

/// Builds a legacy entry by hand: offset, size, crc, magic, attributes, [ts], key, value.
fn legacy_entry(
    offset: i64,
    magic: i8,
    attrs: i8,
    ts: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Vec<u8> {
    let mut msg = vec![magic as u8, attrs as u8];
    if magic == 1 {
        msg.extend_from_slice(&ts.to_be_bytes());
    }
    for f in [key, value] {
        match f {
            None => msg.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(b) => {
                msg.extend_from_slice(&(b.len() as i32).to_be_bytes());
                msg.extend_from_slice(b);
            }
        }
    }
    let crc = crc32fast::hash(&msg);
    let mut out = offset.to_be_bytes().to_vec();
    out.extend_from_slice(&((msg.len() + 4) as i32).to_be_bytes());
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(&msg);
    out
}

#[test]
fn legacy_plain_and_compressed() {
    for magic in [0i8, 1] {
        for codec in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
        ] {
            let mut set = Vec::new();
            // v1 inner offsets are relative, v0 absolute.
            let inner_base = if magic == 1 && codec != Compression::None {
                0
            } else {
                50
            };
            let mut inner = Vec::new();
            for i in 0..3i64 {
                inner.extend(legacy_entry(
                    inner_base + i,
                    magic,
                    0,
                    1000 + i,
                    Some(b"k"),
                    Some(&[i as u8; 10]),
                ));
            }
            if codec == Compression::None {
                set = inner;
            } else {
                let mut z = Vec::new();
                compression::compress(codec, None, &inner, &mut z).unwrap();
                set.extend(legacy_entry(
                    52,
                    magic,
                    codec.id() as i8,
                    5000,
                    None,
                    Some(&z),
                ));
            }
            let batches: Vec<Batch> = Batches::new(Bytes::from(set), DecodeOptions::default())
                .map(Result::unwrap)
                .collect();
            let recs: Vec<Record> = batches
                .iter()
                .flat_map(|b| match b {
                    Batch::Legacy(l) => {
                        l.records().unwrap().map(Result::unwrap).collect::<Vec<_>>()
                    }
                    Batch::V2(_) => panic!("v2"),
                })
                .collect();
            assert_eq!(recs.len(), 3, "{magic} {codec:?}");
            for (i, r) in recs.iter().enumerate() {
                assert_eq!(r.offset, 50 + i as i64);
                assert_eq!(r.timestamp, if magic == 1 { 1000 + i as i64 } else { -1 });
                assert_eq!(r.value.as_deref(), Some(&[i as u8; 10][..]));
            }
        }
    }
    // A corrupted legacy CRC is caught.
    let mut e = legacy_entry(0, 1, 0, 1, None, Some(b"x"));
    let n = e.len();
    e[n - 1] ^= 1;
    let err = Batches::new(Bytes::from(e), DecodeOptions::default())
        .next()
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, RecordError::CrcMismatch { .. }));
}

#[test]
fn fuzz_entry_runs_on_samples() {
    let raw = encode_sample(&BatchOptions {
        compression: Compression::Lz4,
        ..BatchOptions::default()
    });
    assert_eq!(fuzz::record_set(&raw, false), 4);
    assert_eq!(fuzz::record_set(&raw[..raw.len() - 3], true), 0);
}

#[test]
fn legacy_wrapper_is_iterated_and_stops_at_its_first_bad_message() {
    // Inner set: a good message, a compressed one (nested: corruption), a good one.
    let mut inner = legacy_entry(0, 1, 0, 1, None, Some(b"a"));
    inner.extend(legacy_entry(1, 1, 1, 1, None, Some(b"z")));
    inner.extend(legacy_entry(2, 1, 0, 1, None, Some(b"c")));
    let mut z = Vec::new();
    compression::compress(Compression::Gzip, None, &inner, &mut z).unwrap();
    let set = legacy_entry(102, 1, 1, 9, None, Some(&z));
    let Some(Ok(Batch::Legacy(l))) =
        Batches::new(Bytes::from(set), DecodeOptions::default()).next()
    else {
        panic!("expected a legacy batch");
    };
    let mut records = l.records().unwrap();
    let first = records.next().unwrap().unwrap();
    assert_eq!(first.offset, 100);
    assert_eq!(first.value.as_deref(), Some(&b"a"[..]));
    assert_eq!(
        records.next().unwrap().unwrap_err(),
        RecordError::NestedCompression
    );
    assert!(records.next().is_none());

    // An inner set whose last size runs past the end fails before iterating.
    let mut cut = inner.clone();
    cut.truncate(cut.len() - 1);
    let mut z = Vec::new();
    compression::compress(Compression::Gzip, None, &cut, &mut z).unwrap();
    let set = legacy_entry(2, 1, 1, 9, None, Some(&z));
    let Some(Ok(Batch::Legacy(l))) =
        Batches::new(Bytes::from(set), DecodeOptions::default()).next()
    else {
        panic!("expected a legacy batch");
    };
    assert!(matches!(l.records(), Err(RecordError::Truncated { .. })));
}

#[test]
fn decompression_never_grows_the_buffer_past_the_cap() {
    // 3 MiB: not a power of two, so plain doubling would reach 4 MiB.
    let cap = 3 << 20;
    let data: Vec<u8> = (0..cap - 100).map(|i| (i / 512 % 251) as u8).collect();
    for codec in Compression::ALL {
        if !codec.is_enabled() {
            continue;
        }
        let mut z = Vec::new();
        compression::compress(codec, None, &data, &mut z).unwrap();
        let mut out = Vec::new();
        compression::decompress(codec, 2, &z, cap, &mut out).unwrap();
        assert_eq!(out, data, "{codec:?}");
        assert!(
            out.capacity() <= cap,
            "{codec:?}: capacity {}",
            out.capacity()
        );
        // Exactly at the cap is fine; one byte more is not.
        let mut out = Vec::new();
        compression::decompress(codec, 2, &z, data.len(), &mut out).unwrap();
        let mut out = Vec::new();
        assert_eq!(
            compression::decompress(codec, 2, &z, data.len() - 1, &mut out),
            Err(RecordError::DecompressedTooLarge {
                cap: data.len() - 1
            }),
            "{codec:?}"
        );
        assert!(out.is_empty());
    }
}
