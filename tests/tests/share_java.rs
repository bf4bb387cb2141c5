//! Real broker: our share consumer and Apache Kafka's own Java share consumer
//! (`kafka-console-share-consumer`'s class from the rig's Kafka, `KAFKA_RIG_LIB`) in one
//! share group. Records produced while both are members are split between them: each
//! record handed to exactly one of the two, every record handed out, and both get some.
//! Records are produced only once both members hold the partition: a member that joins
//! before the broker's metadata has the new topic gets an empty assignment and learns
//! its partition at its next heartbeat, 5 s later, Java's as well as ours.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use kafka_blocking::{Admin, Producer, Record, ShareConsumer};
use kafka_core::admin::DescribeShareGroups;
use kafka_core::config::ClientConfig;
use share_common::{earliest, topic_with_records, unique, value};

use kafka_tests::child::JavaConsole;

mod share_common;

/// The Java console share consumer in the group.
fn java_share_member(addr: &str, topic: &str, group: &str) -> JavaConsole {
    let args = [
        "--bootstrap-server",
        addr,
        "--topic",
        topic,
        "--group",
        group,
    ];
    JavaConsole::start("ConsoleShareConsumer", &args.map(String::from))
}

#[test]
fn ours_and_javas_share_consumer_split_a_topic_each_record_once() {
    let Some(addr) = kafka_tests::broker_or_skip("share_java real broker") else {
        return;
    };
    kafka_tests::event_log::to_stderr();
    const N: u64 = 4_000;
    let group = unique("share-java");
    earliest(&addr, &group);
    let topic = topic_with_records(&addr, 1, 0);
    let java = java_share_member(&addr, &topic, &group);
    let ours = ShareConsumer::new(
        ClientConfig::from_pairs([
            ("bootstrap.servers", addr.as_str()),
            ("group.id", group.as_str()),
        ])
        .expect("config"),
    )
    .expect("share consumer");
    ours.subscribe([topic.as_str()]).expect("subscribe");
    // Both hold the partition (the JVM takes seconds to start) before records exist.
    let admin = Admin::new(
        ClientConfig::from_pairs([("bootstrap.servers", addr.as_str())]).expect("config"),
    )
    .expect("admin");
    let mut mine: Vec<u64> = Vec::new();
    let joined = Instant::now() + Duration::from_secs(60);
    loop {
        mine.extend(
            ours.poll(Duration::from_millis(200))
                .expect("poll")
                .iter()
                .map(value),
        );
        let described = admin
            .run(DescribeShareGroups::new([group.clone()]))
            .expect("describe share groups");
        // Members with partitions: one joining before the broker's metadata has the new
        // topic gets an empty assignment and learns its partition only at its next
        // heartbeat (`group.share.heartbeat.interval.ms`, 5 s), as Java's would.
        let members = described[&group].as_ref().map_or(0, |d| {
            d.members
                .iter()
                .filter(|m| !m.assignment.is_empty())
                .count()
        });
        if members == 2 && !ours.assignment().expect("assignment").is_empty() {
            break;
        }
        assert!(
            Instant::now() < joined,
            "{members} members with partitions after 60 s: {described:?}"
        );
    }
    // Produce in waves, so both members have fetches outstanding while records arrive.
    let producer = Producer::new(
        ClientConfig::from_pairs([("bootstrap.servers", addr.as_str()), ("linger.ms", "5")])
            .expect("config"),
    )
    .expect("producer");
    let mut next = 0;
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if next < N {
            let wave: Vec<_> = (next..next + 200)
                .map(|i| {
                    producer
                        .send(Record::new(topic.as_str(), i.to_string()))
                        .expect("send")
                })
                .collect();
            for d in wave {
                d.wait().expect("delivered");
            }
            next += 200;
        }
        for r in ours.poll(Duration::from_millis(100)).expect("poll") {
            assert_eq!(r.delivery_count, 1, "offset {} redelivered", r.offset);
            mine.push(value(&r));
        }
        let total = mine.len() + java_values(&java).len();
        if next >= N && total >= N as usize {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {} (ours) + {} (Java) of {N}",
            mine.len(),
            java_values(&java).len()
        );
    }
    // A moment more: a record handed to both would show up late on one side.
    let settle = Instant::now() + Duration::from_secs(3);
    while Instant::now() < settle {
        mine.extend(
            ours.poll(Duration::from_millis(200))
                .expect("poll")
                .iter()
                .map(value),
        );
    }
    let assignment = ours.assignment().expect("assignment");
    let described = admin
        .run(DescribeShareGroups::new([group.clone()]))
        .expect("describe share groups");
    ours.close().expect("close");
    let theirs = java_values(&java);
    drop(java);

    let ours_set: BTreeSet<u64> = mine.iter().copied().collect();
    let theirs_set: BTreeSet<u64> = theirs.iter().copied().collect();
    eprintln!(
        "{N} records: {} to ours, {} to Java's KafkaShareConsumer",
        mine.len(),
        theirs.len()
    );
    assert_eq!(ours_set.len(), mine.len(), "ours got a record twice");
    assert_eq!(theirs_set.len(), theirs.len(), "Java got a record twice");
    let both: Vec<u64> = ours_set
        .intersection(&theirs_set)
        .take(10)
        .copied()
        .collect();
    assert!(both.is_empty(), "handed to both members, e.g. {both:?}");
    let all: BTreeSet<u64> = ours_set.union(&theirs_set).copied().collect();
    assert_eq!(all, (0..N).collect(), "every record handed out");
    assert!(
        !mine.is_empty(),
        "ours got nothing; our assignment {assignment:?}; the group {described:?}"
    );
    assert!(!theirs.is_empty(), "Java's got nothing");
}

fn java_values(java: &JavaConsole) -> Vec<u64> {
    java.records().iter().map(|r| r.2).collect()
}
