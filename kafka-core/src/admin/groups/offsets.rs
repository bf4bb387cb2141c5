//! Committed offsets of consumer groups: alter (OffsetCommit), delete (OffsetDelete);
//! the shared offset types.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::keyed::{coordinator_step, Keyed, Step};
use crate::admin::{per_topic, AdminError, Call, OpContext, Operation, Timeout, TopicPartition};
use crate::cluster::Route;
use crate::conn::RequestError;
use crate::protocol::messages::offset_commit::request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use crate::protocol::messages::offset_commit::{OffsetCommitRequest, OffsetCommitResponse};
use crate::protocol::messages::offset_delete::request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use crate::protocol::messages::offset_delete::{OffsetDeleteRequest, OffsetDeleteResponse};
use crate::protocol::KafkaCode;

/// The newest OffsetFetch / OffsetCommit version that names topics (v10 wants ids).
pub(super) const BY_NAME: i16 = 9;

/// A committed offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetAndMetadata {
    /// The next offset to consume.
    pub offset: i64,
    /// Leader epoch of the last consumed record, if known.
    pub leader_epoch: Option<i32>,
    /// Free-form metadata stored with the offset.
    pub metadata: String,
}

impl OffsetAndMetadata {
    /// `offset` with no leader epoch and no metadata.
    pub fn new(offset: i64) -> Self {
        OffsetAndMetadata {
            offset,
            leader_epoch: None,
            metadata: String::new(),
        }
    }
}

/// Per-partition outcomes of a change.
pub type PartitionResults = BTreeMap<TopicPartition, Result<(), AdminError>>;

/// Per-partition committed offsets (`None`: nothing committed).
pub type GroupOffsets = BTreeMap<TopicPartition, Result<Option<OffsetAndMetadata>, AdminError>>;

/// Groups partitions by topic, in order.
pub(super) fn by_topic(partitions: &BTreeSet<TopicPartition>) -> BTreeMap<String, Vec<i32>> {
    let mut out: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for tp in partitions {
        out.entry(tp.topic.clone()).or_default().push(tp.partition);
    }
    out
}

/// Commits offsets for a consumer group that has no active members (OffsetCommit with
/// generation -1 and no member id). Per-partition results; a group with active members
/// fails with UNKNOWN_MEMBER_ID (classic) or STALE_MEMBER_EPOCH-like errors.
#[derive(Debug)]
pub struct AlterConsumerGroupOffsets {
    group: String,
    offsets: BTreeMap<TopicPartition, OffsetAndMetadata>,
    calls: Option<Keyed<String, OffsetCommitRequest, PartitionResults>>,
    unpinned: bool,
    timeout: Timeout,
}

impl AlterConsumerGroupOffsets {
    /// Sets `offsets` for `group`.
    pub fn new(
        group: impl Into<String>,
        offsets: impl IntoIterator<Item = (TopicPartition, OffsetAndMetadata)>,
    ) -> Self {
        AlterConsumerGroupOffsets {
            group: group.into(),
            offsets: offsets.into_iter().collect(),
            calls: None,
            unpinned: false,
            timeout: Timeout::default(),
        }
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }

    fn request(&self) -> OffsetCommitRequest {
        let partitions = self.offsets.iter().map(|(tp, o)| {
            let partition = OffsetCommitRequestPartition {
                partition_index: tp.partition,
                committed_offset: o.offset,
                committed_leader_epoch: o.leader_epoch.unwrap_or(-1),
                committed_metadata: Some(o.metadata.clone()),
                ..Default::default()
            };
            (tp, partition)
        });
        let topics = per_topic(partitions, |name, partitions| OffsetCommitRequestTopic {
            name,
            partitions,
            ..Default::default()
        });
        OffsetCommitRequest {
            group_id: self.group.clone(),
            generation_id_or_member_epoch: -1,
            member_id: String::new(),
            group_instance_id: None,
            topics,
            ..Default::default()
        }
    }
}

/// Per-partition results of an OffsetCommit: `Retry` when the coordinator moved.
fn committed(
    cx: &mut OpContext<'_>,
    group: &str,
    resp: OffsetCommitResponse,
) -> Step<PartitionResults> {
    let mut out = BTreeMap::new();
    for t in resp.topics {
        for p in t.partitions {
            if let Some(step) = coordinator_step(cx, group, p.error_code, None) {
                return step;
            }
            if KafkaCode(p.error_code) == KafkaCode::REBALANCE_IN_PROGRESS {
                // The group is rebalancing (members joining): asked again after a backoff.
                return Step::Retry(AdminError::Kafka {
                    code: KafkaCode(p.error_code),
                    message: None,
                });
            }
            out.insert(
                TopicPartition::new(t.name.clone(), p.partition_index),
                AdminError::check(p.error_code, None),
            );
        }
    }
    Step::Done(Ok(out))
}

impl Operation for AlterConsumerGroupOffsets {
    type Output = Result<PartitionResults, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if self.offsets.is_empty() {
            return Some(Ok(BTreeMap::new()));
        }
        if self.calls.is_none() {
            let mut call = Call::new(Route::GroupCoordinator(self.group.clone()), self.request());
            call.set_version(Some(BY_NAME));
            let mut keyed = Keyed::new();
            keyed.insert(self.group.clone(), call);
            self.calls = Some(keyed);
        }
        let calls = self.calls.as_mut()?;
        let unpinned = &mut self.unpinned;
        let done = calls.poll(cx, deadline, |group, call, outcome, cx| match outcome {
            Ok(resp) => committed(cx, group, resp),
            Err(AdminError::Request(RequestError::UnsupportedVersion { .. })) if !*unpinned => {
                // A broker older than v9: its newest version names topics too.
                *unpinned = true;
                call.set_version(None);
                Step::Resend
            }
            Err(e) => Step::Done(Err(e)),
        });
        if !done {
            return None;
        }
        let mut results = calls.take_results();
        let mut out = match results.remove(&self.group) {
            Some(Ok(m)) => m,
            Some(Err(e)) => return Some(Err(e)),
            None => BTreeMap::new(),
        };
        for tp in self.offsets.keys() {
            out.entry(tp.clone())
                .or_insert_with(|| Err(AdminError::missing("partition")));
        }
        Some(Ok(out))
    }
}

/// Deletes committed offsets of a consumer group (OffsetDelete); the group must not be
/// subscribed to the topics. Per-partition results; a group-level error fails the call.
#[derive(Debug)]
pub struct DeleteConsumerGroupOffsets {
    group: String,
    partitions: BTreeSet<TopicPartition>,
    calls: Option<Keyed<String, OffsetDeleteRequest, PartitionResults>>,
    timeout: Timeout,
}

impl DeleteConsumerGroupOffsets {
    /// Deletes the offsets of `partitions` in `group`.
    pub fn new(
        group: impl Into<String>,
        partitions: impl IntoIterator<Item = TopicPartition>,
    ) -> Self {
        DeleteConsumerGroupOffsets {
            group: group.into(),
            partitions: partitions.into_iter().collect(),
            calls: None,
            timeout: Timeout::default(),
        }
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

fn deleted(
    cx: &mut OpContext<'_>,
    group: &str,
    resp: OffsetDeleteResponse,
) -> Step<PartitionResults> {
    if let Some(step) = coordinator_step(cx, group, resp.error_code, None) {
        return step;
    }
    if let Err(e) = AdminError::check(resp.error_code, None) {
        return Step::Done(Err(e));
    }
    let mut out = BTreeMap::new();
    for t in resp.topics {
        for p in t.partitions {
            out.insert(
                TopicPartition::new(t.name.clone(), p.partition_index),
                AdminError::check(p.error_code, None),
            );
        }
    }
    Step::Done(Ok(out))
}

impl Operation for DeleteConsumerGroupOffsets {
    type Output = Result<PartitionResults, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if self.partitions.is_empty() {
            return Some(Ok(BTreeMap::new()));
        }
        if self.calls.is_none() {
            let request = OffsetDeleteRequest {
                group_id: self.group.clone(),
                topics: by_topic(&self.partitions)
                    .into_iter()
                    .map(|(name, ps)| OffsetDeleteRequestTopic {
                        name,
                        partitions: ps
                            .into_iter()
                            .map(|p| OffsetDeleteRequestPartition {
                                partition_index: p,
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            let mut keyed = Keyed::new();
            keyed.insert(
                self.group.clone(),
                Call::new(Route::GroupCoordinator(self.group.clone()), request),
            );
            self.calls = Some(keyed);
        }
        let calls = self.calls.as_mut()?;
        let done = calls.poll(cx, deadline, |group, _, outcome, cx| match outcome {
            Ok(resp) => deleted(cx, group, resp),
            Err(e) => Step::Done(Err(e)),
        });
        if !done {
            return None;
        }
        let mut out = match calls.take_results().remove(&self.group) {
            Some(Ok(m)) => m,
            Some(Err(e)) => return Some(Err(e)),
            None => BTreeMap::new(),
        };
        for tp in &self.partitions {
            out.entry(tp.clone())
                .or_insert_with(|| Err(AdminError::missing("partition")));
        }
        Some(Ok(out))
    }
}
