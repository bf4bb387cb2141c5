//! Suite: groups of every type (KIP-1043) — ListGroups across classic, consumer, share
//! and streams groups, DescribeClassicGroups, the share group admin calls (KIP-932) and
//! StreamsGroupDescribe.
//!
//! Share group members are made with raw ShareGroupHeartbeat requests (members without
//! fetches, so the admin calls are tested apart from `ShareConsumer`); the rig's Kafka 4.3 finalizes `share.version` 1 and
//! `streams.version` 1 by default, so share and streams groups need no rig change.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kafka_core::admin::{
    AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteShareGroups, DescribeClassicGroups,
    DescribeShareGroups, DescribeStreamsGroups, ListGroups, ListShareGroupOffsets, RawRequest,
    TopicPartition,
};
use kafka_core::cluster::Route;
use kafka_core::protocol::messages::share_group_heartbeat::ShareGroupHeartbeatRequest;
use kafka_core::protocol::messages::streams_group_heartbeat::request::{Subtopology, Topology};
use kafka_core::protocol::messages::streams_group_heartbeat::StreamsGroupHeartbeatRequest;
use kafka_core::protocol::{KafkaCode, Uuid};

use super::groups::{classic_member, consumer_member, topic};
use super::{plaintext, unique, Driver};

/// Tests of this group (see [`admin_suite!`](crate::admin_suite)).
#[doc(hidden)]
#[macro_export]
macro_rules! __suite_group_types {
    ($d:ty) => {
        $crate::__suite_tests!($d;
            group_types::list_groups_of_every_type,
            group_types::describe_classic_groups_of_a_classic_member,
            group_types::share_group_describe_offsets_and_delete,
            group_types::streams_group_describe,
        );
    };
}

/// A member id as a share consumer makes one (a random UUID in Kafka's text form).
fn share_member_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&nanos.to_le_bytes());
    bytes[15] ^= 0x5a;
    Uuid::from_bytes(bytes).to_string()
}

/// One ShareGroupHeartbeat of `member` at `epoch` (0 joins, -1 leaves); returns the
/// answer's member epoch.
fn share_heartbeat<D: Driver>(
    admin: &D,
    group: &str,
    member: &str,
    epoch: i32,
    topic: Option<&str>,
) -> i32 {
    let request = ShareGroupHeartbeatRequest {
        group_id: group.to_string(),
        member_id: member.to_string(),
        member_epoch: epoch,
        subscribed_topic_names: topic.map(|t| vec![t.to_string()]),
        ..Default::default()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let resp = admin
            .run(RawRequest::new(
                Route::GroupCoordinator(group.to_string()),
                request.clone(),
            ))
            .expect("share group heartbeat");
        match KafkaCode(resp.error_code) {
            KafkaCode::NONE => return resp.member_epoch,
            c if c.is_retriable() && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(200))
            }
            c => panic!("share group heartbeat: {c} {:?}", resp.error_message),
        }
    }
}

/// Joins share group `group` subscribed to `topic`; returns the member id.
fn share_member<D: Driver>(admin: &D, group: &str, topic: &str) -> String {
    let member = share_member_id();
    let epoch = share_heartbeat(admin, group, &member, 0, Some(topic));
    assert!(epoch > 0, "joined at epoch {epoch}");
    member
}

/// ListGroups (KIP-1043) lists a classic, a KIP-848 consumer and a share group with
/// their types and protocol types; the type filter goes to the broker, the protocol
/// type filter is applied here.
pub fn list_groups_of_every_type<D: Driver>() {
    let Some(admin) = plaintext::<D>("list_groups_of_every_type") else {
        return;
    };
    let topic = topic(&admin, "every-type", 1);
    let classic = unique::<D>("lg-classic");
    let consumer = unique::<D>("lg-consumer");
    let share = unique::<D>("lg-share");
    classic_member(&admin, &classic, &topic, None, &[0]);
    consumer_member(&admin, &consumer, &topic);
    share_member(&admin, &share, &topic);

    let all = admin.run(ListGroups::new()).expect("list groups");
    assert!(all.errors.is_empty(), "{:?}", all.errors);
    let kind = |g: &str| {
        let l = all
            .groups
            .get(g)
            .unwrap_or_else(|| panic!("{g} not listed: {all:?}"));
        (l.group_type.as_deref(), l.protocol_type.as_str())
    };
    assert_eq!(kind(&classic), (Some("classic"), "consumer"));
    assert_eq!(kind(&consumer), (Some("consumer"), "consumer"));
    assert_eq!(kind(&share), (Some("share"), "share"));

    let shares = admin
        .run(ListGroups::new().types(["share"]))
        .expect("list share groups");
    assert!(shares.groups.contains_key(&share), "{shares:?}");
    assert!(!shares.groups.contains_key(&classic) && !shares.groups.contains_key(&consumer));
    let classic_or_consumer = admin
        .run(ListGroups::new().types(["classic", "consumer"]).states([
            "Stable",
            "Empty",
            "Assigning",
            "Reconciling",
        ]))
        .expect("list classic and consumer groups");
    assert!(
        classic_or_consumer.groups.contains_key(&classic),
        "{classic_or_consumer:?}"
    );
    assert!(
        classic_or_consumer.groups.contains_key(&consumer),
        "{classic_or_consumer:?}"
    );
    assert!(!classic_or_consumer.groups.contains_key(&share));
    let by_protocol = admin
        .run(ListGroups::new().protocol_types(["share"]))
        .expect("list by protocol type");
    assert!(by_protocol
        .groups
        .values()
        .all(|g| g.protocol_type == "share"));
    assert!(by_protocol.groups.contains_key(&share));
}

/// DescribeClassicGroups: a classic consumer group's protocol type, assignor, member and
/// decoded assignment; a KIP-848 group is not a classic one.
pub fn describe_classic_groups_of_a_classic_member<D: Driver>() {
    let Some(admin) = plaintext::<D>("describe_classic_groups_of_a_classic_member") else {
        return;
    };
    let topic = topic(&admin, "classic-describe", 2);
    let classic = unique::<D>("dc-classic");
    let consumer = unique::<D>("dc-consumer");
    let member = classic_member(&admin, &classic, &topic, Some("i-1"), &[1]);
    consumer_member(&admin, &consumer, &topic);
    let described = admin
        .run(
            DescribeClassicGroups::new([classic.clone(), consumer.clone()])
                .include_authorized_operations(true),
        )
        .expect("describe classic groups");
    let d = described[&classic].as_ref().expect("described");
    assert_eq!(
        (
            d.protocol_type.as_str(),
            d.protocol.as_str(),
            d.state.as_str()
        ),
        ("consumer", "range", "Stable")
    );
    assert!(d.coordinator.is_some(), "{d:?}");
    assert!(
        d.authorized_operations
            .as_ref()
            .is_some_and(|o| !o.is_empty()),
        "{d:?}"
    );
    assert_eq!(d.members.len(), 1, "{d:?}");
    assert_eq!(d.members[0].member_id, member);
    assert_eq!(d.members[0].group_instance_id.as_deref(), Some("i-1"));
    assert_eq!(
        d.members[0].assignment,
        [TopicPartition::new(&topic, 1)].into_iter().collect()
    );
    let err = described[&consumer]
        .as_ref()
        .expect_err("not a classic group");
    assert_eq!(err.code(), Some(KafkaCode::GROUP_ID_NOT_FOUND), "{err}");
}

/// Share groups (KIP-932): a member joined with ShareGroupHeartbeat is described; its
/// offsets cannot be altered while it is in; once it left, start offsets are altered,
/// listed, deleted per topic, and the group is deleted.
pub fn share_group_describe_offsets_and_delete<D: Driver>() {
    let Some(admin) = plaintext::<D>("share_group_describe_offsets_and_delete") else {
        return;
    };
    let topic = topic(&admin, "share", 2);
    let group = unique::<D>("share");
    let member = share_member(&admin, &group, &topic);
    let missing = unique::<D>("no-such-share-group");

    let described = admin
        .run(
            DescribeShareGroups::new([group.clone(), missing.clone()])
                .include_authorized_operations(true),
        )
        .expect("describe share groups");
    let d = described[&group].as_ref().expect("described");
    assert_eq!(d.members.len(), 1, "{d:?}");
    let m = &d.members[0];
    assert_eq!(m.member_id, member);
    assert!(m.subscribed_topics.contains(&topic), "{m:?}");
    assert!(m.member_epoch > 0, "{m:?}");
    assert!(d.coordinator.is_some() && d.group_epoch > 0, "{d:?}");
    assert!(
        d.authorized_operations
            .as_ref()
            .is_some_and(|o| !o.is_empty()),
        "{d:?}"
    );
    let err = described[&missing].as_ref().expect_err("unknown group");
    assert_eq!(err.code(), Some(KafkaCode::GROUP_ID_NOT_FOUND), "{err}");

    let p0 = TopicPartition::new(&topic, 0);
    let p1 = TopicPartition::new(&topic, 1);
    let busy = admin.run(AlterShareGroupOffsets::new(&group, [(p0.clone(), 0)]));
    let refused = match &busy {
        Ok(per_partition) => per_partition[&p0]
            .clone()
            .expect_err("the group has a member"),
        Err(e) => e.clone(),
    };
    assert_eq!(refused.code(), Some(KafkaCode::NON_EMPTY_GROUP), "{busy:?}");

    share_heartbeat(&admin, &group, &member, -1, None);
    // The broker may answer UNKNOWN_TOPIC_OR_PARTITION for a while: the share state of
    // the just-created topic (or its __share_group_state partition) is not loaded yet
    // (CI under load, once). Asked again for up to 30 s; any other answer is judged.
    let patience = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let altered = loop {
        let altered = admin
            .run(AlterShareGroupOffsets::new(
                &group,
                [(p0.clone(), 0), (p1.clone(), 0)],
            ))
            .expect("alter share group offsets");
        let loading = altered.values().any(|r| {
            r.as_ref()
                .is_err_and(|e| e.code() == Some(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION))
        });
        if !loading || std::time::Instant::now() > patience {
            break altered;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    };
    assert_eq!(altered[&p0], Ok(()), "{altered:?}");
    assert_eq!(altered[&p1], Ok(()), "{altered:?}");

    let listed = admin
        .run(ListShareGroupOffsets::new(&group))
        .expect("list share group offsets");
    let offsets = listed[&group].as_ref().expect("offsets");
    for tp in [&p0, &p1] {
        let info = offsets
            .get(tp)
            .unwrap_or_else(|| panic!("{tp:?} missing: {offsets:?}"))
            .as_ref()
            .expect("listed")
            .expect("a start offset");
        assert_eq!(info.start_offset, 0, "{offsets:?}");
    }
    let only = admin
        .run(ListShareGroupOffsets::groups([(
            group.clone(),
            Some(vec![p1.clone()]),
        )]))
        .expect("list one partition");
    assert_eq!(only[&group].as_ref().map(|o| o.len()), Ok(1), "{only:?}");

    let deleted = admin
        .run(DeleteShareGroupOffsets::new(&group, [topic.clone()]))
        .expect("delete share group offsets");
    assert_eq!(deleted[&topic], Ok(()), "{deleted:?}");
    let after = admin
        .run(ListShareGroupOffsets::new(&group))
        .expect("list after delete");
    let after = after[&group].as_ref().expect("offsets");
    assert!(
        after.values().all(|r| matches!(r, Ok(None))),
        "no start offsets left: {after:?}"
    );

    let deleted = admin
        .run(DeleteShareGroups::new([group.clone()]))
        .expect("delete share groups");
    assert_eq!(deleted[&group], Ok(()), "{deleted:?}");
    let gone = admin
        .run(DescribeShareGroups::new([group.clone()]))
        .expect("describe deleted group");
    let err = gone[&group].as_ref().expect_err("deleted");
    assert_eq!(err.code(), Some(KafkaCode::GROUP_ID_NOT_FOUND), "{err}");
}

/// Joins streams group `group` as a member whose topology reads `topic` (one
/// subtopology, no state), with a raw StreamsGroupHeartbeat; returns the member id.
fn streams_member<D: Driver>(admin: &D, group: &str, topic: &str) -> String {
    let member = share_member_id();
    let request = StreamsGroupHeartbeatRequest {
        group_id: group.to_string(),
        member_id: member.clone(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        topology: Some(Topology {
            epoch: 0,
            subtopologies: vec![Subtopology {
                subtopology_id: "0".into(),
                source_topics: vec![topic.to_string()],
                ..Default::default()
            }],
            ..Default::default()
        }),
        active_tasks: Some(Vec::new()),
        standby_tasks: Some(Vec::new()),
        warmup_tasks: Some(Vec::new()),
        process_id: Some(share_member_id()),
        client_tags: Some(Vec::new()),
        ..Default::default()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let resp = admin
            .run(RawRequest::new(
                Route::GroupCoordinator(group.to_string()),
                request.clone(),
            ))
            .expect("streams group heartbeat");
        match KafkaCode(resp.error_code) {
            KafkaCode::NONE => return member,
            c if c.is_retriable() && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(200))
            }
            c => panic!("streams group heartbeat: {c} {:?}", resp.error_message),
        }
    }
}

/// StreamsGroupDescribe (KIP-1071): a streams member joined with a raw heartbeat is
/// described with its topology; an unknown group fails alone with GROUP_ID_NOT_FOUND.
pub fn streams_group_describe<D: Driver>() {
    let Some(admin) = plaintext::<D>("streams_group_describe") else {
        return;
    };
    let topic = topic(&admin, "streams-in", 2);
    let group = unique::<D>("streams");
    let member = streams_member(&admin, &group, &topic);
    let missing = unique::<D>("no-such-streams-group");
    let described = admin
        .run(DescribeStreamsGroups::new([group.clone(), missing.clone()]))
        .expect("describe streams groups");
    let d = described[&group].as_ref().expect("described");
    assert_eq!(d.members.len(), 1, "{d:?}");
    assert_eq!(d.members[0].member_id, member);
    assert_eq!(d.topology_epoch, Some(0), "{d:?}");
    assert_eq!(
        d.subtopologies["0"].source_topics,
        std::slice::from_ref(&topic),
        "{d:?}"
    );
    assert!(d.coordinator.is_some(), "{d:?}");
    let err = described[&missing].as_ref().expect_err("unknown group");
    assert_eq!(err.code(), Some(KafkaCode::GROUP_ID_NOT_FOUND), "{err}");
    let listed = admin
        .run(ListGroups::new().types(["streams"]))
        .expect("list streams groups");
    let l = listed
        .groups
        .get(&group)
        .unwrap_or_else(|| panic!("{listed:?}"));
    assert_eq!(l.group_type.as_deref(), Some("streams"), "{l:?}");
}
