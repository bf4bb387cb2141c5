//! `buffer.memory` is a bound, not a target: a record is refused (`WouldBlock`) before
//! the bytes charged would pass it, also when the record needs a new batch because the
//! open one is full.

use std::time::Duration;

use super::cluster::Cluster;
use super::{all_reported, flush, metrics, value};
use crate::producer::{Blocked, SendError};

#[test]
fn a_full_batch_does_not_open_another_past_buffer_memory() {
    // Room for two batches' reservations (16 KiB + header each), not three.
    let mut c = Cluster::new(&[
        ("buffer.memory", "40000"),
        ("batch.size", "16384"),
        ("linger.ms", "60000"),
    ]);
    c.send_ok(0, &value(0));
    flush(&mut c);
    assert!(c.run_until(Duration::from_secs(2), all_reported));
    let reservation = 16384 + crate::record::BATCH_HEADER_LEN;
    c.faults.hold = true;
    let mut refused = None;
    let mut taken = 0;
    for n in 1..10_000u64 {
        match c.send(0, &value(n)) {
            Ok(_) => taken += 1,
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
        let m = metrics(&mut c);
        assert!(
            m.buffer_used <= m.buffer_limit,
            "record {n}: {} charged over {}",
            m.buffer_used,
            m.buffer_limit
        );
    }
    assert_eq!(refused, Some(SendError::WouldBlock(Blocked::BufferFull)));
    let m = metrics(&mut c);
    assert!(
        m.buffer_used + reservation > m.buffer_limit,
        "refused only when another batch would not fit: {m:?}"
    );
    assert!(taken > 16384 / 120 * 2, "two batches filled first: {taken}");
    // The batch the refused record did not fit in is sent at once, not after linger.ms.
    c.step(Duration::from_millis(1));
    assert_eq!(metrics(&mut c).requests_in_flight, 2);
    // Nothing is freed while the answers are held, so nothing says "try again". (An
    // adapter retries the refused record on each notification: a wake-up per refusal
    // would spin it.)
    assert_eq!(
        c.send(0, &value(10_000)),
        Err(SendError::WouldBlock(Blocked::BufferFull))
    );
    let mut seen = c.notifies;
    let mut retries = 0;
    for _ in 0..50 {
        c.step(Duration::from_millis(1));
        if c.notifies > seen {
            seen = c.notifies;
            retries += 1;
            assert_eq!(
                c.send(0, &value(10_000)),
                Err(SendError::WouldBlock(Blocked::BufferFull))
            );
        }
    }
    assert_eq!(retries, 0, "no wake-up while the buffer stays full");
    c.faults.hold = false;
    assert!(c.run_until(Duration::from_secs(2), all_reported));
    assert!(
        c.send(0, &value(20_000)).is_ok(),
        "room again once answered"
    );
    assert!(c.run_until(Duration::from_secs(70), all_reported));
    assert_eq!(c.check_guarantees(), 1 + taken + 1);
}

/// The memory of answered batches is kept for the next batches (as Java's
/// `BufferPool`), so a busy producer does not allocate and fault in fresh pages per
/// batch; what the pool keeps counts with the charged bytes against `buffer.memory`,
/// and gives way to records when the buffer fills.
#[test]
fn answered_batches_memory_is_reused_within_buffer_memory() {
    let mut c = Cluster::new(&[
        ("buffer.memory", "200000"),
        ("batch.size", "16384"),
        ("linger.ms", "60000"),
    ]);
    let reservation = 16384 + crate::record::BATCH_HEADER_LEN;
    let within =
        |m: &crate::producer::ProducerMetrics| m.buffer_used + m.buffer_pooled <= m.buffer_limit;
    // Batches of partition 0 queue up behind held answers: each new one is written in
    // new memory, the one before it keeps its own.
    c.faults.hold = true;
    let mut sent = 0;
    for n in 0..600u64 {
        c.send_ok(0, &value(n));
        sent += 1;
        let m = metrics(&mut c);
        assert!(within(&m), "record {n}: {m:?}");
    }
    flush(&mut c);
    c.faults.hold = false;
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    let m = metrics(&mut c);
    assert!(
        m.buffer_pooled >= 2 * reservation,
        "answered batches' memory kept: {m:?}"
    );
    assert!(within(&m), "{m:?}");
    // A partition's first batch takes a kept buffer instead of allocating.
    let before = m.buffer_pooled;
    c.send_ok(1, &value(1_000));
    sent += 1;
    let m = metrics(&mut c);
    assert_eq!(m.buffer_pooled, before - reservation, "{m:?}");
    // Filling the buffer while answers are held: the pool gives way, the bound holds.
    c.faults.hold = true;
    for n in 0..10_000u64 {
        if c.send(2, &value(2_000 + n)).is_err() {
            break;
        }
        sent += 1;
        let m = metrics(&mut c);
        assert!(within(&m), "record {n}: {m:?}");
    }
    let m = metrics(&mut c);
    assert!(
        m.buffer_used + reservation > m.buffer_limit,
        "refused only when full: {m:?}"
    );
    c.faults.hold = false;
    flush(&mut c);
    assert!(c.run_until(Duration::from_secs(70), all_reported));
    assert_eq!(c.check_guarantees(), sent);
}
