//! Real broker behind the fault proxy (`kafka_tests::fault_proxy`): the blocking
//! adapter's idempotent producer writes records with unique values to a fresh
//! 6-partition topic through the proxy while connections are reset after Produce
//! requests were applied (answer lost, F3) and before they were forwarded (nothing
//! applied, F4), or while the broker is a black hole for 2 s with a short
//! `request.timeout.ms` (F5). Every record must be reported delivered; read back
//! without the proxy, every value is in the log exactly once, where its report said,
//! in send order per partition.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_blocking::{Consumer, Producer, Record};
use kafka_core::protocol::ApiKey;
use kafka_tests::fault_proxy::{Fault, FaultProxy};
use kafka_tests::{consumer_suite, producer_suite as suite};

const PARTITIONS: i32 = 6;

/// What one phase of a run does: from record `from` on, `fault` (or none).
struct Phase {
    from: usize,
    fault: Option<Fault>,
}

/// Sends `n` records through `proxy` in chunks of 250, `pause` apart (so faults meet
/// many requests), putting each phase's fault in effect when its first record is sent,
/// then waits for every report and clears. Returns `(partition, offset)` per record.
fn produce(
    proxy: &FaultProxy,
    topic: &str,
    n: usize,
    pause: Duration,
    phases: &[Phase],
) -> Vec<(i32, i64)> {
    let config = suite::config(
        &proxy.bootstrap(),
        &[("batch.size", "4096"), ("request.timeout.ms", "1500")],
    );
    let producer = Producer::new(config).expect("producer");
    let name: Arc<str> = topic.into();
    let start = Instant::now();
    let mut deliveries = Vec::with_capacity(n);
    for i in 0..n {
        if let Some(p) = phases.iter().find(|p| p.from == i) {
            match p.fault {
                Some(f) => proxy.set(f),
                None => proxy.clear(),
            }
        }
        let record = Record::new(name.clone(), suite::value(i)).key(suite::key(i));
        deliveries.push(producer.send(record).expect("send"));
        if i % 250 == 249 {
            std::thread::sleep(pause);
        }
    }
    let delivered: Vec<(i32, i64)> = deliveries
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            let m = d
                .wait_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("record {i}: no outcome in 60 s"))
                .unwrap_or_else(|e| panic!("record {i}: {e}"));
            (m.partition, m.offset)
        })
        .collect();
    proxy.clear();
    eprintln!("{n} records reported delivered in {:?}", start.elapsed());
    // The client went on through the proxy after bootstrap.
    let seen = producer
        .client()
        .with_core(|c| {
            c.metadata()
                .broker(1)
                .map(|b| format!("{}:{}", b.host, b.port))
        })
        .expect("driver");
    assert_eq!(
        seen,
        proxy.addr(1).map(|a| a.to_string()),
        "node 1 is the proxy"
    );
    let metrics = producer.close(Duration::from_secs(30)).expect("close");
    eprintln!("{metrics:?}");
    assert_eq!(metrics.records_delivered, n as u64);
    delivered
}

/// Per partition, the offsets of the reports in send order are 0, 1, 2, ... (a fresh
/// topic: nothing lost, nothing twice).
fn assert_contiguous(delivered: &[(i32, i64)]) {
    let mut next: HashMap<i32, i64> = HashMap::new();
    for (i, &(p, offset)) in delivered.iter().enumerate() {
        assert!((0..PARTITIONS).contains(&p), "record {i}: partition {p}");
        let want = next.entry(p).or_insert(0);
        assert_eq!(offset, *want, "record {i} on partition {p}");
        *want += 1;
    }
    assert_eq!(next.len(), PARTITIONS as usize, "every partition used");
}

/// Reads the topic back from `bootstrap` (no proxy) and checks every value once, at
/// the offset reported, in send order per partition.
fn read_back(bootstrap: &str, topic: &str, delivered: &[(i32, i64)]) {
    let consumer = Consumer::new(consumer_suite::config(bootstrap, &[])).expect("consumer");
    consumer
        .assign((0..PARTITIONS).map(|p| (topic, p)))
        .expect("assign");
    let mut seen = vec![false; delivered.len()];
    let mut last: HashMap<i32, usize> = HashMap::new();
    let mut count = 0;
    let start = Instant::now();
    while count < delivered.len() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{count} of {} records read back",
            delivered.len()
        );
        for r in consumer.poll(Duration::from_millis(500)).expect("poll") {
            let value = r.value.as_deref().expect("value");
            let i: usize = std::str::from_utf8(&value[6..14])
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("value {value:?}"));
            assert_eq!(value, &suite::value(i)[..], "record {i}");
            assert!(!seen[i], "record {i} twice (offset {})", r.offset);
            seen[i] = true;
            assert_eq!(
                (r.partition, r.offset),
                delivered[i],
                "record {i} where reported"
            );
            if let Some(prev) = last.insert(r.partition, i) {
                assert!(prev < i, "partition {}: {prev} before {i}", r.partition);
            }
            count += 1;
        }
    }
    let extra = consumer.poll(Duration::from_millis(500)).expect("poll");
    assert!(extra.is_empty(), "more records than sent: {:?}", extra[0]);
    consumer.close().expect("close");
    eprintln!("read back: {count} records, each once, in send order per partition");
}

fn print(proxy: &FaultProxy) {
    eprintln!("fault schedule:");
    for e in proxy.log() {
        eprintln!("  {e}");
    }
    eprintln!("{:?}", proxy.stats());
}

#[test]
fn resets_after_and_before_produce_every_record_once_in_order() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("broker_fault_proxy resets") else {
        return;
    };
    let topic = suite::unique_topic("fault-proxy-resets");
    suite::create_topic_with(&bootstrap, &topic, PARTITIONS);
    let proxy = FaultProxy::start(&[(1, bootstrap.clone())]).expect("proxy");
    let n = 20_000;
    let produce_api = Some(ApiKey::Produce);
    // 80 chunks 40 ms apart: ~3 s of sending, faults in effect for ~1.3 s each.
    let delivered = produce(
        &proxy,
        &topic,
        n,
        Duration::from_millis(40),
        &[
            Phase {
                from: 0,
                fault: Some(Fault::ResetAfterRequest {
                    every: 7,
                    api: produce_api,
                }),
            },
            Phase {
                from: 8_000,
                fault: Some(Fault::ResetBeforeRequest {
                    every: 5,
                    api: produce_api,
                }),
            },
            Phase {
                from: 16_000,
                fault: None,
            },
        ],
    );
    print(&proxy);
    let stats = proxy.stats();
    let log = proxy.log();
    let fired = |what: &str| log.iter().filter(|e| e.what.starts_with(what)).count();
    let (after, before) = (fired("reset after Produce"), fired("reset before Produce"));
    eprintln!("resets after Produce: {after}, before Produce: {before}");
    assert!(after >= 1 && before >= 1, "{stats:?}");
    assert!(stats.rewritten_responses >= 1, "{stats:?}");
    assert_contiguous(&delivered);
    read_back(&bootstrap, &topic, &delivered);
}

#[test]
fn black_hole_for_two_seconds_then_every_record_once_in_order() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("broker_fault_proxy black hole") else {
        return;
    };
    let topic = suite::unique_topic("fault-proxy-blackhole");
    suite::create_topic_with(&bootstrap, &topic, PARTITIONS);
    let proxy = Arc::new(FaultProxy::start(&[(1, bootstrap.clone())]).expect("proxy"));
    let p = proxy.clone();
    let hole = std::thread::spawn(move || {
        // Once the producer is past bootstrap and producing steadily.
        std::thread::sleep(Duration::from_millis(700));
        p.set(Fault::BlackHole);
        std::thread::sleep(Duration::from_secs(2));
        p.clear();
    });
    // 80 chunks 20 ms apart: sending (~1.6 s) goes on into the black hole.
    let delivered = produce(&proxy, &topic, 20_000, Duration::from_millis(20), &[]);
    hole.join().expect("fault thread");
    print(&proxy);
    let stats = proxy.stats();
    let swallowed = proxy
        .log()
        .iter()
        .filter(|e| e.what.starts_with("blackhole: Produce"))
        .count();
    eprintln!("Produce requests swallowed by the black hole: {swallowed}");
    assert!(swallowed >= 1, "{stats:?}");
    assert!(stats.connections >= 2, "reconnected: {stats:?}");
    assert_contiguous(&delivered);
    read_back(&bootstrap, &topic, &delivered);
}
