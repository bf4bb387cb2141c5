//! Real broker: our group members and Apache Kafka's own Java consumer
//! (`kafka-console-consumer`'s class from the rig's Kafka, `KAFKA_RIG_LIB`) in one group.
//!
//! - classic protocol, range assignor: our member leads first (the Java member decodes
//!   our assignment and reads exactly the partitions we did not take); after ours leaves,
//!   the Java member leads and a new member of ours decodes its assignment; no record
//!   lost over both rounds, and the two sides never read the same partition at once;
//! - KIP-848: ours and Java's share the topic through the broker's assignor.

mod group_common;

use std::collections::BTreeSet;
use std::time::Duration;

use group_common::{topic_with_records, unique, wait_for, Member, PARTITIONS};
use kafka_blocking::{BlockingClient, Producer, Record};
use kafka_core::config::ClientConfig;
use kafka_tests::broker_or_skip;
use kafka_tests::child::JavaConsole;

/// A Java console consumer in the group, its printed records collected.
struct JavaMember(JavaConsole);

impl JavaMember {
    fn start(addr: &str, topic: &str, group: &str, protocol: &[(&str, &str)]) -> JavaMember {
        let mut args: Vec<String> = [
            "--bootstrap-server",
            addr,
            "--topic",
            topic,
            "--group",
            group,
            "--from-beginning",
        ]
        .map(String::from)
        .to_vec();
        for (k, v) in protocol {
            args.extend(["--command-property".to_string(), format!("{k}={v}")]);
        }
        JavaMember(JavaConsole::start("ConsoleConsumer", &args))
    }

    fn partitions_since(&self, from: usize) -> BTreeSet<i32> {
        self.0.records()[from..].iter().map(|r| r.0).collect()
    }

    fn count(&self) -> usize {
        self.0.count()
    }
}

/// Appends `n` more records (values from `first`) to the topic.
fn produce_more(addr: &str, topic: &str, first: u64, n: u64) {
    let config = ClientConfig::from_pairs([("bootstrap.servers", addr), ("linger.ms", "5")])
        .expect("config");
    let _client = BlockingClient::new(config.clone()).expect("client");
    let producer = Producer::new(config).expect("producer");
    let mut deliveries = Vec::new();
    for i in first..first + n {
        deliveries.push(
            producer
                .send(Record::new(topic, i.to_string()).key(i.to_string()))
                .expect("send"),
        );
    }
    for d in deliveries {
        d.wait().expect("delivered");
    }
}

fn all_values(ours: &[&Member], java: &JavaMember) -> BTreeSet<u64> {
    let mut v: BTreeSet<u64> = java.0.records().iter().map(|r| r.2).collect();
    for m in ours {
        v.extend(m.seen.lock().unwrap().records.iter().map(|r| r.2));
    }
    v
}

#[test]
fn a_java_consumer_and_ours_share_a_classic_group_each_leading_once() {
    let Some(addr) = broker_or_skip("broker_group_java classic") else {
        return;
    };
    let n = 12_000;
    let topic = topic_with_records(&addr, n);
    let group = unique("g-java");
    let range = [("partition.assignment.strategy", "range")];
    let java_range = [
        ("group.protocol", "classic"),
        (
            "partition.assignment.strategy",
            "org.apache.kafka.clients.consumer.RangeAssignor",
        ),
    ];
    // Ours first: it leads the first generation.
    let mut a = Member::start(&addr, &topic, &range, &group);
    wait_for(&[&a], Duration::from_secs(30), "a owns all", || {
        a.owned().len() == 12
    });
    let java = JavaMember::start(&addr, &topic, &group, &java_range);
    wait_for(
        &[&a],
        Duration::from_secs(60),
        "a gives half to java",
        || a.owned().len() == 6,
    );
    let mark = java.count();
    produce_more(&addr, &topic, n, 1_200);
    let java_parts = {
        let start = std::time::Instant::now();
        loop {
            let got = java.partitions_since(mark);
            if got.len() >= 6 || start.elapsed() > Duration::from_secs(30) {
                break got;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let ours = a.owned();
    assert_eq!(
        java_parts.len(),
        6,
        "java reads six partitions: {java_parts:?}"
    );
    assert!(
        java_parts.is_disjoint(&ours),
        "java {java_parts:?} vs ours {ours:?}"
    );
    // Ours leaves; Java leads the next generation and assigns a new member of ours.
    a.stop(true);
    let mut b = Member::start(&addr, &topic, &range, &group);
    wait_for(
        &[&b],
        Duration::from_secs(60),
        "java's assignment reaches b",
        || b.owned().len() == 6,
    );
    let mark = java.count();
    produce_more(&addr, &topic, n + 1_200, 1_200);
    let total = n + 2_400;
    wait_for(&[&b], Duration::from_secs(60), "every record read", || {
        all_values(&[&a, &b], &java).len() as u64 == total
    });
    let java_parts = java.partitions_since(mark);
    assert!(
        java_parts.is_disjoint(&b.owned()),
        "java {java_parts:?} vs b {:?}",
        b.owned()
    );
    assert_eq!(java_parts.len() + b.owned().len(), PARTITIONS as usize);
    assert!(
        !b.seen.lock().unwrap().leader,
        "java led the generation b joined"
    );
    b.stop(true);
}

#[test]
fn a_java_consumer_and_ours_share_a_kip848_group() {
    let Some(addr) = broker_or_skip("broker_group_java kip848") else {
        return;
    };
    let n = 12_000;
    let topic = topic_with_records(&addr, n);
    let group = unique("g-java848");
    let kip848 = [("group.protocol", "consumer")];
    let mut a = Member::start(&addr, &topic, &kip848, &group);
    wait_for(&[&a], Duration::from_secs(30), "a owns all", || {
        a.owned().len() == 12
    });
    let java = JavaMember::start(&addr, &topic, &group, &kip848);
    wait_for(
        &[&a],
        Duration::from_secs(60),
        "a gives half to java",
        || a.owned().len() == 6,
    );
    let mark = java.count();
    produce_more(&addr, &topic, n, 1_200);
    let total = n + 1_200;
    wait_for(&[&a], Duration::from_secs(60), "every record read", || {
        all_values(&[&a], &java).len() as u64 == total
    });
    let java_parts = java.partitions_since(mark);
    assert!(
        java_parts.is_disjoint(&a.owned()),
        "java {java_parts:?} vs ours {:?}",
        a.owned()
    );
    assert_eq!(java_parts.len(), 6);
    a.stop(true);
}
