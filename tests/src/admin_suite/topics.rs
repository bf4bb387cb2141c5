//! Suite: topics and the cluster.

use std::time::{Duration, Instant};

use kafka_core::admin::{
    CreatePartitions, CreateTopics, DeleteTopics, DescribeCluster, DescribeTopics, ListTopics,
    NewPartitions, NewTopic, RawRequest, TopicDescription,
};
use kafka_core::cluster::Route;
use kafka_core::protocol::messages::find_coordinator::FindCoordinatorRequest;
use kafka_core::protocol::{KafkaCode, Uuid};

use super::{plaintext, unique, Driver};

/// Tests of this group (see [`admin_suite!`](crate::admin_suite)).
#[doc(hidden)]
#[macro_export]
macro_rules! __suite_topics {
    ($d:ty) => {
        $crate::__suite_tests!($d;
            topics::create_topics_per_topic_results,
            topics::describe_cluster,
            topics::delete_topics_by_name_and_by_id,
            topics::create_partitions_increase_validate_and_assign,
            topics::list_topics_with_and_without_internal,
            topics::describe_topics_by_name_and_by_id,
        );
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

/// Polls `check` until it returns `Some` (the broker's metadata catches up with a change
/// a moment after the controller confirmed it), failing after 20 s.
pub fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Creates a topic and returns its id.
pub fn create_topic<D: Driver>(admin: &D, name: &str, partitions: i32) -> Uuid {
    let created = admin
        .run(CreateTopics::new([NewTopic::new(name, partitions, 1)]))
        .expect("create call");
    created[name].as_ref().expect("created").topic_id
}

/// The topic's description once every partition has a leader.
pub fn described<D: Driver>(admin: &D, name: &str) -> TopicDescription {
    eventually(&format!("{name} described with leaders"), || {
        let mut r = admin
            .run(DescribeTopics::new([name]))
            .expect("describe call");
        let d = r.remove(name)?.ok()?;
        d.partitions.iter().all(|p| p.leader.is_some()).then_some(d)
    })
}

/// A topic id no topic has.
fn random_id() -> Uuid {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    Uuid::from_bytes((nanos | 1 << 127).to_be_bytes())
}

/// DeleteTopics: by name and by id, each with an unknown topic that fails alone.
pub fn delete_topics_by_name_and_by_id<D: Driver>() {
    let Some(admin) = plaintext::<D>("delete_topics_by_name_and_by_id") else {
        return;
    };
    let by_name = unique::<D>("delete-name");
    let by_id = unique::<D>("delete-id");
    create_topic(&admin, &by_name, 1);
    let id = create_topic(&admin, &by_id, 1);
    let missing = unique::<D>("delete-missing");

    let r = admin
        .run(DeleteTopics::new([by_name.clone(), missing.clone()]))
        .expect("delete by name");
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(r[&by_name].is_ok(), "{r:?}");
    assert_eq!(
        r[&missing].as_ref().err().and_then(|e| e.code()),
        Some(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
        "{r:?}"
    );

    let unknown_id = random_id();
    let r = admin
        .run(DeleteTopics::by_ids([id, unknown_id]))
        .expect("delete by id");
    assert!(r[&id].is_ok(), "{r:?}");
    assert_eq!(
        r[&unknown_id].as_ref().err().and_then(|e| e.code()),
        Some(KafkaCode::UNKNOWN_TOPIC_ID),
        "{r:?}"
    );

    eventually("deleted topics gone from the listing", || {
        let topics = admin.run(ListTopics::new()).expect("list");
        (!topics.contains_key(&by_name) && !topics.contains_key(&by_id)).then_some(())
    });
}

/// CreatePartitions: validate-only changes nothing; an increase (with and without an
/// explicit assignment) shows in the description; a decrease and an unknown topic fail
/// per topic.
pub fn create_partitions_increase_validate_and_assign<D: Driver>() {
    let Some(admin) = plaintext::<D>("create_partitions_increase_validate_and_assign") else {
        return;
    };
    let name = unique::<D>("partitions");
    create_topic(&admin, &name, 1);
    let broker = described(&admin, &name).partitions[0]
        .leader
        .expect("leader");

    let dry = admin
        .run(CreatePartitions::new([(&name, NewPartitions::increase_to(3))]).validate_only(true))
        .expect("validate-only call");
    assert!(dry[&name].is_ok(), "{dry:?}");
    assert_eq!(described(&admin, &name).partitions.len(), 1);

    let missing = unique::<D>("partitions-missing");
    let r = admin
        .run(CreatePartitions::new([
            (name.clone(), NewPartitions::increase_to(3)),
            (missing.clone(), NewPartitions::increase_to(2)),
        ]))
        .expect("increase call");
    assert!(r[&name].is_ok(), "{r:?}");
    assert_eq!(
        r[&missing].as_ref().err().and_then(|e| e.code()),
        Some(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
        "{r:?}"
    );
    eventually("3 partitions", || {
        (described(&admin, &name).partitions.len() == 3).then_some(())
    });

    let r = admin
        .run(CreatePartitions::new([(
            &name,
            NewPartitions::increase_to(4).assignments(vec![vec![broker]]),
        )]))
        .expect("assigned increase");
    assert!(r[&name].is_ok(), "{r:?}");
    let d = eventually("4 partitions", || {
        let d = described(&admin, &name);
        (d.partitions.len() == 4).then_some(d)
    });
    assert_eq!(d.partitions[3].replicas, vec![broker]);

    let r = admin
        .run(CreatePartitions::new([(
            &name,
            NewPartitions::increase_to(2),
        )]))
        .expect("decrease call");
    assert_eq!(
        r[&name].as_ref().err().and_then(|e| e.code()),
        Some(KafkaCode::INVALID_PARTITIONS),
        "{r:?}"
    );
}

/// ListTopics: a new topic with its id; internal topics only when asked for.
pub fn list_topics_with_and_without_internal<D: Driver>() {
    let Some(admin) = plaintext::<D>("list_topics_with_and_without_internal") else {
        return;
    };
    let name = unique::<D>("list");
    let id = create_topic(&admin, &name, 1);
    // Looking up a group coordinator makes the broker create __consumer_offsets.
    let group = unique::<D>("list-group");
    eventually("a group coordinator", || {
        let r = admin
            .run(RawRequest::new(
                Route::Any,
                FindCoordinatorRequest {
                    coordinator_keys: vec![group.clone()],
                    ..Default::default()
                },
            ))
            .expect("find coordinator");
        let code = r
            .coordinators
            .first()
            .map_or(r.error_code, |c| c.error_code);
        (code == 0).then_some(())
    });

    let plain = eventually("the new topic listed", || {
        let topics = admin.run(ListTopics::new()).expect("list");
        topics.contains_key(&name).then_some(topics)
    });
    assert_eq!(plain[&name].topic_id, id);
    assert!(!plain[&name].internal);
    assert!(plain.values().all(|t| !t.internal), "{plain:?}");
    assert!(!plain.contains_key("__consumer_offsets"));

    let all = eventually("__consumer_offsets listed", || {
        let topics = admin
            .run(ListTopics::new().list_internal(true))
            .expect("list internal");
        topics.contains_key("__consumer_offsets").then_some(topics)
    });
    assert!(all["__consumer_offsets"].internal);
    assert!(all.contains_key(&name));
}

/// DescribeTopics: partitions with leader, replicas, ISR and the topic id, authorized
/// operations when asked; unknown names and ids fail alone.
pub fn describe_topics_by_name_and_by_id<D: Driver>() {
    let Some(admin) = plaintext::<D>("describe_topics_by_name_and_by_id") else {
        return;
    };
    let cluster = admin.run(DescribeCluster::new()).expect("cluster");
    let broker = *cluster.brokers.keys().next().expect("a broker");
    let name = unique::<D>("describe");
    let id = create_topic(&admin, &name, 2);
    described(&admin, &name);
    let missing = unique::<D>("describe-missing");

    let r = admin
        .run(
            DescribeTopics::new([name.clone(), missing.clone()])
                .include_authorized_operations(true),
        )
        .expect("describe by name");
    let d = r[&name].as_ref().expect("described");
    assert_eq!(d.name, name);
    assert_eq!(d.topic_id, id);
    assert!(!d.internal);
    assert_eq!(d.partitions.len(), 2);
    for (i, p) in d.partitions.iter().enumerate() {
        assert_eq!(p.partition, i as i32);
        assert_eq!(p.leader, Some(broker));
        assert_eq!(p.replicas, vec![broker]);
        assert_eq!(p.isr, vec![broker]);
    }
    assert!(
        d.authorized_operations
            .as_ref()
            .is_some_and(|ops| !ops.is_empty()),
        "{d:?}"
    );
    assert_eq!(
        r[&missing].as_ref().err().and_then(|e| e.code()),
        Some(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
        "{r:?}"
    );

    let unknown_id = random_id();
    let r = admin
        .run(DescribeTopics::by_ids([id, unknown_id]))
        .expect("describe by id");
    let d = r[&id].as_ref().expect("described by id");
    assert_eq!(d.name, name);
    assert_eq!(d.partitions.len(), 2);
    assert_eq!(d.authorized_operations, None);
    assert_eq!(
        r[&unknown_id].as_ref().err().and_then(|e| e.code()),
        Some(KafkaCode::UNKNOWN_TOPIC_ID),
        "{r:?}"
    );
}
