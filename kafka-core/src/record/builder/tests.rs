//! Builder tests: round trips through the decoder, byte equality with the one-shot
//! encoder, the `batch.size` boundary, producer-state rewrites and reuse.

use bytes::Bytes;

use crate::record::*;

/// An owned record to append: timestamp, key, value, headers.
#[derive(Debug, Clone)]
struct Rec {
    ts: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
}

fn rec(ts: i64, key: Option<&[u8]>, value: Option<&[u8]>) -> Rec {
    Rec {
        ts,
        key: key.map(<[u8]>::to_vec),
        value: value.map(<[u8]>::to_vec),
        headers: vec![],
    }
}

/// Null and empty fields, headers, a timestamp before the first (negative delta) and
/// one large value.
fn samples() -> Vec<Rec> {
    let mut with_headers = rec(1_700_000_000_005, None, Some(b"value"));
    with_headers.headers = vec![
        ("h".into(), Some(b"x".to_vec())),
        ("null".into(), None),
        ("".into(), Some(vec![])),
    ];
    vec![
        rec(1_700_000_000_000, Some(b"k1"), Some(b"v1")),
        with_headers,
        rec(1_699_999_999_000, Some(b""), None),
        rec(1_700_000_000_001, Some(&[7; 300]), Some(&[9; 70_000])),
        rec(1_700_000_000_002, None, None),
    ]
}

fn headers_of(r: &Rec) -> Vec<NewHeader<'_>> {
    r.headers
        .iter()
        .map(|(k, v)| NewHeader {
            key: k,
            value: v.as_deref(),
        })
        .collect()
}

fn append(b: &mut BatchBuilder, r: &Rec) -> Append {
    let headers = headers_of(r);
    b.append(r.ts, r.key.as_deref(), r.value.as_deref(), &headers)
        .unwrap()
}

fn build(b: &mut BatchBuilder, recs: &[Rec]) -> SealedBatch {
    for (i, r) in recs.iter().enumerate() {
        assert_eq!(
            append(b, r),
            Append::Appended {
                offset_delta: i as i32
            }
        );
    }
    b.seal().unwrap()
}

fn one_shot(opts: &BatchOptions, recs: &[Rec]) -> Vec<u8> {
    let headers: Vec<Vec<NewHeader<'_>>> = recs.iter().map(headers_of).collect();
    let mut out = Vec::new();
    let _ = BatchEncoder::new()
        .encode(
            opts,
            recs.iter().zip(&headers).map(|(r, h)| NewRecord {
                timestamp: r.ts,
                key: r.key.as_deref(),
                value: r.value.as_deref(),
                headers: h,
            }),
            &mut out,
        )
        .unwrap();
    out
}

/// Decodes `bytes` as one batch and checks its records are `recs`, in order.
fn check_decodes_to(bytes: &[u8], recs: &[Rec]) -> BatchHeader {
    let bytes = Bytes::copy_from_slice(bytes);
    let (batch, used) = RecordBatch::decode(&bytes, &DecodeOptions::default()).unwrap();
    assert_eq!(used, bytes.len());
    let h = *batch.header();
    assert_eq!(h.records_count as usize, recs.len());
    assert_eq!(h.last_offset_delta as usize, recs.len() - 1);
    assert_eq!(h.base_timestamp, recs[0].ts);
    assert_eq!(h.max_timestamp, recs.iter().map(|r| r.ts).max().unwrap());
    let mut n = 0;
    for (i, (got, want)) in batch.records().unwrap().zip(recs).enumerate() {
        let got = got.unwrap();
        assert_eq!(got.offset_delta, i as i32);
        assert_eq!(got.offset, h.base_offset + i as i64);
        assert_eq!(got.timestamp, want.ts);
        assert_eq!(got.key.as_deref(), want.key.as_deref());
        assert_eq!(got.value.as_deref(), want.value.as_deref());
        let headers: Vec<(String, Option<Vec<u8>>)> = got
            .headers
            .iter()
            .map(|h| (h.key_str().unwrap().to_owned(), h.value.map(|v| v.to_vec())))
            .collect();
        assert_eq!(headers, want.headers);
        n += 1;
    }
    assert_eq!(n, recs.len());
    h
}

fn opts(compression: Compression) -> BatchOptions {
    BatchOptions {
        compression,
        ..BatchOptions::default()
    }
}

#[test]
fn round_trip_every_codec() {
    let recs = samples();
    for codec in Compression::ALL {
        let mut b = BatchBuilder::new(opts(codec), 1 << 20).unwrap();
        assert!(b.is_empty());
        assert_eq!(b.estimated_size(), 0);
        for (i, r) in recs.iter().enumerate() {
            assert_eq!(
                append(&mut b, r),
                Append::Appended {
                    offset_delta: i as i32
                }
            );
        }
        assert_eq!(b.len(), recs.len());
        assert_eq!(b.first_timestamp(), Some(1_700_000_000_000));
        assert_eq!(b.max_timestamp(), Some(1_700_000_000_005));
        let uncompressed = one_shot(&opts(Compression::None), &recs).len();
        assert_eq!(b.estimated_size(), uncompressed);
        assert_eq!(b.records_size(), uncompressed - BATCH_HEADER_LEN);
        let sealed = b.seal().unwrap();
        assert!(b.is_empty() && b.first_timestamp().is_none());
        let h = check_decodes_to(&sealed.bytes, &recs);
        assert_eq!(h, sealed.header);
        assert_eq!(h.attributes.compression, codec);
        assert_eq!(h.size(), sealed.bytes.len());
        assert_eq!(
            (h.producer_id, h.producer_epoch, h.base_sequence),
            (-1, -1, -1)
        );
        assert!(!h.attributes.transactional && !h.attributes.control);
        if codec != Compression::None {
            assert!(sealed.bytes.len() < uncompressed, "{codec:?}");
        }
    }
}

#[test]
fn extreme_timestamps_round_trip() {
    // Deltas that wrap i64 still decode to the appended timestamps.
    let recs = vec![
        rec(i64::MAX, None, Some(b"a")),
        rec(i64::MIN, None, Some(b"b")),
        rec(-1, None, None),
        rec(0, None, None),
    ];
    let mut b = BatchBuilder::new(BatchOptions::default(), 1000).unwrap();
    let sealed = build(&mut b, &recs);
    let bytes = sealed.bytes.freeze();
    let (batch, _) = RecordBatch::decode(&bytes, &DecodeOptions::default()).unwrap();
    let ts: Vec<i64> = batch
        .records()
        .unwrap()
        .map(|r| r.unwrap().timestamp)
        .collect();
    assert_eq!(ts, [i64::MAX, i64::MIN, -1, 0]);
    assert_eq!(batch.header().max_timestamp, i64::MAX);
}

#[test]
fn bytes_equal_the_one_shot_encoder() {
    let recs = samples();
    for codec in Compression::ALL {
        for o in [
            opts(codec),
            BatchOptions {
                compression: codec,
                compression_level: Some(1),
                base_offset: 77,
                producer_id: 4242,
                producer_epoch: 7,
                base_sequence: 1000,
                transactional: true,
                ..BatchOptions::default()
            },
            BatchOptions {
                compression: codec,
                timestamp_type: TimestampType::LogAppendTime,
                log_append_time: 1_800_000_000_000,
                partition_leader_epoch: 3,
                ..BatchOptions::default()
            },
        ] {
            let mut b = BatchBuilder::new(o, 1 << 20).unwrap();
            let sealed = build(&mut b, &recs);
            assert_eq!(&sealed.bytes[..], &one_shot(&o, &recs)[..], "{o:?}");
            // A second batch from the same builder (warm contexts) too.
            let sealed = build(&mut b, &recs[1..]);
            assert_eq!(&sealed.bytes[..], &one_shot(&o, &recs[1..])[..], "{o:?}");
        }
    }
}

#[test]
fn full_exactly_at_the_batch_size_boundary() {
    let recs: Vec<Rec> = (0..10)
        .map(|i| rec(1000 + i, Some(b"key"), Some(&[i as u8; 50])))
        .collect();
    for codec in Compression::ALL {
        // The uncompressed size of 10 records: the limit counts bytes before compression.
        let exact = one_shot(&opts(Compression::None), &recs).len();
        let mut b = BatchBuilder::new(opts(codec), exact).unwrap();
        let sealed = build(&mut b, &recs);
        if codec == Compression::None {
            assert_eq!(sealed.bytes.len(), exact);
        }
        // With the same limit, an 11th record does not fit; the batch is unchanged.
        for r in &recs {
            assert!(matches!(append(&mut b, r), Append::Appended { .. }));
        }
        assert_eq!(append(&mut b, &rec(5, None, None)), Append::Full);
        assert_eq!(b.len(), 10);
        assert_eq!(b.estimated_size(), exact);
        check_decodes_to(&b.seal().unwrap().bytes, &recs);
        // One byte less: the 10th record is Full.
        b.reconfigure(opts(codec), exact - 1).unwrap();
        for r in &recs[..9] {
            assert!(matches!(append(&mut b, r), Append::Appended { .. }));
        }
        assert_eq!(append(&mut b, &recs[9]), Append::Full);
        check_decodes_to(&b.seal().unwrap().bytes, &recs[..9]);
        // ... and it opens the next batch.
        assert_eq!(
            append(&mut b, &recs[9]),
            Append::Appended { offset_delta: 0 }
        );
        check_decodes_to(&b.seal().unwrap().bytes, &recs[9..]);
    }
}

#[test]
fn a_first_record_larger_than_batch_size_is_accepted_alone() {
    for batch_size in [0, 1, 61, 100] {
        let mut b = BatchBuilder::new(opts(Compression::Lz4), batch_size).unwrap();
        let big = rec(1, Some(b"k"), Some(&[3; 5000]));
        assert_eq!(append(&mut b, &big), Append::Appended { offset_delta: 0 });
        assert!(b.estimated_size() > batch_size);
        assert_eq!(append(&mut b, &rec(2, None, None)), Append::Full);
        check_decodes_to(&b.seal().unwrap().bytes, &[big]);
    }
}

#[test]
fn rewritten_producer_state_decodes_with_a_valid_crc() {
    let recs = samples();
    for codec in Compression::ALL {
        let mut b = BatchBuilder::new(opts(codec), 1 << 20).unwrap();
        let mut sealed = build(&mut b, &recs);
        let original = sealed.bytes.clone();
        let state = ProducerState {
            producer_id: 1 << 40,
            producer_epoch: 12,
            base_sequence: i32::MAX - 1,
            transactional: true,
        };
        rewrite_producer_state(&mut sealed.bytes, &state).unwrap();
        let h = check_decodes_to(&sealed.bytes, &recs);
        assert_eq!(
            (h.producer_id, h.producer_epoch, h.base_sequence),
            (1 << 40, 12, i32::MAX - 1)
        );
        assert!(h.attributes.transactional);
        assert_eq!(h.attributes.compression, codec);
        // The same bytes as encoding with that state from the start.
        let o = BatchOptions {
            producer_id: 1 << 40,
            producer_epoch: 12,
            base_sequence: i32::MAX - 1,
            transactional: true,
            ..opts(codec)
        };
        assert_eq!(&sealed.bytes[..], &one_shot(&o, &recs)[..]);
        // Sequences follow the new base and wrap past i32::MAX.
        let frozen = sealed.bytes.clone().freeze();
        let (batch, _) = RecordBatch::decode(&frozen, &DecodeOptions::default()).unwrap();
        let seqs: Vec<i32> = batch
            .records()
            .unwrap()
            .map(|r| r.unwrap().sequence)
            .collect();
        assert_eq!(seqs, [i32::MAX - 1, i32::MAX, 0, 1, 2]);
        // An epoch bump on retry (KIP-360), then back to no producer at all.
        let bumped = ProducerState {
            producer_epoch: 13,
            base_sequence: 0,
            ..state
        };
        rewrite_producer_state(&mut sealed.bytes, &bumped).unwrap();
        assert_eq!(check_decodes_to(&sealed.bytes, &recs).producer_epoch, 13);
        rewrite_producer_state(&mut sealed.bytes, &ProducerState::NONE).unwrap();
        assert_eq!(sealed.bytes, original);
    }
}

#[test]
fn producer_state_set_on_the_builder_is_sealed_in() {
    let recs = samples();
    let state = ProducerState {
        producer_id: 9,
        producer_epoch: 2,
        base_sequence: 40,
        transactional: true,
    };
    let mut b = BatchBuilder::new(opts(Compression::Snappy), 1 << 20).unwrap();
    for r in &recs {
        let _ = append(&mut b, r);
    }
    b.set_producer_state(&state);
    let sealed = b.seal().unwrap();
    let o = BatchOptions {
        producer_id: 9,
        producer_epoch: 2,
        base_sequence: 40,
        transactional: true,
        ..opts(Compression::Snappy)
    };
    assert_eq!(&sealed.bytes[..], &one_shot(&o, &recs)[..]);
    assert_eq!(b.options(), &o);
}

#[test]
fn rewrite_rejects_what_is_not_one_v2_batch() {
    let mut b = BatchBuilder::new(BatchOptions::default(), 1000).unwrap();
    let sealed = build(&mut b, &samples()[..2]);
    let good = sealed.bytes.to_vec();
    let state = ProducerState {
        producer_id: 1,
        ..ProducerState::NONE
    };
    let try_rewrite = |mut v: Vec<u8>| {
        let before = v.clone();
        let r = rewrite_producer_state(&mut v, &state);
        assert_eq!(v, before, "unchanged on error");
        r.unwrap_err()
    };
    assert!(matches!(
        try_rewrite(good[..60].to_vec()),
        RecordError::Truncated { .. }
    ));
    assert!(matches!(try_rewrite(vec![]), RecordError::Truncated { .. }));
    let mut magic1 = good.clone();
    magic1[16] = 1;
    assert_eq!(try_rewrite(magic1), RecordError::UnknownMagic(1));
    let mut longer = good.clone();
    longer.push(0);
    assert!(matches!(
        try_rewrite(longer),
        RecordError::InvalidLength { .. }
    ));
    assert!(matches!(
        try_rewrite(good[..good.len() - 1].to_vec()),
        RecordError::InvalidLength { .. }
    ));
    // Damage elsewhere survives a rewrite: the CRC still does not match.
    let mut damaged = good.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 0x40;
    rewrite_producer_state(&mut damaged, &state).unwrap();
    assert!(matches!(
        RecordBatch::decode(&Bytes::from(damaged), &DecodeOptions::default()),
        Err(RecordError::CrcMismatch { .. })
    ));
}

#[test]
fn one_builder_makes_many_batches() {
    let recs = samples();
    for codec in Compression::ALL {
        let mut b = BatchBuilder::new(opts(codec), 1 << 20).unwrap();
        // Three batches, each still held while the next is built.
        let first = build(&mut b, &recs[..2]);
        let second = build(&mut b, &recs[2..]);
        let third = build(&mut b, &recs);
        check_decodes_to(&first.bytes, &recs[..2]);
        check_decodes_to(&second.bytes, &recs[2..]);
        check_decodes_to(&third.bytes, &recs);
        // Reset drops the open batch; sealing nothing is an error.
        let _ = append(&mut b, &recs[0]);
        b.reset();
        assert!(b.is_empty());
        assert_eq!(
            b.seal(),
            Err(RecordError::Unencodable(
                "a batch needs at least one record"
            ))
        );
        // Reconfigure switches codec, keeping everything else working.
        b.reconfigure(opts(Compression::Zstd), 1 << 20).unwrap();
        let _ = append(&mut b, &recs[0]);
        let h = check_decodes_to(&b.seal().unwrap().bytes, &recs[..1]);
        assert_eq!(h.attributes.compression, Compression::Zstd);
    }
}

#[test]
fn a_dropped_batch_gives_its_memory_back() {
    let recs: Vec<Rec> = (0..100)
        .map(|i| rec(i, None, Some(&[i as u8; 100])))
        .collect();
    for codec in Compression::ALL {
        let mut b = BatchBuilder::new(opts(codec), 16 * 1024).unwrap();
        let first = build(&mut b, &recs);
        let at = first.bytes.as_ptr();
        drop(first);
        // Nobody holds the first batch: the second is written over its memory.
        let second = build(&mut b, &recs);
        assert_eq!(second.bytes.as_ptr(), at, "{codec:?}");
        // The second is held (in flight): the third goes elsewhere and leaves it intact.
        let copy = second.bytes.clone();
        let third = build(&mut b, &recs[..50]);
        assert_ne!(third.bytes.as_ptr(), at);
        assert_eq!(second.bytes, copy);
        check_decodes_to(&second.bytes, &recs);
        check_decodes_to(&third.bytes, &recs[..50]);
    }
}

#[test]
fn a_rejected_record_leaves_the_batch_unchanged() {
    let recs = samples();
    let mut b = BatchBuilder::new(opts(Compression::None), 100).unwrap();
    let _ = append(&mut b, &recs[0]);
    // Too big for what is left of batch.size.
    assert_eq!(append(&mut b, &recs[3]), Append::Full);
    // Many headers: still one record, just large.
    let keys: Vec<String> = (0..1000).map(|i| format!("h{i}")).collect();
    let many: Vec<NewHeader<'_>> = keys
        .iter()
        .map(|k| NewHeader {
            key: k,
            value: None,
        })
        .collect();
    assert_eq!(b.append(5, None, None, &many).unwrap(), Append::Full);
    let sealed = b.seal().unwrap();
    assert_eq!(
        &sealed.bytes[..],
        &one_shot(&opts(Compression::None), &recs[..1])[..]
    );
    // Alone, the record with 1000 headers round-trips.
    assert_eq!(
        b.append(5, None, None, &many).unwrap(),
        Append::Appended { offset_delta: 0 }
    );
    let bytes = b.seal().unwrap().bytes.freeze();
    let (batch, _) = RecordBatch::decode(&bytes, &DecodeOptions::default()).unwrap();
    let r = batch.records().unwrap().next().unwrap().unwrap();
    assert_eq!(r.headers.len(), 1000);
    assert_eq!(r.headers.iter().nth(999).unwrap().key_str(), Some("h999"));
}
