//! ListConsumerGroupOffsets: OffsetFetch to each group's coordinator, several groups in
//! one request where the coordinators are known and the broker takes v8+.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::keyed::{coordinator_retriable, Keyed, Step};
use super::offsets::{by_topic, GroupOffsets, OffsetAndMetadata, BY_NAME};
use crate::admin::{AdminError, Call, OpContext, Operation, Timeout, TopicPartition};
use crate::cluster::Route;
use crate::conn::RequestError;
use crate::protocol::messages::offset_fetch::request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use crate::protocol::messages::offset_fetch::{OffsetFetchRequest, OffsetFetchResponse};
use crate::protocol::KafkaCode;

/// How a group's OffsetFetch is shaped, tried in order until the broker takes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FetchShape {
    /// `Groups` array (v8+), pinned to the newest version with topic names.
    Groups(i16),
    /// One group at the top level (v1-7), at the highest version both support.
    Legacy,
}

/// The OffsetFetch for `groups` (one group only for the legacy shape).
fn fetch_request(
    groups: &[(&str, Option<&BTreeSet<TopicPartition>>)],
    require_stable: bool,
    shape: FetchShape,
) -> OffsetFetchRequest {
    let (group, partitions) = groups.first().copied().unwrap_or_default();
    let topics = partitions.map(by_topic);
    match shape {
        FetchShape::Groups(_) => OffsetFetchRequest {
            group_id: String::new(),
            topics: Some(Vec::new()),
            groups: groups
                .iter()
                .map(|(group, partitions)| OffsetFetchRequestGroup {
                    group_id: group.to_string(),
                    topics: partitions.map(by_topic).map(|t| {
                        t.into_iter()
                            .map(|(name, partition_indexes)| OffsetFetchRequestTopics {
                                name,
                                partition_indexes,
                                ..Default::default()
                            })
                            .collect()
                    }),
                    ..Default::default()
                })
                .collect(),
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
/// results. Groups whose coordinators the client already knows go in one request per
/// coordinator (OffsetFetch v8+); the others, and groups a batch could not settle (moved
/// coordinator, older broker), get one request each.
#[derive(Debug)]
pub struct ListConsumerGroupOffsets {
    specs: BTreeMap<String, Option<BTreeSet<TopicPartition>>>,
    require_stable: bool,
    started: bool,
    shapes: BTreeMap<String, FetchShape>,
    single: Keyed<String, OffsetFetchRequest, GroupOffsets>,
    batches: Keyed<i32, OffsetFetchRequest, BatchResults>,
    batch_groups: BTreeMap<i32, Vec<String>>,
    timeout: Timeout,
}

type BatchResults = BTreeMap<String, Result<GroupOffsets, AdminError>>;

impl ListConsumerGroupOffsets {
    /// All committed offsets of `group`.
    pub fn new(group: impl Into<String>) -> Self {
        Self::groups([(group.into(), None)])
    }

    /// Several groups at once, each with all its offsets (`None`) or only the given
    /// partitions.
    pub fn groups(
        specs: impl IntoIterator<Item = (impl Into<String>, Option<Vec<TopicPartition>>)>,
    ) -> Self {
        ListConsumerGroupOffsets {
            specs: specs
                .into_iter()
                .map(|(g, p)| (g.into(), p.map(|p| p.into_iter().collect())))
                .collect(),
            require_stable: false,
            started: false,
            shapes: BTreeMap::new(),
            single: Keyed::new(),
            batches: Keyed::new(),
            batch_groups: BTreeMap::new(),
            timeout: Timeout::default(),
        }
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

    /// One request for `group` alone, to its coordinator.
    fn add_single(&mut self, group: &str) {
        let shape = FetchShape::Groups(BY_NAME);
        let parts = self.specs.get(group).and_then(Option::as_ref);
        let mut call = Call::new(
            Route::GroupCoordinator(group.to_string()),
            fetch_request(&[(group, parts)], self.require_stable, shape),
        );
        call.set_version(Some(BY_NAME));
        self.shapes.insert(group.to_string(), shape);
        self.single.insert(group.to_string(), call);
    }

    fn start(&mut self, cx: &OpContext<'_>) {
        let mut by_node: BTreeMap<i32, Vec<String>> = BTreeMap::new();
        let mut alone = Vec::new();
        for group in self.specs.keys() {
            match cx.coordinator(0, group) {
                Some(n) => by_node.entry(n).or_default().push(group.clone()),
                None => alone.push(group.clone()),
            }
        }
        for (node, groups) in by_node {
            if groups.len() < 2 {
                alone.extend(groups);
                continue;
            }
            let specs: Vec<(&str, Option<&BTreeSet<TopicPartition>>)> = groups
                .iter()
                .map(|g| (g.as_str(), self.specs.get(g).and_then(Option::as_ref)))
                .collect();
            let request = fetch_request(&specs, self.require_stable, FetchShape::Groups(BY_NAME));
            // Not resent to `node` on a connection failure: the groups go on alone, each to
            // its coordinator looked up again.
            let mut call = Call::new(Route::Broker(node), request).without_resend();
            call.set_version(Some(BY_NAME));
            self.batches.insert(node, call);
            self.batch_groups.insert(node, groups);
        }
        for g in alone {
            self.add_single(&g);
        }
    }
}

/// A group's settled offsets, or the error to retry it after.
fn group_outcome(
    cx: &mut OpContext<'_>,
    group: &str,
    code: i16,
    mut offsets: GroupOffsets,
    asked: Option<&BTreeSet<TopicPartition>>,
) -> Step<GroupOffsets> {
    let kcode = KafkaCode(code);
    if coordinator_retriable(kcode) {
        if kcode != KafkaCode::COORDINATOR_LOAD_IN_PROGRESS {
            cx.invalidate_coordinator(group);
        }
        return Step::Retry(AdminError::Kafka {
            code: kcode,
            message: None,
        });
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
    for tp in asked.into_iter().flatten() {
        offsets.entry(tp.clone()).or_insert(Ok(None));
    }
    Step::Done(Ok(offsets))
}

impl Operation for ListConsumerGroupOffsets {
    type Output = Result<BatchResults, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if !self.started {
            self.started = true;
            self.start(cx);
        }
        let specs = &self.specs;
        let batch_groups = &self.batch_groups;
        let mut again: Vec<String> = Vec::new();
        self.batches.poll(cx, deadline, |node, _, outcome, cx| {
            let groups = batch_groups
                .get(node)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let mut resp = match outcome {
                Ok(r) => r,
                Err(AdminError::Request(
                    RequestError::UnsupportedVersion { .. } | RequestError::Encode(_),
                )) => {
                    // No batching on this broker: one request per group.
                    again.extend(groups.iter().cloned());
                    return Step::Done(Ok(BatchResults::new()));
                }
                Err(e) if e.is_retriable() && !deadline.passed(cx) => {
                    again.extend(groups.iter().cloned());
                    return Step::Done(Ok(BatchResults::new()));
                }
                Err(e) => return Step::Done(Err(e)),
            };
            let mut settled = BatchResults::new();
            for g in groups {
                let Some(i) = resp.groups.iter().position(|r| &r.group_id == g) else {
                    settled.insert(g.clone(), Err(AdminError::missing("group")));
                    continue;
                };
                let one = OffsetFetchResponse {
                    groups: vec![resp.groups.swap_remove(i)],
                    ..Default::default()
                };
                let (code, offsets) = fetched_offsets(g, one);
                let asked = specs.get(g).and_then(Option::as_ref);
                match group_outcome(cx, g, code, offsets, asked) {
                    Step::Done(r) => {
                        settled.insert(g.clone(), r);
                    }
                    // Moved coordinator, unstable offsets: asked again on its own.
                    _ => again.push(g.clone()),
                }
            }
            Step::Done(Ok(settled))
        });
        for g in again {
            self.add_single(&g);
        }
        let stable = self.require_stable;
        let specs = &self.specs;
        let shapes = &mut self.shapes;
        self.single.poll(cx, deadline, |group, call, outcome, cx| {
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
                    *call.request_mut() = fetch_request(&[(group, parts)], stable, next);
                    call.set_version(match next {
                        FetchShape::Groups(v) => Some(v),
                        FetchShape::Legacy => None,
                    });
                    return Step::Resend;
                }
                Err(e) => return Step::Done(Err(e)),
            };
            let (code, offsets) = fetched_offsets(group, resp);
            group_outcome(
                cx,
                group,
                code,
                offsets,
                specs.get(group).and_then(Option::as_ref),
            )
        });
        if !(self.batches.is_done() && self.single.is_done()) {
            return None;
        }
        let mut out = BatchResults::new();
        for (node, result) in self.batches.take_results() {
            match result {
                Ok(settled) => out.extend(settled),
                Err(e) => {
                    for g in self.batch_groups.get(&node).into_iter().flatten() {
                        out.insert(g.clone(), Err(e.clone()));
                    }
                }
            }
        }
        out.extend(self.single.take_results());
        Some(Ok(out))
    }
}
