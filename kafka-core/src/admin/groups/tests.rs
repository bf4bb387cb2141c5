//! Unit tests of the group operations: assignment and offset decoding, and whole
//! operations against scripted brokers (fan-out merging, DescribeGroups fallback,
//! coordinator retries).

use std::cell::Cell;
use std::collections::BTreeSet;

use bytes::Bytes;

use super::scripted::{coordinator_b1, coordinator_on, reply, two_brokers, Cluster};
use super::*;
use crate::admin::{AdminError, TopicPartition};
use crate::protocol::messages::consumer_group_describe::response::DescribedGroup as NewGroup;
use crate::protocol::messages::consumer_group_describe::ConsumerGroupDescribeResponse;
use crate::protocol::messages::consumer_protocol_assignment::{
    ConsumerProtocolAssignment, TopicPartition as AssignedTopic,
};
use crate::protocol::messages::describe_groups::response::{DescribedGroup, DescribedGroupMember};
use crate::protocol::messages::describe_groups::{DescribeGroupsRequest, DescribeGroupsResponse};
use crate::protocol::messages::list_groups::response::ListedGroup;
use crate::protocol::messages::list_groups::ListGroupsResponse;
use crate::protocol::messages::offset_fetch::response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use crate::protocol::messages::offset_fetch::OffsetFetchResponse;
use crate::protocol::{ApiKey, Encodable, KafkaCode};
use crate::test_support::Seen;

fn assignment_bytes(version: i16, topic: &str, partitions: &[i32]) -> Bytes {
    let mut out = version.to_be_bytes().to_vec();
    ConsumerProtocolAssignment {
        assigned_partitions: vec![AssignedTopic {
            topic: topic.into(),
            partitions: partitions.to_vec(),
            ..Default::default()
        }],
        user_data: Some(Bytes::from_static(b"ud")),
        ..Default::default()
    }
    .encode(&mut out, version.min(3))
    .unwrap();
    Bytes::from(out)
}

fn tps(topic: &str, partitions: &[i32]) -> BTreeSet<TopicPartition> {
    partitions
        .iter()
        .map(|p| TopicPartition::new(topic, *p))
        .collect()
}

#[test]
fn assignments_decode_at_every_version_and_reject_garbage() {
    for v in 0..=3 {
        assert_eq!(
            decode_assignment(&assignment_bytes(v, "t", &[0, 2])).unwrap(),
            tps("t", &[0, 2]),
            "version {v}"
        );
    }
    // A newer version is read as the newest known one.
    assert_eq!(
        decode_assignment(&assignment_bytes(7, "t", &[1])).unwrap(),
        tps("t", &[1])
    );
    assert!(decode_assignment(&Bytes::new()).unwrap().is_empty());
    for bad in [&[0u8][..], &[0xff, 0xff, 0, 0], &[0, 0, 0, 0, 0, 9]] {
        let err = decode_assignment(&Bytes::copy_from_slice(bad)).unwrap_err();
        assert!(matches!(err, AdminError::Protocol(_)), "{bad:?}: {err}");
    }
}

#[test]
fn fetched_offsets_read_both_response_shapes() {
    let grouped = OffsetFetchResponse {
        groups: vec![OffsetFetchResponseGroup {
            group_id: "g".into(),
            topics: vec![OffsetFetchResponseTopics {
                name: "t".into(),
                partitions: vec![
                    OffsetFetchResponsePartitions {
                        partition_index: 0,
                        committed_offset: 10,
                        committed_leader_epoch: 2,
                        metadata: Some("m".into()),
                        ..Default::default()
                    },
                    OffsetFetchResponsePartitions {
                        partition_index: 1,
                        committed_offset: -1,
                        committed_leader_epoch: -1,
                        ..Default::default()
                    },
                    OffsetFetchResponsePartitions {
                        partition_index: 2,
                        error_code: KafkaCode::UNKNOWN_TOPIC_OR_PARTITION.0,
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let (code, offsets) = fetch::fetched_offsets("g", grouped);
    assert_eq!(code, 0);
    assert_eq!(
        offsets[&TopicPartition::new("t", 0)],
        Ok(Some(OffsetAndMetadata {
            offset: 10,
            leader_epoch: Some(2),
            metadata: "m".into()
        }))
    );
    assert_eq!(offsets[&TopicPartition::new("t", 1)], Ok(None));
    assert_eq!(
        offsets[&TopicPartition::new("t", 2)]
            .as_ref()
            .unwrap_err()
            .code(),
        Some(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION)
    );

    let legacy = OffsetFetchResponse {
        error_code: KafkaCode::COORDINATOR_LOAD_IN_PROGRESS.0,
        topics: vec![OffsetFetchResponseTopic {
            name: "t".into(),
            partitions: vec![OffsetFetchResponsePartition {
                partition_index: 3,
                committed_offset: 4,
                committed_leader_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let (code, offsets) = fetch::fetched_offsets("g", legacy);
    assert_eq!(code, KafkaCode::COORDINATOR_LOAD_IN_PROGRESS.0);
    assert_eq!(
        offsets[&TopicPartition::new("t", 3)],
        Ok(Some(OffsetAndMetadata::new(4)))
    );
}

#[test]
fn classic_groups_of_other_protocols_are_not_consumer_groups() {
    let connect = DescribedGroup {
        group_id: "c".into(),
        protocol_type: "connect".into(),
        ..Default::default()
    };
    assert!(matches!(
        describe::from_classic(connect, None, false),
        Err(AdminError::Invalid(_))
    ));
    let simple = DescribedGroup {
        group_id: "s".into(),
        group_state: "Empty".into(),
        ..Default::default()
    };
    let d = describe::from_classic(simple, Some(3), false).unwrap();
    assert!(d.is_simple_consumer_group);
    assert_eq!((d.coordinator, d.group_type.as_str()), (Some(3), "classic"));
}

fn listed(id: &str, protocol_type: &str) -> ListedGroup {
    ListedGroup {
        group_id: id.into(),
        protocol_type: protocol_type.into(),
        group_state: "Stable".into(),
        group_type: "classic".into(),
        ..Default::default()
    }
}

#[test]
fn list_merges_brokers_and_reports_a_failed_one() {
    let mut cluster = Cluster::new();
    let mut loading = true;
    let out = cluster.run(ListConsumerGroups::new(), |host, seen| match seen.api() {
        ApiKey::Metadata => reply(seen, &two_brokers()),
        ApiKey::ListGroups if host == "b1" && loading => {
            // The coordinator is still loading: asked again after a backoff.
            loading = false;
            reply(
                seen,
                &ListGroupsResponse {
                    error_code: KafkaCode::COORDINATOR_LOAD_IN_PROGRESS.0,
                    ..Default::default()
                },
            )
        }
        ApiKey::ListGroups if host == "b1" => reply(
            seen,
            &ListGroupsResponse {
                groups: vec![
                    listed("a", "consumer"),
                    listed("simple", ""),
                    listed("sink", "connect"),
                ],
                ..Default::default()
            },
        ),
        ApiKey::ListGroups => reply(
            seen,
            &ListGroupsResponse {
                error_code: KafkaCode::CLUSTER_AUTHORIZATION_FAILED.0,
                ..Default::default()
            },
        ),
        other => panic!("unexpected {other:?}"),
    });
    let out = out.unwrap();
    assert!(!loading);
    assert_eq!(
        out.groups.keys().map(String::as_str).collect::<Vec<_>>(),
        ["a", "simple"]
    );
    assert!(out.groups["simple"].is_simple_consumer_group());
    assert_eq!(out.groups["a"].state.as_deref(), Some("Stable"));
    assert_eq!(out.errors.len(), 1, "{out:?}");
    assert_eq!(
        out.errors[&2].code(),
        Some(KafkaCode::CLUSTER_AUTHORIZATION_FAILED)
    );
}

/// A scripted cluster that lists group `g` on every broker and counts Metadata requests.
fn list_answer<'a>(metadata_asked: &'a Cell<u32>) -> impl FnMut(&str, &Seen) -> Vec<u8> + 'a {
    move |host, seen| match seen.api() {
        ApiKey::Metadata => {
            metadata_asked.set(metadata_asked.get() + 1);
            reply(seen, &two_brokers())
        }
        ApiKey::ListGroups => reply(
            seen,
            &ListGroupsResponse {
                groups: vec![listed(&format!("g-{host}"), "consumer")],
                ..Default::default()
            },
        ),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn list_learns_brokers_from_the_clients_metadata_and_sends_none_when_it_is_fresh() {
    let mut cluster = Cluster::new();
    let metadata_asked = Cell::new(0);
    // A cold client: the fan-out asks the client for its metadata, and the client's one
    // refresh serves both the broker list and the routes to b1 and b2.
    let out = cluster
        .run(ListConsumerGroups::new(), list_answer(&metadata_asked))
        .unwrap();
    assert_eq!(metadata_asked.get(), 1);
    assert_eq!(
        out.groups.keys().map(String::as_str).collect::<Vec<_>>(),
        ["g-b1", "g-b2"]
    );
    // Fresh metadata: no Metadata request at all, every broker still asked.
    let out = cluster
        .run(ListConsumerGroups::new(), list_answer(&metadata_asked))
        .unwrap();
    assert_eq!(metadata_asked.get(), 1);
    assert_eq!(out.groups.len(), 2, "{out:?}");
    assert!(out.errors.is_empty(), "{out:?}");
}

#[test]
fn describe_falls_back_to_describe_groups_and_retries_a_loading_coordinator() {
    let mut cluster = Cluster::new();
    let mut describe_groups_seen = 0;
    let out = cluster.run(
        DescribeConsumerGroups::new(["classic", "modern"]),
        |_, seen| match seen.api() {
            ApiKey::Metadata => reply(seen, &two_brokers()),
            ApiKey::FindCoordinator => coordinator_b1(seen),
            ApiKey::ConsumerGroupDescribe => {
                let req: crate::protocol::messages::consumer_group_describe::ConsumerGroupDescribeRequest =
                    seen.decode();
                let id = req.group_ids[0].clone();
                let group = if id == "modern" {
                    NewGroup {
                        group_id: id,
                        group_state: "Stable".into(),
                        group_epoch: 4,
                        assignment_epoch: 4,
                        assignor_name: "uniform".into(),
                        ..Default::default()
                    }
                } else {
                    NewGroup {
                        group_id: id,
                        error_code: KafkaCode::GROUP_ID_NOT_FOUND.0,
                        ..Default::default()
                    }
                };
                reply(
                    seen,
                    &ConsumerGroupDescribeResponse {
                        groups: vec![group],
                        ..Default::default()
                    },
                )
            }
            ApiKey::DescribeGroups => {
                let req: DescribeGroupsRequest = seen.decode();
                assert_eq!(req.groups, ["classic"]);
                describe_groups_seen += 1;
                let group = if describe_groups_seen == 1 {
                    DescribedGroup {
                        group_id: "classic".into(),
                        error_code: KafkaCode::COORDINATOR_LOAD_IN_PROGRESS.0,
                        ..Default::default()
                    }
                } else {
                    DescribedGroup {
                        group_id: "classic".into(),
                        group_state: "Stable".into(),
                        protocol_type: "consumer".into(),
                        protocol_data: "range".into(),
                        members: vec![DescribedGroupMember {
                            member_id: "m1".into(),
                            group_instance_id: Some("i1".into()),
                            client_id: "c".into(),
                            client_host: "/10.0.0.1".into(),
                            member_assignment: assignment_bytes(1, "t", &[0, 1]),
                            ..Default::default()
                        }],
                        ..Default::default()
                    }
                };
                reply(
                    seen,
                    &DescribeGroupsResponse {
                        groups: vec![group],
                        ..Default::default()
                    },
                )
            }
            other => panic!("unexpected {other:?}"),
        },
    );
    let out = out.unwrap();
    assert_eq!(describe_groups_seen, 2);
    let classic = out["classic"].as_ref().unwrap();
    assert_eq!(classic.group_type, "classic");
    assert_eq!(classic.coordinator, Some(1));
    assert_eq!(classic.partition_assignor, "range");
    assert_eq!(classic.members[0].assignment, tps("t", &[0, 1]));
    assert_eq!(classic.members[0].group_instance_id.as_deref(), Some("i1"));
    let modern = out["modern"].as_ref().unwrap();
    assert_eq!(modern.group_type, "consumer");
    assert_eq!(modern.group_epoch, Some(4));
    assert_eq!(modern.partition_assignor, "uniform");
}

fn offsets_answer(seen: &Seen, moved: &[&str]) -> (Vec<String>, Vec<u8>) {
    let req: crate::protocol::messages::offset_fetch::OffsetFetchRequest = seen.decode();
    let ids: Vec<String> = req.groups.iter().map(|g| g.group_id.clone()).collect();
    let groups = ids
        .iter()
        .map(|g| OffsetFetchResponseGroup {
            group_id: g.clone(),
            error_code: if moved.contains(&g.as_str()) {
                KafkaCode::NOT_COORDINATOR.0
            } else {
                0
            },
            topics: vec![OffsetFetchResponseTopics {
                name: format!("topic-of-{g}"),
                partitions: vec![OffsetFetchResponsePartitions {
                    partition_index: 0,
                    committed_offset: 42,
                    committed_leader_epoch: -1,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        })
        .collect();
    let frame = reply(
        seen,
        &OffsetFetchResponse {
            groups,
            ..Default::default()
        },
    );
    (ids, frame)
}

#[test]
fn offsets_of_groups_with_known_coordinators_go_in_one_request() {
    let mut cluster = Cluster::new();
    let op = || ListConsumerGroupOffsets::groups([("g1", None), ("g2", None)]);
    let mut fetches: Vec<Vec<String>> = Vec::new();
    let first = cluster.run(op(), |_, seen| match seen.api() {
        ApiKey::Metadata => reply(seen, &two_brokers()),
        ApiKey::FindCoordinator => coordinator_b1(seen),
        ApiKey::OffsetFetch => {
            assert_eq!(seen.version(), 9, "topic names need v9 at most");
            let (ids, frame) = offsets_answer(seen, &[]);
            fetches.push(ids);
            frame
        }
        other => panic!("unexpected {other:?}"),
    });
    assert_eq!(first.unwrap().len(), 2);
    // Coordinators unknown: one request per group.
    assert_eq!(fetches, [vec!["g1".to_string()], vec!["g2".to_string()]]);

    fetches.clear();
    let second = cluster.run(op(), |_, seen| match seen.api() {
        ApiKey::Metadata => reply(seen, &two_brokers()),
        ApiKey::FindCoordinator => coordinator_b1(seen),
        ApiKey::OffsetFetch => {
            // g2's coordinator moved in the batch: it is asked again on its own.
            let moved: &[&str] = if fetches.is_empty() { &["g2"] } else { &[] };
            let (ids, frame) = offsets_answer(seen, moved);
            fetches.push(ids);
            frame
        }
        other => panic!("unexpected {other:?}"),
    });
    assert_eq!(
        fetches,
        [
            vec!["g1".to_string(), "g2".to_string()],
            vec!["g2".to_string()]
        ]
    );
    let second = second.unwrap();
    for g in ["g1", "g2"] {
        let offsets = second[g].as_ref().unwrap();
        let tp = TopicPartition::new(format!("topic-of-{g}"), 0);
        assert_eq!(offsets[&tp], Ok(Some(OffsetAndMetadata::new(42))), "{g}");
    }
}

#[test]
fn a_batched_offset_fetch_to_a_coordinator_that_stops_answering_is_looked_up_again() {
    // Both groups' coordinator is b1, known from a first run; then b1 answers nothing (a
    // paused broker) and the coordinators moved to b2. The batch must not be resent to b1
    // until the deadline: each group is looked up again and asked on b2.
    let mut cluster = Cluster::with(&[
        ("request.timeout.ms", "1000"),
        ("default.api.timeout.ms", "20000"),
    ]);
    let op = || ListConsumerGroupOffsets::groups([("g1", None), ("g2", None)]);
    let first = cluster.run(op(), |_, seen| match seen.api() {
        ApiKey::Metadata => reply(seen, &two_brokers()),
        ApiKey::FindCoordinator => coordinator_b1(seen),
        ApiKey::OffsetFetch => offsets_answer(seen, &[]).1,
        other => panic!("unexpected {other:?}"),
    });
    assert_eq!(first.unwrap().len(), 2);
    let mut to_b1 = 0;
    let mut to_b2: Vec<Vec<String>> = Vec::new();
    let second = cluster.run(op(), |host, seen| {
        if host == "b1" {
            if seen.api() == ApiKey::OffsetFetch {
                to_b1 += 1;
            }
            return Vec::new();
        }
        match seen.api() {
            ApiKey::Metadata => reply(seen, &two_brokers()),
            ApiKey::FindCoordinator => coordinator_on(seen, 2, "b2"),
            ApiKey::OffsetFetch => {
                let (ids, frame) = offsets_answer(seen, &[]);
                to_b2.push(ids);
                frame
            }
            other => panic!("unexpected {other:?}"),
        }
    });
    assert_eq!(to_b1, 1, "the batch went to the stopped coordinator once");
    to_b2.sort();
    assert_eq!(to_b2, [vec!["g1".to_string()], vec!["g2".to_string()]]);
    let second = second.unwrap();
    for g in ["g1", "g2"] {
        let offsets = second[g].as_ref().unwrap();
        let tp = TopicPartition::new(format!("topic-of-{g}"), 0);
        assert_eq!(offsets[&tp], Ok(Some(OffsetAndMetadata::new(42))), "{g}");
    }
}
