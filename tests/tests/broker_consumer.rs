//! Real broker: N records per codec written by the core's idempotent producer (through
//! the blocking adapter's driver thread) into a fresh 6-partition topic, then consumed
//! with the blocking `Consumer` by assigning every partition from the beginning: every
//! record exactly once, in offset order per partition, with the counter its value was
//! sent with at the offset its delivery report gave.
//!
//! `CONSUMER_RECORDS` sets N (default 200,000 per codec, about a minute for all five on
//! a 2-core machine; `CONSUMER_RECORDS=1000000` for the full run).

mod producer_common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use kafka_blocking::Consumer;
use kafka_core::config::ClientConfig;
use kafka_tests::broker_or_skip;
use producer_common::{produce, PARTITIONS};

fn records() -> u64 {
    std::env::var("CONSUMER_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000)
}

fn consume_every_record_once_in_order(codec: &str) {
    let Some(addr) = broker_or_skip(&format!("broker_consumer {codec}")) else {
        return;
    };
    let topic = format!(
        "consume-{codec}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    );
    let n = records();
    let (sent, _client) = produce(&addr, &topic, codec, n, 1, |_| {});
    // (partition, offset) → the counter written there.
    let mut want: HashMap<(i32, i64), u64> = HashMap::with_capacity(n as usize);
    for r in &sent.reports {
        let d = r.outcome.as_ref().expect("every batch delivered");
        for i in 0..r.records {
            want.insert((r.partition, d.offset(i)), sent.at[&(r.batch.0, i)]);
        }
    }
    assert_eq!(want.len() as u64, n);

    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", addr.as_str()),
        ("auto.offset.reset", "earliest"),
    ])
    .expect("config");
    let consumer = Consumer::new(config).expect("consumer");
    consumer
        .assign((0..PARTITIONS).map(|p| (topic.as_str(), p)))
        .expect("assign");
    let mut next = [0i64; PARTITIONS as usize];
    let mut seen = 0u64;
    let start = Instant::now();
    while seen < n {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "{codec}: {seen} of {n} records after 120 s"
        );
        for r in consumer.poll(Duration::from_secs(1)).expect("poll") {
            let p = r.partition as usize;
            assert_eq!(r.offset, next[p], "{codec}: partition {p} in order, once");
            next[p] += 1;
            let value = r.value.as_deref().expect("value");
            let counter = u64::from_be_bytes(value[..8].try_into().expect("8 bytes"));
            assert_eq!(
                Some(&counter),
                want.get(&(r.partition, r.offset)),
                "{codec}: the record at {p}@{}",
                r.offset
            );
            seen += 1;
        }
    }
    let extra = consumer.poll(Duration::from_millis(300)).expect("poll");
    assert!(extra.is_empty(), "{codec}: more records than produced");
    let m = consumer.close().expect("close");
    eprintln!(
        "broker_consumer {codec}: {n} records in {:?} ({} fetches)",
        start.elapsed(),
        m.fetches
    );
}

#[test]
fn consumer_reads_every_record_once_in_order_none() {
    consume_every_record_once_in_order("none");
}

#[test]
fn consumer_reads_every_record_once_in_order_gzip() {
    consume_every_record_once_in_order("gzip");
}

#[test]
fn consumer_reads_every_record_once_in_order_snappy() {
    consume_every_record_once_in_order("snappy");
}

#[test]
fn consumer_reads_every_record_once_in_order_lz4() {
    consume_every_record_once_in_order("lz4");
}

#[test]
fn consumer_reads_every_record_once_in_order_zstd() {
    consume_every_record_once_in_order("zstd");
}
