//! The scripted cluster's transaction coordinator: transactional ids with their
//! producer id, epoch and open transaction; AddPartitionsToTxn, AddOffsetsToTxn,
//! TxnOffsetCommit and EndTxn as a broker checks them (an older epoch is fenced, a
//! partition not added refuses transactional batches under v1); transactions v2 when
//! `v2` is set (the cluster finalizes `transaction.version` 2, Produce adds partitions,
//! EndTxn bumps the epoch). Every record appended in a transaction is tagged with it, so
//! a test can read a partition as a `read_committed` consumer would.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use bytes::Bytes;

use super::cluster::{Cluster, TOPIC};
use crate::client::ConnId;
use crate::protocol::messages::add_offsets_to_txn::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse,
};
use crate::protocol::messages::add_partitions_to_txn::response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use crate::protocol::messages::add_partitions_to_txn::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse,
};
use crate::protocol::messages::api_versions::response::FinalizedFeatureKey;
use crate::protocol::messages::api_versions::ApiVersionsResponse;
use crate::protocol::messages::end_txn::{EndTxnRequest, EndTxnResponse};
use crate::protocol::messages::find_coordinator::response::Coordinator;
use crate::protocol::messages::find_coordinator::{
    FindCoordinatorRequest, FindCoordinatorResponse,
};
use crate::protocol::messages::init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
use crate::protocol::messages::txn_offset_commit::response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use crate::protocol::messages::txn_offset_commit::{
    TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};
use crate::protocol::{ApiKey, KafkaCode};
use crate::test_support::{broker_versions, Seen};

/// What became of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    Open,
    Committed,
    Aborted,
}

#[derive(Debug)]
struct OpenTxn {
    serial: u64,
    partitions: BTreeSet<i32>,
    groups: BTreeSet<String>,
    /// `(group, partition, offset)` staged by TxnOffsetCommit.
    offsets: Vec<(String, i32, i64)>,
}

#[derive(Debug)]
struct TxnEntry {
    pid: i64,
    epoch: i16,
    open: Option<OpenTxn>,
}

/// Faults, consumed as they fire.
#[derive(Debug, Default)]
pub(super) struct TxnFaults {
    /// InitProducerId answers CONCURRENT_TRANSACTIONS this many times first.
    pub(super) concurrent_on_init: usize,
    /// EndTxn requests to apply and then lose the answer of (the connection resets).
    pub(super) lose_end_answers: usize,
    /// EndTxn answers to replace by these codes (not applied), in order.
    pub(super) end_codes: VecDeque<i16>,
    /// AddPartitionsToTxn partition answers to replace by these codes, in order.
    pub(super) add_codes: VecDeque<i16>,
}

/// The coordinator's state. See the module docs.
#[derive(Debug)]
pub(super) struct TxnBroker {
    pub(super) v2: bool,
    /// The node coordinating every transactional id and group.
    pub(super) coordinator: i32,
    ids: HashMap<String, TxnEntry>,
    pub(super) outcomes: HashMap<u64, Outcome>,
    next_serial: u64,
    /// Committed group offsets: `(group, partition)` to offset.
    pub(super) group_offsets: BTreeMap<(String, i32), i64>,
    pub(super) faults: TxnFaults,
    /// Requests seen, by API, with their versions.
    pub(super) seen: Vec<(ApiKey, i16)>,
    /// Every EndTxn: `(epoch, committed)`.
    pub(super) end_txns: Vec<(i16, bool)>,
    /// Every TxnOffsetCommit's `(generation, member id)`.
    pub(super) offset_commits: Vec<(i32, String)>,
    /// Every TxnOffsetCommit partition: `(partition, committed_leader_epoch)`.
    pub(super) committed_epochs: Vec<(i32, i32)>,
}

impl Default for TxnBroker {
    fn default() -> Self {
        TxnBroker {
            v2: false,
            coordinator: 1,
            ids: HashMap::new(),
            outcomes: HashMap::new(),
            next_serial: 1,
            group_offsets: BTreeMap::new(),
            faults: TxnFaults::default(),
            seen: Vec::new(),
            end_txns: Vec::new(),
            offset_commits: Vec::new(),
            committed_epochs: Vec::new(),
        }
    }
}

impl TxnBroker {
    /// The ApiVersions answer: with `transaction.version` finalized at 2 under v2.
    pub(super) fn api_versions(&self) -> ApiVersionsResponse {
        let mut v = broker_versions();
        if self.v2 {
            v.finalized_features_epoch = 7;
            v.finalized_features = vec![FinalizedFeatureKey {
                name: "transaction.version".into(),
                max_version_level: 2,
                min_version_level: 2,
                ..Default::default()
            }];
        }
        v
    }

    /// Requests of `api` seen so far.
    pub(super) fn count(&self, api: ApiKey) -> usize {
        self.seen.iter().filter(|(a, _)| *a == api).count()
    }

    /// The current `(producer id, epoch)` of `id`.
    pub(super) fn producer(&self, id: &str) -> Option<(i64, i16)> {
        self.ids.get(id).map(|e| (e.pid, e.epoch))
    }

    /// What a newer instance's InitProducerId does to `id` (or the coordinator's
    /// transaction timeout): the open transaction is aborted and the epoch bumped, so
    /// the current producer is fenced.
    pub(super) fn fence(&mut self, id: &str) {
        let e = self.ids.get_mut(id).expect("known transactional id");
        if let Some(open) = e.open.take() {
            self.outcomes.insert(open.serial, Outcome::Aborted);
        }
        e.epoch += 1;
    }

    /// The serial of the transaction `pid` has open, adding `partition` to it under v2
    /// (Produce v12+ adds it). `Err(code)`: the batch is refused.
    pub(super) fn tag(
        &mut self,
        pid: i64,
        epoch: i16,
        partition: i32,
        version: i16,
    ) -> Result<u64, KafkaCode> {
        let v2 = self.v2;
        let e = self
            .ids
            .values_mut()
            .find(|e| e.pid == pid)
            .ok_or(KafkaCode::INVALID_PRODUCER_ID_MAPPING)?;
        if epoch < e.epoch {
            return Err(KafkaCode::INVALID_PRODUCER_EPOCH);
        }
        if v2 && version >= 12 && e.open.is_none() {
            e.open = Some(OpenTxn {
                serial: self.next_serial,
                partitions: BTreeSet::new(),
                groups: BTreeSet::new(),
                offsets: Vec::new(),
            });
            self.outcomes.insert(self.next_serial, Outcome::Open);
            self.next_serial += 1;
        }
        let open = e.open.as_mut().ok_or(KafkaCode::INVALID_TXN_STATE)?;
        if v2 && version >= 12 {
            open.partitions.insert(partition);
        }
        if !open.partitions.contains(&partition) {
            return Err(KafkaCode::INVALID_TXN_STATE);
        }
        Ok(open.serial)
    }

    fn open_for(&mut self, id: &str, pid: i64, epoch: i16) -> Result<&mut OpenTxn, KafkaCode> {
        let e = self
            .ids
            .get_mut(id)
            .ok_or(KafkaCode::INVALID_PRODUCER_ID_MAPPING)?;
        if e.pid != pid {
            return Err(KafkaCode::INVALID_PRODUCER_ID_MAPPING);
        }
        if epoch < e.epoch {
            return Err(KafkaCode::PRODUCER_FENCED);
        }
        if e.open.is_none() {
            e.open = Some(OpenTxn {
                serial: self.next_serial,
                partitions: BTreeSet::new(),
                groups: BTreeSet::new(),
                offsets: Vec::new(),
            });
            self.outcomes.insert(self.next_serial, Outcome::Open);
            self.next_serial += 1;
        }
        Ok(e.open.as_mut().expect("opened"))
    }

    fn init(&mut self, req: &InitProducerIdRequest, next_pid: &mut i64) -> InitProducerIdResponse {
        let fail = |code: KafkaCode| InitProducerIdResponse {
            error_code: code.0,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        };
        if self.faults.concurrent_on_init > 0 {
            self.faults.concurrent_on_init -= 1;
            return fail(KafkaCode::CONCURRENT_TRANSACTIONS);
        }
        let id = req.transactional_id.clone().expect("transactional");
        match self.ids.get(&id) {
            Some(e)
                if req.producer_id >= 0
                    && (req.producer_id, req.producer_epoch) != (e.pid, e.epoch) =>
            {
                return fail(KafkaCode::PRODUCER_FENCED);
            }
            Some(_) => self.fence(&id),
            None => {
                *next_pid += 1;
                self.ids.insert(
                    id.clone(),
                    TxnEntry {
                        pid: *next_pid,
                        epoch: 0,
                        open: None,
                    },
                );
            }
        }
        let e = &self.ids[&id];
        InitProducerIdResponse {
            producer_id: e.pid,
            producer_epoch: e.epoch,
            ..Default::default()
        }
    }

    fn end(&mut self, req: &EndTxnRequest, version: i16) -> EndTxnResponse {
        let answer = |code: KafkaCode, pid: i64, epoch: i16| EndTxnResponse {
            error_code: code.0,
            producer_id: pid,
            producer_epoch: epoch,
            ..Default::default()
        };
        self.end_txns.push((req.producer_epoch, req.committed));
        if let Some(code) = self.faults.end_codes.pop_front() {
            return answer(KafkaCode(code), -1, -1);
        }
        let Some(e) = self.ids.get_mut(&req.transactional_id) else {
            return answer(KafkaCode::INVALID_PRODUCER_ID_MAPPING, -1, -1);
        };
        let bumps = self.v2 && version >= 5;
        // A retry of an EndTxn already applied (v2: under the epoch before the bump).
        let retry_of_applied = e.open.is_none()
            && (req.producer_epoch == e.epoch || (bumps && req.producer_epoch + 1 == e.epoch));
        if req.producer_epoch < e.epoch && !retry_of_applied {
            return answer(KafkaCode::PRODUCER_FENCED, -1, -1);
        }
        if let Some(open) = e.open.take() {
            let outcome = if req.committed {
                Outcome::Committed
            } else {
                Outcome::Aborted
            };
            self.outcomes.insert(open.serial, outcome);
            if req.committed {
                for (g, p, o) in open.offsets {
                    self.group_offsets.insert((g, p), o);
                }
            }
            if bumps {
                e.epoch += 1;
            }
        }
        answer(KafkaCode::NONE, e.pid, e.epoch)
    }
}

impl Cluster {
    /// Answers the transactional APIs; `false` if `seen` is not one of them.
    pub(super) fn answer_txn(&mut self, conn: ConnId, node: i32, seen: &Seen) -> bool {
        let api = seen.api();
        let coordinated = matches!(
            api,
            ApiKey::AddPartitionsToTxn
                | ApiKey::AddOffsetsToTxn
                | ApiKey::TxnOffsetCommit
                | ApiKey::EndTxn
        );
        if !coordinated && api != ApiKey::FindCoordinator && api != ApiKey::InitProducerId {
            return false;
        }
        self.txn.seen.push((api, seen.version()));
        let wrong_node = node != self.txn.coordinator;
        match api {
            ApiKey::FindCoordinator => {
                let req: FindCoordinatorRequest = seen.decode();
                let node = self.txn.coordinator;
                let host = if node == 2 { "b2" } else { "b1" };
                let resp = FindCoordinatorResponse {
                    coordinators: req
                        .coordinator_keys
                        .iter()
                        .map(|k| Coordinator {
                            key: k.clone(),
                            node_id: node,
                            host: host.into(),
                            port: 9092,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                };
                self.reply_to(conn, seen, &resp);
            }
            ApiKey::InitProducerId => {
                let req: InitProducerIdRequest = seen.decode();
                if req.transactional_id.is_none() {
                    return false;
                }
                let resp = if wrong_node {
                    InitProducerIdResponse {
                        error_code: KafkaCode::NOT_COORDINATOR.0,
                        ..Default::default()
                    }
                } else {
                    let mut next = self.next_pid;
                    let r = self.txn.init(&req, &mut next);
                    self.next_pid = next;
                    r
                };
                self.reply_to(conn, seen, &resp);
            }
            ApiKey::AddPartitionsToTxn => {
                let req: AddPartitionsToTxnRequest = seen.decode();
                let code = if wrong_node {
                    Err(KafkaCode::NOT_COORDINATOR)
                } else {
                    self.txn
                        .open_for(
                            &req.v3_and_below_transactional_id,
                            req.v3_and_below_producer_id,
                            req.v3_and_below_producer_epoch,
                        )
                        .map(|_| ())
                };
                let mut topic_results = Vec::new();
                for t in &req.v3_and_below_topics {
                    let mut results = Vec::new();
                    for &p in &t.partitions {
                        let mut c = code.err().unwrap_or(KafkaCode::NONE);
                        if c == KafkaCode::NONE {
                            if let Some(f) = self.txn.faults.add_codes.pop_front() {
                                c = KafkaCode(f);
                            }
                        }
                        if c == KafkaCode::NONE {
                            let open = self
                                .txn
                                .open_for(
                                    &req.v3_and_below_transactional_id,
                                    req.v3_and_below_producer_id,
                                    req.v3_and_below_producer_epoch,
                                )
                                .expect("checked");
                            open.partitions.insert(p);
                        }
                        results.push(AddPartitionsToTxnPartitionResult {
                            partition_index: p,
                            partition_error_code: c.0,
                            ..Default::default()
                        });
                    }
                    topic_results.push(AddPartitionsToTxnTopicResult {
                        name: t.name.clone(),
                        results_by_partition: results,
                        ..Default::default()
                    });
                }
                let resp = AddPartitionsToTxnResponse {
                    results_by_topic_v3_and_below: topic_results,
                    ..Default::default()
                };
                self.reply_to(conn, seen, &resp);
            }
            ApiKey::AddOffsetsToTxn => {
                let req: AddOffsetsToTxnRequest = seen.decode();
                let code = if wrong_node {
                    KafkaCode::NOT_COORDINATOR
                } else {
                    match self.txn.open_for(
                        &req.transactional_id,
                        req.producer_id,
                        req.producer_epoch,
                    ) {
                        Ok(open) => {
                            open.groups.insert(req.group_id.clone());
                            KafkaCode::NONE
                        }
                        Err(c) => c,
                    }
                };
                let resp = AddOffsetsToTxnResponse {
                    error_code: code.0,
                    ..Default::default()
                };
                self.reply_to(conn, seen, &resp);
            }
            ApiKey::TxnOffsetCommit => {
                let req: TxnOffsetCommitRequest = seen.decode();
                self.txn
                    .offset_commits
                    .push((req.generation_id, req.member_id.clone()));
                for t in &req.topics {
                    for p in &t.partitions {
                        let epoch = (p.partition_index, p.committed_leader_epoch);
                        self.txn.committed_epochs.push(epoch);
                    }
                }
                let v2 = self.txn.v2 && seen.version() >= 5;
                let code = if wrong_node {
                    KafkaCode::NOT_COORDINATOR
                } else {
                    match self.txn.open_for(
                        &req.transactional_id,
                        req.producer_id,
                        req.producer_epoch,
                    ) {
                        Ok(open) if v2 || open.groups.contains(&req.group_id) => {
                            open.groups.insert(req.group_id.clone());
                            for t in &req.topics {
                                assert_eq!(t.name, TOPIC);
                                for p in &t.partitions {
                                    open.offsets.push((
                                        req.group_id.clone(),
                                        p.partition_index,
                                        p.committed_offset,
                                    ));
                                }
                            }
                            KafkaCode::NONE
                        }
                        Ok(_) => KafkaCode::INVALID_TXN_STATE,
                        Err(c) => c,
                    }
                };
                let resp = TxnOffsetCommitResponse {
                    topics: req
                        .topics
                        .iter()
                        .map(|t| TxnOffsetCommitResponseTopic {
                            name: t.name.clone(),
                            partitions: t
                                .partitions
                                .iter()
                                .map(|p| TxnOffsetCommitResponsePartition {
                                    partition_index: p.partition_index,
                                    error_code: code.0,
                                    ..Default::default()
                                })
                                .collect(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                };
                self.reply_to(conn, seen, &resp);
            }
            ApiKey::EndTxn => {
                let req: EndTxnRequest = seen.decode();
                let resp = if wrong_node {
                    EndTxnResponse {
                        error_code: KafkaCode::NOT_COORDINATOR.0,
                        ..Default::default()
                    }
                } else {
                    self.txn.end(&req, seen.version())
                };
                if resp.error_code == 0 && self.txn.faults.lose_end_answers > 0 {
                    self.txn.faults.lose_end_answers -= 1;
                    self.reset(conn);
                    return true;
                }
                self.reply_to(conn, seen, &resp);
            }
            _ => unreachable!("filtered above"),
        }
        true
    }

    /// Partition `p` as a `read_committed` consumer reads it: records outside
    /// transactions and those of committed ones.
    pub(super) fn committed_values(&self, p: i32) -> Vec<Bytes> {
        let part = &self.parts[p as usize];
        part.values
            .iter()
            .zip(&part.txn_of)
            .filter(|(_, t)| t.is_none_or(|s| self.txn.outcomes[&s] == Outcome::Committed))
            .map(|(v, _)| v.clone())
            .collect()
    }

    /// Every partition read committed, all together.
    pub(super) fn all_committed(&self) -> Vec<Bytes> {
        (0..self.parts.len() as i32)
            .flat_map(|p| self.committed_values(p))
            .collect()
    }
}
