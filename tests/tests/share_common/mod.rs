//! Helpers of the share consumer tests: unique names, a topic with records, a share
//! group set to start at the earliest offset, a record's value as its number.

// Each test file that includes this module uses only some of it.
#![allow(dead_code)]

use kafka_blocking::{Admin, BlockingClient, Producer, Record};
use kafka_core::admin::{AlterConfigOp, ConfigResource, IncrementalAlterConfigs};
use kafka_core::cluster::Route;
use kafka_core::config::ClientConfig;
use kafka_core::protocol::messages::create_topics::request::CreatableTopic;
use kafka_core::protocol::messages::create_topics::CreateTopicsRequest;
use kafka_core::share::ShareRecord;

pub(crate) fn unique(prefix: &str) -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    format!("{prefix}-{}-{n}-{ms}", std::process::id())
}

/// A fresh topic with `partitions` holding `n` records with values "0".."n-1".
pub(crate) fn topic_with_records(addr: &str, partitions: i32, n: u64) -> String {
    let topic = unique("share");
    let config = ClientConfig::from_pairs([("bootstrap.servers", addr), ("linger.ms", "5")])
        .expect("config");
    let client = BlockingClient::new(config.clone()).expect("client");
    let create = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: topic.clone(),
            num_partitions: partitions,
            replication_factor: 1,
            ..Default::default()
        }],
        timeout_ms: 30_000,
        ..Default::default()
    };
    let resp = client.call(Route::Controller, create).expect("create");
    assert_eq!(resp.topics[0].error_code, 0, "{:?}", resp.topics[0]);
    let producer = Producer::new(config).expect("producer");
    let mut deliveries = Vec::new();
    for i in 0..n {
        let r = Record::new(topic.as_str(), i.to_string()).key(i.to_string());
        deliveries.push(producer.send(r).expect("send"));
    }
    for d in deliveries {
        d.wait().expect("delivered");
    }
    topic
}

/// Sets the share group `group` to start at the earliest offset.
pub(crate) fn earliest(addr: &str, group: &str) {
    group_configs(addr, group, &[("share.auto.offset.reset", "earliest")]);
}

/// Sets configs of the group `group` (IncrementalAlterConfigs on its group resource).
pub(crate) fn group_configs(addr: &str, group: &str, pairs: &[(&str, &str)]) {
    let config = ClientConfig::from_pairs([("bootstrap.servers", addr)]).expect("config");
    let admin = Admin::new(config).expect("admin");
    let resource = ConfigResource::group(group);
    let ops = pairs
        .iter()
        .map(|(k, v)| AlterConfigOp::set(*k, *v))
        .collect();
    let r = admin
        .run(IncrementalAlterConfigs::new([(resource.clone(), ops)]))
        .expect("alter group config");
    assert!(r[&resource].is_ok(), "{pairs:?}: {r:?}");
}

/// The number a record of [`topic_with_records`] holds as its value.
pub(crate) fn value(r: &ShareRecord) -> u64 {
    std::str::from_utf8(r.value.as_deref().expect("value"))
        .expect("utf8")
        .parse()
        .expect("number")
}
