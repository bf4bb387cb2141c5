//! CreatePartitions: add partitions to existing topics.

use std::collections::BTreeMap;
use std::time::Duration;

use super::controller_retriable;
use crate::admin::{
    Absorbed, AdminError, Batch, ItemResults, Items, OpContext, Operation, Timeout,
};
use crate::cluster::Route;
use crate::protocol::messages::create_partitions::request::{
    CreatePartitionsAssignment, CreatePartitionsTopic,
};
use crate::protocol::messages::create_partitions::{
    CreatePartitionsRequest, CreatePartitionsResponse,
};

/// The new partition count of a topic, optionally with the replicas of each new partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPartitions {
    /// The total number of partitions after the increase.
    pub total_count: i32,
    /// Broker ids of the replicas of each new partition, in order (empty: the controller
    /// places them).
    pub assignments: Vec<Vec<i32>>,
}

impl NewPartitions {
    /// Increases the partition count to `total_count`.
    pub fn increase_to(total_count: i32) -> Self {
        NewPartitions {
            total_count,
            assignments: Vec::new(),
        }
    }

    /// Places the new partitions: one list of broker ids (leader first) per new partition.
    pub fn assignments(mut self, assignments: Vec<Vec<i32>>) -> Self {
        self.assignments = assignments;
        self
    }

    fn to_wire(&self, name: &str) -> CreatePartitionsTopic {
        CreatePartitionsTopic {
            name: name.to_string(),
            count: self.total_count,
            assignments: (!self.assignments.is_empty()).then(|| {
                self.assignments
                    .iter()
                    .map(|brokers| CreatePartitionsAssignment {
                        broker_ids: brokers.clone(),
                        ..Default::default()
                    })
                    .collect()
            }),
            ..Default::default()
        }
    }
}

/// Adds partitions to topics (CreatePartitions, sent to the controller). Topics refused
/// with NOT_CONTROLLER or THROTTLING_QUOTA_EXCEEDED are retried until the deadline.
#[derive(Debug)]
pub struct CreatePartitions {
    items: Items<CreatePartitionsRequest, String, ()>,
    topics: BTreeMap<String, NewPartitions>,
    validate_only: bool,
    timeout: Timeout,
}

impl CreatePartitions {
    /// Increases the partitions of each topic (name → new partitions).
    pub fn new(topics: impl IntoIterator<Item = (impl Into<String>, NewPartitions)>) -> Self {
        CreatePartitions {
            items: Items::new("topic"),
            topics: topics.into_iter().map(|(n, p)| (n.into(), p)).collect(),
            validate_only: false,
            timeout: Timeout::default(),
        }
    }

    /// Only checks that the partitions could be added (`validateOnly`).
    pub fn validate_only(mut self, yes: bool) -> Self {
        self.validate_only = yes;
        self
    }

    /// Overrides `default.api.timeout.ms` (also sent as the broker-side timeout).
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

impl Operation for CreatePartitions {
    type Output = Result<ItemResults<String, ()>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if !self.items.started() && !self.topics.is_empty() {
            let request = CreatePartitionsRequest {
                topics: self.topics.iter().map(|(n, p)| p.to_wire(n)).collect(),
                timeout_ms: self.timeout.as_ms(cx),
                validate_only: self.validate_only,
                ..Default::default()
            };
            let names = self.topics.keys().cloned().collect();
            self.items.start(Route::Controller, request, names);
        }
        let topics = &self.topics;
        let absorb = |batch: Batch<'_, String, ()>, resp: CreatePartitionsResponse| {
            let mut retry = Vec::new();
            for r in resp.results {
                if !topics.contains_key(&r.name) {
                    continue;
                }
                if controller_retriable(r.error_code) {
                    retry.push(r.name);
                    continue;
                }
                let result = AdminError::check(r.error_code, r.error_message.as_deref());
                batch.results.insert(r.name, result);
            }
            Absorbed::Retry(retry)
        };
        self.items.poll(cx, deadline, absorb, |request, retry| {
            request.topics.retain(|t| retry.contains(&t.name));
        })
    }
}
