//! The real adapters against the simulated cluster on loopback sockets
//! (`kafka_tests::sim::serve`): each adapter's idempotent producer sends keyed records to
//! a 3-broker simulated cluster while a seeded fault schedule moves partition leaders,
//! resets every connection to a broker (requests in flight applied or not) and kills and
//! restarts brokers — faults a real broker does not produce on demand. Afterwards the
//! simulated logs must hold every record exactly once, per partition in send order, at
//! the offset its delivery reported.
//!
//! Sends are paced ([`RATE`] records per millisecond) so that the faults land while
//! records flow. `SIM_ADAPTER_SEED` replays a fault schedule (it is printed);
//! `SIM_ADAPTER_RECORDS` (default 20,000) sets the records per adapter.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use kafka_core::config::ClientConfig;
use kafka_core::record::{Batch, Batches, DecodeOptions};
use kafka_tests::producer_suite::{self as suite, PARTITIONS};
use kafka_tests::sim::cluster::SimCluster;
use kafka_tests::sim::serve::{schedule_seed, Faults, SimServer};

const TOPIC: &str = "t";

fn records() -> usize {
    std::env::var("SIM_ADAPTER_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

/// Records handed to the producer per millisecond.
const RATE: u128 = 10;

/// How many records may have been handed over `since` (the pacing).
fn allowed(since: Instant) -> usize {
    (since.elapsed().as_millis() * RATE + 1) as usize
}

fn producer_config(bootstrap: &str) -> ClientConfig {
    suite::config(
        bootstrap,
        &[
            ("enable.idempotence", "true"),
            ("acks", "all"),
            ("batch.size", "4096"),
            ("request.timeout.ms", "2000"),
            ("retry.backoff.ms", "20"),
            ("retry.backoff.max.ms", "200"),
            ("reconnect.backoff.ms", "20"),
            ("reconnect.backoff.max.ms", "200"),
            ("metadata.max.age.ms", "1000"),
        ],
    )
}

/// Runs `produce` (an adapter sending `n` records, returning `(partition, offset)` per
/// record in send order) under a seeded [`Faults`] schedule, then checks the simulated
/// logs.
fn under_faults(adapter: &str, produce: impl FnOnce(&str, usize) -> Vec<(i32, i64)>) {
    let seed = schedule_seed(adapter);
    let n = records();
    let mut cluster = SimCluster::new(3);
    cluster.create_topic(TOPIC, PARTITIONS);
    let server = Arc::new(SimServer::start(cluster));
    println!("{adapter}: seed {seed} (SIM_ADAPTER_SEED={seed} replays the schedule)");
    let faults = Faults::start(&server, adapter, seed, TOPIC);
    let started = Instant::now();
    let delivered = produce(&server.bootstrap(), n);
    let injected = faults.stop();
    assert_eq!(delivered.len(), n);
    let logs = server.with_cluster(|c| logs(c));
    check(adapter, &delivered, &logs);
    println!(
        "{adapter}: {n} records in {:?}, every one once and in order; {injected:?}",
        started.elapsed()
    );
    assert!(injected.total() > 0, "{adapter}: no fault was injected");
}

/// Every partition's log: `(offset, record index)` in offset order.
fn logs(cluster: &SimCluster) -> BTreeMap<i32, Vec<(i64, usize)>> {
    let mut out = BTreeMap::new();
    for (p, part) in cluster.topics[TOPIC].partitions.iter().enumerate() {
        let mut log = Vec::new();
        for stored in &part.log {
            for batch in Batches::new(stored.bytes.clone(), DecodeOptions::default()) {
                let Ok(Batch::V2(batch)) = batch else {
                    panic!("partition {p}: a stored batch does not decode");
                };
                for r in batch.records().expect("records") {
                    let r = r.expect("record");
                    let value = r.value.clone().unwrap_or_default();
                    // suite::value(i): "value-{i:08}-" then padding.
                    let index = std::str::from_utf8(&value[6..14])
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .expect("a value written by this test");
                    log.push((r.offset, index));
                }
            }
        }
        out.insert(p as i32, log);
    }
    out
}

/// Every delivered record is in its partition's log exactly once, at the offset its
/// delivery reported, and each log holds its records in send order.
fn check(adapter: &str, delivered: &[(i32, i64)], logs: &BTreeMap<i32, Vec<(i64, usize)>>) {
    let mut seen = vec![0u32; delivered.len()];
    for (p, log) in logs {
        let mut last: Option<usize> = None;
        for &(offset, index) in log {
            assert!(
                index < delivered.len(),
                "{adapter}: {p}@{offset}: index {index}"
            );
            seen[index] += 1;
            assert!(
                last.is_none_or(|l| index > l),
                "{adapter}: partition {p} out of send order at offset {offset}: {index} after {last:?}"
            );
            last = Some(index);
            assert_eq!(
                delivered[index],
                (*p, offset),
                "{adapter}: record {index} reported at another place"
            );
        }
    }
    for (i, count) in seen.iter().enumerate() {
        assert_eq!(
            *count, 1,
            "{adapter}: record {i} is in the logs {count} times"
        );
    }
}

#[test]
fn blocking_producer_survives_simulated_faults() {
    under_faults("blocking", |bootstrap, n| {
        use kafka_blocking::{Producer, Record};
        let producer = Producer::new(producer_config(bootstrap)).expect("producer");
        let topic: Arc<str> = TOPIC.into();
        let began = Instant::now();
        let deliveries: Vec<_> = (0..n)
            .map(|i| {
                while i >= allowed(began) {
                    thread::sleep(Duration::from_millis(1));
                }
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
    });
}

#[test]
fn tokio_producer_survives_simulated_faults() {
    under_faults("tokio", |bootstrap, n| {
        use kafka_tokio::{Producer, Record};
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let producer = Producer::new(producer_config(bootstrap)).expect("producer");
            let topic: Arc<str> = TOPIC.into();
            let mut deliveries = Vec::with_capacity(n);
            let began = Instant::now();
            for i in 0..n {
                while i >= allowed(began) {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                let record = Record::new(topic.clone(), suite::value(i)).key(suite::key(i));
                deliveries.push(producer.send(record).await.expect("send"));
            }
            let mut out = Vec::with_capacity(n);
            for (i, d) in deliveries.into_iter().enumerate() {
                let Ok(outcome) = tokio::time::timeout(Duration::from_secs(60), d).await else {
                    panic!("record {i}: no outcome in 60 s");
                };
                let m = match outcome {
                    Ok(m) => m,
                    Err(e) => {
                        let metrics = producer.metrics().await;
                        panic!("record {i}: {e}; {metrics:?}");
                    }
                };
                out.push((m.partition, m.offset));
            }
            out
        })
    });
}

#[test]
fn async_std_producer_survives_simulated_faults() {
    under_faults("async-std", |bootstrap, n| {
        use kafka_async_std::{Producer, Record};
        smol::block_on(async {
            let producer = Producer::with_spawner(producer_config(bootstrap), |task| {
                smol::spawn(task).detach()
            })
            .expect("producer");
            let topic: Arc<str> = TOPIC.into();
            let mut deliveries = Vec::with_capacity(n);
            let began = Instant::now();
            for i in 0..n {
                while i >= allowed(began) {
                    smol::Timer::after(Duration::from_millis(1)).await;
                }
                let record = Record::new(topic.clone(), suite::value(i)).key(suite::key(i));
                deliveries.push(producer.send(record).await.expect("send"));
            }
            let mut out = Vec::with_capacity(n);
            for (i, d) in deliveries.into_iter().enumerate() {
                let m = d.await.unwrap_or_else(|e| panic!("record {i}: {e}"));
                out.push((m.partition, m.offset));
            }
            out
        })
    });
}

#[test]
fn mio_producer_survives_simulated_faults() {
    under_faults("mio", |bootstrap, n| {
        use kafka_core::client::{Event, OpId};
        use kafka_core::producer::{Producer, ProducerRecord, SendError};
        use kafka_mio::mio::{Events, Poll};
        use kafka_mio::Driver;

        fn turn(poll: &mut Poll, events: &mut Events, driver: &mut Driver, id: OpId<Producer>) {
            let wait = driver.timeout().map(|t| t.min(Duration::from_millis(50)));
            poll.poll(events, wait).expect("poll");
            for event in events.iter() {
                if driver.owns(event.token()) {
                    driver.handle_event(poll.registry(), event);
                }
            }
            driver.poll(poll.registry());
            while let Some(event) = driver.poll_event() {
                let _ = matches!(event, Event::Notify(op) if id == op);
            }
        }

        let mut poll = Poll::new().expect("poll");
        let mut events = Events::with_capacity(256);
        let mut driver =
            Driver::new(producer_config(bootstrap), poll.registry(), 0..64).expect("driver");
        let id = driver.start_producer().expect("producer");
        let mut appended = Vec::with_capacity(n);
        let mut outcomes = std::collections::HashMap::new();
        let started = Instant::now();
        let mut next = 0;
        loop {
            assert!(started.elapsed() < Duration::from_secs(120), "hangs");
            while next < n.min(allowed(started)) {
                let (key, value) = (suite::key(next), suite::value(next));
                let record = ProducerRecord::new(TOPIC, &value).key(key.as_bytes());
                match driver.producer(id).send(&record) {
                    Ok(a) => {
                        appended.push(a);
                        next += 1;
                    }
                    Err(SendError::WouldBlock(_)) => break,
                    Err(e) => panic!("record {next}: {e}"),
                }
            }
            if next == n {
                driver.producer(id).flush();
            }
            turn(&mut poll, &mut events, &mut driver, id);
            while let Some(report) = driver.producer(id).take_report() {
                outcomes.insert(report.batch, report.outcome.clone());
            }
            let batches = appended
                .iter()
                .map(|a| a.batch)
                .max()
                .map_or(0, |b| b.0 + 1);
            if next == n && outcomes.len() >= batches as usize {
                break;
            }
        }
        appended
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let delivered = outcomes[&a.batch]
                    .as_ref()
                    .unwrap_or_else(|e| panic!("record {i}: {e}"));
                (a.partition, delivered.offset(a.index))
            })
            .collect()
    });
}
