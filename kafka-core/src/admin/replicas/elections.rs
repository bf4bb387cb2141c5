//! ElectLeaders: preferred or unclean leader elections, by the controller.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::admin::topics::controller_retriable;
use crate::admin::{
    per_topic, Absorbed, AdminError, Batch, ItemResults, Items, OpContext, Operation, Timeout,
    TopicPartition,
};
use crate::cluster::Route;
use crate::protocol::messages::elect_leaders::request::TopicPartitions;
use crate::protocol::messages::elect_leaders::{ElectLeadersRequest, ElectLeadersResponse};

/// Which replica an election may pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ElectionType {
    /// The preferred replica (first of the replica list), if it is in the ISR.
    Preferred,
    /// Any live replica, even out of the ISR (data loss possible) — only for partitions
    /// without a leader.
    Unclean,
}

impl ElectionType {
    /// The protocol value.
    pub fn code(self) -> i8 {
        match self {
            ElectionType::Preferred => 0,
            ElectionType::Unclean => 1,
        }
    }
}

/// Elects partition leaders (ElectLeaders, sent to the controller).
///
/// Results are per partition, as in the Java client: a partition whose leader is already
/// the one the election would pick fails with `ELECTION_NOT_NEEDED`. With
/// [`ElectLeaders::all`] the controller only reports the partitions it tried to elect
/// (those that needed no election are left out). A whole-response error fails the call;
/// `NOT_CONTROLLER` (whole or per partition) is retried until the deadline.
#[derive(Debug)]
pub struct ElectLeaders {
    election_type: ElectionType,
    /// `None`: every partition.
    partitions: Option<BTreeSet<TopicPartition>>,
    items: Items<ElectLeadersRequest, TopicPartition, ()>,
    timeout: Timeout,
}

impl ElectLeaders {
    /// Elects leaders for `partitions`.
    pub fn new(
        election_type: ElectionType,
        partitions: impl IntoIterator<Item = TopicPartition>,
    ) -> Self {
        ElectLeaders {
            election_type,
            partitions: Some(partitions.into_iter().collect()),
            items: Items::new("partition"),
            timeout: Timeout::default(),
        }
    }

    /// Elects leaders for every partition of the cluster that needs an election.
    pub fn all(election_type: ElectionType) -> Self {
        ElectLeaders {
            partitions: None,
            ..ElectLeaders::new(election_type, [])
        }
    }

    /// Overrides `default.api.timeout.ms` (also sent as the broker-side timeout).
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }

    fn request(&self, timeout_ms: i32) -> ElectLeadersRequest {
        let topic_partitions = self.partitions.as_ref().map(|set| {
            per_topic(
                set.iter().map(|tp| (tp, tp.partition)),
                |topic, partitions| TopicPartitions {
                    topic,
                    partitions,
                    ..Default::default()
                },
            )
        });
        ElectLeadersRequest {
            election_type: self.election_type.code(),
            topic_partitions,
            timeout_ms,
            ..Default::default()
        }
    }
}

/// Records the per-partition results; says what to send again.
fn absorb_elected(
    batch: Batch<'_, TopicPartition, ()>,
    resp: ElectLeadersResponse,
) -> Absorbed<TopicPartition> {
    if controller_retriable(resp.error_code) && !batch.expired {
        return Absorbed::Again;
    }
    if let Err(e) = AdminError::check(resp.error_code, None) {
        return Absorbed::Failed(e);
    }
    let mut retry = Vec::new();
    for t in resp.replica_election_results {
        for p in t.partition_result {
            let tp = TopicPartition::new(&t.topic, p.partition_id);
            if controller_retriable(p.error_code) {
                retry.push(tp);
                continue;
            }
            let result = AdminError::check(p.error_code, p.error_message.as_deref());
            batch.results.insert(tp, result);
        }
    }
    Absorbed::Retry(retry)
}

impl Operation for ElectLeaders {
    type Output = Result<ItemResults<TopicPartition, ()>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if !self.items.started() && !self.partitions.as_ref().is_some_and(BTreeSet::is_empty) {
            let request = self.request(self.timeout.as_ms(cx));
            let pending = self.partitions.iter().flatten().cloned().collect();
            self.items.start(Route::Controller, request, pending);
        }
        self.items
            .poll(cx, deadline, absorb_elected, |request, retry| {
                if let Some(topics) = request.topic_partitions.as_mut() {
                    for t in topics.iter_mut() {
                        t.partitions
                            .retain(|&p| retry.contains(&TopicPartition::new(&t.topic, p)));
                    }
                    topics.retain(|t| !t.partitions.is_empty());
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::messages::elect_leaders::response::{
        PartitionResult, ReplicaElectionResult,
    };
    use crate::protocol::KafkaCode;

    fn response(results: &[(&str, i32, KafkaCode)]) -> ElectLeadersResponse {
        ElectLeadersResponse {
            replica_election_results: results
                .iter()
                .map(|&(t, p, code)| ReplicaElectionResult {
                    topic: t.into(),
                    partition_result: vec![PartitionResult {
                        partition_id: p,
                        error_code: code.0,
                        ..Default::default()
                    }],
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn request_groups_partitions_by_topic_or_asks_for_all() {
        let op = ElectLeaders::new(
            ElectionType::Unclean,
            [
                TopicPartition::new("b", 1),
                TopicPartition::new("a", 0),
                TopicPartition::new("b", 0),
            ],
        );
        let req = op.request(5);
        assert_eq!(req.election_type, 1);
        let topics = req.topic_partitions.unwrap();
        assert_eq!(topics.len(), 2);
        assert_eq!(
            (topics[1].topic.as_str(), &topics[1].partitions[..]),
            ("b", &[0, 1][..])
        );
        let all = ElectLeaders::all(ElectionType::Preferred).request(5);
        assert_eq!((all.election_type, all.topic_partitions), (0, None));
    }

    #[test]
    fn election_not_needed_is_a_per_partition_error_and_not_controller_is_retried() {
        let mut op = ElectLeaders::new(
            ElectionType::Preferred,
            [
                TopicPartition::new("t", 0),
                TopicPartition::new("t", 1),
                TopicPartition::new("t", 2),
                TopicPartition::new("t", 3),
            ],
        );
        let pending = op.partitions.iter().flatten().cloned().collect();
        let resp = response(&[
            ("t", 0, KafkaCode::NONE),
            ("t", 1, KafkaCode::ELECTION_NOT_NEEDED),
            ("t", 2, KafkaCode::NOT_CONTROLLER),
        ]);
        let (retry, results) = op.items.absorb_then_finish(pending, resp, absorb_elected);
        assert_eq!(retry, Absorbed::Retry(vec![TopicPartition::new("t", 2)]));
        assert_eq!(results[&TopicPartition::new("t", 0)], Ok(()));
        assert_eq!(
            results[&TopicPartition::new("t", 1)]
                .as_ref()
                .unwrap_err()
                .code(),
            Some(KafkaCode::ELECTION_NOT_NEEDED)
        );
        assert!(matches!(
            results[&TopicPartition::new("t", 3)],
            Err(AdminError::Protocol(_))
        ));
    }
}
