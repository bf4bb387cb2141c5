//! Fetch with incremental fetch sessions (KIP-227) in a bounded per-broker cache: a
//! full fetch at epoch 0 opens a session (or, when the cache is full, is answered
//! sessionless with session id 0), later fetches name only changed partitions and
//! forgotten ones, an unknown session is FETCH_SESSION_ID_NOT_FOUND and a wrong epoch
//! INVALID_FETCH_SESSION_EPOCH. An incremental answer carries only the partitions with
//! records, errors or a changed high watermark / log start. Leader epochs are checked
//! (FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH; a session remembers each partition's, as
//! Kafka's does), positions outside the log are OFFSET_OUT_OF_RANGE, and a
//! `last_fetched_epoch` the leader's epoch cache contradicts is answered with
//! `diverging_epoch` (v12+). An answer with no records waits `max_wait_ms`. Every answer
//! carries the last stable offset (`txn_state`: the first offset of the oldest open
//! transaction); read_committed fetches get no batch at or past it and the aborted
//! transactions overlapping what they got.

use std::collections::{BTreeMap, HashMap};

use bytes::BytesMut;
use kafka_core::protocol::messages::fetch::response::{
    AbortedTransaction, EpochEndOffset, FetchableTopicResponse, LeaderIdAndEpoch, PartitionData,
};
use kafka_core::protocol::messages::fetch::{FetchRequest, FetchResponse};
use kafka_core::protocol::{KafkaCode, Uuid};

use super::super::cluster::{Partition, SimCluster};
use super::super::wire::{answer, Frame};
use super::Answer;

/// What a session remembers of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SessionPartition {
    fetch_offset: i64,
    max_bytes: i32,
    /// The leader epoch the client knows (-1: unchecked).
    current_leader_epoch: i32,
    /// The epoch of the record before `fetch_offset` (-1: unchecked).
    last_fetched_epoch: i32,
    /// The high watermark and log start last sent (`-1`: never).
    sent_hwm: i64,
    sent_log_start: i64,
}

#[derive(Debug, Clone, Default)]
struct Session {
    epoch: i32,
    partitions: BTreeMap<(String, i32), SessionPartition>,
}

/// A broker's fetch-session cache, bounded to `capacity` sessions.
#[derive(Debug, Clone)]
pub struct SessionCache {
    capacity: usize,
    sessions: HashMap<i32, Session>,
    next_id: i32,
    /// Sessions opened.
    pub opened: u64,
    /// Full fetches answered sessionless because the cache was full.
    pub refused_full: u64,
    /// Incremental fetches answered FETCH_SESSION_ID_NOT_FOUND or
    /// INVALID_FETCH_SESSION_EPOCH.
    pub session_errors: u64,
}

impl SessionCache {
    /// An empty cache for at most `capacity` sessions.
    pub fn new(capacity: usize) -> SessionCache {
        SessionCache {
            capacity,
            sessions: HashMap::new(),
            next_id: 0,
            opened: 0,
            refused_full: 0,
            session_errors: 0,
        }
    }

    /// Forgets every session (a broker restart).
    pub fn clear(&mut self) {
        self.sessions.clear();
    }

    /// Sets how many sessions fit (0: every fetch is sessionless).
    pub fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
        while self.sessions.len() > capacity {
            let Some(&id) = self.sessions.keys().min() else {
                break;
            };
            self.sessions.remove(&id);
        }
    }

    /// Drops one session, as a broker evicting it would (the client's next incremental
    /// fetch meets FETCH_SESSION_ID_NOT_FOUND).
    pub fn evict_any(&mut self) -> bool {
        let Some(&id) = self.sessions.keys().min() else {
            return false;
        };
        self.sessions.remove(&id).is_some()
    }
}

/// The answer to `frame` arriving at `node`.
pub fn handle(cluster: &mut SimCluster, node: i32, frame: &Frame) -> Answer {
    let req: FetchRequest = frame.decode().expect("Fetch decodes");
    let by_id = frame.version >= 13;
    let name_of = |cluster: &SimCluster, name: &str, id: Uuid| -> Option<String> {
        if by_id {
            cluster.topic_by_id(id).map(|t| t.name.clone())
        } else {
            cluster.topics.contains_key(name).then(|| name.to_string())
        }
    };
    let mut asked: Vec<((String, i32), SessionPartition)> = Vec::new();
    let mut unknown_topics = Vec::new();
    for t in &req.topics {
        let Some(name) = name_of(cluster, &t.topic, t.topic_id) else {
            unknown_topics.push(t.topic_id);
            continue;
        };
        for p in &t.partitions {
            let sp = SessionPartition {
                fetch_offset: p.fetch_offset,
                max_bytes: p.partition_max_bytes,
                current_leader_epoch: p.current_leader_epoch,
                last_fetched_epoch: if frame.version >= 12 {
                    p.last_fetched_epoch
                } else {
                    -1
                },
                sent_hwm: -1,
                sent_log_start: -1,
            };
            asked.push(((name.clone(), p.partition), sp));
        }
    }
    let mut forgotten = Vec::new();
    for t in &req.forgotten_topics_data {
        if let Some(name) = name_of(cluster, &t.topic, t.topic_id) {
            forgotten.extend(t.partitions.iter().map(|&p| (name.clone(), p)));
        }
    }

    let broker_idx = cluster
        .brokers
        .iter()
        .position(|b| b.id == node)
        .expect("a running broker");
    let cache = &mut cluster.brokers[broker_idx].sessions;
    let error = |code: KafkaCode| {
        Answer::now(answer(
            frame,
            &FetchResponse {
                error_code: code.0,
                ..Default::default()
            },
        ))
    };
    // (session id to answer with, the partitions to consider, whether incremental)
    let (session_id, mut wanted, incremental) = match (req.session_id, req.session_epoch) {
        (0, -1) | (0, 0) => {
            let parts: BTreeMap<_, _> = asked.iter().map(|(k, sp)| (k.clone(), *sp)).collect();
            let mut id = 0;
            if req.session_epoch == 0 {
                if cache.sessions.len() < cache.capacity {
                    cache.next_id += 1;
                    id = cache.next_id;
                    cache.opened += 1;
                } else {
                    cache.refused_full += 1;
                }
            }
            (id, parts, false)
        }
        (id, -1) => {
            cache.sessions.remove(&id);
            let parts = asked.iter().map(|(k, sp)| (k.clone(), *sp)).collect();
            (0, parts, false)
        }
        (id, epoch) => {
            let Some(s) = cache.sessions.get_mut(&id) else {
                cache.session_errors += 1;
                return error(KafkaCode::FETCH_SESSION_ID_NOT_FOUND);
            };
            if epoch == 0 || s.epoch != epoch {
                if epoch == 0 {
                    cache.sessions.remove(&id);
                }
                cache.session_errors += 1;
                return error(KafkaCode::INVALID_FETCH_SESSION_EPOCH);
            }
            for (k, sp) in &asked {
                let kept = s.partitions.get(k).copied();
                s.partitions.insert(
                    k.clone(),
                    SessionPartition {
                        sent_hwm: kept.map_or(-1, |o| o.sent_hwm),
                        sent_log_start: kept.map_or(-1, |o| o.sent_log_start),
                        ..*sp
                    },
                );
            }
            for k in &forgotten {
                s.partitions.remove(k);
            }
            (id, s.partitions.clone(), true)
        }
    };

    let read_committed = req.isolation_level == 1;
    let mut budget = i64::from(req.max_bytes.max(1));
    let mut topics: BTreeMap<String, Vec<PartitionData>> = BTreeMap::new();
    let mut any_records = false;
    let mut any_error = false;
    for (key, sp) in wanted.iter_mut() {
        let (name, index) = key;
        let part = cluster
            .topics
            .get(name)
            .and_then(|t| t.partitions.get(*index as usize));
        let pd = match part {
            None => PartitionData {
                partition_index: *index,
                error_code: KafkaCode::UNKNOWN_TOPIC_OR_PARTITION.0,
                high_watermark: -1,
                last_stable_offset: -1,
                log_start_offset: -1,
                aborted_transactions: None,
                ..Default::default()
            },
            Some(part) => {
                let lso = cluster.txn.lso(name, *index, part.next_offset);
                let end = if read_committed {
                    lso
                } else {
                    part.next_offset
                };
                let (mut pd, upto) = read(part, node, *index, sp, end, &mut budget);
                pd.last_stable_offset = if pd.error_code == 0 { lso } else { -1 };
                if read_committed && pd.error_code == 0 {
                    let aborted = cluster.txn.aborted_in(name, *index, sp.fetch_offset, upto);
                    cluster
                        .txn
                        .note_read_committed(lso < part.next_offset, aborted.len());
                    pd.aborted_transactions = Some(
                        aborted
                            .into_iter()
                            .map(|(producer_id, first_offset)| AbortedTransaction {
                                producer_id,
                                first_offset,
                                ..Default::default()
                            })
                            .collect(),
                    );
                }
                pd
            }
        };
        let has_records = pd.records.as_ref().is_some_and(|r| !r.is_empty());
        let news = pd.error_code != 0
            || has_records
            || pd.high_watermark != sp.sent_hwm
            || pd.log_start_offset != sp.sent_log_start
            || pd.diverging_epoch.epoch >= 0;
        any_records |= has_records;
        any_error |= pd.error_code != 0;
        sp.sent_hwm = pd.high_watermark;
        sp.sent_log_start = pd.log_start_offset;
        if !incremental || news {
            let mut pd = pd;
            if read_committed && pd.error_code == 0 && pd.aborted_transactions.is_none() {
                pd.aborted_transactions = Some(Vec::new());
            }
            topics.entry(name.clone()).or_default().push(pd);
        }
    }
    for pd in topics.values().flatten() {
        cluster.count_error(pd.error_code);
    }
    if session_id != 0 {
        let cache = &mut cluster.brokers[broker_idx].sessions;
        let epoch = if incremental {
            cache.sessions.get(&session_id).map_or(1, |s| s.epoch + 1)
        } else {
            1
        };
        cache.sessions.insert(
            session_id,
            Session {
                epoch,
                partitions: wanted,
            },
        );
    }
    let mut responses: Vec<FetchableTopicResponse> = topics
        .into_iter()
        .map(|(name, partitions)| FetchableTopicResponse {
            topic_id: cluster.topics.get(&name).map(|t| t.id).unwrap_or_default(),
            topic: name,
            partitions,
            ..Default::default()
        })
        .collect();
    for id in unknown_topics {
        responses.push(FetchableTopicResponse {
            topic_id: id,
            partitions: vec![PartitionData {
                error_code: KafkaCode::UNKNOWN_TOPIC_ID.0,
                high_watermark: -1,
                last_stable_offset: -1,
                log_start_offset: -1,
                aborted_transactions: None,
                ..Default::default()
            }],
            ..Default::default()
        });
        any_error = true;
    }
    let body = FetchResponse {
        session_id,
        responses,
        ..Default::default()
    };
    let bytes = answer(frame, &body);
    if any_records || any_error {
        Answer::now(bytes)
    } else {
        Answer::after(bytes, req.max_wait_ms.max(0) as u64)
    }
}

/// One partition's data from `fetch_offset`: whole batches below `end` (the high
/// watermark, or the last stable offset for read_committed) up to its byte limit (at
/// least one batch) and the request's remaining budget; with the offset after the
/// last batch returned.
#[allow(clippy::too_many_arguments)]
fn read(
    part: &Partition,
    node: i32,
    index: i32,
    sp: &SessionPartition,
    end: i64,
    budget: &mut i64,
) -> (PartitionData, i64) {
    let current_epoch = sp.current_leader_epoch;
    let base = PartitionData {
        partition_index: index,
        high_watermark: part.next_offset,
        last_stable_offset: part.next_offset,
        log_start_offset: part.log_start,
        // Kafka sends none to read_uncommitted readers (read_committed: set by the caller).
        aborted_transactions: None,
        ..Default::default()
    };
    let code = if part.leader != node {
        Some(KafkaCode::NOT_LEADER_OR_FOLLOWER)
    } else if current_epoch >= 0 && current_epoch < part.leader_epoch {
        Some(KafkaCode::FENCED_LEADER_EPOCH)
    } else if current_epoch > part.leader_epoch {
        Some(KafkaCode::UNKNOWN_LEADER_EPOCH)
    } else if sp.fetch_offset < part.log_start || sp.fetch_offset > part.next_offset {
        Some(KafkaCode::OFFSET_OUT_OF_RANGE)
    } else {
        None
    };
    if let Some(code) = code {
        // As Kafka: no offsets in an error answer, the leader only where it moved.
        let moved = matches!(
            code,
            KafkaCode::NOT_LEADER_OR_FOLLOWER | KafkaCode::FENCED_LEADER_EPOCH
        );
        let pd = PartitionData {
            error_code: code.0,
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            current_leader: if moved {
                LeaderIdAndEpoch {
                    leader_id: part.leader,
                    leader_epoch: part.leader_epoch,
                    ..Default::default()
                }
            } else {
                LeaderIdAndEpoch::default()
            },
            ..base
        };
        return (pd, sp.fetch_offset);
    }
    if sp.last_fetched_epoch >= 0 {
        // Kafka's divergence check: the leader's end of that epoch.
        let (epoch, epoch_end) = part.end_of(sp.last_fetched_epoch);
        if epoch < 0 || epoch_end < 0 {
            let pd = PartitionData {
                error_code: KafkaCode::OFFSET_OUT_OF_RANGE.0,
                ..base
            };
            return (pd, sp.fetch_offset);
        }
        if epoch < sp.last_fetched_epoch || epoch_end < sp.fetch_offset {
            let pd = PartitionData {
                diverging_epoch: EpochEndOffset {
                    epoch,
                    end_offset: epoch_end,
                    ..Default::default()
                },
                ..base
            };
            return (pd, sp.fetch_offset);
        }
    }
    let first = part.log.partition_point(|b| b.last < sp.fetch_offset);
    let mut out = BytesMut::new();
    let mut upto = sp.fetch_offset;
    let limit = i64::from(sp.max_bytes.max(1)).min(*budget);
    for b in &part.log[first..] {
        if b.base >= end {
            break;
        }
        if !out.is_empty() && (out.len() + b.bytes.len()) as i64 > limit {
            break;
        }
        if out.is_empty() && *budget <= 0 {
            break;
        }
        out.extend_from_slice(&b.bytes);
        upto = b.last + 1;
    }
    *budget -= out.len() as i64;
    let pd = PartitionData {
        records: Some(out.freeze()),
        ..base
    };
    (pd, upto)
}
