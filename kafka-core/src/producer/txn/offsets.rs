//! Offsets sent into a transaction (`send_offsets_to_transaction`): v1 adds the group
//! to the transaction with AddOffsetsToTxn first; then TxnOffsetCommit goes to the
//! group coordinator with the member's generation, member id and instance id (KIP-447),
//! partitions that failed retriably sent again until all are in.

use std::time::Instant;

use super::error::{class, Class, TxnError};
use crate::client::{OpContext, RequestId, RequestOptions};
use crate::cluster::Route;
use crate::group::GroupMetadata;
use crate::protocol::messages::add_offsets_to_txn::AddOffsetsToTxnRequest;
use crate::protocol::messages::txn_offset_commit::request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use crate::protocol::messages::txn_offset_commit::TxnOffsetCommitRequest;
use crate::protocol::KafkaCode;

/// One consumed position sent into a transaction: the next offset to read and the
/// leader epoch of the record before it, if known (committed as
/// `committed_leader_epoch`, so a consumer restarting from it validates it: KIP-320).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnOffset {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// The next offset to read.
    pub offset: i64,
    /// The leader epoch of the record before `offset`.
    pub leader_epoch: Option<i32>,
}

impl TxnOffset {
    /// `offset` of `topic`-`partition`, its epoch unknown.
    pub fn new(topic: impl Into<String>, partition: i32, offset: i64) -> Self {
        TxnOffset {
            topic: topic.into(),
            partition,
            offset,
            leader_epoch: None,
        }
    }

    /// With the leader epoch of the record before the offset.
    pub fn leader_epoch(mut self, epoch: Option<i32>) -> Self {
        self.leader_epoch = epoch.filter(|&e| e >= 0);
        self
    }
}

impl<T: AsRef<str>> From<(T, i32, i64)> for TxnOffset {
    fn from((topic, partition, offset): (T, i32, i64)) -> Self {
        TxnOffset::new(topic.as_ref(), partition, offset)
    }
}

impl From<((std::sync::Arc<str>, i32), i64)> for TxnOffset {
    fn from(((topic, partition), offset): ((std::sync::Arc<str>, i32), i64)) -> Self {
        TxnOffset::new(&*topic, partition, offset)
    }
}

/// TxnOffsetCommit v5 adds the group implicitly (transactions v2 only).
const V1_TXN_OFFSET_COMMIT_MAX: i16 = 4;

/// What one step did.
#[derive(Debug)]
pub(super) enum Progress {
    /// Nothing new; wake at the instant if given.
    Waiting(Option<Instant>),
    /// The group is (or may now be) part of the transaction: EndTxn is needed.
    Added,
    /// Every offset is in the transaction.
    Done,
    Failed(TxnError),
}

#[derive(Debug)]
enum Stage {
    AddOffsets(Option<RequestId<AddOffsetsToTxnRequest>>),
    Commit(Option<RequestId<TxnOffsetCommitRequest>>),
}

/// One `send_offsets_to_transaction` under way.
#[derive(Debug)]
pub(super) struct OffsetsSend {
    /// Offsets not yet accepted.
    offsets: Vec<TxnOffset>,
    group: GroupMetadata,
    v2: bool,
    stage: Stage,
    attempts: u32,
    due: Option<Instant>,
}

impl OffsetsSend {
    pub(super) fn new(offsets: Vec<TxnOffset>, group: GroupMetadata, v2: bool) -> Self {
        let stage = if v2 {
            Stage::Commit(None)
        } else {
            Stage::AddOffsets(None)
        };
        OffsetsSend {
            offsets,
            group,
            v2,
            stage,
            attempts: 0,
            due: None,
        }
    }

    fn retry(&mut self, cx: &mut OpContext<'_>) -> Progress {
        self.attempts += 1;
        let at = cx.now() + cx.retry_backoff(self.attempts);
        self.due = Some(at);
        Progress::Waiting(Some(at))
    }

    pub(super) fn step(
        &mut self,
        cx: &mut OpContext<'_>,
        txn_id: &str,
        (pid, epoch): (i64, i16),
    ) -> Progress {
        if let Some(at) = self.due.filter(|&at| at > cx.now()) {
            return Progress::Waiting(Some(at));
        }
        self.due = None;
        match self.stage {
            Stage::AddOffsets(None) => {
                let request = AddOffsetsToTxnRequest {
                    transactional_id: txn_id.to_string(),
                    producer_id: pid,
                    producer_epoch: epoch,
                    group_id: self.group.group_id.clone(),
                    ..Default::default()
                };
                let id = cx.send(Route::TxnCoordinator(txn_id.to_string()), request);
                self.stage = Stage::AddOffsets(Some(id));
                Progress::Waiting(None)
            }
            Stage::AddOffsets(Some(id)) => {
                let Some(answer) = cx.take_response(id) else {
                    return Progress::Waiting(None);
                };
                self.stage = Stage::AddOffsets(None);
                let code = match answer {
                    Ok(resp) => KafkaCode(resp.error_code),
                    Err(_) => return self.retry(cx),
                };
                match class(code) {
                    Class::Ok => {
                        self.attempts = 0;
                        self.stage = Stage::Commit(None);
                        Progress::Added
                    }
                    Class::Retry => self.retry(cx),
                    Class::Refind => {
                        cx.invalidate_coordinator(txn_id);
                        self.retry(cx)
                    }
                    Class::Abortable => {
                        Progress::Failed(TxnError::abortable(Some(code), "AddOffsetsToTxn refused"))
                    }
                    Class::Fatal => {
                        Progress::Failed(TxnError::fatal(Some(code), "AddOffsetsToTxn refused"))
                    }
                }
            }
            Stage::Commit(None) => {
                let mut topics: Vec<TxnOffsetCommitRequestTopic> = Vec::new();
                for o in &self.offsets {
                    let (topic, partition) = (&o.topic, o.partition);
                    let p = TxnOffsetCommitRequestPartition {
                        partition_index: partition,
                        committed_offset: o.offset,
                        committed_leader_epoch: o.leader_epoch.unwrap_or(-1),
                        committed_metadata: Some(String::new()),
                        ..Default::default()
                    };
                    match topics.iter_mut().find(|t| t.name == *topic) {
                        Some(t) => t.partitions.push(p),
                        None => topics.push(TxnOffsetCommitRequestTopic {
                            name: topic.clone(),
                            partitions: vec![p],
                            ..Default::default()
                        }),
                    }
                }
                let g = &self.group;
                let request = TxnOffsetCommitRequest {
                    transactional_id: txn_id.to_string(),
                    group_id: g.group_id.clone(),
                    producer_id: pid,
                    producer_epoch: epoch,
                    generation_id: g.generation_id,
                    member_id: g.member_id.clone(),
                    group_instance_id: g.group_instance_id.clone(),
                    topics,
                    ..Default::default()
                };
                let mut opts = RequestOptions::default();
                if !self.v2 {
                    opts = opts.max_version(V1_TXN_OFFSET_COMMIT_MAX);
                }
                let route = Route::GroupCoordinator(g.group_id.clone());
                let id = cx.send_with(route, request, opts);
                self.stage = Stage::Commit(Some(id));
                if self.v2 {
                    Progress::Added
                } else {
                    Progress::Waiting(None)
                }
            }
            Stage::Commit(Some(id)) => {
                let Some(answer) = cx.take_response(id) else {
                    return Progress::Waiting(None);
                };
                self.stage = Stage::Commit(None);
                let resp = match answer {
                    Ok(resp) => resp,
                    Err(_) => return self.retry(cx),
                };
                let mut worst: Option<(Class, KafkaCode)> = None;
                let mut refind = false;
                for t in &resp.topics {
                    for p in &t.partitions {
                        let code = KafkaCode(p.error_code);
                        match class(code) {
                            Class::Ok => self.offsets.retain(|o| {
                                !(o.topic == t.name && o.partition == p.partition_index)
                            }),
                            Class::Retry => {}
                            Class::Refind => refind = true,
                            c => {
                                if worst.is_none_or(|(w, _)| w != Class::Fatal) {
                                    worst = Some((c, code));
                                }
                            }
                        }
                    }
                }
                match worst {
                    Some((Class::Fatal, code)) => {
                        return Progress::Failed(TxnError::fatal(
                            Some(code),
                            "TxnOffsetCommit refused",
                        ))
                    }
                    Some((_, code)) => {
                        return Progress::Failed(TxnError::abortable(
                            Some(code),
                            "TxnOffsetCommit refused",
                        ))
                    }
                    None => {}
                }
                if self.offsets.is_empty() {
                    return Progress::Done;
                }
                if refind {
                    cx.invalidate_coordinator(&self.group.group_id);
                }
                self.retry(cx)
            }
        }
    }
}
