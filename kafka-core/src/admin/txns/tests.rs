//! Transaction operations against scripted brokers: fan-out merging with a loading
//! coordinator, filters on the wire, a stale partition leader.

use std::time::Duration;

use super::*;
use crate::admin::groups::scripted::{reply, two_brokers, Cluster};
use crate::protocol::messages::describe_producers::response::{
    PartitionResponse, ProducerState as WireProducer, TopicResponse,
};
use crate::protocol::messages::list_transactions::response::TransactionState;
use crate::protocol::messages::metadata::response::{
    MetadataResponsePartition, MetadataResponseTopic,
};
use crate::protocol::ApiKey;
use crate::test_support::Seen;

fn txn(id: &str, pid: i64, state: &str) -> TransactionState {
    TransactionState {
        transactional_id: id.into(),
        producer_id: pid,
        transaction_state: state.into(),
        ..Default::default()
    }
}

#[test]
fn list_transactions_sends_filters_and_merges_brokers() {
    let mut cluster = Cluster::new();
    let mut b1_asked = 0;
    let op = ListTransactions::new()
        .states(["Ongoing"])
        .producer_ids([7])
        .running_longer_than(Duration::from_secs(5));
    let out = cluster.run(op, |host, seen| match seen.api() {
        ApiKey::Metadata => reply(seen, &two_brokers()),
        ApiKey::ListTransactions => {
            let req: ListTransactionsRequest = seen.decode();
            assert_eq!(req.state_filters, ["Ongoing"]);
            assert_eq!(req.producer_id_filters, [7]);
            assert_eq!(req.duration_filter, 5000);
            let resp = if host == "b1" {
                b1_asked += 1;
                if b1_asked == 1 {
                    ListTransactionsResponse {
                        error_code: KafkaCode::COORDINATOR_LOAD_IN_PROGRESS.0,
                        ..Default::default()
                    }
                } else {
                    ListTransactionsResponse {
                        transaction_states: vec![txn("a", 7, "Ongoing")],
                        ..Default::default()
                    }
                }
            } else {
                ListTransactionsResponse {
                    transaction_states: vec![txn("b", 7, "Ongoing")],
                    ..Default::default()
                }
            };
            reply(seen, &resp)
        }
        other => panic!("unexpected {other:?}"),
    });
    let out = out.unwrap();
    assert_eq!(b1_asked, 2);
    assert!(out.errors.is_empty(), "{out:?}");
    assert_eq!(out.transactions["a"].coordinator, 1);
    assert_eq!(out.transactions["b"].coordinator, 2);
    assert_eq!(out.transactions["b"].state, "Ongoing");
}

#[test]
fn list_transactions_sends_no_metadata_request_when_the_clients_metadata_is_fresh() {
    let mut cluster = Cluster::new();
    let mut metadata_asked = 0;
    let mut answer = |host: &str, seen: &Seen| match seen.api() {
        ApiKey::Metadata => {
            metadata_asked += 1;
            reply(seen, &two_brokers())
        }
        ApiKey::ListTransactions => {
            let id = format!("t-{host}");
            let resp = ListTransactionsResponse {
                transaction_states: vec![txn(&id, 1, "Ongoing")],
                ..Default::default()
            };
            reply(seen, &resp)
        }
        other => panic!("unexpected {other:?}"),
    };
    cluster.run(ListTransactions::new(), &mut answer).unwrap();
    let out = cluster.run(ListTransactions::new(), &mut answer).unwrap();
    // One refresh for the cold client, none for the second listing.
    assert_eq!(metadata_asked, 1);
    assert_eq!(
        out.transactions
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        ["t-b1", "t-b2"]
    );
}

fn leader_metadata(leader: i32) -> crate::protocol::messages::metadata::MetadataResponse {
    let mut m = two_brokers();
    m.topics = vec![MetadataResponseTopic {
        name: Some("t".into()),
        partitions: vec![MetadataResponsePartition {
            partition_index: 0,
            leader_id: leader,
            // The new leader comes with a newer epoch.
            leader_epoch: 3 - leader,
            replica_nodes: vec![1, 2],
            isr_nodes: vec![1, 2],
            ..Default::default()
        }],
        ..Default::default()
    }];
    m
}

#[test]
fn describe_producers_follows_a_moved_leader() {
    let mut cluster = Cluster::new();
    let mut hosts = Vec::new();
    let tp = TopicPartition::new("t", 0);
    let out = cluster.run(DescribeProducers::new([tp.clone()]), |host, seen| {
        match seen.api() {
            // Leader 2 until it said it is not the leader any more.
            ApiKey::Metadata => reply(seen, &leader_metadata(if hosts.is_empty() { 2 } else { 1 })),
            ApiKey::DescribeProducers => {
                hosts.push(host.to_string());
                let partition = if host == "b2" {
                    PartitionResponse {
                        partition_index: 0,
                        error_code: KafkaCode::NOT_LEADER_OR_FOLLOWER.0,
                        ..Default::default()
                    }
                } else {
                    PartitionResponse {
                        partition_index: 0,
                        active_producers: vec![WireProducer {
                            producer_id: 9,
                            producer_epoch: 1,
                            last_sequence: 4,
                            last_timestamp: 1000,
                            coordinator_epoch: -1,
                            current_txn_start_offset: 12,
                            ..Default::default()
                        }],
                        ..Default::default()
                    }
                };
                reply(
                    seen,
                    &DescribeProducersResponse {
                        topics: vec![TopicResponse {
                            name: "t".into(),
                            partitions: vec![partition],
                            ..Default::default()
                        }],
                        ..Default::default()
                    },
                )
            }
            other => panic!("unexpected {other:?}"),
        }
    });
    let out = out.unwrap();
    assert_eq!(hosts, ["b2", "b1"]);
    let producers = out[&tp].as_ref().unwrap();
    assert_eq!(
        producers,
        &[ProducerState {
            producer_id: 9,
            producer_epoch: 1,
            last_sequence: 4,
            last_timestamp: 1000,
            coordinator_epoch: None,
            current_transaction_start_offset: Some(12),
        }]
    );
}

use crate::protocol::messages::write_txn_markers::{
    WriteTxnMarkersRequest, WriteTxnMarkersResponse,
};

fn spec() -> AbortTransactionSpec {
    AbortTransactionSpec {
        topic_partition: TopicPartition::new("t", 0),
        producer_id: 9,
        producer_epoch: 4,
        coordinator_epoch: 2,
    }
}

#[test]
fn abort_transaction_writes_an_abort_marker_on_the_leader_it_finds_again() {
    let mut cluster = Cluster::new();
    let mut hosts = Vec::new();
    let out = cluster.run(AbortTransaction::new(spec()), |host, seen| {
        match seen.api() {
            ApiKey::Metadata => reply(seen, &leader_metadata(if hosts.is_empty() { 2 } else { 1 })),
            ApiKey::WriteTxnMarkers => {
                hosts.push(host.to_string());
                let req: WriteTxnMarkersRequest = seen.decode();
                let m = &req.markers[0];
                assert_eq!(
                    (m.producer_id, m.producer_epoch, m.coordinator_epoch),
                    (9, 4, 2)
                );
                assert!(!m.transaction_result, "an abort");
                assert_eq!(
                    (
                        m.topics[0].name.as_str(),
                        &m.topics[0].partition_indexes[..]
                    ),
                    ("t", &[0][..])
                );
                let code = if host == "b2" {
                    KafkaCode::NOT_LEADER_OR_FOLLOWER
                } else {
                    KafkaCode::NONE
                };
                reply_marker(seen, 9, "t", 0, code)
            }
            other => panic!("unexpected {other:?}"),
        }
    });
    assert_eq!(out, Ok(()));
    assert_eq!(hosts, ["b2", "b1"]);
}

fn reply_marker(seen: &Seen, pid: i64, topic: &str, partition: i32, code: KafkaCode) -> Vec<u8> {
    use crate::protocol::messages::write_txn_markers::response::{
        WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
    };
    reply(
        seen,
        &WriteTxnMarkersResponse {
            markers: vec![WritableTxnMarkerResult {
                producer_id: pid,
                topics: vec![WritableTxnMarkerTopicResult {
                    name: topic.into(),
                    partitions: vec![WritableTxnMarkerPartitionResult {
                        partition_index: partition,
                        error_code: code.0,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        },
    )
}

#[test]
fn abort_transaction_fails_at_once_on_a_stale_epoch_or_an_answer_that_does_not_fit() {
    let mut cluster = Cluster::new();
    let mut asked = 0;
    let out = cluster.run(AbortTransaction::new(spec()), |_, seen| match seen.api() {
        ApiKey::Metadata => reply(seen, &leader_metadata(1)),
        ApiKey::WriteTxnMarkers => {
            asked += 1;
            reply_marker(seen, 9, "t", 0, KafkaCode::INVALID_PRODUCER_EPOCH)
        }
        other => panic!("unexpected {other:?}"),
    });
    assert_eq!(asked, 1);
    assert_eq!(
        out.unwrap_err().code(),
        Some(KafkaCode::INVALID_PRODUCER_EPOCH)
    );

    let out = cluster.run(AbortTransaction::new(spec()), |_, seen| match seen.api() {
        ApiKey::Metadata => reply(seen, &leader_metadata(1)),
        ApiKey::WriteTxnMarkers => reply_marker(seen, 9, "t", 5, KafkaCode::NONE),
        other => panic!("unexpected {other:?}"),
    });
    assert!(matches!(out, Err(AdminError::Protocol(_))), "{out:?}");
}

#[test]
fn fence_producers_bumps_each_id_on_its_coordinator_through_busy_answers() {
    use crate::admin::groups::scripted::coordinator_b1;
    use crate::protocol::messages::init_producer_id::{
        InitProducerIdRequest, InitProducerIdResponse,
    };
    let mut cluster = Cluster::new();
    let mut asked: Vec<String> = Vec::new();
    let op = FenceProducers::new(["a", "b", "c"]).timeout(Duration::from_secs(4));
    let out = cluster.run(op, |_, seen| match seen.api() {
        ApiKey::Metadata => reply(seen, &two_brokers()),
        ApiKey::FindCoordinator => coordinator_b1(seen),
        ApiKey::InitProducerId => {
            let req: InitProducerIdRequest = seen.decode();
            assert_eq!((req.producer_id, req.producer_epoch), (-1, -1));
            assert_eq!(req.transaction_timeout_ms, 4000);
            let id = req.transactional_id.unwrap();
            let tries = asked.iter().filter(|a| **a == id).count();
            asked.push(id.clone());
            let code = match (id.as_str(), tries) {
                ("a", 0) => KafkaCode::CONCURRENT_TRANSACTIONS,
                ("b", 0) => KafkaCode::COORDINATOR_LOAD_IN_PROGRESS,
                ("c", _) => KafkaCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                _ => KafkaCode::NONE,
            };
            reply(
                seen,
                &InitProducerIdResponse {
                    error_code: code.0,
                    producer_id: if code == KafkaCode::NONE { 40 } else { -1 },
                    producer_epoch: if code == KafkaCode::NONE { 6 } else { -1 },
                    ..Default::default()
                },
            )
        }
        other => panic!("unexpected {other:?}"),
    });
    let out = out.unwrap();
    assert_eq!(
        out["a"],
        Ok(ProducerIdAndEpoch {
            producer_id: 40,
            producer_epoch: 6
        })
    );
    assert!(out["b"].is_ok());
    assert_eq!(
        out["c"].as_ref().unwrap_err().code(),
        Some(KafkaCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    );
    assert_eq!(asked.iter().filter(|a| *a == "c").count(), 1, "not retried");
    assert_eq!(asked.len(), 5);
}
