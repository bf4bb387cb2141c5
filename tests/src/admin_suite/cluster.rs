//! Suite: cluster operations — log dirs, replica moves, leader elections, partition
//! reassignments, features.
//!
//! The rig's single node has two log dirs (`log.dirs=<a>,<b>`), so a replica can really
//! move between them.

use std::collections::BTreeMap;
use std::thread::sleep;
use std::time::{Duration, Instant};

use kafka_core::admin::{
    AdminError, AlterPartitionReassignments, AlterReplicaLogDirs, BrokerLogDirs, CreateTopics,
    DescribeCluster, DescribeFeatures, DescribeLogDirs, DescribeReplicaLogDirs, ElectLeaders,
    ElectionType, FeatureUpdate, ListPartitionReassignments, NewTopic, TopicPartition,
    TopicPartitionReplica, UpdateFeatures, UpgradeType,
};
use kafka_core::protocol::KafkaCode;

use super::{plaintext, unique, Driver};

/// Tests of this group (see [`admin_suite!`](crate::admin_suite)).
#[doc(hidden)]
#[macro_export]
macro_rules! __suite_cluster {
    ($d:ty) => {
        $crate::__suite_tests!($d;
            cluster::describe_log_dirs_and_move_a_replica,
            cluster::describe_replica_log_dirs_per_replica,
            cluster::elect_leaders_per_partition,
            cluster::partition_reassignments,
            cluster::describe_and_update_features,
        );
    };
}

/// How long a test waits for the broker to catch up (replica creation, a log dir move).
const SETTLE: Duration = Duration::from_secs(30);

/// Creates `name` with `partitions` partitions (RF 1) and returns the rig broker's id.
fn topic_on_rig<D: Driver>(admin: &D, name: &str, partitions: i32) -> i32 {
    let created = admin
        .run(CreateTopics::new([NewTopic::new(name, partitions, 1)]))
        .expect("create call");
    created[name].as_ref().expect("topic created");
    let cluster = admin.run(DescribeCluster::new()).expect("describe cluster");
    *cluster.brokers.keys().next().expect("a broker")
}

/// Polls `check` until it returns `Some` or [`SETTLE`] passes.
fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let until = Instant::now() + SETTLE;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(Instant::now() < until, "timed out waiting for {what}");
        sleep(Duration::from_millis(200));
    }
}

/// The log dirs of `broker`, which must answer.
fn log_dirs<D: Driver>(admin: &D, broker: i32) -> BrokerLogDirs {
    let mut all = admin
        .run(DescribeLogDirs::new([broker]))
        .expect("describe log dirs call");
    all.remove(&broker)
        .expect("a result for the broker")
        .expect("the broker's log dirs")
}

/// The dir holding the current (not future) replica of `tp`, if any.
fn dir_of(dirs: &BrokerLogDirs, tp: &TopicPartition) -> Option<String> {
    dirs.iter()
        .find(|(_, d)| d.replicas.get(tp).is_some_and(|r| !r.is_future))
        .map(|(path, _)| path.clone())
}

/// DescribeLogDirs lists both rig dirs with their sizes and a new topic's partition in
/// one of them; an unknown broker fails on its own. AlterReplicaLogDirs moves the
/// replica to the other dir (it arrives there), and refuses an unknown dir per replica.
pub fn describe_log_dirs_and_move_a_replica<D: Driver>() {
    let Some(admin) = plaintext::<D>("describe_log_dirs_and_move_a_replica") else {
        return;
    };
    let name = unique::<D>("logdirs");
    let broker = topic_on_rig(&admin, &name, 1);
    let tp = TopicPartition::new(&name, 0);

    let (dirs, from) = wait_for("the new partition in a log dir", || {
        let dirs = log_dirs(&admin, broker);
        dir_of(&dirs, &tp).map(|from| (dirs, from))
    });
    assert_eq!(
        dirs.len(),
        2,
        "the rig's single node has two log dirs: {dirs:?}"
    );
    for (path, dir) in &dirs {
        assert_eq!(dir.error, None, "{path}: {dir:?}");
        let (total, usable) = (
            dir.total_bytes.expect("total"),
            dir.usable_bytes.expect("usable"),
        );
        assert!(
            total > 0 && usable > 0 && usable <= total,
            "{path}: {dir:?}"
        );
    }
    let to = dirs
        .keys()
        .find(|p| **p != from)
        .expect("another dir")
        .clone();

    // Per-broker results: a broker that does not exist fails alone.
    let both = admin
        .run(DescribeLogDirs::new([broker, broker + 1000]).timeout(Duration::from_secs(3)))
        .expect("describe log dirs call");
    assert!(both[&broker].is_ok(), "{both:?}");
    assert!(both[&(broker + 1000)].is_err(), "{both:?}");

    // Per-replica results: an unknown dir fails for its replica only.
    let other = unique::<D>("logdirs");
    topic_on_rig(&admin, &other, 1);
    let moved = TopicPartitionReplica::new(&name, 0, broker);
    let nowhere = TopicPartitionReplica::new(&other, 0, broker);
    let results = admin
        .run(AlterReplicaLogDirs::new([
            (moved.clone(), to.clone()),
            (nowhere.clone(), "/nonexistent/kafka-rs-dir".to_string()),
        ]))
        .expect("alter replica log dirs call");
    assert_eq!(results[&moved], Ok(()), "{results:?}");
    let err = results[&nowhere].as_ref().expect_err("unknown dir");
    assert_eq!(err.code(), Some(KafkaCode::LOG_DIR_NOT_FOUND), "{err}");

    let dirs = wait_for("the replica in the other log dir", || {
        let dirs = log_dirs(&admin, broker);
        let done = dir_of(&dirs, &tp).as_ref() == Some(&to)
            && !dirs[&from].replicas.contains_key(&tp)
            && !dirs[&to].replicas[&tp].is_future;
        done.then_some(dirs)
    });
    assert_eq!(dirs[&to].replicas[&tp].offset_lag, 0, "{dirs:?}");
}

/// DescribeReplicaLogDirs: a hosted replica is in the dir DescribeLogDirs names, caught
/// up, not moving; a partition the broker does not host is known nowhere; a broker that
/// does not exist fails its replicas alone.
pub fn describe_replica_log_dirs_per_replica<D: Driver>() {
    let Some(admin) = plaintext::<D>("describe_replica_log_dirs_per_replica") else {
        return;
    };
    let name = unique::<D>("replica-dirs");
    let broker = topic_on_rig(&admin, &name, 1);
    let tp = TopicPartition::new(&name, 0);
    let dir = wait_for("the new partition in a log dir", || {
        dir_of(&log_dirs(&admin, broker), &tp)
    });
    let hosted = TopicPartitionReplica::new(&name, 0, broker);
    let absent = TopicPartitionReplica::new(&name, 5, broker);
    let elsewhere = TopicPartitionReplica::new(&name, 0, broker + 1000);
    let out = admin
        .run(
            DescribeReplicaLogDirs::new([hosted.clone(), absent.clone(), elsewhere.clone()])
                .timeout(Duration::from_secs(3)),
        )
        .expect("describe replica log dirs call");
    let info = out[&hosted].as_ref().expect("hosted replica");
    assert_eq!(
        info.current_replica_log_dir.as_ref(),
        Some(&dir),
        "{info:?}"
    );
    assert_eq!(info.current_replica_offset_lag, Some(0), "{info:?}");
    assert_eq!(info.future_replica_log_dir, None, "{info:?}");
    let none = out[&absent].as_ref().expect("answered");
    assert_eq!(none.current_replica_log_dir, None, "{none:?}");
    assert!(out[&elsewhere].is_err(), "{out:?}");
}

/// ElectLeaders: on the single node every leader is already the preferred replica, so
/// each requested partition reports ELECTION_NOT_NEEDED (an error per partition, as in
/// the Java client), an unknown topic reports UNKNOWN_TOPIC_OR_PARTITION, and an election
/// for all partitions leaves out those that need none.
pub fn elect_leaders_per_partition<D: Driver>() {
    let Some(admin) = plaintext::<D>("elect_leaders_per_partition") else {
        return;
    };
    let name = unique::<D>("elect");
    topic_on_rig(&admin, &name, 2);
    let missing = TopicPartition::new(unique::<D>("elect-missing"), 0);
    let ours = [TopicPartition::new(&name, 0), TopicPartition::new(&name, 1)];

    let results = wait_for("leaders for the new partitions", || {
        let r = admin
            .run(ElectLeaders::new(
                ElectionType::Preferred,
                ours.iter().cloned().chain([missing.clone()]),
            ))
            .expect("elect leaders call");
        let settled = ours.iter().all(|tp| {
            r[tp].as_ref().err().and_then(AdminError::code) == Some(KafkaCode::ELECTION_NOT_NEEDED)
        });
        settled.then_some(r)
    });
    assert_eq!(results.len(), 3, "{results:?}");
    let err = results[&missing].as_ref().expect_err("unknown topic");
    assert_eq!(
        err.code(),
        Some(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
        "{err}"
    );

    let unclean = admin
        .run(ElectLeaders::new(ElectionType::Unclean, [ours[0].clone()]))
        .expect("unclean election call");
    let err = unclean[&ours[0]].as_ref().expect_err("leader exists");
    assert_eq!(err.code(), Some(KafkaCode::ELECTION_NOT_NEEDED), "{err}");

    let all = admin
        .run(ElectLeaders::all(ElectionType::Preferred))
        .expect("elect all leaders call");
    assert!(
        ours.iter().all(|tp| !all.contains_key(tp)),
        "partitions that need no election are left out: {all:?}"
    );
}

/// AlterPartitionReassignments: reassigning to the current replica completes at once
/// (nothing left to list), cancelling where nothing runs reports
/// NO_REASSIGNMENT_IN_PROGRESS, a non-existent broker or partition fails for its
/// partition only. ListPartitionReassignments finds nothing ongoing.
pub fn partition_reassignments<D: Driver>() {
    let Some(admin) = plaintext::<D>("partition_reassignments") else {
        return;
    };
    let name = unique::<D>("reassign");
    let broker = topic_on_rig(&admin, &name, 3);
    let tp = |p| TopicPartition::new(&name, p);

    let results = admin
        .run(AlterPartitionReassignments::new([
            (tp(0), Some(vec![broker])),
            (tp(1), None),
            (tp(2), Some(vec![broker + 1000])),
            (tp(9), Some(vec![broker])),
            (TopicPartition::new("", 0), None),
        ]))
        .expect("alter reassignments call");
    assert_eq!(results.len(), 5, "{results:?}");
    assert_eq!(results[&tp(0)], Ok(()), "{results:?}");
    let code = |p: &TopicPartition| results[p].as_ref().err().and_then(AdminError::code);
    assert_eq!(
        code(&tp(1)),
        Some(KafkaCode::NO_REASSIGNMENT_IN_PROGRESS),
        "{results:?}"
    );
    assert_eq!(
        code(&tp(2)),
        Some(KafkaCode::INVALID_REPLICA_ASSIGNMENT),
        "{results:?}"
    );
    assert_eq!(
        code(&tp(9)),
        Some(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
        "{results:?}"
    );
    assert!(
        matches!(
            results[&TopicPartition::new("", 0)],
            Err(AdminError::Invalid(_))
        ),
        "{results:?}"
    );

    let ongoing = admin
        .run(ListPartitionReassignments::all())
        .expect("list all reassignments");
    assert!(
        (0..3).all(|p| !ongoing.contains_key(&tp(p))),
        "a same-replica reassignment completes at once: {ongoing:?}"
    );
    let listed = admin
        .run(ListPartitionReassignments::new([tp(0), tp(1)]))
        .expect("list given reassignments");
    assert_eq!(listed, BTreeMap::new());
    assert!(matches!(
        admin.run(ListPartitionReassignments::new([tp(-1)])),
        Err(AdminError::Invalid(_))
    ));
}

/// DescribeFeatures shows metadata.version finalized and supported; a validate-only
/// update to the current level succeeds; an unknown feature fails; an empty update is
/// refused before sending.
pub fn describe_and_update_features<D: Driver>() {
    let Some(admin) = plaintext::<D>("describe_and_update_features") else {
        return;
    };
    let features = admin
        .run(DescribeFeatures::new())
        .expect("describe features");
    let mv = features.finalized_features["metadata.version"];
    assert!(mv.max_version_level > 0, "{features:?}");
    assert!(features.finalized_features_epoch.is_some(), "{features:?}");
    let supported = features.supported_features["metadata.version"];
    assert!(
        (supported.min_version..=supported.max_version).contains(&mv.max_version_level),
        "{features:?}"
    );

    let same = admin
        .run(
            UpdateFeatures::new([(
                "metadata.version".to_string(),
                FeatureUpdate::new(mv.max_version_level, UpgradeType::Upgrade),
            )])
            .validate_only(true),
        )
        .expect("validate-only update call");
    assert_eq!(same["metadata.version"], Ok(()), "{same:?}");

    let unknown = format!("kafka-rs.unknown.{}", unique::<D>("feature"));
    let results = admin
        .run(UpdateFeatures::new([(
            unknown.clone(),
            FeatureUpdate::new(1, UpgradeType::Upgrade),
        )]))
        .expect("unknown feature update call");
    let err = results[&unknown].as_ref().expect_err("unknown feature");
    assert_eq!(err.code(), Some(KafkaCode::INVALID_UPDATE_VERSION), "{err}");

    assert!(matches!(
        admin.run(UpdateFeatures::new(Vec::<(String, FeatureUpdate)>::new())),
        Err(AdminError::Invalid(_))
    ));
    let after = admin
        .run(DescribeFeatures::new())
        .expect("describe features again");
    assert_eq!(after.finalized_features["metadata.version"], mv);
}
