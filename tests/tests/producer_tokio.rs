//! The tokio producer against the fake broker (every delivery, offsets, a full buffer)
//! and against the real broker.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_tests::fake_broker::{FakeBroker, Mode};
use kafka_tests::producer_suite::{self as suite, FAKE_RECORDS, REAL_RECORDS};
use kafka_tokio::{Error, Producer, Record};
use tokio::runtime::Runtime;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

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
        let Ok(outcome) = tokio::time::timeout(Duration::from_secs(20), d).await else {
            let metrics = producer.metrics().await;
            panic!("record {i}: no outcome within 20 s; {metrics:?}");
        };
        let m = outcome.unwrap_or_else(|e| panic!("record {i}: {e}"));
        assert_eq!(&*m.topic, &*topic);
        out.push((m.partition, m.offset));
    }
    out
}

#[test]
fn every_delivery_resolves_with_contiguous_offsets_per_partition() {
    let broker = FakeBroker::start(Mode::Produce {
        partitions: 3,
        answer: true,
    });
    let rt = runtime();
    rt.block_on(async {
        let producer = Producer::new(suite::config(&broker.addr, &[])).expect("producer");
        let delivered = produce(&producer, "t", FAKE_RECORDS).await;
        let per_partition = suite::assert_contiguous(&delivered);
        assert_eq!(per_partition.len(), 3, "keys spread over every partition");

        // The callback form, then flush: every callback has run.
        let seen = Arc::new(Mutex::new(Vec::new()));
        for i in 0..100 {
            let seen = seen.clone();
            producer
                .send_with(Record::new("t", suite::value(i)).partition(0), move |r| {
                    seen.lock().unwrap().push(r.map(|m| m.offset));
                })
                .await
                .expect("send_with");
        }
        producer.flush().await.expect("flush");
        let seen = seen.lock().unwrap().clone();
        let first = per_partition[&0];
        let want: Vec<_> = (first..first + 100).map(Ok).collect();
        assert_eq!(seen, want);

        let metrics = producer
            .close(Duration::from_secs(10))
            .await
            .expect("close");
        assert_eq!(metrics.records_delivered, FAKE_RECORDS as u64 + 100);
        let after = producer.send(Record::new("t", "late")).await;
        assert!(matches!(after, Err(Error::Closed)), "{after:?}");
    });
    assert_eq!(broker.records(), FAKE_RECORDS as u64 + 100);
}

#[test]
fn a_full_buffer_fails_the_send_after_max_block_not_a_hang() {
    let broker = FakeBroker::start(Mode::Produce {
        partitions: 3,
        answer: false,
    });
    let rt = runtime();
    rt.block_on(async {
        let producer = Producer::new(suite::full_buffer_config(&broker.addr)).expect("producer");
        let start = Instant::now();
        let mut refused = None;
        let mut pending = Vec::new();
        for i in 0..100_000 {
            match producer.send(Record::new("t", suite::value(i))).await {
                Ok(d) => pending.push(d),
                Err(e) => {
                    refused = Some(e);
                    break;
                }
            }
        }
        let waited = start.elapsed();
        assert!(
            matches!(refused, Some(Error::Timeout(d)) if d == Duration::from_millis(300)),
            "{refused:?} after {} sends",
            pending.len()
        );
        assert!(waited < Duration::from_secs(10), "{waited:?}");
        // Close gives up quickly; every staged record is then reported, none hangs.
        producer
            .close(Duration::from_millis(100))
            .await
            .expect("close");
        for d in pending {
            let outcome = tokio::time::timeout(Duration::from_secs(5), d)
                .await
                .expect("every delivery resolves");
            assert!(outcome.is_err(), "{outcome:?}");
        }
    });
}

#[test]
fn staged_records_lose_no_latency_and_flush_takes_them() {
    let broker = FakeBroker::start(Mode::Produce {
        partitions: 3,
        answer: true,
    });
    let rt = runtime();
    rt.block_on(async {
        let linger = Duration::from_millis(300);
        let config = suite::config(&broker.addr, &[("linger.ms", "300")]);
        let producer = Producer::new(config).expect("producer");
        let warm = producer
            .send(Record::new("t", "warm-up").partition(0))
            .await;
        warm.expect("send").await.expect("warm-up delivered");

        // A record for partition 0 opens a batch; one for partition 2, sent 200 ms into
        // that batch's linger, is staged until the driver's planned take, yet acked about
        // linger.ms after its own send.
        let (tx, rx) = std::sync::mpsc::channel();
        for (partition, pause) in [(0, 200), (2, 0)] {
            let (tx, sent) = (tx.clone(), Instant::now());
            producer
                .send_with(Record::new("t", "timed").partition(partition), move |r| {
                    r.expect("delivered");
                    let _ = tx.send((partition, Instant::now() - sent));
                })
                .await
                .expect("send_with");
            tokio::time::sleep(Duration::from_millis(pause)).await;
        }
        for _ in 0..2 {
            let waiting = Instant::now();
            let (partition, took) = loop {
                match rx.try_recv() {
                    Ok(ack) => break ack,
                    Err(_) if waiting.elapsed() > Duration::from_secs(5) => panic!("no ack"),
                    Err(_) => tokio::time::sleep(Duration::from_millis(2)).await,
                }
            };
            assert!(
                took < linger + Duration::from_millis(70),
                "partition {partition} acked after {took:?}"
            );
        }

        // With a linger far beyond the test, a flush sends what is staged and open.
        let deliveries = {
            let mut d = Vec::new();
            for i in 0..5 {
                d.push(
                    producer
                        .send(Record::new("t", suite::value(i)))
                        .await
                        .expect("send"),
                );
            }
            d
        };
        let started = Instant::now();
        producer.flush().await.expect("flush");
        assert!(
            started.elapsed() < linger,
            "the flush did not wait for linger"
        );
        for d in deliveries {
            d.await.expect("delivered");
        }
        producer
            .close(Duration::from_secs(10))
            .await
            .expect("close");
    });
}

#[test]
fn real_broker_delivers_ten_thousand_keyed_records_in_order() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("producer_tokio real broker") else {
        return;
    };
    let topic = suite::unique_topic("tokio");
    suite::create_topic(&bootstrap, &topic);
    let rt = runtime();
    rt.block_on(async {
        let producer = Producer::new(suite::config(&bootstrap, &[])).expect("producer");
        let delivered = produce(&producer, &topic, REAL_RECORDS).await;
        let per_partition = suite::assert_contiguous(&delivered);
        assert_eq!(per_partition.len(), 3);
        assert_eq!(per_partition.values().sum::<i64>(), REAL_RECORDS as i64);
        producer
            .close(Duration::from_secs(30))
            .await
            .expect("close");
    });
}
