//! The async-io producer (async-std and smol, one shared front with tokio) against the
//! fake broker (every delivery, offsets, a full buffer) and against the real broker.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_async_std::{Error, Producer, Record};
use kafka_tests::fake_broker::{FakeBroker, Mode};
use kafka_tests::producer_suite::{self as suite, FAKE_RECORDS, REAL_RECORDS};

/// Sends `n` keyed records to `topic` and returns `(partition, offset)` per record.
async fn produce(producer: &Producer, topic: &str, n: usize) -> Vec<(i32, i64)> {
    let topic: Arc<str> = topic.into();
    let mut deliveries = Vec::with_capacity(n);
    for i in 0..n {
        let record = Record::new(topic.clone(), suite::value(i)).key(suite::key(i));
        deliveries.push(producer.send(record).await.expect("send"));
    }
    let mut out = Vec::with_capacity(n);
    for (i, d) in deliveries.into_iter().enumerate() {
        let m = d.await.unwrap_or_else(|e| panic!("record {i}: {e}"));
        out.push((m.partition, m.offset));
    }
    out
}

async fn deliveries_and_callbacks(producer: Producer, broker: &FakeBroker) {
    let delivered = produce(&producer, "t", FAKE_RECORDS).await;
    let per_partition = suite::assert_contiguous(&delivered);
    assert_eq!(per_partition.len(), 3, "keys spread over every partition");
    let seen = Arc::new(Mutex::new(Vec::new()));
    for i in 0..100 {
        let seen = seen.clone();
        producer
            .send_with(Record::new("t", suite::value(i)).partition(2), move |r| {
                seen.lock().unwrap().push(r.map(|m| m.offset));
            })
            .await
            .expect("send_with");
    }
    producer.flush().await.expect("flush");
    let first = per_partition[&2];
    let want: Vec<_> = (first..first + 100).map(Ok).collect();
    assert_eq!(*seen.lock().unwrap(), want);
    let metrics = producer
        .close(Duration::from_secs(10))
        .await
        .expect("close");
    assert_eq!(metrics.records_delivered, FAKE_RECORDS as u64 + 100);
    assert!(matches!(
        producer.send(Record::new("t", "late")).await,
        Err(Error::Closed)
    ));
    assert_eq!(broker.records(), FAKE_RECORDS as u64 + 100);
}

async fn full_buffer(producer: Producer) {
    let start = Instant::now();
    let mut pending = Vec::new();
    let refused = loop {
        match producer
            .send(Record::new("t", suite::value(pending.len())))
            .await
        {
            Ok(d) => pending.push(d),
            Err(e) => break e,
        }
        assert!(pending.len() < 100_000, "never refused");
    };
    assert!(
        matches!(refused, Error::Timeout(d) if d == Duration::from_millis(300)),
        "{refused:?}"
    );
    assert!(start.elapsed() < Duration::from_secs(10));
    producer
        .close(Duration::from_millis(100))
        .await
        .expect("close");
    for d in pending {
        assert!(d.await.is_err());
    }
}

fn produce_broker(answer: bool) -> FakeBroker {
    FakeBroker::start(Mode::Produce {
        partitions: 3,
        answer,
    })
}

#[test]
fn async_std_every_delivery_resolves_with_contiguous_offsets() {
    let broker = produce_broker(true);
    let producer = Producer::new(suite::config(&broker.addr, &[])).expect("producer");
    async_std::task::block_on(deliveries_and_callbacks(producer, &broker));
}

#[test]
fn smol_every_delivery_resolves_with_contiguous_offsets() {
    let broker = produce_broker(true);
    let producer = Producer::with_spawner(suite::config(&broker.addr, &[]), |task| {
        smol::spawn(task).detach()
    })
    .expect("producer");
    smol::block_on(deliveries_and_callbacks(producer, &broker));
}

#[test]
fn async_std_full_buffer_fails_the_send_after_max_block() {
    let broker = produce_broker(false);
    let producer = Producer::new(suite::full_buffer_config(&broker.addr)).expect("producer");
    async_std::task::block_on(full_buffer(producer));
}

#[test]
fn smol_full_buffer_fails_the_send_after_max_block() {
    let broker = produce_broker(false);
    let producer = Producer::with_spawner(suite::full_buffer_config(&broker.addr), |task| {
        smol::spawn(task).detach()
    })
    .expect("producer");
    smol::block_on(full_buffer(producer));
}

#[test]
fn real_broker_delivers_ten_thousand_keyed_records_in_order() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("producer_async_std real broker") else {
        return;
    };
    let topic = suite::unique_topic("async-std");
    suite::create_topic(&bootstrap, &topic);
    let producer = Producer::new(suite::config(&bootstrap, &[])).expect("producer");
    async_std::task::block_on(async {
        let delivered = produce(&producer, &topic, REAL_RECORDS).await;
        let per_partition = suite::assert_contiguous(&delivered);
        assert_eq!(per_partition.values().sum::<i64>(), REAL_RECORDS as i64);
        producer
            .close(Duration::from_secs(30))
            .await
            .expect("close");
    });
}
