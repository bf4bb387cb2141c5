//! Quorum and registration operations against scripted brokers: retries of retriable
//! codes, answers that do not fit, errors surfaced typed without a retry.

use super::*;
use crate::admin::groups::scripted::{reply, two_brokers, Cluster};
use crate::protocol::messages::add_raft_voter::AddRaftVoterResponse;
use crate::protocol::messages::describe_quorum::response::{Listener, TopicData};
use crate::protocol::messages::remove_raft_voter::RemoveRaftVoterResponse;
use crate::protocol::messages::unregister_broker::UnregisterBrokerResponse;
use crate::protocol::ApiKey;

fn state(id: i32, leo: i64, fetched: i64) -> ReplicaState {
    ReplicaState {
        replica_id: id,
        log_end_offset: leo,
        last_fetch_timestamp: fetched,
        last_caught_up_timestamp: fetched,
        ..Default::default()
    }
}

fn quorum_answer(topic: &str, partition_code: KafkaCode) -> DescribeQuorumResponse {
    DescribeQuorumResponse {
        topics: vec![TopicData {
            topic_name: topic.into(),
            partitions: vec![PartitionData {
                partition_index: 0,
                error_code: partition_code.0,
                leader_id: 3,
                leader_epoch: 9,
                high_watermark: 120,
                current_voters: vec![state(3, 120, 1_000), state(4, 118, -1)],
                observers: vec![state(1, 100, 900)],
                ..Default::default()
            }],
            ..Default::default()
        }],
        nodes: vec![WireNode {
            node_id: 3,
            listeners: vec![Listener {
                name: "CONTROLLER".into(),
                host: "c3".into(),
                port: 9093,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn describe_quorum_retries_a_moving_leader_then_reports_voters_and_observers() {
    let mut cluster = Cluster::new();
    let mut asked = 0;
    let out = cluster.run(DescribeMetadataQuorum::new(), |_, seen| match seen.api() {
        ApiKey::Metadata => reply(seen, &two_brokers()),
        ApiKey::DescribeQuorum => {
            let req: DescribeQuorumRequest = seen.decode();
            assert_eq!(req.topics[0].topic_name, "__cluster_metadata");
            assert_eq!(req.topics[0].partitions[0].partition_index, 0);
            asked += 1;
            let code = if asked == 1 {
                KafkaCode::NOT_LEADER_OR_FOLLOWER
            } else {
                KafkaCode::NONE
            };
            reply(seen, &quorum_answer("__cluster_metadata", code))
        }
        other => panic!("unexpected {other:?}"),
    });
    let q = out.expect("quorum");
    assert_eq!(asked, 2, "the retriable partition error was retried");
    assert_eq!((q.leader_id, q.leader_epoch, q.high_watermark), (3, 9, 120));
    assert_eq!(q.voters.len(), 2);
    assert_eq!(q.voters[0].last_fetch_timestamp, Some(1_000));
    assert_eq!(q.voters[1].last_fetch_timestamp, None, "-1 is unknown");
    assert_eq!(q.voters[1].log_end_offset, 118);
    assert_eq!(q.observers[0].replica_id, 1);
    assert_eq!(
        q.nodes[&3],
        vec![RaftVoterEndpoint::new("CONTROLLER", "c3", 9093)]
    );
}

#[test]
fn describe_quorum_answers_that_do_not_fit_are_protocol_errors() {
    let wrong_topic = described_quorum(quorum_answer("other", KafkaCode::NONE)).unwrap_err();
    assert!(
        matches!(wrong_topic, AdminError::Protocol(_)),
        "{wrong_topic}"
    );
    let none = described_quorum(DescribeQuorumResponse::default()).unwrap_err();
    assert!(matches!(none, AdminError::Protocol(_)), "{none}");
    let refused = described_quorum(DescribeQuorumResponse {
        error_code: KafkaCode::CLUSTER_AUTHORIZATION_FAILED.0,
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(
        refused.code(),
        Some(KafkaCode::CLUSTER_AUTHORIZATION_FAILED)
    );
}

#[test]
fn unregister_broker_retries_only_request_timed_out() {
    let mut cluster = Cluster::new();
    let mut asked = 0;
    let out = cluster.run(UnregisterBroker::new(7), |_, seen| match seen.api() {
        ApiKey::Metadata => reply(seen, &two_brokers()),
        ApiKey::UnregisterBroker => {
            let req: UnregisterBrokerRequest = seen.decode();
            assert_eq!(req.broker_id, 7);
            asked += 1;
            let code = if asked == 1 {
                KafkaCode::REQUEST_TIMED_OUT
            } else {
                KafkaCode::BROKER_ID_NOT_REGISTERED
            };
            reply(
                seen,
                &UnregisterBrokerResponse {
                    error_code: code.0,
                    error_message: Some("no broker 7".into()),
                    ..Default::default()
                },
            )
        }
        other => panic!("unexpected {other:?}"),
    });
    let err = out.unwrap_err();
    assert_eq!(asked, 2);
    assert_eq!(err.code(), Some(KafkaCode::BROKER_ID_NOT_REGISTERED));
    assert!(err.to_string().contains("no broker 7"), "{err}");
}

#[test]
fn raft_voter_changes_send_their_arguments_and_fail_typed_at_once() {
    let mut cluster = Cluster::new();
    let dir = Uuid::from_bytes([5; 16]);
    let mut asked = 0;
    let add = AddRaftVoter::new(4, dir, [RaftVoterEndpoint::new("CONTROLLER", "c4", 9094)])
        .cluster_id("abc")
        .timeout(Duration::from_secs(3));
    let out = cluster.run(add, |_, seen| match seen.api() {
        ApiKey::Metadata => reply(seen, &two_brokers()),
        ApiKey::AddRaftVoter => {
            asked += 1;
            let req: AddRaftVoterRequest = seen.decode();
            assert_eq!((req.voter_id, req.voter_directory_id), (4, dir));
            assert_eq!(req.cluster_id.as_deref(), Some("abc"));
            assert_eq!(req.timeout_ms, 3000);
            assert_eq!(
                (req.listeners[0].host.as_str(), req.listeners[0].port),
                ("c4", 9094)
            );
            reply(
                seen,
                &AddRaftVoterResponse {
                    error_code: KafkaCode::UNSUPPORTED_VERSION.0,
                    error_message: Some("static quorum".into()),
                    ..Default::default()
                },
            )
        }
        other => panic!("unexpected {other:?}"),
    });
    assert_eq!(asked, 1, "not retried");
    assert_eq!(
        out.unwrap_err().code(),
        Some(KafkaCode::UNSUPPORTED_VERSION)
    );

    let out = cluster.run(RemoveRaftVoter::new(4, dir), |_, seen| match seen.api() {
        ApiKey::RemoveRaftVoter => {
            let req: RemoveRaftVoterRequest = seen.decode();
            assert_eq!((req.voter_id, req.cluster_id), (4, None));
            reply(
                seen,
                &RemoveRaftVoterResponse {
                    error_code: KafkaCode::VOTER_NOT_FOUND.0,
                    ..Default::default()
                },
            )
        }
        ApiKey::Metadata => reply(seen, &two_brokers()),
        other => panic!("unexpected {other:?}"),
    });
    assert_eq!(out.unwrap_err().code(), Some(KafkaCode::VOTER_NOT_FOUND));
}
