//! Share group offsets (KIP-932): list (DescribeShareGroupOffsets), alter
//! (AlterShareGroupOffsets) and delete (DeleteShareGroupOffsets), each on the group's
//! coordinator. A share group's offset of a partition is its start offset: the first
//! record its members may still get.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::keyed::{coordinator_step, Keyed, Step};
use crate::admin::{
    per_topic, AdminError, Call, ItemResults, OpContext, Operation, Timeout, TopicPartition,
};
use crate::cluster::Route;
use crate::protocol::messages::alter_share_group_offsets::request::{
    AlterShareGroupOffsetsRequestPartition, AlterShareGroupOffsetsRequestTopic,
};
use crate::protocol::messages::alter_share_group_offsets::{
    AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse,
};
use crate::protocol::messages::delete_share_group_offsets::request::DeleteShareGroupOffsetsRequestTopic;
use crate::protocol::messages::delete_share_group_offsets::{
    DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse,
};
use crate::protocol::messages::describe_share_group_offsets::request::{
    DescribeShareGroupOffsetsRequestGroup, DescribeShareGroupOffsetsRequestTopic,
};
use crate::protocol::messages::describe_share_group_offsets::{
    DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse,
};
use crate::protocol::KafkaCode;

/// A share group's position in one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharePartitionOffsetInfo {
    /// The start offset: records before it are done for the group.
    pub start_offset: i64,
    /// The leader epoch of the start offset, if known.
    pub leader_epoch: Option<i32>,
    /// How many records from the start offset on are not yet delivered and acknowledged,
    /// if the broker says (DescribeShareGroupOffsets v1+).
    pub lag: Option<i64>,
}

/// One share group's offsets: `Ok(None)` for a partition without a start offset yet.
pub type ShareGroupOffsets =
    BTreeMap<TopicPartition, Result<Option<SharePartitionOffsetInfo>, AdminError>>;

/// Whether a code asks for the same request again (a loading or moved coordinator is
/// handled by [`coordinator_step`] first).
fn busy(code: KafkaCode) -> bool {
    code == KafkaCode::REBALANCE_IN_PROGRESS
}

/// Lists the offsets of share groups (DescribeShareGroupOffsets to each group's
/// coordinator; Java's `listShareGroupOffsets`): every partition the group has a start
/// offset for, or only the partitions asked for. Per-group results, each with
/// per-partition results.
#[derive(Debug)]
pub struct ListShareGroupOffsets {
    specs: BTreeMap<String, Option<BTreeSet<TopicPartition>>>,
    calls: Option<Keyed<String, DescribeShareGroupOffsetsRequest, ShareGroupOffsets>>,
    timeout: Timeout,
}

impl ListShareGroupOffsets {
    /// Every offset of `group`.
    pub fn new(group: impl Into<String>) -> Self {
        Self::groups([(group.into(), None)])
    }

    /// Several groups, each with all its offsets (`None`) or only the given partitions.
    pub fn groups(
        specs: impl IntoIterator<Item = (impl Into<String>, Option<Vec<TopicPartition>>)>,
    ) -> Self {
        ListShareGroupOffsets {
            specs: specs
                .into_iter()
                .map(|(g, p)| (g.into(), p.map(|p| p.into_iter().collect())))
                .collect(),
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

fn describe_request(
    group: &str,
    partitions: Option<&BTreeSet<TopicPartition>>,
) -> DescribeShareGroupOffsetsRequest {
    let topics = partitions.map(|ps| {
        per_topic(
            ps.iter().map(|tp| (tp, tp.partition)),
            |topic_name, partitions| DescribeShareGroupOffsetsRequestTopic {
                topic_name,
                partitions,
                ..Default::default()
            },
        )
    });
    DescribeShareGroupOffsetsRequest {
        groups: vec![DescribeShareGroupOffsetsRequestGroup {
            group_id: group.to_string(),
            topics,
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn listed_offsets(
    group: &str,
    resp: DescribeShareGroupOffsetsResponse,
    cx: &mut OpContext<'_>,
) -> Step<ShareGroupOffsets> {
    let Some(g) = resp.groups.into_iter().find(|g| g.group_id == group) else {
        return Step::Done(Err(AdminError::missing("group")));
    };
    if let Some(step) = coordinator_step(cx, group, g.error_code, g.error_message.as_deref()) {
        return step;
    }
    if let Err(e) = AdminError::check(g.error_code, g.error_message.as_deref()) {
        return Step::Done(Err(e));
    }
    let mut out = ShareGroupOffsets::new();
    for t in g.topics {
        for p in t.partitions {
            let tp = TopicPartition::new(t.topic_name.clone(), p.partition_index);
            let result = AdminError::check(p.error_code, p.error_message.as_deref()).map(|()| {
                (p.start_offset >= 0).then_some(SharePartitionOffsetInfo {
                    start_offset: p.start_offset,
                    leader_epoch: (p.leader_epoch >= 0).then_some(p.leader_epoch),
                    lag: (p.lag >= 0).then_some(p.lag),
                })
            });
            out.insert(tp, result);
        }
    }
    Step::Done(Ok(out))
}

impl Operation for ListShareGroupOffsets {
    type Output = Result<BTreeMap<String, Result<ShareGroupOffsets, AdminError>>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        let specs = &self.specs;
        let calls = self.calls.get_or_insert_with(|| {
            let mut keyed = Keyed::new();
            for (g, partitions) in specs {
                let request = describe_request(g, partitions.as_ref());
                keyed.insert(
                    g.clone(),
                    Call::new(Route::GroupCoordinator(g.clone()), request),
                );
            }
            keyed
        });
        let done = calls.poll(cx, deadline, |group, _, outcome, cx| match outcome {
            Ok(resp) => listed_offsets(group, resp, cx),
            Err(e) => Step::Done(Err(e)),
        });
        done.then(|| Ok(calls.take_results()))
    }
}

/// The outcome of a per-group, per-item answer: a whole-group code (top-level), then
/// item codes. Coordinator codes and REBALANCE_IN_PROGRESS (at either level) ask again;
/// another top-level code fails the call; items missing from the answer fail alone.
fn item_outcome<K: Ord + Clone>(
    cx: &mut OpContext<'_>,
    group: &str,
    top: (i16, Option<&str>),
    items: Vec<(K, i16, Option<String>)>,
    asked: impl Iterator<Item = K>,
    what: &str,
) -> Step<BTreeMap<K, Result<(), AdminError>>> {
    let codes = std::iter::once(top.0).chain(items.iter().map(|(_, c, _)| *c));
    for code in codes {
        if let Some(step) = coordinator_step(cx, group, code, top.1) {
            return step;
        }
        if busy(KafkaCode(code)) {
            return Step::Retry(AdminError::Kafka {
                code: KafkaCode(code),
                message: None,
            });
        }
    }
    if let Err(e) = AdminError::check(top.0, top.1) {
        return Step::Done(Err(e));
    }
    let mut out: BTreeMap<K, Result<(), AdminError>> = items
        .into_iter()
        .map(|(k, code, message)| (k, AdminError::check(code, message.as_deref())))
        .collect();
    for k in asked {
        out.entry(k)
            .or_insert_with(|| Err(AdminError::missing(what)));
    }
    Step::Done(Ok(out))
}

/// Sets the start offsets of a share group (AlterShareGroupOffsets to its coordinator;
/// Java's `alterShareGroupOffsets`). The group must have no members (else
/// NON_EMPTY_GROUP for every partition); a group that does not exist yet is created.
/// Per-partition results; a group-level error fails the call.
#[derive(Debug)]
pub struct AlterShareGroupOffsets {
    group: String,
    offsets: BTreeMap<TopicPartition, i64>,
    calls: Option<Keyed<String, AlterShareGroupOffsetsRequest, ItemResults<TopicPartition, ()>>>,
    timeout: Timeout,
}

impl AlterShareGroupOffsets {
    /// Sets the start offset of each partition of `group`.
    pub fn new(
        group: impl Into<String>,
        offsets: impl IntoIterator<Item = (TopicPartition, i64)>,
    ) -> Self {
        AlterShareGroupOffsets {
            group: group.into(),
            offsets: offsets.into_iter().collect(),
            calls: None,
            timeout: Timeout::default(),
        }
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }

    fn request(&self) -> AlterShareGroupOffsetsRequest {
        AlterShareGroupOffsetsRequest {
            group_id: self.group.clone(),
            topics: per_topic(
                self.offsets.iter().map(|(tp, offset)| {
                    let p = AlterShareGroupOffsetsRequestPartition {
                        partition_index: tp.partition,
                        start_offset: *offset,
                        ..Default::default()
                    };
                    (tp, p)
                }),
                |topic_name, partitions| AlterShareGroupOffsetsRequestTopic {
                    topic_name,
                    partitions,
                    ..Default::default()
                },
            ),
            ..Default::default()
        }
    }
}

fn altered(
    group: &str,
    asked: &BTreeMap<TopicPartition, i64>,
    resp: AlterShareGroupOffsetsResponse,
    cx: &mut OpContext<'_>,
) -> Step<BTreeMap<TopicPartition, Result<(), AdminError>>> {
    let items = resp
        .responses
        .into_iter()
        .flat_map(|t| {
            let topic = t.topic_name;
            t.partitions.into_iter().map(move |p| {
                let tp = TopicPartition::new(topic.clone(), p.partition_index);
                (tp, p.error_code, p.error_message)
            })
        })
        .filter(|(tp, _, _)| asked.contains_key(tp))
        .collect();
    let top = (resp.error_code, resp.error_message.as_deref());
    item_outcome(cx, group, top, items, asked.keys().cloned(), "partition")
}

impl Operation for AlterShareGroupOffsets {
    type Output = Result<BTreeMap<TopicPartition, Result<(), AdminError>>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if self.calls.is_none() {
            if self.group.is_empty() {
                return Some(Err(AdminError::Invalid("empty group id".into())));
            }
            let mut keyed = Keyed::new();
            let route = Route::GroupCoordinator(self.group.clone());
            keyed.insert(self.group.clone(), Call::new(route, self.request()));
            self.calls = Some(keyed);
        }
        let (group, asked) = (&self.group, &self.offsets);
        let calls = self.calls.as_mut()?;
        let done = calls.poll(cx, deadline, |_, _, outcome, cx| match outcome {
            Ok(resp) => altered(group, asked, resp, cx),
            Err(e) => Step::Done(Err(e)),
        });
        done.then(|| one_group(calls.take_results(), group))
    }
}

/// The single group's result as the call's output.
fn one_group<T>(
    mut results: BTreeMap<String, Result<T, AdminError>>,
    group: &str,
) -> Result<T, AdminError> {
    results
        .remove(group)
        .unwrap_or_else(|| Err(AdminError::missing("group")))
}

/// Deletes a share group's offsets of whole topics (DeleteShareGroupOffsets to its
/// coordinator; Java's `deleteShareGroupOffsets`). The group must have no members.
/// Per-topic results; a group-level error fails the call.
#[derive(Debug)]
pub struct DeleteShareGroupOffsets {
    group: String,
    topics: BTreeSet<String>,
    calls: Option<Keyed<String, DeleteShareGroupOffsetsRequest, ItemResults<String, ()>>>,
    timeout: Timeout,
}

impl DeleteShareGroupOffsets {
    /// Deletes the offsets `group` has in `topics`.
    pub fn new(
        group: impl Into<String>,
        topics: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        DeleteShareGroupOffsets {
            group: group.into(),
            topics: topics.into_iter().map(Into::into).collect(),
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
    group: &str,
    asked: &BTreeSet<String>,
    resp: DeleteShareGroupOffsetsResponse,
    cx: &mut OpContext<'_>,
) -> Step<BTreeMap<String, Result<(), AdminError>>> {
    let items = resp
        .responses
        .into_iter()
        .filter(|t| asked.contains(&t.topic_name))
        .map(|t| (t.topic_name, t.error_code, t.error_message))
        .collect();
    let top = (resp.error_code, resp.error_message.as_deref());
    item_outcome(cx, group, top, items, asked.iter().cloned(), "topic")
}

impl Operation for DeleteShareGroupOffsets {
    type Output = Result<BTreeMap<String, Result<(), AdminError>>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if self.calls.is_none() {
            if self.group.is_empty() {
                return Some(Err(AdminError::Invalid("empty group id".into())));
            }
            let request = DeleteShareGroupOffsetsRequest {
                group_id: self.group.clone(),
                topics: self
                    .topics
                    .iter()
                    .map(|t| DeleteShareGroupOffsetsRequestTopic {
                        topic_name: t.clone(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            let mut keyed = Keyed::new();
            let route = Route::GroupCoordinator(self.group.clone());
            keyed.insert(self.group.clone(), Call::new(route, request));
            self.calls = Some(keyed);
        }
        let (group, asked) = (&self.group, &self.topics);
        let calls = self.calls.as_mut()?;
        let done = calls.poll(cx, deadline, |_, _, outcome, cx| match outcome {
            Ok(resp) => deleted(group, asked, resp, cx),
            Err(e) => Step::Done(Err(e)),
        });
        done.then(|| one_group(calls.take_results(), group))
    }
}

#[cfg(test)]
mod tests;
