//! The simulated cluster's state: brokers, topics with partitions (leader, leader
//! epoch and the leader epoch cache, replicas, a log of record batches, high watermark,
//! log start), producer state
//! per partition, and each broker's fetch-session cache. The API handlers in
//! `handlers/` read and change it; [`SimCluster::handle`] dispatches one request.

use std::collections::{BTreeMap, HashMap, VecDeque};

use bytes::Bytes;
use kafka_core::protocol::{ApiKey, Uuid};

use super::classic_state::ClassicCoordinator;
use super::group_state::GroupCoordinator;
use super::handlers::{self, Answer};
use super::txn_state::TxnCoordinator;
use super::wire::Frame;

/// One broker.
#[derive(Debug)]
pub struct Broker {
    /// Its node id.
    pub id: i32,
    /// The host name clients connect to (`b<id>`; `127.0.0.1` when served on loopback).
    pub host: String,
    /// The port it advertises (9092; a listener's port when served on loopback).
    pub port: i32,
    /// Whether it runs (a killed broker refuses connections).
    pub up: bool,
    /// Its fetch-session cache (KIP-227).
    pub sessions: handlers::fetch::SessionCache,
}

/// A batch in a partition's log, as the client wrote it with its base offset and
/// partition leader epoch filled in by the broker.
#[derive(Debug, Clone)]
pub struct StoredBatch {
    /// Offset of its first record.
    pub base: i64,
    /// Offset of its last record.
    pub last: i64,
    /// The batch's bytes.
    pub bytes: Bytes,
}

/// A producer's state on one partition: its epoch and its last five batches.
#[derive(Debug, Clone, Default)]
pub struct ProducerState {
    /// The epoch of its last batch.
    pub epoch: i16,
    /// `(first sequence, last sequence, base offset)` of its last five batches.
    pub recent: VecDeque<(i32, i32, i64)>,
}

/// One partition.
#[derive(Debug, Clone)]
pub struct Partition {
    /// The leader's node id.
    pub leader: i32,
    /// Bumped at every leader change.
    pub leader_epoch: i32,
    /// Kafka's leader epoch cache: `(epoch, start offset)` of every leader epoch,
    /// ascending (OffsetForLeaderEpoch and the Fetch divergence check read it).
    pub epochs: Vec<(i32, i64)>,
    /// Replica node ids (the leader among them).
    pub replicas: Vec<i32>,
    /// The log.
    pub log: Vec<StoredBatch>,
    /// The next offset (every record is replicated at once, so this is also the high
    /// watermark).
    pub next_offset: i64,
    /// The log start offset.
    pub log_start: i64,
    /// Producer state by producer id.
    pub producers: HashMap<i64, ProducerState>,
}

impl Partition {
    /// The end offset of leader epoch `epoch` as Kafka's epoch cache answers it: the
    /// current epoch ends at the log end; an older one where the next epoch starts,
    /// named as the largest epoch at most `epoch`; one newer than all is unknown
    /// `(-1, -1)`.
    pub fn end_of(&self, epoch: i32) -> (i32, i64) {
        let latest = self.epochs.last().map_or(-1, |&(e, _)| e);
        if epoch == latest {
            return (latest, self.next_offset);
        }
        let Some(&(_, higher)) = self.epochs.iter().find(|&&(e, _)| e > epoch) else {
            return (-1, -1);
        };
        match self.epochs.iter().rev().find(|&&(e, _)| e <= epoch) {
            Some(&(floor, _)) => (floor, higher),
            None => (epoch, higher),
        }
    }
}

/// One topic.
#[derive(Debug, Clone)]
pub struct Topic {
    /// Its name.
    pub name: String,
    /// Its id.
    pub id: Uuid,
    /// Its partitions.
    pub partitions: Vec<Partition>,
}

/// What the cluster counted (part of every scenario's summary).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Requests handled, by API.
    pub requests: BTreeMap<&'static str, u64>,
    /// Batches appended.
    pub batches_appended: u64,
    /// Batches recognized as duplicates (answered with the original offset, as Kafka
    /// 4.x answers them: no error).
    pub duplicates_refused: u64,
    /// Answers with an error code, by code.
    pub errors: BTreeMap<i16, u64>,
    /// Leader changes.
    pub leader_moves: u64,
    /// Unclean leader elections, and the records they cut off the logs.
    pub unclean_elections: u64,
    /// Records cut off by unclean leader elections.
    pub truncated_records: u64,
    /// Topics hidden (`topics.rs`).
    pub topics_hidden: u64,
    /// Topics deleted.
    pub topics_deleted: u64,
    /// Producer states dropped with deleted records (`forget.rs`).
    pub producers_forgotten: u64,
    /// Records deleted (DeleteRecords).
    pub records_deleted: u64,
    /// Batches lost by leaders that lacked them (`lost_batches.rs`).
    pub batches_lost: u64,
}

/// The cluster.
#[derive(Debug)]
pub struct SimCluster {
    /// Brokers by position (node id = position + 1).
    pub brokers: Vec<Broker>,
    /// Topics by name.
    pub topics: BTreeMap<String, Topic>,
    /// Producer ids handed out, with their current epoch.
    pub producer_ids: HashMap<i64, i16>,
    /// The next producer id.
    pub next_producer_id: i64,
    /// Counters.
    pub counters: Counters,
    /// The transaction coordinator's state (`txn_state`), also the group offsets.
    pub txn: TxnCoordinator,
    /// The group coordinator's membership state (`group_state`, KIP-848 groups).
    pub groups: GroupCoordinator,
    /// The classic groups' coordinator state (`classic_state`).
    pub classic: ClassicCoordinator,
    /// Topics missing from the cluster for a while, with their logs (`topics.rs`).
    pub hidden: BTreeMap<String, Topic>,
    /// Answer UNKNOWN_PRODUCER_ID to a producer with no state on a partition whose
    /// batch does not start at sequence 0, as brokers before KIP-360 (Kafka 0.11–2.4)
    /// did; Kafka 4.x accepts any first sequence (`forget.rs`).
    pub strict_unknown_producers: bool,
}

impl SimCluster {
    /// A cluster of `brokers` brokers named `b1`, `b2`, ... and no topics.
    pub fn new(brokers: usize) -> SimCluster {
        SimCluster {
            brokers: (1..=brokers as i32)
                .map(|id| Broker {
                    id,
                    host: format!("b{id}"),
                    port: 9092,
                    up: true,
                    sessions: handlers::fetch::SessionCache::new(8),
                })
                .collect(),
            topics: BTreeMap::new(),
            producer_ids: HashMap::new(),
            next_producer_id: 1000,
            counters: Counters::default(),
            txn: TxnCoordinator::default(),
            groups: GroupCoordinator::default(),
            classic: ClassicCoordinator::default(),
            hidden: BTreeMap::new(),
            strict_unknown_producers: false,
        }
    }

    /// Creates `name` with `partitions` partitions, replicated on every broker, leaders
    /// spread round-robin.
    pub fn create_topic(&mut self, name: &str, partitions: i32) {
        let n = self.brokers.len() as i32;
        let seed = self.topics.len() as u8 + 1;
        let parts = (0..partitions)
            .map(|p| Partition {
                leader: p % n + 1,
                leader_epoch: 0,
                epochs: vec![(0, 0)],
                replicas: (1..=n).collect(),
                log: Vec::new(),
                next_offset: 0,
                log_start: 0,
                producers: HashMap::new(),
            })
            .collect();
        self.topics.insert(
            name.to_string(),
            Topic {
                name: name.to_string(),
                id: Uuid::from_bytes([seed; 16]),
                partitions: parts,
            },
        );
    }

    /// The broker with node id `node`.
    pub fn broker(&self, node: i32) -> Option<&Broker> {
        self.brokers.iter().find(|b| b.id == node)
    }

    /// The node id of the broker named `host`.
    pub fn node_of(&self, host: &str) -> Option<i32> {
        self.brokers.iter().find(|b| b.host == host).map(|b| b.id)
    }

    /// A topic by id.
    pub fn topic_by_id(&self, id: Uuid) -> Option<&Topic> {
        self.topics.values().find(|t| t.id == id)
    }

    /// Makes `to` the leader of `topic`/`partition` (a new leader epoch). Returns
    /// whether it changed.
    pub fn move_leader(&mut self, topic: &str, partition: i32, to: i32) -> bool {
        let Some(p) = self
            .topics
            .get_mut(topic)
            .and_then(|t| t.partitions.get_mut(partition as usize))
        else {
            return false;
        };
        if p.leader == to || !p.replicas.contains(&to) {
            return false;
        }
        p.leader = to;
        p.leader_epoch += 1;
        p.epochs.push((p.leader_epoch, p.next_offset));
        self.counters.leader_moves += 1;
        true
    }

    /// An unclean leader election: `to` becomes the leader of `topic`/`partition` though
    /// it lacks the last `drop_batches` batches of the log (acknowledged or not), which
    /// are cut off, with the leader epochs that began in them, as Kafka's new leader's
    /// log and epoch cache would lack them. The next records are written from the cut in
    /// a new leader epoch. Returns the records cut off.
    pub fn unclean_election(
        &mut self,
        topic: &str,
        partition: i32,
        to: i32,
        drop_batches: usize,
    ) -> i64 {
        let Some(p) = self
            .topics
            .get_mut(topic)
            .and_then(|t| t.partitions.get_mut(partition as usize))
        else {
            return 0;
        };
        if p.leader == to || !p.replicas.contains(&to) {
            return 0;
        }
        let keep = p.log.len().saturating_sub(drop_batches);
        let end = p.log.get(keep).map_or(p.next_offset, |b| b.base);
        let cut = p.next_offset - end;
        p.log.truncate(keep);
        p.next_offset = end;
        p.epochs.retain(|&(_, start)| start < end);
        self.counters.unclean_elections += 1;
        self.counters.truncated_records += cut as u64;
        self.move_leader(topic, partition, to);
        cut
    }

    /// Stops `node`: the partitions it leads move to the next running replica. Data is
    /// replicated before it is acknowledged, so nothing is lost.
    pub fn kill(&mut self, node: i32) {
        let up: Vec<i32> = self
            .brokers
            .iter()
            .filter(|b| b.up && b.id != node)
            .map(|b| b.id)
            .collect();
        if let Some(b) = self.brokers.iter_mut().find(|b| b.id == node) {
            b.up = false;
            b.sessions.clear();
        }
        let moves: Vec<(String, i32, i32)> = self
            .topics
            .values()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.leader == node)
                    .filter_map(|(i, p)| {
                        let next = p.replicas.iter().find(|r| up.contains(r))?;
                        Some((t.name.clone(), i as i32, *next))
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        for (t, p, to) in moves {
            self.move_leader(&t, p, to);
        }
    }

    /// Starts `node` again (with an empty fetch-session cache).
    pub fn restart(&mut self, node: i32) {
        if let Some(b) = self.brokers.iter_mut().find(|b| b.id == node) {
            b.up = true;
            b.sessions.clear();
        }
    }

    /// Handles one request arriving at `node`; the framed answer, or `None` when the
    /// request expects none (acks=0).
    pub fn handle(&mut self, node: i32, frame: &Frame) -> Option<Answer> {
        *self.counters.requests.entry(frame.api.name()).or_default() += 1;
        let now = |bytes| Some(Answer::now(bytes));
        match frame.api {
            ApiKey::ApiVersions => now(handlers::api_versions::handle(frame, self.txn.v2)),
            ApiKey::Metadata => now(handlers::metadata::handle(self, frame)),
            ApiKey::InitProducerId => now(handlers::init_producer_id::handle(self, node, frame)),
            ApiKey::Produce => handlers::produce::handle(self, node, frame).map(Answer::now),
            ApiKey::Fetch => Some(handlers::fetch::handle(self, node, frame)),
            ApiKey::ListOffsets => now(handlers::list_offsets::handle(self, node, frame)),
            ApiKey::OffsetForLeaderEpoch => {
                now(handlers::offset_for_leader_epoch::handle(self, node, frame))
            }
            // Transactions (txn_state): coordinators, and the transactional APIs.
            ApiKey::FindCoordinator => now(handlers::find_coordinator::handle(self, frame)),
            ApiKey::AddPartitionsToTxn => {
                now(handlers::add_partitions_to_txn::handle(self, node, frame))
            }
            ApiKey::AddOffsetsToTxn => now(handlers::add_offsets_to_txn::handle(self, node, frame)),
            ApiKey::TxnOffsetCommit => now(handlers::txn_offset_commit::handle(self, node, frame)),
            ApiKey::EndTxn => now(handlers::end_txn::handle(self, node, frame)),
            ApiKey::OffsetFetch => now(handlers::offset_fetch::handle(self, node, frame)),
            // Consumer groups (group_state).
            ApiKey::OffsetCommit => now(handlers::offset_commit::handle(self, node, frame)),
            ApiKey::ConsumerGroupHeartbeat => now(handlers::consumer_group_heartbeat::handle(
                self, node, frame,
            )),
            // Classic groups (classic_state).
            ApiKey::JoinGroup => Some(Answer::classic(handlers::join_group::handle(
                self, node, frame,
            ))),
            ApiKey::SyncGroup => Some(Answer::classic(handlers::sync_group::handle(
                self, node, frame,
            ))),
            ApiKey::Heartbeat => now(handlers::heartbeat::handle(self, node, frame)),
            ApiKey::LeaveGroup => now(handlers::leave_group::handle(self, node, frame)),
            other => panic!("the simulated cluster does not serve {other:?} yet"),
        }
    }

    /// Counts an error answer.
    pub(crate) fn count_error(&mut self, code: i16) {
        if code != 0 {
            *self.counters.errors.entry(code).or_default() += 1;
        }
    }
}
