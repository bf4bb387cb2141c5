//! Shared by the real-broker transaction suites: topics, a transactional blocking
//! producer, reading a topic whole as `read_committed` or `read_uncommitted`, and the
//! cluster's finalized `transaction.version`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kafka_blocking::{BlockingClient, Consumer, Producer};
use kafka_core::admin::{DescribeFeatures, FeatureUpdate, UpdateFeatures, UpgradeType};
use kafka_core::cluster::Route;
use kafka_core::config::ClientConfig;
use kafka_core::protocol::messages::create_topics::request::CreatableTopic;
use kafka_core::protocol::messages::create_topics::CreateTopicsRequest;

pub(crate) const T: Duration = Duration::from_secs(60);

pub(crate) fn unique(prefix: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    )
}

pub(crate) fn client(addr: &str) -> BlockingClient {
    let config = ClientConfig::from_pairs([("bootstrap.servers", addr)]).expect("config");
    BlockingClient::new(config).expect("client")
}

/// A fresh topic with `partitions` partitions.
pub(crate) fn topic(addr: &str, prefix: &str, partitions: i32) -> String {
    let name = unique(prefix);
    let create = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.clone(),
            num_partitions: partitions,
            replication_factor: 1,
            ..Default::default()
        }],
        timeout_ms: 30_000,
        ..Default::default()
    };
    let resp = client(addr)
        .call(Route::Controller, create)
        .expect("create");
    assert_eq!(resp.topics[0].error_code, 0, "{:?}", resp.topics[0]);
    name
}

/// A transactional producer for `txn_id` (initialized).
pub(crate) fn txn_producer(addr: &str, txn_id: &str) -> Producer {
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", addr),
        ("transactional.id", txn_id),
        ("linger.ms", "5"),
    ])
    .expect("config");
    let p = Producer::new(config).expect("producer");
    p.init_transactions(T).expect("init_transactions");
    p
}

/// Every value of `topic` (all partitions) as a consumer with `isolation` reads it,
/// up to the end offsets (read_committed: the last stable offset).
pub(crate) fn read_all(addr: &str, topic: &str, partitions: i32, isolation: &str) -> Vec<String> {
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", addr),
        ("auto.offset.reset", "earliest"),
        ("isolation.level", isolation),
    ])
    .expect("config");
    let consumer = Consumer::new(config).expect("consumer");
    consumer
        .assign((0..partitions).map(|p| (topic, p)))
        .expect("assign");
    let mut values = Vec::new();
    let mut quiet_since = Instant::now();
    let deadline = Instant::now() + T;
    // Until nothing new came for 3 s (the end is not known to a plain consumer).
    while quiet_since.elapsed() < Duration::from_secs(3) {
        assert!(Instant::now() < deadline, "reading {topic} took too long");
        let got = consumer.poll(Duration::from_millis(300)).expect("poll");
        if !got.is_empty() {
            quiet_since = Instant::now();
        }
        for r in got {
            values.push(String::from_utf8(r.value.expect("value").to_vec()).expect("utf8"));
        }
    }
    let _ = consumer.close();
    values
}

/// Counts of each value.
pub(crate) fn counts(values: &[String]) -> BTreeMap<&str, usize> {
    let mut m = BTreeMap::new();
    for v in values {
        *m.entry(v.as_str()).or_insert(0) += 1;
    }
    m
}

/// The cluster's finalized `transaction.version` (0 if not finalized).
pub(crate) fn transaction_version(addr: &str) -> i16 {
    let f = client(addr)
        .run_op(DescribeFeatures::new())
        .expect("driver")
        .expect("describe features");
    f.finalized_features
        .get("transaction.version")
        .map_or(0, |r| r.max_version_level)
}

/// Sets the cluster's `transaction.version`, then waits until a fresh client sees it.
pub(crate) fn set_transaction_version(addr: &str, level: i16) {
    let kind = if level < transaction_version(addr) {
        UpgradeType::SafeDowngrade
    } else {
        UpgradeType::Upgrade
    };
    let r = client(addr)
        .run_op(UpdateFeatures::new([(
            "transaction.version".to_string(),
            FeatureUpdate::new(level, kind),
        )]))
        .expect("driver")
        .expect("update features");
    assert_eq!(r["transaction.version"], Ok(()), "{r:?}");
    let deadline = Instant::now() + T;
    while transaction_version(addr) != level {
        assert!(
            Instant::now() < deadline,
            "transaction.version never became {level}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // The broker's ApiVersions answers follow the metadata log a moment later.
    std::thread::sleep(Duration::from_secs(2));
}

/// Runs `f` under the cluster's `transaction.version` (2 on the rig: KIP-890), then under
/// the other protocol (1), and restores the first level.
pub(crate) fn under_both_transaction_versions(addr: &str, mut f: impl FnMut(i16)) {
    let initial = transaction_version(addr);
    assert!(
        initial >= 1,
        "the rig finalizes transaction.version: {initial}"
    );
    let other = if initial >= 2 { 1 } else { 2 };
    for level in [initial, other] {
        if level != transaction_version(addr) {
            set_transaction_version(addr, level);
        }
        f(level);
    }
    set_transaction_version(addr, initial);
}
