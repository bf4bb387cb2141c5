//! Suite: topics and the cluster.

use kafka_core::admin::{CreateTopics, DescribeCluster, NewTopic};
use kafka_core::protocol::KafkaCode;

use super::{plaintext, unique, Driver};

/// Tests of this group (see [`admin_suite!`](crate::admin_suite)).
#[doc(hidden)]
#[macro_export]
macro_rules! __suite_topics {
    ($d:ty) => {
        $crate::__suite_tests!($d; topics::create_topics_per_topic_results, topics::describe_cluster);
    };
}

/// CreateTopics: validate-only creates nothing; a real create returns the topic id; a
/// second create of the same name fails for that topic only.
pub fn create_topics_per_topic_results<D: Driver>() {
    let Some(admin) = plaintext::<D>("create_topics_per_topic_results") else {
        return;
    };
    let name = unique::<D>("create");
    let dry = admin
        .run(CreateTopics::new([NewTopic::new(&name, 2, 1)]).validate_only(true))
        .expect("validate-only call");
    assert!(dry[&name].is_ok(), "{dry:?}");
    let created = admin
        .run(CreateTopics::new([
            NewTopic::new(&name, 2, 1).config("cleanup.policy", "compact")
        ]))
        .expect("create call");
    let topic = created[&name].as_ref().expect("created");
    assert_ne!(
        topic.topic_id,
        kafka_core::protocol::Uuid::ZERO,
        "{topic:?}"
    );
    assert_eq!(topic.partitions, 2);
    assert_eq!(
        topic.configs.get("cleanup.policy"),
        Some(&Some("compact".to_string()))
    );

    let other = unique::<D>("create");
    let again = admin
        .run(CreateTopics::new([
            NewTopic::new(&name, 2, 1),
            NewTopic::new(&other, 1, 1),
        ]))
        .expect("second create call");
    let err = again[&name].as_ref().expect_err("duplicate must fail");
    assert_eq!(err.code(), Some(KafkaCode::TOPIC_ALREADY_EXISTS), "{err}");
    assert!(again[&other].is_ok(), "{again:?}");
}

/// DescribeCluster: cluster id, the one rig broker, a controller.
pub fn describe_cluster<D: Driver>() {
    let Some(admin) = plaintext::<D>("describe_cluster") else {
        return;
    };
    let cluster = admin
        .run(DescribeCluster::new().include_authorized_operations(true))
        .expect("describe cluster");
    assert!(!cluster.cluster_id.is_empty());
    assert_eq!(cluster.brokers.len(), 1, "{cluster:?}");
    let broker = cluster.brokers.values().next().expect("a broker");
    assert_eq!(broker.host, "127.0.0.1");
    assert!(cluster.controller_id >= 0);
    // ANONYMOUS is a super user on the rig: every cluster operation is allowed.
    assert!(
        cluster
            .authorized_operations
            .as_ref()
            .is_some_and(|ops| !ops.is_empty()),
        "{cluster:?}"
    );
}
