//! Share group operations against a scripted coordinator: describe, offsets listed per
//! partition, alter retried while the group rebalances, delete per topic.

use super::*;
use crate::admin::groups::scripted::{coordinator_b1, reply, two_brokers, Cluster};
use crate::admin::groups::share::DescribeShareGroups;
use crate::protocol::messages::alter_share_group_offsets::response::{
    AlterShareGroupOffsetsResponsePartition, AlterShareGroupOffsetsResponseTopic,
};
use crate::protocol::messages::delete_share_group_offsets::response::DeleteShareGroupOffsetsResponseTopic;
use crate::protocol::messages::describe_share_group_offsets::response::{
    DescribeShareGroupOffsetsResponseGroup, DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
};
use crate::protocol::messages::share_group_describe::response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use crate::protocol::messages::share_group_describe::{
    ShareGroupDescribeRequest, ShareGroupDescribeResponse,
};
use crate::protocol::ApiKey;
use crate::test_support::Seen;

fn routing(seen: &Seen) -> Option<Vec<u8>> {
    match seen.api() {
        ApiKey::Metadata => Some(reply(seen, &two_brokers())),
        ApiKey::FindCoordinator => Some(coordinator_b1(seen)),
        _ => None,
    }
}

#[test]
fn describe_share_groups_retries_a_loading_coordinator_and_fails_unknown_groups() {
    let mut cluster = Cluster::new();
    let mut loading = true;
    let out = cluster.run(DescribeShareGroups::new(["sg", "nope"]), |_, seen| {
        if let Some(r) = routing(seen) {
            return r;
        }
        assert_eq!(seen.api(), ApiKey::ShareGroupDescribe);
        let req: ShareGroupDescribeRequest = seen.decode();
        let id = req.group_ids[0].clone();
        let g = match id.as_str() {
            "sg" if loading => {
                loading = false;
                DescribedGroup {
                    group_id: id,
                    error_code: KafkaCode::COORDINATOR_LOAD_IN_PROGRESS.0,
                    ..Default::default()
                }
            }
            "sg" => DescribedGroup {
                group_id: id,
                group_state: "Stable".into(),
                group_epoch: 3,
                assignment_epoch: 3,
                assignor_name: "simple".into(),
                members: vec![Member {
                    member_id: "m1".into(),
                    member_epoch: 3,
                    client_id: "c".into(),
                    client_host: "/h".into(),
                    subscribed_topic_names: vec!["t".into()],
                    assignment: Assignment {
                        topic_partitions: vec![TopicPartitions {
                            topic_name: "t".into(),
                            partitions: vec![0, 1],
                            ..Default::default()
                        }],
                        ..Default::default()
                    },
                    ..Default::default()
                }],
                ..Default::default()
            },
            _ => DescribedGroup {
                group_id: id,
                error_code: KafkaCode::GROUP_ID_NOT_FOUND.0,
                error_message: Some("Group nope not found.".into()),
                ..Default::default()
            },
        };
        reply(
            seen,
            &ShareGroupDescribeResponse {
                groups: vec![g],
                ..Default::default()
            },
        )
    });
    let out = out.unwrap();
    assert!(!loading);
    let sg = out["sg"].as_ref().unwrap();
    assert_eq!(
        (sg.state.as_str(), sg.group_epoch, sg.coordinator),
        ("Stable", 3, Some(1))
    );
    let m = &sg.members[0];
    assert_eq!(m.member_id, "m1");
    assert!(m.subscribed_topics.contains("t"));
    assert_eq!(m.assignment.len(), 2);
    let err = out["nope"].as_ref().unwrap_err();
    assert_eq!(err.code(), Some(KafkaCode::GROUP_ID_NOT_FOUND));
}

#[test]
fn share_offsets_are_listed_per_partition() {
    let mut cluster = Cluster::new();
    let tp = |p| TopicPartition::new("t", p);
    let op = ListShareGroupOffsets::groups([
        ("all".to_string(), None),
        ("some".to_string(), Some(vec![tp(1), tp(0)])),
    ]);
    let out = cluster.run(op, |_, seen| {
        if let Some(r) = routing(seen) {
            return r;
        }
        let req: DescribeShareGroupOffsetsRequest = seen.decode();
        let g = &req.groups[0];
        let partitions = if g.group_id == "all" {
            assert_eq!(g.topics, None, "all topics");
            vec![
                (0, 10, 2, 0),
                (1, -1, -1, 0),
                (2, 0, -1, KafkaCode::UNKNOWN_TOPIC_OR_PARTITION.0),
            ]
        } else {
            let topics = g.topics.as_ref().unwrap();
            assert_eq!(
                (topics[0].topic_name.as_str(), &topics[0].partitions[..]),
                ("t", &[0, 1][..])
            );
            vec![(0, 4, 1, 0)]
        };
        reply(
            seen,
            &DescribeShareGroupOffsetsResponse {
                groups: vec![DescribeShareGroupOffsetsResponseGroup {
                    group_id: g.group_id.clone(),
                    topics: vec![DescribeShareGroupOffsetsResponseTopic {
                        topic_name: "t".into(),
                        partitions: partitions
                            .into_iter()
                            .map(|(p, start, lag, code)| {
                                DescribeShareGroupOffsetsResponsePartition {
                                    partition_index: p,
                                    start_offset: start,
                                    leader_epoch: 0,
                                    lag,
                                    error_code: code,
                                    ..Default::default()
                                }
                            })
                            .collect(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            },
        )
    });
    let out = out.unwrap();
    let all = out["all"].as_ref().unwrap();
    assert_eq!(
        all[&tp(0)],
        Ok(Some(SharePartitionOffsetInfo {
            start_offset: 10,
            leader_epoch: Some(0),
            lag: Some(2)
        }))
    );
    assert_eq!(all[&tp(1)], Ok(None), "no start offset yet");
    assert_eq!(
        all[&tp(2)].as_ref().unwrap_err().code(),
        Some(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION)
    );
    assert_eq!(out["some"].as_ref().unwrap().len(), 1);
}

fn alter_answer(seen: &Seen, top: KafkaCode, parts: &[(i32, KafkaCode)]) -> Vec<u8> {
    reply(
        seen,
        &AlterShareGroupOffsetsResponse {
            error_code: top.0,
            responses: vec![AlterShareGroupOffsetsResponseTopic {
                topic_name: "t".into(),
                partitions: parts
                    .iter()
                    .map(|&(p, c)| AlterShareGroupOffsetsResponsePartition {
                        partition_index: p,
                        error_code: c.0,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        },
    )
}

#[test]
fn alter_share_offsets_waits_out_a_rebalance_then_answers_per_partition() {
    let mut cluster = Cluster::new();
    let tp = |p| TopicPartition::new("t", p);
    let mut asked = 0;
    let op = AlterShareGroupOffsets::new("sg", [(tp(0), 5), (tp(1), 6), (tp(2), 7)]);
    let out = cluster.run(op, |_, seen| {
        if let Some(r) = routing(seen) {
            return r;
        }
        let req: AlterShareGroupOffsetsRequest = seen.decode();
        assert_eq!(req.group_id, "sg");
        let starts: Vec<i64> = req.topics[0]
            .partitions
            .iter()
            .map(|p| p.start_offset)
            .collect();
        assert_eq!(starts, [5, 6, 7]);
        asked += 1;
        if asked == 1 {
            alter_answer(
                seen,
                KafkaCode::NONE,
                &[(0, KafkaCode::REBALANCE_IN_PROGRESS)],
            )
        } else {
            // Partition 2 left out of the answer.
            alter_answer(
                seen,
                KafkaCode::NONE,
                &[(0, KafkaCode::NONE), (1, KafkaCode::NON_EMPTY_GROUP)],
            )
        }
    });
    let out = out.unwrap();
    assert_eq!(asked, 2);
    assert_eq!(out[&tp(0)], Ok(()));
    assert_eq!(
        out[&tp(1)].as_ref().unwrap_err().code(),
        Some(KafkaCode::NON_EMPTY_GROUP)
    );
    assert!(matches!(out[&tp(2)], Err(AdminError::Protocol(_))));

    let op = AlterShareGroupOffsets::new("sg", [(tp(0), 5)]);
    let out = cluster.run(op, |_, seen| {
        routing(seen)
            .unwrap_or_else(|| alter_answer(seen, KafkaCode::GROUP_AUTHORIZATION_FAILED, &[]))
    });
    assert_eq!(
        out.unwrap_err().code(),
        Some(KafkaCode::GROUP_AUTHORIZATION_FAILED)
    );
}

#[test]
fn delete_share_offsets_answers_per_topic() {
    let mut cluster = Cluster::new();
    let op = DeleteShareGroupOffsets::new("sg", ["a", "b"]);
    let out = cluster.run(op, |_, seen| {
        if let Some(r) = routing(seen) {
            return r;
        }
        let req: DeleteShareGroupOffsetsRequest = seen.decode();
        let names: Vec<&str> = req.topics.iter().map(|t| t.topic_name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        reply(
            seen,
            &DeleteShareGroupOffsetsResponse {
                responses: vec![
                    DeleteShareGroupOffsetsResponseTopic {
                        topic_name: "a".into(),
                        ..Default::default()
                    },
                    DeleteShareGroupOffsetsResponseTopic {
                        topic_name: "b".into(),
                        error_code: KafkaCode::UNKNOWN_TOPIC_OR_PARTITION.0,
                        ..Default::default()
                    },
                ],
                ..Default::default()
            },
        )
    });
    let out = out.unwrap();
    assert_eq!(out["a"], Ok(()));
    assert_eq!(
        out["b"].as_ref().unwrap_err().code(),
        Some(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION)
    );
}
