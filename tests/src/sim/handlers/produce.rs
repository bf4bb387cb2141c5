//! Produce: appends each partition's batch on its leader, with the broker's producer
//! state checks (Kafka 4.x rules): a batch equal to one of the producer's last five is
//! answered as a success with its original offset and max timestamp (as Kafka 4.x
//! does; `Counters::duplicates_refused` counts them), a gap is
//! OUT_OF_ORDER_SEQUENCE_NUMBER, an older epoch INVALID_PRODUCER_EPOCH, and a producer
//! with no state may start at any sequence (or, with `strict_unknown_producers`, only at
//! 0: UNKNOWN_PRODUCER_ID otherwise, as before KIP-360). A partition led elsewhere answers
//! NOT_LEADER_OR_FOLLOWER with the leader named (KIP-951).

use bytes::{Bytes, BytesMut};
use kafka_core::protocol::messages::produce::response::{
    LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_core::protocol::messages::produce::{ProduceRequest, ProduceResponse};
use kafka_core::protocol::KafkaCode;
use kafka_core::record::{BatchHeader, DecodeOptions, RecordBatch};

use super::super::cluster::{Partition, ProducerState, SimCluster, StoredBatch};
use super::super::wire::{answer, Frame};

/// The answer to `frame` (none with acks=0).
pub fn handle(cluster: &mut SimCluster, node: i32, frame: &Frame) -> Option<Vec<u8>> {
    let req: ProduceRequest = frame.decode().expect("Produce decodes");
    let by_id = frame.version >= 13;
    let strict = cluster.strict_unknown_producers;
    let mut responses = Vec::new();
    let mut leaders_named = Vec::new();
    for t in &req.topic_data {
        let name = if by_id {
            cluster.topic_by_id(t.topic_id).map(|t| t.name.clone())
        } else {
            Some(t.name.clone())
        };
        let mut partition_responses = Vec::new();
        for pd in &t.partition_data {
            let records = pd.records.clone().unwrap_or_default();
            let txn = txn_check(
                cluster,
                &req,
                name.as_deref(),
                pd.index,
                node,
                &records,
                frame.version,
            );
            let r = match name.as_deref().and_then(|n| cluster.topics.get_mut(n)) {
                Some(topic) => match (topic.partitions.get_mut(pd.index as usize), txn) {
                    (Some(_), Err(code)) => refuse(pd.index, code),
                    (Some(part), Ok(pid)) => {
                        let (r, duplicate) = append(part, node, pd.index, records, strict);
                        if duplicate {
                            cluster.counters.duplicates_refused += 1;
                        } else if let (Some(pid), 0) = (pid, r.error_code) {
                            let topic = name.as_deref().expect("found");
                            cluster.txn.appended(topic, pd.index, pid, r.base_offset);
                        }
                        r
                    }
                    (None, _) => refuse(pd.index, KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
                },
                None => refuse(
                    pd.index,
                    if by_id {
                        KafkaCode::UNKNOWN_TOPIC_ID
                    } else {
                        KafkaCode::UNKNOWN_TOPIC_OR_PARTITION
                    },
                ),
            };
            cluster.count_error(r.error_code);
            match KafkaCode(r.error_code) {
                KafkaCode::NONE => cluster.counters.batches_appended += 1,
                KafkaCode::NOT_LEADER_OR_FOLLOWER => leaders_named.push(r.current_leader.leader_id),
                _ => {}
            }
            partition_responses.push(r);
        }
        responses.push(TopicProduceResponse {
            name: t.name.clone(),
            topic_id: t.topic_id,
            partition_responses,
            ..Default::default()
        });
    }
    if req.acks == 0 {
        return None;
    }
    leaders_named.sort_unstable();
    leaders_named.dedup();
    let node_endpoints = leaders_named
        .into_iter()
        .filter_map(|id| cluster.broker(id))
        .map(|b| NodeEndpoint {
            node_id: b.id,
            host: b.host.clone(),
            port: b.port,
            ..Default::default()
        })
        .collect();
    let body = ProduceResponse {
        responses,
        node_endpoints,
        ..Default::default()
    };
    Some(answer(frame, &body))
}

/// For a transactional batch to a partition this broker leads: whether the
/// coordinator lets it in (`txn_state::produce_check`: the transactional id's producer
/// and current epoch, v1: the partition added, v2: added now). `Ok(Some(pid))`: a
/// transactional batch, `Ok(None)`: not one (or not led here: `append` refuses it).
fn txn_check(
    cluster: &mut SimCluster,
    req: &ProduceRequest,
    topic: Option<&str>,
    index: i32,
    node: i32,
    records: &Bytes,
    version: i16,
) -> Result<Option<i64>, KafkaCode> {
    let Some(topic) = topic else { return Ok(None) };
    let led_here = cluster
        .topics
        .get(topic)
        .and_then(|t| t.partitions.get(index as usize))
        .is_some_and(|p| p.leader == node);
    let header = match BatchHeader::parse(records) {
        Ok(h) if led_here && h.attributes.transactional => h,
        _ => return Ok(None),
    };
    let id = req.transactional_id.as_deref();
    let checked = cluster.txn.produce_check(
        id,
        header.producer_id,
        header.producer_epoch,
        topic,
        index,
        version,
    );
    if let Err(code) = checked {
        cluster.count_error(code.0);
    }
    checked.map(|()| Some(header.producer_id))
}

fn refuse(index: i32, code: KafkaCode) -> PartitionProduceResponse {
    PartitionProduceResponse {
        index,
        error_code: code.0,
        base_offset: -1,
        log_append_time_ms: -1,
        log_start_offset: -1,
        ..Default::default()
    }
}

/// Appends one batch on the leader of `part`, checking the producer's sequence; the
/// answer, and whether the batch was a duplicate of one in the log.
fn append(
    part: &mut Partition,
    node: i32,
    index: i32,
    records: Bytes,
    strict_unknown: bool,
) -> (PartitionProduceResponse, bool) {
    if part.leader != node {
        let mut r = refuse(index, KafkaCode::NOT_LEADER_OR_FOLLOWER);
        r.current_leader = LeaderIdAndEpoch {
            leader_id: part.leader,
            leader_epoch: part.leader_epoch,
            ..Default::default()
        };
        return (r, false);
    }
    let log_start = part.log_start;
    // A partition that exists names its log start even when it refuses (as Kafka).
    let refuse = |index, code| PartitionProduceResponse {
        log_start_offset: log_start,
        ..refuse(index, code)
    };
    let opts = DecodeOptions::default();
    let batch = match RecordBatch::decode(&records, &opts) {
        Ok((batch, used)) if used == records.len() => batch,
        _ => return (refuse(index, KafkaCode::CORRUPT_MESSAGE), false),
    };
    let h = *batch.header();
    if h.records_count <= 0 {
        return (refuse(index, KafkaCode::INVALID_RECORD), false);
    }
    let last_seq = h.base_sequence.wrapping_add(h.records_count - 1);
    if h.producer_id >= 0 {
        let known = part.producers.contains_key(&h.producer_id);
        if !known && strict_unknown && h.base_sequence != 0 {
            // A broker before KIP-360: no state, and not the producer's first batch.
            return (refuse(index, KafkaCode::UNKNOWN_PRODUCER_ID), false);
        }
        let state = part
            .producers
            .entry(h.producer_id)
            .or_insert(ProducerState {
                epoch: h.producer_epoch,
                ..Default::default()
            });
        if h.producer_epoch < state.epoch {
            return (refuse(index, KafkaCode::INVALID_PRODUCER_EPOCH), false);
        }
        if h.producer_epoch > state.epoch {
            state.epoch = h.producer_epoch;
            state.recent.clear();
        }
        if let Some(&(_, _, base)) = state
            .recent
            .iter()
            .find(|(first, last, _)| *first == h.base_sequence && *last == last_seq)
        {
            // Kafka 4.x answers a duplicate as a success: the original batch's base
            // offset, and its max timestamp as the append time.
            let stamp = part
                .log
                .iter()
                .find(|b| b.base == base)
                .and_then(|b| BatchHeader::parse(&b.bytes).ok())
                .map_or(-1, |h| h.max_timestamp);
            let r = PartitionProduceResponse {
                index,
                base_offset: base,
                log_append_time_ms: stamp,
                log_start_offset: part.log_start,
                ..Default::default()
            };
            return (r, true);
        }
        let expected = match state.recent.back() {
            Some(&(_, last, _)) => Some(last.wrapping_add(1)),
            None if known => Some(0),
            // Kafka 4.x: no state here (new, or expired) accepts any first sequence.
            None => None,
        };
        if expected.is_some_and(|e| e != h.base_sequence) {
            return (
                refuse(index, KafkaCode::OUT_OF_ORDER_SEQUENCE_NUMBER),
                false,
            );
        }
        state
            .recent
            .push_back((h.base_sequence, last_seq, part.next_offset));
        if state.recent.len() > 5 {
            state.recent.pop_front();
        }
    }
    let base = part.next_offset;
    let mut stored = BytesMut::from(&records[..]);
    stored[0..8].copy_from_slice(&base.to_be_bytes());
    stored[12..16].copy_from_slice(&part.leader_epoch.to_be_bytes());
    part.next_offset += i64::from(h.records_count);
    part.log.push(StoredBatch {
        base,
        last: part.next_offset - 1,
        bytes: stored.freeze(),
    });
    let r = PartitionProduceResponse {
        index,
        error_code: 0,
        base_offset: base,
        log_append_time_ms: -1,
        log_start_offset: part.log_start,
        ..Default::default()
    };
    (r, false)
}
