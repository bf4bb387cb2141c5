//! Fetch answers that are cut short or lie: a partial batch at the end of every answer,
//! batches out of offset order, an aborted-transaction list naming producers the log
//! never saw, and a decompression bomb. Each partition recovers or fails alone, with a
//! typed error, and no record is handed out twice.

use std::time::Duration;

use bytes::Bytes;

use super::*;
use crate::record::{BatchBuilder, BatchOptions, Compression, RecordError};

#[test]
fn a_partial_batch_at_the_end_of_each_answer_is_fetched_again_whole() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    h.partial_tails = true;
    h.assign_all();
    h.run(Duration::from_millis(300));
    for p in 0..PARTITIONS {
        assert_eq!(h.values(p), expected(p, 20), "partition {p}");
    }
    assert!(h.errors.is_empty(), "{:?}", h.errors);
}

#[test]
fn batches_out_of_offset_order_are_not_handed_out_again() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    // Partition 0's third batch (offsets 10-14) is served as a copy of its first
    // (offsets 0-4): after offset 9 the answer goes back to 0.
    let first = h.logs[0].batches[0].1.clone();
    h.logs[0].batches[2].1 = first;
    h.assign_all();
    h.run(Duration::from_millis(300));
    let got = h.values(0);
    let mut want = expected(0, 10);
    want.extend(expected(0, 20)[15..].iter().cloned());
    assert_eq!(got, want, "nothing behind the position is handed out");
    let offsets: Vec<i64> = h
        .records
        .iter()
        .filter(|r| r.partition == 0)
        .map(|r| r.offset)
        .collect();
    assert!(offsets.windows(2).all(|w| w[0] < w[1]), "{offsets:?}");
    assert_eq!(h.values(1), expected(1, 20));
    assert_eq!(h.values(2), expected(2, 20));
}

#[test]
fn an_aborted_list_naming_unknown_producers_hides_nothing() {
    let mut h = Harness::new(&[
        ("auto.offset.reset", "earliest"),
        ("isolation.level", "read_committed"),
    ]);
    for log in &mut h.logs {
        log.aborted.extend([(999, 0), (12_345, 7), (-1, 3)]);
    }
    h.assign_all();
    h.run(Duration::from_millis(300));
    for p in 0..PARTITIONS {
        assert_eq!(h.values(p), expected(p, 20), "partition {p}");
    }
    assert!(h.errors.is_empty(), "{:?}", h.errors);
}

/// Appends one batch of `codec` whose single value is `size` zero bytes to `log` (a few
/// KiB on the wire), then one ordinary record; returns the batch's wire size.
fn append_bomb(log: &mut Log, codec: Compression, size: usize) -> usize {
    let opts = BatchOptions {
        base_offset: log.next,
        partition_leader_epoch: log.epoch,
        compression: codec,
        ..Default::default()
    };
    let mut b = BatchBuilder::new(opts, usize::MAX).unwrap();
    let zeros = vec![0u8; size];
    let _ = b.append(1, None, Some(&zeros), &[]).unwrap();
    drop(zeros);
    let bomb: Bytes = b.seal().unwrap().bytes.freeze();
    let wire = bomb.len();
    log.batches.push((log.next, bomb));
    log.next += 1;
    log.append(&["after"], None);
    wire
}

/// The cap follows the configured fetch budget, not the 50 MiB default: with
/// `fetch.max.bytes` and `max.partition.fetch.bytes` at 1 MiB, an 8 MiB bomb (of every
/// codec) is stopped at 1 MiB. Without the cap taken from the config, the 8 MiB batch
/// decompresses (under the default 50 MiB) and is handed out.
#[test]
fn a_bomb_is_stopped_at_the_configured_fetch_budget() {
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let mut h = Harness::new(&[
            ("auto.offset.reset", "earliest"),
            ("fetch.max.bytes", "1048576"),
            ("max.partition.fetch.bytes", "1048576"),
        ]);
        let wire = append_bomb(&mut h.logs[1], codec, 8 << 20);
        assert!(wire < 1 << 20, "{codec:?}: {wire} bytes on the wire");
        h.assign_all();
        h.run(Duration::from_millis(300));
        assert_eq!(h.values(1), expected(1, 20), "{codec:?}: before the bomb");
        assert!(
            matches!(
                &h.errors[..],
                [ConsumeError::Corrupt {
                    partition: 1,
                    offset: 20,
                    error: RecordError::DecompressedTooLarge { cap: 1_048_576 },
                    ..
                }]
            ),
            "{codec:?}: {:?}",
            h.errors
        );
        assert_eq!(h.values(0), expected(0, 20), "{codec:?}");
        assert_eq!(h.values(2), expected(2, 20), "{codec:?}");
    }
}

#[test]
fn a_decompression_bomb_is_a_typed_error_for_its_partition_alone() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    // 64 MiB of zeros in one zstd batch: a few KiB on the wire, past the 50 MiB cap.
    let log = &mut h.logs[2];
    let opts = BatchOptions {
        base_offset: log.next,
        partition_leader_epoch: log.epoch,
        compression: Compression::Zstd,
        ..Default::default()
    };
    let mut b = BatchBuilder::new(opts, usize::MAX).unwrap();
    let zeros = vec![0u8; 64 << 20];
    let _ = b.append(1, None, Some(&zeros), &[]).unwrap();
    drop(zeros);
    let bomb: Bytes = b.seal().unwrap().bytes.freeze();
    assert!(bomb.len() < 1 << 20, "{} bytes on the wire", bomb.len());
    log.batches.push((log.next, bomb));
    log.next += 1;
    log.append(&["after"], None);
    h.assign_all();
    h.run(Duration::from_millis(300));
    assert_eq!(h.values(2), expected(2, 20), "the records before the bomb");
    assert!(
        matches!(
            &h.errors[..],
            [ConsumeError::Corrupt {
                partition: 2,
                offset: 20,
                error: RecordError::DecompressedTooLarge { .. },
                ..
            }]
        ),
        "{:?}",
        h.errors
    );
    assert_eq!(h.values(0), expected(0, 20));
    assert_eq!(h.values(1), expected(1, 20));
    let m = h.consumer(|c| c.metrics());
    assert!(m.buffered_bytes < 1 << 20, "{m:?}");
}
