//! The blocking producer against the fake broker (every delivery, offsets, a full
//! buffer) and against the real broker.

use std::collections::VecDeque;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use kafka_blocking::{Delivery, Error, Producer, Record};
use kafka_tests::fake_broker::{FakeBroker, Mode};
use kafka_tests::producer_suite::{self as suite, FAKE_RECORDS, REAL_RECORDS};

/// Sends `n` keyed records to `topic` and returns `(partition, offset)` per record.
fn produce(producer: &Producer, topic: &str, n: usize) -> Vec<(i32, i64)> {
    let topic: Arc<str> = topic.into();
    let deliveries: Vec<_> = (0..n)
        .map(|i| {
            let record = Record::new(topic.clone(), suite::value(i)).key(suite::key(i));
            producer.send(record).expect("send")
        })
        .collect();
    deliveries
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            let m = d
                .wait_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("record {i}: no outcome in 60 s"))
                .unwrap_or_else(|e| panic!("record {i}: {e}"));
            (m.partition, m.offset)
        })
        .collect()
}

#[test]
fn every_delivery_resolves_with_contiguous_offsets_per_partition() {
    let broker = FakeBroker::start(Mode::Produce {
        partitions: 3,
        answer: true,
    });
    let producer = Producer::new(suite::config(&broker.addr, &[])).expect("producer");
    let delivered = produce(&producer, "t", FAKE_RECORDS);
    let per_partition = suite::assert_contiguous(&delivered);
    assert_eq!(per_partition.len(), 3, "keys spread over every partition");

    // The callback form, from another thread too, then flush: every callback has run.
    let (tx, rx) = mpsc::channel();
    let other = producer.clone();
    let tx2 = tx.clone();
    std::thread::spawn(move || {
        for i in 0..50 {
            let tx = tx2.clone();
            other
                .send_with(Record::new("t", suite::value(i)).partition(1), move |r| {
                    let _ = tx.send(r.map(|m| m.offset));
                })
                .expect("send_with");
        }
    })
    .join()
    .expect("sender thread");
    producer
        .flush(Duration::from_secs(10))
        .expect("flush in time");
    drop(tx);
    let offsets: Vec<i64> = rx.iter().map(|r| r.expect("delivered")).collect();
    let first = per_partition[&1];
    assert_eq!(offsets, (first..first + 50).collect::<Vec<_>>());

    let metrics = producer.close(Duration::from_secs(10)).expect("close");
    assert_eq!(metrics.records_delivered, FAKE_RECORDS as u64 + 50);
    assert!(matches!(
        producer.send(Record::new("t", "late")),
        Err(Error::Closed)
    ));
    assert_eq!(producer.metrics().expect("metrics").records_delivered, 2050);
}

#[test]
fn batches_too_large_for_the_broker_are_split_and_every_delivery_resolves_once() {
    let broker = FakeBroker::start(Mode::Produce {
        partitions: 3,
        answer: true,
    });
    broker.set_max_message_bytes(2000);
    // A long linger fills 16 KiB batches, each refused and split until its pieces fit.
    let config = suite::config(&broker.addr, &[("linger.ms", "50")]);
    let producer = Producer::new(config).expect("producer");
    let delivered = produce(&producer, "t", FAKE_RECORDS);
    // Each record resolved once, at the offset the broker gave its piece.
    let per_partition = suite::assert_contiguous(&delivered);
    assert_eq!(per_partition.values().sum::<i64>(), FAKE_RECORDS as i64);
    assert!(broker.too_large() > 0, "the broker refused batches");
    assert_eq!(
        broker.records(),
        FAKE_RECORDS as u64,
        "nothing written twice"
    );
    let metrics = producer.close(Duration::from_secs(10)).expect("close");
    assert_eq!(metrics.batch_splits, broker.too_large());
    assert_eq!(metrics.records_delivered, FAKE_RECORDS as u64);
}

#[test]
fn a_full_buffer_fails_the_send_after_max_block_not_a_hang() {
    let broker = FakeBroker::start(Mode::Produce {
        partitions: 3,
        answer: false,
    });
    let producer = Producer::new(suite::full_buffer_config(&broker.addr)).expect("producer");
    let start = Instant::now();
    let mut pending = Vec::new();
    let refused = loop {
        match producer.send(Record::new("t", suite::value(pending.len()))) {
            Ok(d) => pending.push(d),
            Err(e) => break e,
        }
        assert!(pending.len() < 100_000, "never refused");
    };
    let waited = start.elapsed();
    assert!(
        matches!(refused, Error::Timeout(d) if d == Duration::from_millis(300)),
        "{refused:?}"
    );
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    producer
        .close(Duration::from_millis(100))
        .expect("close gives up and returns");
    for d in pending {
        let outcome = d
            .wait_timeout(Duration::from_secs(5))
            .expect("every delivery resolves");
        assert!(outcome.is_err(), "{outcome:?}");
    }
}

/// A producer on `broker` with `extra` settings, warmed up: its producer id, metadata and
/// connection are there (one record delivered).
fn warmed(broker: &FakeBroker, extra: &[(&str, &str)]) -> Producer {
    let producer = Producer::new(suite::config(&broker.addr, extra)).expect("producer");
    let warm_up = producer
        .send(Record::new("t", "warm-up").partition(0))
        .expect("send");
    producer.flush(Duration::from_secs(10)).expect("flush");
    warm_up
        .wait_timeout(Duration::from_secs(10))
        .expect("warm-up delivered in time")
        .expect("warm-up delivered");
    producer
}

/// Sends `record` with a callback that reports (send instant, ack instant).
fn timed_send(producer: &Producer, record: Record, acks: &mpsc::Sender<(Instant, Instant)>) {
    let acks = acks.clone();
    let sent = Instant::now();
    producer
        .send_with(record, move |r| {
            r.expect("delivered");
            let _ = acks.send((sent, Instant::now()));
        })
        .expect("send_with");
}

#[test]
fn spaced_sends_do_not_wake_the_driver_each_and_lose_no_latency() {
    let broker = FakeBroker::start(Mode::Produce {
        partitions: 3,
        answer: true,
    });
    let linger = Duration::from_millis(300);
    let producer = warmed(&broker, &[("linger.ms", "300")]);
    let stats = || producer.client().stats().expect("stats");
    let before = stats();
    let (tx, rx) = mpsc::channel();

    // A lone record on an idle producer wakes the driver and goes out at its linger.
    timed_send(&producer, Record::new("t", "lone").partition(0), &tx);
    let (sent, acked) = rx.recv_timeout(Duration::from_secs(5)).expect("lone ack");
    let took = acked - sent;
    assert!(
        took >= linger - Duration::from_millis(5) && took < linger + Duration::from_millis(150),
        "lone record acked after {took:?} (linger {linger:?})"
    );
    let after_lone = stats();
    assert!(
        after_lone.producer_wakes - before.producer_wakes <= 2,
        "{after_lone:?}"
    );

    // Twenty records 5 ms apart while a batch lingers: the first wakes the driver, the
    // rest are staged and taken at the batch's deadline, all in that batch.
    for i in 0..20 {
        timed_send(
            &producer,
            Record::new("t", format!("spaced-{i}")).partition(1),
            &tx,
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    for i in 0..20 {
        let (sent, acked) = rx.recv_timeout(Duration::from_secs(5)).expect("spaced ack");
        assert!(
            acked - sent < linger + Duration::from_millis(150),
            "record {i}: {:?}",
            acked - sent
        );
    }
    let after_spaced = stats();
    let wakes = after_spaced.producer_wakes - after_lone.producer_wakes;
    assert!(wakes <= 3, "20 spaced sends woke the driver {wakes} times");
    assert!(after_spaced.producer_timed_pumps > after_lone.producer_timed_pumps);

    // A record for another partition, staged 200 ms into partition 0's linger, lingers
    // from its own send: acked about 300 ms after it, not 300 ms after the driver took
    // it (at partition 0's deadline, 100 ms later).
    timed_send(&producer, Record::new("t", "first").partition(0), &tx);
    std::thread::sleep(Duration::from_millis(200));
    timed_send(&producer, Record::new("t", "other").partition(2), &tx);
    let _ = rx.recv_timeout(Duration::from_secs(5)).expect("first ack");
    let (sent, acked) = rx.recv_timeout(Duration::from_secs(5)).expect("other ack");
    let took = acked - sent;
    assert!(
        took < linger + Duration::from_millis(70),
        "other partition acked after {took:?}"
    );
    producer.close(Duration::from_secs(10)).expect("close");
}

#[test]
fn a_batch_worth_of_staged_bytes_wakes_the_driver_and_flush_takes_the_rest() {
    let broker = FakeBroker::start(Mode::Produce {
        partitions: 3,
        answer: true,
    });
    // Linger far beyond the test: only full batches, a flush or close send anything.
    let producer = warmed(&broker, &[("linger.ms", "60000"), ("batch.size", "2000")]);
    let mut deliveries: VecDeque<Delivery> = (0..200)
        .map(|i| {
            let record = Record::new("t", suite::value(i)).partition(1);
            producer.send(record).expect("send")
        })
        .collect();
    // Full batches go out at once: all but at most a batch's worth staged and the open
    // batch (about 13 + 17 records here).
    let start = Instant::now();
    for i in 0..150 {
        let left = Duration::from_secs(10).saturating_sub(start.elapsed());
        let d = deliveries.pop_front().expect("delivery");
        d.wait_timeout(left)
            .unwrap_or_else(|_| panic!("record {i} waited for linger"))
            .expect("delivered");
    }
    let mut rest = Vec::from(deliveries);
    assert!(
        rest.last_mut().expect("last").try_take().is_none(),
        "the last records linger"
    );
    // The flush takes what is staged and cuts linger short.
    producer
        .flush(Duration::from_secs(5))
        .expect("flush in time");
    for (i, d) in rest.iter_mut().enumerate() {
        assert!(matches!(d.try_take(), Some(Ok(_))), "record {}", 150 + i);
    }
    // Staged records are part of a close too.
    let last = producer
        .send(Record::new("t", "last").partition(2))
        .expect("send");
    let metrics = producer.close(Duration::from_secs(5)).expect("close");
    assert_eq!(metrics.records_delivered, 1 + 200 + 1);
    assert!(last
        .wait_timeout(Duration::from_secs(1))
        .expect("done")
        .is_ok());
}

#[test]
fn real_broker_delivers_ten_thousand_keyed_records_in_order() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("producer_blocking real broker") else {
        return;
    };
    let topic = suite::unique_topic("blocking");
    suite::create_topic(&bootstrap, &topic);
    let producer = Producer::new(suite::config(&bootstrap, &[])).expect("producer");
    let delivered = produce(&producer, &topic, REAL_RECORDS);
    let per_partition = suite::assert_contiguous(&delivered);
    assert_eq!(per_partition.len(), 3);
    assert_eq!(per_partition.values().sum::<i64>(), REAL_RECORDS as i64);
    producer.close(Duration::from_secs(30)).expect("close");
}
