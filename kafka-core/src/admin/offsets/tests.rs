//! ListOffsets and DeleteRecords against scripted brokers on a virtual clock: the
//! fan-out per leader and the re-lookup after a stale leader.

use std::cell::RefCell;
use std::collections::BTreeMap;

use super::*;
use crate::client::{Client, ConnId, IoCommand};
use crate::config::ClientConfig;
use crate::protocol::messages::list_offsets::response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use crate::protocol::messages::metadata::response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use crate::protocol::messages::metadata::MetadataResponse;
use crate::protocol::{ApiKey, KafkaCode};
use crate::test_support::{broker_versions, origin, parse_requests, response_frame, Seen};

/// Runs `op` to completion; `answer(host, request)` scripts every broker (ApiVersions is
/// answered here). Time jumps to the client's next timeout whenever nothing is written.
pub(crate) fn drive<O: Operation>(op: O, answer: impl FnMut(&str, &Seen) -> Vec<u8>) -> O::Output {
    drive_with(&[], op, answer)
}

/// [`drive`] with extra config keys; an empty answer leaves the request unanswered.
fn drive_with<O: Operation>(
    extra: &[(&str, &str)],
    op: O,
    mut answer: impl FnMut(&str, &Seen) -> Vec<u8>,
) -> O::Output {
    let pairs = [("bootstrap.servers", "boot:9092"), ("client.id", "t")];
    let config = ClientConfig::from_pairs(pairs.iter().chain(extra).copied()).expect("config");
    let mut client = Client::new(config, [1; 32]).expect("client");
    let mut now = origin();
    let id = client.start_op(now, op);
    let mut open: BTreeMap<ConnId, String> = BTreeMap::new();
    for _ in 0..500 {
        while let Some(cmd) = client.poll_io() {
            match cmd {
                IoCommand::Connect { conn, host, .. } => {
                    open.insert(conn, host);
                    client.handle_connected(now, conn);
                }
                IoCommand::Close { conn } => {
                    open.remove(&conn);
                }
            }
        }
        let mut wrote = false;
        for (conn, host) in open.clone() {
            let mut out = Vec::new();
            client.poll_transmit(now, conn, &mut out);
            for seen in parse_requests(out) {
                wrote = true;
                let frame = if seen.api() == ApiKey::ApiVersions {
                    response_frame(&seen, &broker_versions(), seen.version())
                } else {
                    answer(&host, &seen)
                };
                client.handle_received(now, conn, &frame);
            }
        }
        if let Some(out) = client.take_op_output(id) {
            return out;
        }
        if !wrote {
            now = client
                .poll_timeout()
                .expect("a timer while the op runs")
                .max(now);
            client.handle_timeout(now);
        }
    }
    panic!("operation did not finish");
}

/// Metadata naming brokers 1 and 2 and the leaders of topic `t`'s partitions.
pub(crate) fn metadata(leaders: &[i32]) -> MetadataResponse {
    MetadataResponse {
        brokers: [1, 2]
            .into_iter()
            .map(|id| MetadataResponseBroker {
                node_id: id,
                host: format!("b{id}"),
                port: 9092,
                ..Default::default()
            })
            .collect(),
        controller_id: 1,
        topics: vec![MetadataResponseTopic {
            name: Some("t".into()),
            partitions: leaders
                .iter()
                .enumerate()
                .map(|(i, &leader)| MetadataResponsePartition {
                    partition_index: i as i32,
                    leader_id: leader,
                    leader_epoch: 1,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// A ListOffsets answer: each asked partition gets offset `100 + index`, or `error`.
fn offsets(seen: &Seen, error: impl Fn(i32) -> i16) -> Vec<u8> {
    let req: ListOffsetsRequest = seen.decode();
    let resp = ListOffsetsResponse {
        topics: req
            .topics
            .iter()
            .map(|t| ListOffsetsTopicResponse {
                name: t.name.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| ListOffsetsPartitionResponse {
                        partition_index: p.partition_index,
                        error_code: error(p.partition_index),
                        offset: 100 + i64::from(p.partition_index),
                        timestamp: p.timestamp,
                        leader_epoch: 1,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    response_frame(seen, &resp, seen.version())
}

#[test]
fn list_offsets_fans_out_per_leader_and_relooks_up_stale_leaders() {
    // Partitions 0 and 2 on broker 1, partition 1 on broker 2 until it moves to broker 1.
    let moved = RefCell::new(false);
    let mut sent: Vec<(String, Vec<i32>, i64, i32)> = Vec::new();
    let op = ListOffsets::new([
        (TopicPartition::new("t", 0), OffsetSpec::Earliest),
        (TopicPartition::new("t", 1), OffsetSpec::ByTimestamp(77)),
        (TopicPartition::new("t", 2), OffsetSpec::MaxTimestamp),
    ]);
    let r = drive(op, |host, seen| match seen.api() {
        ApiKey::Metadata => {
            let leaders = if *moved.borrow() {
                [1, 1, 1]
            } else {
                [1, 2, 1]
            };
            response_frame(seen, &metadata(&leaders), seen.version())
        }
        ApiKey::ListOffsets => {
            let req: ListOffsetsRequest = seen.decode();
            let parts = req.topics[0]
                .partitions
                .iter()
                .map(|p| p.partition_index)
                .collect();
            sent.push((
                host.to_string(),
                parts,
                req.topics[0].partitions[0].timestamp,
                req.replica_id,
            ));
            if host == "b2" {
                *moved.borrow_mut() = true;
                offsets(seen, |_| KafkaCode::NOT_LEADER_OR_FOLLOWER.0)
            } else {
                offsets(seen, |_| 0)
            }
        }
        other => panic!("unexpected {other:?}"),
    })
    .expect("list offsets");
    sent.sort();
    assert_eq!(
        sent,
        vec![
            ("b1".to_string(), vec![0, 2], -2, -1),
            ("b1".to_string(), vec![1], 77, -1),
            ("b2".to_string(), vec![1], 77, -1),
        ],
        "one request per leader; the stale partition again to its new leader"
    );
    assert_eq!(r.len(), 3);
    for p in 0..3 {
        let got = r[&TopicPartition::new("t", p)].clone().expect("listed");
        assert_eq!(got.offset, 100 + i64::from(p));
        assert_eq!(got.leader_epoch, Some(1));
    }
}

#[test]
fn a_leader_that_stops_answering_is_looked_up_again_not_retried_until_the_deadline() {
    // Broker 2 leads partition 1 and then answers nothing (a paused process: its socket
    // stays open). Once its request times out, the cluster has moved partition 1 to broker
    // 1; the fan-out must look the leader up again instead of resending to broker 2.
    let paused_seen = RefCell::new(0);
    let mut to_b1: Vec<i32> = Vec::new();
    let op = ListOffsets::new([
        (TopicPartition::new("t", 0), OffsetSpec::Latest),
        (TopicPartition::new("t", 1), OffsetSpec::Latest),
    ]);
    let r = drive_with(&[("request.timeout.ms", "5000")], op, |host, seen| {
        if host == "b2" {
            *paused_seen.borrow_mut() += 1;
            return Vec::new();
        }
        match seen.api() {
            ApiKey::Metadata => {
                let leaders = if *paused_seen.borrow() > 0 {
                    [1, 1]
                } else {
                    [1, 2]
                };
                response_frame(seen, &metadata(&leaders), seen.version())
            }
            ApiKey::ListOffsets => {
                let req: ListOffsetsRequest = seen.decode();
                to_b1.extend(req.topics[0].partitions.iter().map(|p| p.partition_index));
                offsets(seen, |_| 0)
            }
            other => panic!("unexpected {other:?}"),
        }
    })
    .expect("list offsets");
    assert_eq!(
        *paused_seen.borrow(),
        1,
        "broker 2 was asked once, not until the deadline"
    );
    to_b1.sort();
    assert_eq!(to_b1, vec![0, 1], "partition 1 went to its new leader");
    for p in 0..2 {
        let got = r[&TopicPartition::new("t", p)].clone();
        assert_eq!(got.map(|o| o.offset), Ok(100 + i64::from(p)));
    }
}

#[test]
fn a_partition_beyond_the_count_fails_at_once_and_hard_errors_fail_alone() {
    let op = DeleteRecords::new([
        (TopicPartition::new("t", 0), 5),
        (TopicPartition::new("t", 1), 5),
        (TopicPartition::new("t", 9), 5),
    ])
    .timeout(Duration::from_secs(3));
    let r = drive(op, |_, seen| match seen.api() {
        ApiKey::Metadata => response_frame(seen, &metadata(&[1, 2]), seen.version()),
        ApiKey::DeleteRecords => {
            let req: DeleteRecordsRequest = seen.decode();
            let resp = DeleteRecordsResponse {
                topics: req
                    .topics
                    .iter()
                    .map(|t| crate::protocol::messages::delete_records::response::DeleteRecordsTopicResult {
                        name: t.name.clone(),
                        partitions: t
                            .partitions
                            .iter()
                            .map(|p| crate::protocol::messages::delete_records::response::DeleteRecordsPartitionResult {
                                partition_index: p.partition_index,
                                low_watermark: if p.partition_index == 0 { p.offset } else { -1 },
                                error_code: if p.partition_index == 0 {
                                    0
                                } else {
                                    KafkaCode::OFFSET_OUT_OF_RANGE.0
                                },
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            response_frame(seen, &resp, seen.version())
        }
        other => panic!("unexpected {other:?}"),
    })
    .expect("delete records");
    assert_eq!(r[&TopicPartition::new("t", 0)], Ok(5));
    assert_eq!(
        r[&TopicPartition::new("t", 1)]
            .as_ref()
            .err()
            .and_then(AdminError::code),
        Some(KafkaCode::OFFSET_OUT_OF_RANGE)
    );
    assert_eq!(
        r[&TopicPartition::new("t", 9)]
            .as_ref()
            .err()
            .and_then(AdminError::code),
        Some(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
        "metadata lists 2 partitions of t: partition 9 does not exist"
    );
}
