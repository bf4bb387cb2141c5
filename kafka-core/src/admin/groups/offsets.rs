//! Committed offsets of consumer groups: list (OffsetFetch), alter (OffsetCommit),
//! delete (OffsetDelete).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::keyed::{coordinator_step, Keyed, Step};
use crate::admin::{AdminError, Call, OpContext, Operation, Timeout, TopicPartition};
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
use crate::protocol::messages::offset_fetch::request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use crate::protocol::messages::offset_fetch::{OffsetFetchRequest, OffsetFetchResponse};
use crate::protocol::KafkaCode;

/// The newest OffsetFetch / OffsetCommit version that names topics (v10 wants ids).
const BY_NAME: i16 = 9;

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
fn by_topic(partitions: &BTreeSet<TopicPartition>) -> BTreeMap<String, Vec<i32>> {
    let mut out: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for tp in partitions {
        out.entry(tp.topic.clone()).or_default().push(tp.partition);
    }
    out
}

/// How a group's OffsetFetch is shaped, tried in order until the broker takes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FetchShape {
    /// `Groups` array (v8+), pinned to the newest version with topic names.
    Groups(i16),
    /// One group at the top level (v1-7), at the highest version both support.
    Legacy,
}

fn fetch_request(
    group: &str,
    partitions: Option<&BTreeSet<TopicPartition>>,
    require_stable: bool,
    shape: FetchShape,
) -> OffsetFetchRequest {
    let topics = partitions.map(by_topic);
    match shape {
        FetchShape::Groups(_) => OffsetFetchRequest {
            group_id: String::new(),
            topics: Some(Vec::new()),
            groups: vec![OffsetFetchRequestGroup {
                group_id: group.to_string(),
                topics: topics.map(|t| {
                    t.into_iter()
                        .map(|(name, partition_indexes)| OffsetFetchRequestTopics {
                            name,
                            partition_indexes,
                            ..Default::default()
                        })
                        .collect()
                }),
                ..Default::default()
            }],
            require_stable,
            ..Default::default()
        },
        FetchShape::Legacy => OffsetFetchRequest {
            group_id: group.to_string(),
            topics: topics.map(|t| {
                t.into_iter()
                    .map(|(name, partition_indexes)| OffsetFetchRequestTopic {
                        name,
                        partition_indexes,
                        ..Default::default()
                    })
                    .collect()
            }),
            require_stable,
            ..Default::default()
        },
    }
}

fn offset_result(
    offset: i64,
    epoch: i32,
    metadata: Option<String>,
    code: i16,
) -> Result<Option<OffsetAndMetadata>, AdminError> {
    AdminError::check(code, None)?;
    Ok((offset >= 0).then(|| OffsetAndMetadata {
        offset,
        leader_epoch: (epoch >= 0).then_some(epoch),
        metadata: metadata.unwrap_or_default(),
    }))
}

/// One group's offsets from an OffsetFetch response of either shape: the group-level
/// error code (with its offsets when zero).
pub(crate) fn fetched_offsets(group: &str, resp: OffsetFetchResponse) -> (i16, GroupOffsets) {
    let mut out = GroupOffsets::new();
    if let Some(g) = resp.groups.into_iter().find(|g| g.group_id == group) {
        for t in g.topics {
            for p in t.partitions {
                let tp = TopicPartition::new(t.name.clone(), p.partition_index);
                let r = offset_result(
                    p.committed_offset,
                    p.committed_leader_epoch,
                    p.metadata,
                    p.error_code,
                );
                out.insert(tp, r);
            }
        }
        return (g.error_code, out);
    }
    for t in resp.topics {
        for p in t.partitions {
            let tp = TopicPartition::new(t.name.clone(), p.partition_index);
            let r = offset_result(
                p.committed_offset,
                p.committed_leader_epoch,
                p.metadata,
                p.error_code,
            );
            out.insert(tp, r);
        }
    }
    (resp.error_code, out)
}

/// Lists the committed offsets of consumer groups (OffsetFetch to each group's
/// coordinator): every partition with a committed offset, or only the partitions asked
/// for (those without one map to `Ok(None)`). Per-group results, each with per-partition
/// results.
#[derive(Debug)]
pub struct ListConsumerGroupOffsets {
    specs: BTreeMap<String, Option<BTreeSet<TopicPartition>>>,
    require_stable: bool,
    shapes: BTreeMap<String, FetchShape>,
    calls: Option<Keyed<String, OffsetFetchRequest, GroupOffsets>>,
    timeout: Timeout,
}

impl ListConsumerGroupOffsets {
    /// All committed offsets of `group`.
    pub fn new(group: impl Into<String>) -> Self {
        ListConsumerGroupOffsets {
            specs: BTreeMap::from([(group.into(), None)]),
            require_stable: false,
            shapes: BTreeMap::new(),
            calls: None,
            timeout: Timeout::default(),
        }
    }

    /// Several groups at once, each with all its offsets (`None`) or only the given
    /// partitions.
    pub fn groups<S: Into<String>>(
        specs: impl IntoIterator<Item = (S, Option<Vec<TopicPartition>>)>,
    ) -> Self {
        let mut op = ListConsumerGroupOffsets::new("");
        op.specs = specs
            .into_iter()
            .map(|(g, p)| (g.into(), p.map(|p| p.into_iter().collect())))
            .collect();
        op
    }

    /// Only these partitions (of every listed group).
    pub fn partitions(mut self, partitions: impl IntoIterator<Item = TopicPartition>) -> Self {
        let set: BTreeSet<TopicPartition> = partitions.into_iter().collect();
        for spec in self.specs.values_mut() {
            *spec = Some(set.clone());
        }
        self
    }

    /// Fails partitions with pending transactional offsets with a retriable error
    /// (retried until the deadline) instead of returning the last stable offset.
    pub fn require_stable(mut self, yes: bool) -> Self {
        self.require_stable = yes;
        self
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

impl Operation for ListConsumerGroupOffsets {
    type Output = Result<BTreeMap<String, Result<GroupOffsets, AdminError>>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        let stable = self.require_stable;
        let calls = self.calls.get_or_insert_with(|| {
            let mut keyed = Keyed::new();
            for (group, parts) in &self.specs {
                let shape = FetchShape::Groups(BY_NAME);
                let mut call = Call::new(
                    Route::GroupCoordinator(group.clone()),
                    fetch_request(group, parts.as_ref(), stable, shape),
                );
                call.set_version(Some(BY_NAME));
                self.shapes.insert(group.clone(), shape);
                keyed.insert(group.clone(), call);
            }
            keyed
        });
        let specs = &self.specs;
        let shapes = &mut self.shapes;
        let done = calls.poll(cx, deadline, |group, call, outcome, cx| {
            let resp = match outcome {
                Ok(r) => r,
                Err(AdminError::Request(
                    e @ (RequestError::UnsupportedVersion { .. } | RequestError::Encode(_)),
                )) => {
                    // Older broker: the next shape, or give up.
                    let next = match shapes.get(group) {
                        Some(FetchShape::Groups(BY_NAME)) => FetchShape::Legacy,
                        Some(FetchShape::Legacy) => FetchShape::Groups(8),
                        _ => return Step::Done(Err(e.into())),
                    };
                    shapes.insert(group.clone(), next);
                    let parts = specs.get(group).and_then(Option::as_ref);
                    *call.request_mut() = fetch_request(group, parts, stable, next);
                    call.set_version(match next {
                        FetchShape::Groups(v) => Some(v),
                        FetchShape::Legacy => None,
                    });
                    return Step::Resend;
                }
                Err(e) => return Step::Done(Err(e)),
            };
            let (code, mut offsets) = fetched_offsets(group, resp);
            if let Some(step) = coordinator_step(cx, group, code, None) {
                return step;
            }
            if let Err(e) = AdminError::check(code, None) {
                return Step::Done(Err(e));
            }
            let unstable = offsets.values().any(|r| {
                r.as_ref()
                    .err()
                    .and_then(AdminError::code)
                    .is_some_and(|c| c == KafkaCode::UNSTABLE_OFFSET_COMMIT)
            });
            if unstable {
                return Step::Retry(AdminError::Kafka {
                    code: KafkaCode::UNSTABLE_OFFSET_COMMIT,
                    message: None,
                });
            }
            if let Some(Some(asked)) = specs.get(group) {
                for tp in asked {
                    offsets.entry(tp.clone()).or_insert(Ok(None));
                }
            }
            Step::Done(Ok(offsets))
        });
        if !done {
            return None;
        }
        Some(Ok(calls.take_results()))
    }
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
        let mut topics: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
        for (tp, o) in &self.offsets {
            topics
                .entry(&tp.topic)
                .or_default()
                .push(OffsetCommitRequestPartition {
                    partition_index: tp.partition,
                    committed_offset: o.offset,
                    committed_leader_epoch: o.leader_epoch.unwrap_or(-1),
                    committed_metadata: Some(o.metadata.clone()),
                    ..Default::default()
                });
        }
        OffsetCommitRequest {
            group_id: self.group.clone(),
            generation_id_or_member_epoch: -1,
            member_id: String::new(),
            group_instance_id: None,
            topics: topics
                .into_iter()
                .map(|(name, partitions)| OffsetCommitRequestTopic {
                    name: name.to_string(),
                    partitions,
                    ..Default::default()
                })
                .collect(),
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
            out.entry(tp.clone()).or_insert_with(|| {
                Err(AdminError::Protocol(
                    "partition missing from response".into(),
                ))
            });
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
            out.entry(tp.clone()).or_insert_with(|| {
                Err(AdminError::Protocol(
                    "partition missing from response".into(),
                ))
            });
        }
        Some(Ok(out))
    }
}
