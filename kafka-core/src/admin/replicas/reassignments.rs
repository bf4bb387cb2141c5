//! AlterPartitionReassignments and ListPartitionReassignments, by the controller.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::admin::topics::controller_retriable;
use crate::admin::{
    per_topic, Absorbed, AdminError, Batch, Call, ItemResults, Items, OpContext, Operation,
    Timeout, TopicPartition,
};
use crate::cluster::Route;
use crate::protocol::messages::alter_partition_reassignments::request::{
    ReassignablePartition, ReassignableTopic,
};
use crate::protocol::messages::alter_partition_reassignments::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
};
use crate::protocol::messages::list_partition_reassignments::request::ListPartitionReassignmentsTopics;
use crate::protocol::messages::list_partition_reassignments::{
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
};

/// Why a partition cannot be put in a request (checked before sending, as Java does).
fn unrepresentable(tp: &TopicPartition) -> Option<AdminError> {
    if tp.topic.is_empty() {
        Some(AdminError::Invalid("empty topic name".into()))
    } else if tp.partition < 0 {
        Some(AdminError::Invalid(format!(
            "invalid partition index {}",
            tp.partition
        )))
    } else {
        None
    }
}

/// Starts or cancels partition reassignments (AlterPartitionReassignments, sent to the
/// controller). Each partition maps to its target replicas (broker ids, the first is the
/// preferred leader), or to `None` to cancel its ongoing reassignment (which fails with
/// `NO_REASSIGNMENT_IN_PROGRESS` when there is none).
///
/// Results are per partition. A whole-response error other than `NOT_CONTROLLER` is
/// reported for every partition (as the Java client does); `NOT_CONTROLLER` and
/// `THROTTLING_QUOTA_EXCEEDED` are retried until the deadline.
#[derive(Debug)]
pub struct AlterPartitionReassignments {
    reassignments: BTreeMap<TopicPartition, Option<Vec<i32>>>,
    allow_replication_factor_change: bool,
    items: Items<AlterPartitionReassignmentsRequest, TopicPartition, ()>,
    timeout: Timeout,
}

impl AlterPartitionReassignments {
    /// Reassigns (`Some(replicas)`) or cancels (`None`) each partition.
    pub fn new(
        reassignments: impl IntoIterator<Item = (TopicPartition, Option<Vec<i32>>)>,
    ) -> Self {
        AlterPartitionReassignments {
            reassignments: reassignments.into_iter().collect(),
            allow_replication_factor_change: true,
            items: Items::new("partition"),
            timeout: Timeout::default(),
        }
    }

    /// Whether a reassignment may change a partition's replica count (default `true`;
    /// `false` needs request version 1, Kafka 4.1+).
    pub fn allow_replication_factor_change(mut self, yes: bool) -> Self {
        self.allow_replication_factor_change = yes;
        self
    }

    /// Overrides `default.api.timeout.ms` (also sent as the broker-side timeout).
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }

    /// The request for the representable partitions (the others get their error now);
    /// `None` if nothing is left to send.
    fn request(&mut self, timeout_ms: i32) -> Option<AlterPartitionReassignmentsRequest> {
        let mut wire = Vec::new();
        for (tp, replicas) in &self.reassignments {
            if let Some(e) = unrepresentable(tp) {
                self.items.settle(tp.clone(), Err(e));
                continue;
            }
            let partition = ReassignablePartition {
                partition_index: tp.partition,
                replicas: replicas.clone(),
                ..Default::default()
            };
            wire.push((tp, partition));
        }
        if wire.is_empty() {
            return None;
        }
        Some(AlterPartitionReassignmentsRequest {
            timeout_ms,
            allow_replication_factor_change: self.allow_replication_factor_change,
            topics: per_topic(wire, |name, partitions| ReassignableTopic {
                name,
                partitions,
                ..Default::default()
            }),
            ..Default::default()
        })
    }
}

/// Records the per-partition results; says what to send again.
fn absorb_reassigned(
    reassignments: &BTreeMap<TopicPartition, Option<Vec<i32>>>,
    batch: Batch<'_, TopicPartition, ()>,
    resp: AlterPartitionReassignmentsResponse,
) -> Absorbed<TopicPartition> {
    if controller_retriable(resp.error_code) && !batch.expired {
        return Absorbed::Again;
    }
    let top = AdminError::check(resp.error_code, resp.error_message.as_deref());
    let mut retry = Vec::new();
    for t in resp.responses {
        for p in t.partitions {
            let tp = TopicPartition::new(&t.name, p.partition_index);
            if !reassignments.contains_key(&tp) {
                continue;
            }
            let result = match &top {
                Err(e) => Err(e.clone()),
                Ok(()) if controller_retriable(p.error_code) => {
                    retry.push(tp);
                    continue;
                }
                Ok(()) => AdminError::check(p.error_code, p.error_message.as_deref()),
            };
            batch.results.insert(tp, result);
        }
    }
    // A whole-response error also stands for the partitions it did not list.
    if let Err(e) = top {
        for tp in reassignments.keys() {
            batch.results.entry(tp.clone()).or_insert(Err(e.clone()));
        }
    }
    Absorbed::Retry(retry)
}

impl Operation for AlterPartitionReassignments {
    type Output = Result<ItemResults<TopicPartition, ()>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if !self.items.started() {
            if let Some(request) = self.request(self.timeout.as_ms(cx)) {
                let pending = self
                    .reassignments
                    .keys()
                    .filter(|tp| unrepresentable(tp).is_none())
                    .cloned()
                    .collect();
                self.items.start(Route::Controller, request, pending);
            }
        }
        let reassignments = &self.reassignments;
        let absorb = |batch: Batch<'_, TopicPartition, ()>, resp| {
            absorb_reassigned(reassignments, batch, resp)
        };
        self.items.poll(cx, deadline, absorb, |request, retry| {
            let topics = &mut request.topics;
            for t in topics.iter_mut() {
                t.partitions
                    .retain(|p| retry.contains(&TopicPartition::new(&t.name, p.partition_index)));
            }
            topics.retain(|t| !t.partitions.is_empty());
        })
    }
}

/// An ongoing reassignment of a partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionReassignment {
    /// The current replica set (old and new replicas while the reassignment runs).
    pub replicas: Vec<i32>,
    /// Replicas being added.
    pub adding_replicas: Vec<i32>,
    /// Replicas being removed.
    pub removing_replicas: Vec<i32>,
}

/// Lists ongoing partition reassignments (ListPartitionReassignments, sent to the
/// controller), for every partition or the given ones. Partitions without an ongoing
/// reassignment (or that do not exist) are simply absent from the result.
#[derive(Debug)]
pub struct ListPartitionReassignments {
    /// `None`: every partition.
    partitions: Option<BTreeSet<TopicPartition>>,
    call: Option<Call<ListPartitionReassignmentsRequest>>,
    timeout: Timeout,
}

impl ListPartitionReassignments {
    /// Lists the ongoing reassignments among `partitions`.
    pub fn new(partitions: impl IntoIterator<Item = TopicPartition>) -> Self {
        ListPartitionReassignments {
            partitions: Some(partitions.into_iter().collect()),
            call: None,
            timeout: Timeout::default(),
        }
    }

    /// Lists every ongoing reassignment.
    pub fn all() -> Self {
        ListPartitionReassignments {
            partitions: None,
            ..ListPartitionReassignments::new([])
        }
    }

    /// Overrides `default.api.timeout.ms` (also sent as the broker-side timeout).
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }

    fn request(&self, timeout_ms: i32) -> ListPartitionReassignmentsRequest {
        let topics = self.partitions.as_ref().map(|set| {
            per_topic(
                set.iter().map(|tp| (tp, tp.partition)),
                |name, partition_indexes| ListPartitionReassignmentsTopics {
                    name,
                    partition_indexes,
                    ..Default::default()
                },
            )
        });
        ListPartitionReassignmentsRequest {
            timeout_ms,
            topics,
            ..Default::default()
        }
    }
}

fn ongoing(
    resp: ListPartitionReassignmentsResponse,
) -> Result<BTreeMap<TopicPartition, PartitionReassignment>, AdminError> {
    AdminError::check(resp.error_code, resp.error_message.as_deref())?;
    Ok(resp
        .topics
        .into_iter()
        .flat_map(|t| {
            let name = t.name;
            t.partitions.into_iter().map(move |p| {
                let reassignment = PartitionReassignment {
                    replicas: p.replicas,
                    adding_replicas: p.adding_replicas,
                    removing_replicas: p.removing_replicas,
                };
                (
                    TopicPartition::new(name.clone(), p.partition_index),
                    reassignment,
                )
            })
        })
        .collect())
}

impl Operation for ListPartitionReassignments {
    type Output = Result<BTreeMap<TopicPartition, PartitionReassignment>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if let Some(e) = self.partitions.iter().flatten().find_map(unrepresentable) {
            return Some(Err(e));
        }
        if self.partitions.as_ref().is_some_and(BTreeSet::is_empty) {
            return Some(Ok(BTreeMap::new()));
        }
        if self.call.is_none() {
            let request = self.request(self.timeout.as_ms(cx));
            self.call = Some(Call::new(Route::Controller, request));
        }
        let call = self.call.as_mut()?;
        let outcome = call.poll_retrying(cx, deadline, |r| {
            controller_retriable(r.error_code)
                .then(|| crate::client::Cause::code(r.error_code, None))
        })?;
        Some(outcome.and_then(ongoing))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::messages::alter_partition_reassignments::response::{
        ReassignablePartitionResponse, ReassignableTopicResponse,
    };
    use crate::protocol::messages::list_partition_reassignments::response::{
        OngoingPartitionReassignment, OngoingTopicReassignment,
    };
    use crate::protocol::KafkaCode;

    fn alter_response(
        top: KafkaCode,
        parts: &[(i32, KafkaCode)],
    ) -> AlterPartitionReassignmentsResponse {
        AlterPartitionReassignmentsResponse {
            error_code: top.0,
            responses: vec![ReassignableTopicResponse {
                name: "t".into(),
                partitions: parts
                    .iter()
                    .map(|&(p, code)| ReassignablePartitionResponse {
                        partition_index: p,
                        error_code: code.0,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    /// Absorbs `resp` about the representable partitions, then finishes.
    fn absorb(
        op: &mut AlterPartitionReassignments,
        resp: AlterPartitionReassignmentsResponse,
    ) -> (Absorbed<TopicPartition>, ItemResults<TopicPartition, ()>) {
        let pending = op.reassignments.keys().cloned().collect();
        let reassignments = &op.reassignments;
        op.items.absorb_then_finish(pending, resp, |batch, resp| {
            absorb_reassigned(reassignments, batch, resp)
        })
    }

    fn op() -> AlterPartitionReassignments {
        AlterPartitionReassignments::new([
            (TopicPartition::new("t", 0), Some(vec![1])),
            (TopicPartition::new("t", 1), None),
            (TopicPartition::new("t", 2), Some(vec![1, 2])),
            (TopicPartition::new("", 0), None),
        ])
    }

    #[test]
    fn unrepresentable_partitions_fail_before_sending() {
        let mut op = op();
        let req = op.request(1000).unwrap();
        assert_eq!(req.topics.len(), 1);
        assert_eq!(req.topics[0].partitions.len(), 3);
        assert_eq!(req.topics[0].partitions[1].replicas, None);
        assert!(matches!(
            op.items.results()[&TopicPartition::new("", 0)],
            Err(AdminError::Invalid(_))
        ));
        let mut only_bad = AlterPartitionReassignments::new([(TopicPartition::new("t", -1), None)]);
        assert!(only_bad.request(1000).is_none());
    }

    #[test]
    fn per_partition_results_and_retries() {
        let mut op = op();
        op.request(1000);
        let (retry, results) = absorb(
            &mut op,
            alter_response(
                KafkaCode::NONE,
                &[
                    (0, KafkaCode::NONE),
                    (1, KafkaCode::NO_REASSIGNMENT_IN_PROGRESS),
                    (2, KafkaCode::NOT_CONTROLLER),
                ],
            ),
        );
        assert_eq!(retry, Absorbed::Retry(vec![TopicPartition::new("t", 2)]));
        assert_eq!(results[&TopicPartition::new("t", 0)], Ok(()));
        assert_eq!(
            results[&TopicPartition::new("t", 1)]
                .as_ref()
                .unwrap_err()
                .code(),
            Some(KafkaCode::NO_REASSIGNMENT_IN_PROGRESS)
        );
    }

    #[test]
    fn top_level_error_stands_for_every_partition() {
        let mut op = op();
        op.request(1000);
        let (retry, results) = absorb(
            &mut op,
            alter_response(
                KafkaCode::CLUSTER_AUTHORIZATION_FAILED,
                &[(0, KafkaCode::NONE)],
            ),
        );
        assert_eq!(retry, Absorbed::Retry(Vec::new()));
        for p in 0..3 {
            assert_eq!(
                results[&TopicPartition::new("t", p)]
                    .as_ref()
                    .unwrap_err()
                    .code(),
                Some(KafkaCode::CLUSTER_AUTHORIZATION_FAILED)
            );
        }
    }

    #[test]
    fn ongoing_reassignments_are_keyed_by_partition() {
        let resp = ListPartitionReassignmentsResponse {
            topics: vec![OngoingTopicReassignment {
                name: "t".into(),
                partitions: vec![OngoingPartitionReassignment {
                    partition_index: 3,
                    replicas: vec![1, 2],
                    adding_replicas: vec![2],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let map = ongoing(resp).unwrap();
        assert_eq!(map[&TopicPartition::new("t", 3)].adding_replicas, vec![2]);
        let err = ongoing(ListPartitionReassignmentsResponse {
            error_code: KafkaCode::CLUSTER_AUTHORIZATION_FAILED.0,
            ..Default::default()
        })
        .unwrap_err();
        assert_eq!(err.code(), Some(KafkaCode::CLUSTER_AUTHORIZATION_FAILED));
        let req = ListPartitionReassignments::new([TopicPartition::new("t", 1)]).request(9);
        assert_eq!(req.topics.unwrap()[0].partition_indexes, vec![1]);
        assert_eq!(ListPartitionReassignments::all().request(9).topics, None);
    }
}
