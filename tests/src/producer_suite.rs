//! Helpers for the producer tests of every adapter (`tests/tests/producer_*.rs`): the
//! fake-broker configurations, the offset check, and topic setup on the real broker.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use kafka_core::admin::NewTopic;
use kafka_core::config::ClientConfig;

/// Records the fake-broker tests send.
pub const FAKE_RECORDS: usize = 2_000;
/// Records the real-broker tests send.
pub const REAL_RECORDS: usize = 10_000;
/// Partitions of every test topic.
pub const PARTITIONS: i32 = 3;

/// A producer config for `bootstrap` with `extra` settings (short linger, so tests are
/// quick).
pub fn config(bootstrap: &str, extra: &[(&str, &str)]) -> ClientConfig {
    let mut pairs = vec![("bootstrap.servers", bootstrap), ("linger.ms", "2")];
    pairs.extend_from_slice(extra);
    ClientConfig::from_pairs(pairs).expect("producer test config")
}

/// A config whose buffer fills at once against a fake broker that never answers
/// Produce: tiny batches and buffer, `max.block.ms` of 300 ms.
pub fn full_buffer_config(bootstrap: &str) -> ClientConfig {
    config(
        bootstrap,
        &[
            ("batch.size", "1024"),
            ("buffer.memory", "4096"),
            ("max.block.ms", "300"),
        ],
    )
}

/// The key of record `i`.
pub fn key(i: usize) -> String {
    format!("key-{i}")
}

/// A 100-byte value for record `i`.
pub fn value(i: usize) -> Vec<u8> {
    let mut v = format!("value-{i:08}-").into_bytes();
    v.resize(100, b'.');
    v
}

/// Asserts that, per partition and in send order, the offsets are 0, 1, 2, ...
/// (`delivered` is `(partition, offset)` per record, in send order). Returns the
/// records per partition.
pub fn assert_contiguous(delivered: &[(i32, i64)]) -> HashMap<i32, i64> {
    let mut next: HashMap<i32, i64> = HashMap::new();
    for (i, &(partition, offset)) in delivered.iter().enumerate() {
        assert!(
            (0..PARTITIONS).contains(&partition),
            "record {i}: partition {partition}"
        );
        let want = next.entry(partition).or_insert(0);
        assert_eq!(offset, *want, "record {i} on partition {partition}");
        *want += 1;
    }
    next
}

/// A fresh topic name for `adapter`.
pub fn unique_topic(adapter: &str) -> String {
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() % 100_000_000)
        .unwrap_or_default();
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("produce-{adapter}-{stamp}-{}-{n}", std::process::id())
}

/// Creates `topic` with [`PARTITIONS`] partitions on the real broker at `bootstrap`.
pub fn create_topic(bootstrap: &str, topic: &str) {
    let admin = kafka_blocking::Admin::new(
        ClientConfig::from_pairs([("bootstrap.servers", bootstrap)]).expect("admin config"),
    )
    .expect("admin");
    let created = admin
        .create_topics([NewTopic::new(topic, PARTITIONS, 1)])
        .expect("create_topics");
    assert!(
        created[topic].is_ok(),
        "create {topic}: {:?}",
        created[topic]
    );
}
