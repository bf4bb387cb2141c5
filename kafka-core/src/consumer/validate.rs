//! Leader epochs (KIP-320): a position carries the epoch of the last record handed out
//! and the leader (node, epoch) it is known good under. When metadata names another
//! leader, a position with an epoch waits for OffsetForLeaderEpoch to the new leader
//! before fetching on; an end offset below the position is log truncation: the position
//! moves back to it (with a reset policy) or the partition stops with
//! [`ConsumeError::LogTruncation`] (`auto.offset.reset=none`). A Fetch answer's
//! `diverging_epoch` is judged the same way. The rules are Java's
//! (`SubscriptionState.maybeValidatePositionForCurrentLeader` / `maybeCompleteValidation`).

use std::collections::BTreeMap;

use super::{ConsumeError, Consumer, Reset};
use crate::client::{OpContext, RequestId, RequestOptions};
use crate::cluster::Route;
use crate::config::OffsetReset;
use crate::conn::RequestError;
use crate::protocol::messages::offset_for_leader_epoch::request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use crate::protocol::messages::offset_for_leader_epoch::OffsetForLeaderEpochRequest;
use crate::protocol::{ApiKey, KafkaCode};

/// The first OffsetForLeaderEpoch version a consumer validates with (v3: topic
/// authorization, as Java requires); brokers offering less are not asked.
const MIN_VERSION: i16 = 3;

/// What one validation asked, per partition: the position, its epoch and the leader
/// epoch it was sent with. An answer counts only if the partition still has all three.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Asked {
    pub(super) part: usize,
    pub(super) offset: i64,
    pub(super) offset_epoch: i32,
    pub(super) leader_epoch: i32,
}

/// An OffsetForLeaderEpoch in flight to one broker.
#[derive(Debug)]
pub(super) struct InFlightValidation {
    pub(super) id: RequestId<OffsetForLeaderEpochRequest>,
    pub(super) asked: Vec<Asked>,
}

impl Consumer {
    /// Compares each position's leader with the metadata's: a new leader (or a position
    /// just set) takes the metadata's leader and epoch, and a position with an epoch then
    /// waits for validation (its buffered records, fetched from the old leader, are
    /// dropped). Positions without an epoch, brokers without OffsetForLeaderEpoch v3 and
    /// metadata without leader epochs skip validation, as in Java.
    pub(super) fn sync_leaders(&mut self, cx: &mut OpContext<'_>) {
        for i in 0..self.parts.len() {
            let p = &self.parts[i];
            if !p.assigned || p.position.is_none() || p.reset.is_some() {
                continue;
            }
            let Some(info) = cx
                .metadata()
                .topic(&p.topic)
                .and_then(|t| t.partitions.get(&p.partition))
            else {
                continue;
            };
            if info.leader < 0 {
                continue; // being looked up: decide once it is known
            }
            let now_leader = (info.leader, info.leader_epoch);
            if p.leader == Some(now_leader) {
                continue;
            }
            let usable = cx.broker_supports(info.leader, ApiKey::OffsetForLeaderEpoch, MIN_VERSION)
                != Some(false);
            let validate = p.offset_epoch >= 0 && info.leader_epoch >= 0 && usable;
            if p.leader.is_some() {
                crate::trace::debug!(topic = %p.topic, partition = p.partition, ?now_leader, validate, "leader changed");
            }
            let p = &mut self.parts[i];
            p.leader = Some(now_leader);
            p.preferred = None;
            p.validate = validate;
            p.validating = false;
            if validate {
                p.retry_at = None;
                self.drop_chunk(i);
            }
        }
    }

    /// Sends OffsetForLeaderEpoch for positions waiting for validation, per leader.
    pub(super) fn send_validations(&mut self, cx: &mut OpContext<'_>) {
        let now = cx.now();
        let mut by_node: BTreeMap<i32, Vec<Asked>> = BTreeMap::new();
        for (i, p) in self.parts.iter_mut().enumerate() {
            if !p.assigned || !p.validate || p.validating || p.reset.is_some() {
                continue;
            }
            let (Some(offset), Some((node, leader_epoch))) = (p.position, p.leader) else {
                continue;
            };
            if p.retry_at.is_some_and(|at| at > now) {
                continue;
            }
            if cx.broker_supports(node, ApiKey::OffsetForLeaderEpoch, MIN_VERSION) == Some(false) {
                p.validate = false; // an old broker: fetch on unvalidated, as Java does
                continue;
            }
            p.validating = true;
            by_node.entry(node).or_default().push(Asked {
                part: i,
                offset,
                offset_epoch: p.offset_epoch,
                leader_epoch,
            });
        }
        for (node, asked) in by_node {
            let mut topics: Vec<OffsetForLeaderTopic> = Vec::new();
            for a in &asked {
                let p = &self.parts[a.part];
                let op = OffsetForLeaderPartition {
                    partition: p.partition,
                    current_leader_epoch: a.leader_epoch,
                    leader_epoch: a.offset_epoch,
                    ..Default::default()
                };
                match topics.iter_mut().find(|t| *t.topic == *p.topic) {
                    Some(t) => t.partitions.push(op),
                    None => topics.push(OffsetForLeaderTopic {
                        topic: p.topic.to_string(),
                        partitions: vec![op],
                        ..Default::default()
                    }),
                }
            }
            let request = OffsetForLeaderEpochRequest {
                replica_id: -1,
                topics,
                ..Default::default()
            };
            // Versions not known yet (no connection): v3 exactly, so an older broker
            // answers UnsupportedVersion and the validation is skipped as Java does.
            let mut opts = RequestOptions::default();
            if cx
                .broker_supports(node, ApiKey::OffsetForLeaderEpoch, MIN_VERSION)
                .is_none()
            {
                opts = opts.version(MIN_VERSION);
            }
            let id = cx.send_with(Route::Broker(node), request, opts);
            self.validations.push(InFlightValidation { id, asked });
        }
    }

    /// Takes OffsetForLeaderEpoch answers: positions validated, moved back or stopped
    /// (truncation), or retried after a metadata refresh (leader and epoch errors).
    pub(super) fn collect_validations(&mut self, cx: &mut OpContext<'_>) {
        let mut k = 0;
        while k < self.validations.len() {
            if !cx.is_done(self.validations[k].id) {
                k += 1;
                continue;
            }
            let v = self.validations.swap_remove(k);
            let answer = cx.take_response(v.id);
            // Only partitions still waiting for exactly what was asked take the answer.
            let current: Vec<Asked> = v
                .asked
                .iter()
                .copied()
                .filter(|a| self.still_asked(a))
                .collect();
            for a in &current {
                self.parts[a.part].validating = false;
            }
            let retry_at = cx.now() + cx.retry_backoff(1);
            if let Some(Err(RequestError::UnsupportedVersion { .. })) = answer {
                for a in &current {
                    self.parts[a.part].validate = false; // an old broker: go on unvalidated
                }
                continue;
            }
            let Some(Ok(resp)) = answer else {
                for a in &current {
                    let p = &mut self.parts[a.part];
                    p.retry_at = Some(retry_at);
                    let topic = p.topic.to_string();
                    cx.request_metadata([topic]);
                }
                continue;
            };
            let mut answered = Vec::new();
            for t in &resp.topics {
                for r in &t.partitions {
                    let Some(&i) = self.index.get(&(t.topic.as_str().into(), r.partition)) else {
                        continue;
                    };
                    let Some(a) = current.iter().find(|a| a.part == i) else {
                        continue;
                    };
                    answered.push(i);
                    let code = KafkaCode(r.error_code);
                    match code {
                        KafkaCode::NONE => {
                            self.metrics.validations += 1;
                            self.judge_end_offset(i, a.offset, r.leader_epoch, r.end_offset);
                        }
                        KafkaCode::NOT_LEADER_OR_FOLLOWER
                        | KafkaCode::REPLICA_NOT_AVAILABLE
                        | KafkaCode::KAFKA_STORAGE_ERROR
                        | KafkaCode::OFFSET_NOT_AVAILABLE
                        | KafkaCode::LEADER_NOT_AVAILABLE
                        | KafkaCode::FENCED_LEADER_EPOCH
                        | KafkaCode::UNKNOWN_LEADER_EPOCH
                        | KafkaCode::UNKNOWN_TOPIC_OR_PARTITION => {
                            let p = &mut self.parts[i];
                            p.retry_at = Some(retry_at);
                            let (topic, partition) = (p.topic.clone(), p.partition);
                            cx.invalidate_leader(&topic, partition);
                        }
                        other => {
                            let p = &mut self.parts[i];
                            p.retry_at = Some(retry_at);
                            if !other.is_retriable() {
                                self.errors.push_back(ConsumeError::Partition {
                                    topic: p.topic.to_string(),
                                    partition: p.partition,
                                    code: other,
                                });
                            }
                        }
                    }
                }
            }
            for a in current.iter().filter(|a| !answered.contains(&a.part)) {
                self.parts[a.part].retry_at = Some(retry_at);
            }
        }
    }

    fn still_asked(&self, a: &Asked) -> bool {
        let p = &self.parts[a.part];
        p.assigned
            && p.validate
            && p.validating
            && p.position == Some(a.offset)
            && p.offset_epoch == a.offset_epoch
            && p.leader.map(|(_, e)| e) == Some(a.leader_epoch)
    }

    /// Judges the end offset of the position's epoch on the leader (from
    /// OffsetForLeaderEpoch, or a Fetch answer's `diverging_epoch`): below the position
    /// (or unknown) is log truncation; otherwise the position is good.
    pub(super) fn judge_end_offset(&mut self, i: usize, position: i64, epoch: i32, end: i64) {
        let policy = self.cfg.auto_offset_reset;
        let p = &mut self.parts[i];
        p.validate = false;
        p.validating = false;
        let truncated = end < 0 || epoch < 0 || end < position;
        if !truncated {
            if epoch < p.offset_epoch {
                // The leader never had our epoch; the one before it ends past the
                // position. Java goes on here too; taking that epoch keeps the next
                // Fetch's divergence check from answering the same again.
                p.offset_epoch = epoch;
            }
            return;
        }
        self.metrics.truncations += 1;
        let divergent = (end >= 0 && epoch >= 0).then_some(end);
        crate::trace::warn!(topic = %p.topic, partition = p.partition, position, ?divergent, ?policy, "log truncation detected");
        match (policy, divergent) {
            (OffsetReset::None, _) => {
                p.position = None;
                self.errors.push_back(ConsumeError::LogTruncation {
                    topic: p.topic.to_string(),
                    partition: p.partition,
                    offset: position,
                    divergent_offset: divergent,
                });
            }
            (_, Some(end)) => {
                // Back to the first offset known to diverge, with its epoch: validated
                // under the current leader.
                let leader = p.leader;
                p.moved(Some(end), epoch);
                p.leader = leader;
            }
            (policy, None) => {
                p.position = None;
                p.reset = Some(Reset::from_policy(policy));
                self.metrics.resets += 1;
            }
        }
    }
}
