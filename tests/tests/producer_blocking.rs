//! The blocking producer against the fake broker (every delivery, offsets, a full
//! buffer) and against the real broker.

use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use kafka_blocking::{Error, Producer, Record};
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
