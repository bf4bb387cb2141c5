//! The scripted brokers' answers: Fetch with a session cache that checks epochs the way
//! Kafka does, leader epoch fencing, follower reads and preferred read replicas, the
//! divergence check of `last_fetched_epoch`; ListOffsets; OffsetForLeaderEpoch.

use std::collections::BTreeMap;

use super::{Harness, SeenFetch, TOPIC};
use crate::protocol::messages::fetch::response::{
    AbortedTransaction, EpochEndOffset, FetchableTopicResponse, PartitionData,
};
use crate::protocol::messages::fetch::{FetchRequest, FetchResponse};
use crate::protocol::messages::list_offsets::response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use crate::protocol::messages::list_offsets::{ListOffsetsRequest, ListOffsetsResponse};
use crate::protocol::messages::offset_for_leader_epoch::response::{
    EpochEndOffset as LeaderEpochEnd, OffsetForLeaderTopicResult,
};
use crate::protocol::messages::offset_for_leader_epoch::{
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse,
};
use crate::protocol::{KafkaCode, Uuid};

/// What a broker's session holds for one partition.
#[derive(Debug, Clone, Copy)]
pub(super) struct Held {
    offset: i64,
    current_leader_epoch: i32,
    last_fetched_epoch: i32,
}

/// The broker's session cache entry.
pub(super) struct BrokerSession {
    epoch: i32,
    partitions: BTreeMap<i32, Held>,
}

impl Harness {
    /// Whether `node` may serve partition `p`, and at which epoch: NONE, or the error
    /// Kafka answers (not a replica, fenced or unknown epoch).
    fn check(&self, node: i32, p: i32, current_leader_epoch: i32) -> KafkaCode {
        let leader = self.leaders[p as usize];
        if node != leader && !self.follower_reads {
            return KafkaCode::NOT_LEADER_OR_FOLLOWER;
        }
        let epoch = self.logs[p as usize].epoch;
        if current_leader_epoch >= 0 && current_leader_epoch < epoch {
            return KafkaCode::FENCED_LEADER_EPOCH;
        }
        if current_leader_epoch > epoch {
            return KafkaCode::UNKNOWN_LEADER_EPOCH;
        }
        KafkaCode::NONE
    }

    pub(super) fn fetch(&mut self, node: i32, req: &FetchRequest) -> FetchResponse {
        let sent: Vec<i32> = req
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.partition))
            .collect();
        let forgotten: Vec<i32> = req
            .forgotten_topics_data
            .iter()
            .flat_map(|t| t.partitions.iter().copied())
            .collect();
        self.fetches
            .push((req.session_id, req.session_epoch, sent, forgotten.clone()));
        self.seen_fetches.push(SeenFetch {
            node,
            rack: req.rack_id.clone(),
            parts: req
                .topics
                .iter()
                .flat_map(|t| t.partitions.iter())
                .map(|p| {
                    (
                        p.partition,
                        p.fetch_offset,
                        p.current_leader_epoch,
                        p.last_fetched_epoch,
                    )
                })
                .collect(),
        });
        if let Some(code) = self.fail_next_fetch.take() {
            self.sessions.remove(&req.session_id);
            return FetchResponse {
                error_code: code.0,
                ..Default::default()
            };
        }
        let mut sent_now: BTreeMap<i32, Held> = BTreeMap::new();
        for t in &req.topics {
            for p in &t.partitions {
                let held = Held {
                    offset: p.fetch_offset,
                    current_leader_epoch: p.current_leader_epoch,
                    last_fetched_epoch: p.last_fetched_epoch,
                };
                sent_now.insert(p.partition, held);
            }
        }
        let (session_id, wanted) = if req.session_id == 0 {
            if req.session_epoch == 0 {
                self.next_session += 1;
                let s = BrokerSession {
                    epoch: 1,
                    partitions: sent_now.clone(),
                };
                self.sessions.insert(self.next_session, s);
                (self.next_session, sent_now)
            } else {
                (0, sent_now)
            }
        } else {
            let Some(s) = self.sessions.get_mut(&req.session_id) else {
                return top_level(KafkaCode::FETCH_SESSION_ID_NOT_FOUND);
            };
            if s.epoch != req.session_epoch {
                return top_level(KafkaCode::INVALID_FETCH_SESSION_EPOCH);
            }
            s.epoch += 1;
            s.partitions.extend(sent_now);
            for f in &forgotten {
                s.partitions.remove(f);
            }
            (req.session_id, s.partitions.clone())
        };
        let partitions = wanted
            .iter()
            .map(|(&p, &held)| self.serve_partition(node, p, held, !req.rack_id.is_empty()))
            .collect();
        FetchResponse {
            session_id,
            responses: vec![FetchableTopicResponse {
                topic: TOPIC.into(),
                topic_id: Uuid::from_bytes([4; 16]),
                partitions,
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn serve_partition(&mut self, node: i32, p: i32, held: Held, has_rack: bool) -> PartitionData {
        let error = |code: KafkaCode| PartitionData {
            partition_index: p,
            error_code: code.0,
            ..Default::default()
        };
        if let Some(k) = self
            .inject
            .iter()
            .position(|&(n, q, _)| n == node && q == p)
        {
            let (_, _, code) = self.inject.remove(k);
            return error(code);
        }
        let code = self.check(node, p, held.current_leader_epoch);
        if code != KafkaCode::NONE {
            return error(code);
        }
        let log = &self.logs[p as usize];
        let base = PartitionData {
            partition_index: p,
            high_watermark: log.next,
            last_stable_offset: log.next,
            ..Default::default()
        };
        let leader = self.leaders[p as usize];
        if let Some(replica) = self
            .prefer
            .filter(|&r| node == leader && r != node && has_rack)
        {
            // KIP-392: the leader's selector picked another replica; no records.
            return PartitionData {
                preferred_read_replica: replica,
                ..base
            };
        }
        if held.last_fetched_epoch >= 0 {
            let (epoch, end) = log.end_of(held.last_fetched_epoch);
            if epoch < 0 || end < 0 {
                return error(KafkaCode::OFFSET_OUT_OF_RANGE);
            }
            if epoch < held.last_fetched_epoch || end < held.offset {
                return PartitionData {
                    diverging_epoch: EpochEndOffset {
                        epoch,
                        end_offset: end,
                        ..Default::default()
                    },
                    ..base
                };
            }
        }
        if held.offset > log.next {
            return PartitionData {
                error_code: KafkaCode::OFFSET_OUT_OF_RANGE.0,
                ..base
            };
        }
        let aborted = log
            .aborted
            .iter()
            .map(|&(producer_id, first_offset)| AbortedTransaction {
                producer_id,
                first_offset,
                ..Default::default()
            })
            .collect();
        PartitionData {
            aborted_transactions: Some(aborted),
            records: Some(match self.partial_tails {
                true => log.read_with_partial_tail(held.offset),
                false => log.read(held.offset, 1 << 20),
            }),
            ..base
        }
    }

    pub(super) fn list_offsets(
        &mut self,
        node: i32,
        req: &ListOffsetsRequest,
    ) -> ListOffsetsResponse {
        let refuse = self.refuse_list_offsets.take();
        self.list_offsets_isolation.push(req.isolation_level);
        let mut topics = Vec::new();
        for t in &req.topics {
            let mut partitions = Vec::new();
            for p in &t.partitions {
                let i = p.partition_index;
                self.list_offsets_epochs.push((i, p.current_leader_epoch));
                self.list_offsets_times.push((i, p.timestamp));
                let code = match refuse {
                    Some(code) => code,
                    None if node != self.leaders[i as usize] => KafkaCode::NOT_LEADER_OR_FOLLOWER,
                    None => self.check(node, i, p.current_leader_epoch),
                };
                let log = &self.logs[i as usize];
                let offset = match (code, p.timestamp) {
                    (KafkaCode::NONE, -2) => 0,
                    (KafkaCode::NONE, t) if t >= 0 => {
                        self.offsets_by_time.get(&i).copied().unwrap_or(-1)
                    }
                    (KafkaCode::NONE, _) => log.next,
                    _ => -1,
                };
                partitions.push(ListOffsetsPartitionResponse {
                    partition_index: i,
                    error_code: code.0,
                    offset,
                    timestamp: -1,
                    leader_epoch: log.epoch,
                    ..Default::default()
                });
            }
            topics.push(ListOffsetsTopicResponse {
                name: t.name.clone(),
                partitions,
                ..Default::default()
            });
        }
        ListOffsetsResponse {
            topics,
            ..Default::default()
        }
    }

    pub(super) fn offset_for_leader_epoch(
        &mut self,
        node: i32,
        req: &OffsetForLeaderEpochRequest,
    ) -> OffsetForLeaderEpochResponse {
        let refuse = self.refuse_validation.take();
        let mut topics = Vec::new();
        for t in &req.topics {
            let mut partitions = Vec::new();
            for p in &t.partitions {
                let i = p.partition;
                self.validations
                    .push((node, i, p.leader_epoch, p.current_leader_epoch));
                let mut code = refuse.unwrap_or(KafkaCode::NONE);
                if code == KafkaCode::NONE && node != self.leaders[i as usize] {
                    code = KafkaCode::NOT_LEADER_OR_FOLLOWER;
                }
                if code == KafkaCode::NONE {
                    code = self.check(node, i, p.current_leader_epoch);
                }
                let (leader_epoch, end_offset) = if code == KafkaCode::NONE {
                    self.logs[i as usize].end_of(p.leader_epoch)
                } else {
                    (-1, -1)
                };
                partitions.push(LeaderEpochEnd {
                    error_code: code.0,
                    partition: i,
                    leader_epoch,
                    end_offset,
                    ..Default::default()
                });
            }
            topics.push(OffsetForLeaderTopicResult {
                topic: t.topic.clone(),
                partitions,
                ..Default::default()
            });
        }
        OffsetForLeaderEpochResponse {
            topics,
            ..Default::default()
        }
    }
}

fn top_level(code: KafkaCode) -> FetchResponse {
    FetchResponse {
        error_code: code.0,
        ..Default::default()
    }
}
