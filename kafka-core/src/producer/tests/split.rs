//! A broker refusing batches as too large (MESSAGE_TOO_LARGE, over the topic's
//! `max.message.bytes`): batches of several records are split and every record still
//! ends once, in order, at the offset reported; a batch of one record fails alone.

use std::collections::BTreeSet;
use std::time::Duration;

use super::{all_reported, flush, metrics, value, warmed};
use crate::producer::ProduceError;
use crate::protocol::KafkaCode;

/// The topic's `max.message.bytes` in these scenarios: a batch of 100 records of
/// `value` (about 11 KB) is over it, a quarter of one is not.
const MAX_MESSAGE_BYTES: usize = 3000;

#[test]
fn a_batch_too_large_for_the_broker_is_split_and_every_record_delivered_once_in_order() {
    // Compressed, the 100 records take about 1 KB on the wire: a smaller limit.
    for (idempotence, codec, max) in [
        ("true", "none", MAX_MESSAGE_BYTES),
        ("false", "none", MAX_MESSAGE_BYTES),
        ("true", "lz4", 300),
    ] {
        let mut c = warmed(&[
            ("linger.ms", "60000"),
            ("enable.idempotence", idempotence),
            ("compression.type", codec),
        ]);
        c.faults.max_message_bytes = Some(max);
        let batches: BTreeSet<_> = (6..106).map(|n| c.send_ok(0, &value(n)).batch).collect();
        assert_eq!(batches.len(), 1, "the 100 records share one batch");
        let batch = *batches.first().expect("a batch");
        flush(&mut c);
        assert!(c.run_until(Duration::from_secs(5), all_reported));
        let pieces: Vec<_> = c.reports.iter().filter(|r| r.batch == batch).collect();
        assert!(pieces.len() >= 2, "split: {pieces:?}");
        // The pieces cover the batch's records once each, in order, all delivered.
        let mut next = 0;
        for r in &pieces {
            assert_eq!(r.first, next, "{pieces:?}");
            let d = r.outcome.as_ref().expect("delivered");
            assert_eq!(d.first_index, r.first);
            next += r.records;
        }
        assert_eq!(next, 100);
        // Every record at its reported offset, the log in send order, nothing twice.
        assert_eq!(c.check_guarantees(), 106, "{idempotence} {codec}");
        c.check_sequences();
        assert!(
            c.parts[0].batches.iter().all(|b| b.4 <= max),
            "only pieces within max.message.bytes were appended"
        );
        let m = metrics(&mut c);
        assert!(m.batch_splits >= 1, "{codec}: {m:?}");
        assert_eq!(
            m.errors.get(&KafkaCode::MESSAGE_TOO_LARGE.0),
            Some(&m.batch_splits),
            "each refusal split a batch"
        );
        assert_eq!(
            m.epoch_bumps, 0,
            "the pieces carry the batch's sequences on"
        );
        assert_eq!(m.duplicates, 0);
        assert!(!m
            .errors
            .contains_key(&KafkaCode::OUT_OF_ORDER_SEQUENCE_NUMBER.0));
        assert_eq!(m.records_delivered, 106);
        assert_eq!(m.buffer_used, 0, "the pieces released their memory");
    }
}

#[test]
fn a_split_ahead_of_batches_in_flight_keeps_their_order_and_sequences() {
    let mut c = warmed(&[("linger.ms", "60000")]);
    c.faults.max_message_bytes = Some(MAX_MESSAGE_BYTES);
    // A batch of 60 records, then 20 records of partition 0 (one batch each: the flush
    // is pending), five requests in flight at once. The broker refuses the first as too
    // large, so it answers the ones behind it OUT_OF_ORDER_SEQUENCE_NUMBER by itself.
    c.faults.hold = true;
    for n in 6..66 {
        c.send_ok(0, &value(n));
    }
    flush(&mut c);
    c.step(Duration::from_millis(1));
    for n in 66..86 {
        c.send_ok(0, &value(n));
        c.step(Duration::from_millis(1));
    }
    assert_eq!(metrics(&mut c).requests_in_flight, 5);
    c.faults.hold = false;
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    assert!(
        c.reports.iter().all(|r| r.outcome.is_ok()),
        "{:?}",
        c.reports
    );
    assert_eq!(c.check_guarantees(), 86);
    c.check_sequences();
    let m = metrics(&mut c);
    assert!(m.batch_splits >= 1, "{m:?}");
    assert!(
        m.errors
            .contains_key(&KafkaCode::OUT_OF_ORDER_SEQUENCE_NUMBER.0),
        "the batches behind were refused out of order, then retried: {m:?}"
    );
    assert_eq!(m.epoch_bumps, 0);
    assert_eq!(m.duplicates, 0);
}

#[test]
fn a_single_record_too_large_for_the_broker_fails_alone_with_a_typed_error() {
    let mut c = warmed(&[("linger.ms", "60000")]);
    c.faults.max_message_bytes = Some(500);
    let mut big = value(7);
    big.extend_from_slice(&[b'y'; 1000]);
    c.send_ok(0, &value(6));
    let alone = c.send_ok(1, &big);
    c.send_ok(0, &value(8));
    flush(&mut c);
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    let failed: Vec<_> = c.reports.iter().filter(|r| r.outcome.is_err()).collect();
    assert_eq!(failed.len(), 1, "{:?}", c.reports);
    assert_eq!(failed[0].batch, alone.batch);
    assert!(
        matches!(failed[0].outcome, Err(ProduceError::RecordTooLarge { bytes }) if bytes > 1000),
        "{:?}",
        failed[0].outcome
    );
    // The partition goes on (under a new epoch: the refused batch left a hole).
    c.send_ok(1, &value(9));
    flush(&mut c);
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    assert_eq!(c.check_guarantees(), 6 + 3);
    c.check_sequences();
    let m = metrics(&mut c);
    assert_eq!(m.batch_splits, 0);
    assert_eq!(m.records_failed, 1);
}
