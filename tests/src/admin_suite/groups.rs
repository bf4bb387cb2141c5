//! Suite: consumer groups and their offsets. Members are made with raw requests (no
//! consumer client yet): a KIP-848 member with one ConsumerGroupHeartbeat, a classic
//! member with JoinGroup + SyncGroup.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_core::admin::{
    AdminError, AlterConsumerGroupOffsets, CreateTopics, DeleteConsumerGroupOffsets,
    DeleteConsumerGroups, DescribeConsumerGroups, ListConsumerGroupOffsets, ListConsumerGroups,
    MemberToRemove, NewTopic, OffsetAndMetadata, RawRequest, RemoveMembersFromConsumerGroup,
    TopicPartition,
};
use kafka_core::cluster::Route;
use kafka_core::protocol::messages::consumer_group_heartbeat::{
    request::TopicPartitions, ConsumerGroupHeartbeatRequest,
};
use kafka_core::protocol::messages::consumer_protocol_assignment::{
    ConsumerProtocolAssignment, TopicPartition as AssignedTopic,
};
use kafka_core::protocol::messages::consumer_protocol_subscription::ConsumerProtocolSubscription;
use kafka_core::protocol::messages::join_group::{
    request::JoinGroupRequestProtocol, JoinGroupRequest,
};
use kafka_core::protocol::messages::sync_group::{
    request::SyncGroupRequestAssignment, SyncGroupRequest,
};
use kafka_core::protocol::{Encodable, KafkaCode};

use super::{plaintext, unique, Driver};

/// Tests of this group (see [`admin_suite!`](crate::admin_suite)).
#[doc(hidden)]
#[macro_export]
macro_rules! __suite_groups {
    ($d:ty) => {
        $crate::__suite_tests!($d;
            groups::consumer_group_list_describe_delete,
            groups::classic_group_describe_and_remove_static_member,
            groups::classic_group_remove_all_members,
            groups::group_offsets_alter_list_delete,
        );
    };
}

/// Creates a topic with `partitions` partitions; panics on failure (test setup).
pub(crate) fn topic<D: Driver>(admin: &D, what: &str, partitions: i32) -> String {
    let name = unique::<D>(what);
    let created = admin
        .run(CreateTopics::new([NewTopic::new(&name, partitions, 1)]))
        .expect("create topic");
    created[&name].as_ref().expect("topic created");
    name
}

fn versioned<E: Encodable>(version: i16, body: &E) -> Bytes {
    let mut out = version.to_be_bytes().to_vec();
    body.encode(&mut out, version).expect("encode");
    Bytes::from(out)
}

/// ConsumerProtocol subscription bytes for `topic`.
fn subscription(topic: &str) -> Bytes {
    versioned(
        0,
        &ConsumerProtocolSubscription {
            topics: vec![topic.to_string()],
            user_data: None,
            ..Default::default()
        },
    )
}

/// ConsumerProtocol assignment bytes: `topic` partitions `partitions`.
fn assignment(topic: &str, partitions: &[i32]) -> Bytes {
    versioned(
        0,
        &ConsumerProtocolAssignment {
            assigned_partitions: vec![AssignedTopic {
                topic: topic.to_string(),
                partitions: partitions.to_vec(),
                ..Default::default()
            }],
            user_data: None,
            ..Default::default()
        },
    )
}

/// Joins a classic consumer group as its only member and syncs with `partitions` of
/// `topic` assigned to itself; returns the member id. `instance` makes it static.
pub(crate) fn classic_member<D: Driver>(
    admin: &D,
    group: &str,
    topic: &str,
    instance: Option<&str>,
    partitions: &[i32],
) -> String {
    let mut join = JoinGroupRequest {
        group_id: group.to_string(),
        session_timeout_ms: 45_000,
        rebalance_timeout_ms: 10_000,
        member_id: String::new(),
        group_instance_id: instance.map(str::to_string),
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: subscription(topic),
            ..Default::default()
        }],
        ..Default::default()
    };
    let route = Route::GroupCoordinator(group.to_string());
    let deadline = Instant::now() + Duration::from_secs(30);
    let joined = loop {
        let resp = admin
            .run(RawRequest::new(route.clone(), join.clone()))
            .expect("join group");
        match KafkaCode(resp.error_code) {
            KafkaCode::NONE => break resp,
            // Dynamic members join twice: the first answer names their member id.
            KafkaCode::MEMBER_ID_REQUIRED => join.member_id = resp.member_id,
            c if c.is_retriable() && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(200))
            }
            c => panic!("join group: {c}"),
        }
    };
    assert_eq!(joined.leader, joined.member_id, "the only member leads");
    let sync = SyncGroupRequest {
        group_id: group.to_string(),
        generation_id: joined.generation_id,
        member_id: joined.member_id.clone(),
        group_instance_id: instance.map(str::to_string),
        protocol_type: Some("consumer".into()),
        protocol_name: joined.protocol_name.clone(),
        assignments: vec![SyncGroupRequestAssignment {
            member_id: joined.member_id.clone(),
            assignment: assignment(topic, partitions),
            ..Default::default()
        }],
        ..Default::default()
    };
    let synced = admin.run(RawRequest::new(route, sync)).expect("sync group");
    assert_eq!(
        synced.error_code,
        0,
        "sync group: {}",
        KafkaCode(synced.error_code)
    );
    joined.member_id
}

/// Joins a KIP-848 `consumer` group subscribed to `topic` and heartbeats until the
/// member owns its assignment; returns the member id.
pub(crate) fn consumer_member<D: Driver>(admin: &D, group: &str, topic: &str) -> String {
    let member_id = unique::<D>("member");
    let mut hb = ConsumerGroupHeartbeatRequest {
        group_id: group.to_string(),
        member_id: member_id.clone(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec![topic.to_string()]),
        topic_partitions: Some(Vec::new()),
        ..Default::default()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let resp = admin
            .run(RawRequest::new(
                Route::GroupCoordinator(group.to_string()),
                hb.clone(),
            ))
            .expect("heartbeat");
        let code = KafkaCode(resp.error_code);
        if code == KafkaCode::NONE {
            hb.member_epoch = resp.member_epoch;
            // Later heartbeats carry only what changed.
            hb.subscribed_topic_names = None;
            hb.rebalance_timeout_ms = -1;
            if let Some(a) = resp.assignment {
                let owned: Vec<TopicPartitions> = a
                    .topic_partitions
                    .into_iter()
                    .map(|t| TopicPartitions {
                        topic_id: t.topic_id,
                        partitions: t.partitions,
                        ..Default::default()
                    })
                    .collect();
                let any = owned.iter().any(|t| !t.partitions.is_empty());
                hb.topic_partitions = Some(owned);
                if any {
                    // Acknowledge the assignment once so the coordinator sees it owned.
                    let ack = admin
                        .run(RawRequest::new(
                            Route::GroupCoordinator(group.to_string()),
                            hb.clone(),
                        ))
                        .expect("heartbeat ack");
                    assert_eq!(ack.error_code, 0, "{:?}", ack.error_message);
                    return member_id;
                }
            } else {
                hb.topic_partitions = None;
            }
        } else if !code.is_retriable() {
            panic!("heartbeat: {code} {:?}", resp.error_message);
        }
        assert!(Instant::now() < deadline, "no assignment for {member_id}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn tps(topic: &str, partitions: &[i32]) -> BTreeSet<TopicPartition> {
    partitions
        .iter()
        .map(|p| TopicPartition::new(topic, *p))
        .collect()
}

/// A KIP-848 group: listed on the broker with type and state filters; described through
/// ConsumerGroupDescribe (member, assignment, epochs); not deletable while it has a
/// member; an unknown group fails alone with GROUP_ID_NOT_FOUND.
pub fn consumer_group_list_describe_delete<D: Driver>() {
    let Some(admin) = plaintext::<D>("consumer_group_list_describe_delete") else {
        return;
    };
    let topic = topic(&admin, "cg-topic", 2);
    let group = unique::<D>("cg");
    let member = consumer_member(&admin, &group, &topic);

    let all = admin.run(ListConsumerGroups::new()).expect("list groups");
    assert!(all.errors.is_empty(), "{:?}", all.errors);
    let listed = all
        .groups
        .get(&group)
        .unwrap_or_else(|| panic!("{group} not listed: {all:?}"));
    assert_eq!(listed.protocol_type, "consumer");
    assert_eq!(listed.group_type.as_deref(), Some("consumer"));
    assert!(listed.state.is_some(), "{listed:?}");
    let consumer_only = admin
        .run(ListConsumerGroups::new().types(["consumer"]))
        .expect("list consumer-type groups");
    assert!(consumer_only.groups.contains_key(&group));
    let classic_only = admin
        .run(ListConsumerGroups::new().types(["classic"]))
        .expect("list classic groups");
    assert!(!classic_only.groups.contains_key(&group));
    let dead_only = admin
        .run(ListConsumerGroups::new().states(["Dead"]))
        .expect("list dead groups");
    assert!(!dead_only.groups.contains_key(&group));

    let missing = unique::<D>("no-such-group");
    let described = admin
        .run(
            DescribeConsumerGroups::new([group.clone(), missing.clone()])
                .include_authorized_operations(true),
        )
        .expect("describe call");
    let d = described[&group].as_ref().expect("described");
    assert_eq!(d.group_type, "consumer");
    assert!(!d.is_simple_consumer_group);
    assert!(d.coordinator.is_some(), "{d:?}");
    assert!(d.group_epoch.is_some_and(|e| e > 0), "{d:?}");
    assert!(
        d.authorized_operations
            .as_ref()
            .is_some_and(|o| !o.is_empty()),
        "{d:?}"
    );
    assert_eq!(d.members.len(), 1, "{d:?}");
    let m = &d.members[0];
    assert_eq!(m.member_id, member);
    assert!(!m.client_id.is_empty(), "{m:?}");
    assert!(!m.host.is_empty(), "{m:?}");
    assert_eq!(
        m.target_assignment.as_ref(),
        Some(&tps(&topic, &[0, 1])),
        "{m:?}"
    );
    assert_eq!(m.assignment, tps(&topic, &[0, 1]), "{m:?}");
    let err = described[&missing].as_ref().expect_err("unknown group");
    assert_eq!(err.code(), Some(KafkaCode::GROUP_ID_NOT_FOUND), "{err}");

    // Offsets of a group with members are theirs to commit.
    let tp0 = TopicPartition::new(&topic, 0);
    let refused = admin
        .run(
            AlterConsumerGroupOffsets::new(&group, [(tp0.clone(), OffsetAndMetadata::new(1))])
                .timeout(Duration::from_secs(10)),
        )
        .expect("alter call");
    let err = refused[&tp0].as_ref().expect_err("group has a member");
    assert_eq!(err.code(), Some(KafkaCode::UNKNOWN_MEMBER_ID), "{err}");

    let deleted = admin
        .run(DeleteConsumerGroups::new([group.clone()]))
        .expect("delete call");
    let err = deleted[&group].as_ref().expect_err("group has a member");
    assert_eq!(err.code(), Some(KafkaCode::NON_EMPTY_GROUP), "{err}");
}

/// A classic group with a static member: DescribeGroups fallback (state, assignor,
/// decoded assignment, instance id); removing the member by instance id empties the
/// group; an unknown instance fails alone.
pub fn classic_group_describe_and_remove_static_member<D: Driver>() {
    let Some(admin) = plaintext::<D>("classic_group_describe_and_remove_static_member") else {
        return;
    };
    let topic = topic(&admin, "classic-topic", 3);
    let group = unique::<D>("classic");
    let member = classic_member(&admin, &group, &topic, Some("instance-1"), &[0, 2]);

    let classic = admin
        .run(ListConsumerGroups::new().types(["classic"]))
        .expect("list classic groups");
    let listed = classic
        .groups
        .get(&group)
        .unwrap_or_else(|| panic!("{classic:?}"));
    assert_eq!(listed.state.as_deref(), Some("Stable"));

    let described = admin
        .run(DescribeConsumerGroups::new([group.clone()]))
        .expect("describe call");
    let d = described[&group].as_ref().expect("described");
    assert_eq!(d.group_type, "classic");
    assert_eq!(d.state, "Stable");
    assert_eq!(d.partition_assignor, "range");
    assert!(d.coordinator.is_some());
    assert_eq!(d.members.len(), 1, "{d:?}");
    let m = &d.members[0];
    assert_eq!(m.member_id, member);
    assert_eq!(m.group_instance_id.as_deref(), Some("instance-1"));
    assert_eq!(m.assignment, tps(&topic, &[0, 2]));
    assert_eq!(m.target_assignment, None);

    let removed = admin
        .run(RemoveMembersFromConsumerGroup::new(
            &group,
            [
                MemberToRemove::instance("instance-1"),
                MemberToRemove::instance("instance-9"),
            ],
        ))
        .expect("remove members call");
    assert_eq!(
        removed[&MemberToRemove::instance("instance-1")],
        Ok(()),
        "{removed:?}"
    );
    let err = removed[&MemberToRemove::instance("instance-9")]
        .as_ref()
        .expect_err("unknown instance");
    assert_eq!(err.code(), Some(KafkaCode::UNKNOWN_MEMBER_ID), "{err}");

    let after = admin
        .run(DescribeConsumerGroups::new([group.clone()]))
        .expect("describe call");
    let d = after[&group].as_ref().expect("described");
    assert_eq!(d.state, "Empty", "{d:?}");
    assert!(d.members.is_empty(), "{d:?}");
}

/// `RemoveMembersFromConsumerGroup::all`: describes the group, removes its dynamic member
/// by member id; the group is then empty and can be deleted.
pub fn classic_group_remove_all_members<D: Driver>() {
    let Some(admin) = plaintext::<D>("classic_group_remove_all_members") else {
        return;
    };
    let topic = topic(&admin, "classic-all", 1);
    let group = unique::<D>("classic-all");
    let member = classic_member(&admin, &group, &topic, None, &[0]);

    let removed = admin
        .run(RemoveMembersFromConsumerGroup::all(&group).reason("admin suite"))
        .expect("remove all call");
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert_eq!(
        removed[&MemberToRemove::member(&member)],
        Ok(()),
        "{removed:?}"
    );
    let d = admin
        .run(DescribeConsumerGroups::new([group.clone()]))
        .expect("describe call");
    assert!(d[&group].as_ref().expect("described").members.is_empty());
    let deleted = admin
        .run(DeleteConsumerGroups::new([group.clone()]))
        .expect("delete call");
    assert_eq!(deleted[&group], Ok(()), "{deleted:?}");
}

/// Offsets of an empty group: committed with AlterConsumerGroupOffsets (per-partition
/// results), read back whole, filtered and for several groups at once, partly deleted;
/// the group (a simple one) is listed, then deleted.
pub fn group_offsets_alter_list_delete<D: Driver>() {
    let Some(admin) = plaintext::<D>("group_offsets_alter_list_delete") else {
        return;
    };
    let topic = topic(&admin, "offsets", 2);
    let group = unique::<D>("offsets");
    let p0 = TopicPartition::new(&topic, 0);
    let p1 = TopicPartition::new(&topic, 1);
    let ghost = TopicPartition::new(unique::<D>("no-such-topic"), 0);
    let altered = admin
        .run(AlterConsumerGroupOffsets::new(
            &group,
            [
                (
                    p0.clone(),
                    OffsetAndMetadata {
                        offset: 5,
                        leader_epoch: Some(0),
                        metadata: "m0".into(),
                    },
                ),
                (p1.clone(), OffsetAndMetadata::new(7)),
                (ghost.clone(), OffsetAndMetadata::new(1)),
            ],
        ))
        .expect("alter call");
    assert_eq!(altered[&p0], Ok(()));
    assert_eq!(altered[&p1], Ok(()));
    let err = altered[&ghost].as_ref().expect_err("unknown topic");
    assert_eq!(
        err.code(),
        Some(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
        "{err}"
    );

    let listed = admin
        .run(ListConsumerGroupOffsets::new(&group))
        .expect("list offsets call");
    let offsets = listed[&group].as_ref().expect("group offsets");
    assert_eq!(offsets.len(), 2, "{offsets:?}");
    let o0 = offsets[&p0]
        .as_ref()
        .expect("p0")
        .as_ref()
        .expect("committed");
    assert_eq!(
        (o0.offset, o0.leader_epoch, o0.metadata.as_str()),
        (5, Some(0), "m0")
    );
    let o1 = offsets[&p1]
        .as_ref()
        .expect("p1")
        .as_ref()
        .expect("committed");
    assert_eq!((o1.offset, o1.leader_epoch), (7, None));

    let other = unique::<D>("offsets-none");
    let p9 = TopicPartition::new(&topic, 9);
    let both = admin
        .run(ListConsumerGroupOffsets::groups([
            (group.clone(), Some(vec![p1.clone(), p9.clone()])),
            (other.clone(), None),
        ]))
        .expect("list offsets of two groups");
    let filtered = both[&group].as_ref().expect("filtered offsets");
    assert_eq!(filtered.len(), 2, "{filtered:?}");
    assert_eq!(
        filtered[&p1]
            .as_ref()
            .ok()
            .and_then(|o| o.as_ref())
            .map(|o| o.offset),
        Some(7)
    );
    assert!(!filtered.contains_key(&p0));
    assert!(matches!(&filtered[&p9], Ok(None) | Err(_)), "{filtered:?}");
    assert_eq!(both[&other].as_ref().map(|m| m.len()), Ok(0), "{both:?}");
    // Both coordinators are known now: the same query goes out as one batched request.
    let again = admin
        .run(ListConsumerGroupOffsets::groups([
            (group.clone(), Some(vec![p1.clone(), p9.clone()])),
            (other.clone(), None),
        ]))
        .expect("batched list of two groups");
    assert_eq!(again, both);

    let deleted = admin
        .run(DeleteConsumerGroupOffsets::new(&group, [p0.clone()]))
        .expect("delete offsets call");
    assert_eq!(deleted[&p0], Ok(()), "{deleted:?}");
    let after = admin
        .run(ListConsumerGroupOffsets::new(&group))
        .expect("list offsets call");
    let after = after[&group].as_ref().expect("group offsets");
    assert!(!after.contains_key(&p0), "{after:?}");
    assert!(after.contains_key(&p1), "{after:?}");

    let groups = admin.run(ListConsumerGroups::new()).expect("list groups");
    let listed = groups
        .groups
        .get(&group)
        .unwrap_or_else(|| panic!("{groups:?}"));
    assert!(listed.is_simple_consumer_group(), "{listed:?}");

    let gone = unique::<D>("never-existed");
    let deleted = admin
        .run(DeleteConsumerGroups::new([group.clone(), gone.clone()]))
        .expect("delete groups call");
    assert_eq!(deleted[&group], Ok(()), "{deleted:?}");
    let err = deleted[&gone].as_ref().expect_err("unknown group");
    assert_eq!(err.code(), Some(KafkaCode::GROUP_ID_NOT_FOUND), "{err}");
    let described = admin
        .run(DescribeConsumerGroups::new([group.clone()]))
        .expect("describe call");
    let err: &AdminError = described[&group].as_ref().expect_err("deleted group");
    assert_eq!(err.code(), Some(KafkaCode::GROUP_ID_NOT_FOUND), "{err}");
}
