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
