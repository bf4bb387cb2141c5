//! Topic operations: create, delete, add partitions, list, describe; and the cluster.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::{
    Absorbed, AclOperation, AdminError, Batch, Call, ItemResults, Items, OpContext, Operation,
    Timeout,
};
use crate::client::Cause;
use crate::cluster::Route;
use crate::protocol::messages::create_topics::request::{
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
};
use crate::protocol::messages::create_topics::{CreateTopicsRequest, CreateTopicsResponse};
use crate::protocol::messages::describe_cluster::{
    DescribeClusterRequest, DescribeClusterResponse,
};
use crate::protocol::{KafkaCode, Uuid};

mod delete;
mod describe;
mod key;
mod partitions;

pub use delete::DeleteTopics;
pub use describe::{
    DescribeTopics, ListTopics, PartitionDescription, TopicDescription, TopicListing,
};
pub use key::TopicKey;
pub use partitions::{CreatePartitions, NewPartitions};

/// Codes that make an item worth sending again to the (new) controller.
pub(crate) fn controller_retriable(code: i16) -> bool {
    let code = KafkaCode(code);
    code == KafkaCode::NOT_CONTROLLER || code == KafkaCode::THROTTLING_QUOTA_EXCEEDED
}

/// A topic to create. Partitions and replication factor default to the broker's
/// `num.partitions` and `default.replication.factor` when unset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTopic {
    /// Topic name.
    pub name: String,
    /// Number of partitions (`None`: broker default).
    pub partitions: Option<i32>,
    /// Replication factor (`None`: broker default).
    pub replication_factor: Option<i16>,
    /// Explicit replica assignment: partition index → broker ids (overrides the two above).
    pub assignments: BTreeMap<i32, Vec<i32>>,
    /// Topic configs (`cleanup.policy`, `retention.ms`, ...).
    pub configs: BTreeMap<String, String>,
}

impl NewTopic {
    /// `name` with `partitions` partitions and `replication_factor` replicas each.
    pub fn new(name: impl Into<String>, partitions: i32, replication_factor: i16) -> Self {
        NewTopic {
            name: name.into(),
            partitions: Some(partitions),
            replication_factor: Some(replication_factor),
            assignments: BTreeMap::new(),
            configs: BTreeMap::new(),
        }
    }

    /// `name` with the broker's default partitions and replication factor.
    pub fn with_defaults(name: impl Into<String>) -> Self {
        NewTopic {
            partitions: None,
            replication_factor: None,
            ..NewTopic::new(name, -1, -1)
        }
    }

    /// Adds a topic config.
    pub fn config(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.configs.insert(key.into(), value.into());
        self
    }

    fn to_wire(&self) -> CreatableTopic {
        let explicit = !self.assignments.is_empty();
        CreatableTopic {
            name: self.name.clone(),
            num_partitions: if explicit {
                -1
            } else {
                self.partitions.unwrap_or(-1)
            },
            replication_factor: if explicit {
                -1
            } else {
                self.replication_factor.unwrap_or(-1)
            },
            assignments: self
                .assignments
                .iter()
                .map(|(p, brokers)| CreatableReplicaAssignment {
                    partition_index: *p,
                    broker_ids: brokers.clone(),
                    ..Default::default()
                })
                .collect(),
            configs: self
                .configs
                .iter()
                .map(|(k, v)| CreatableTopicConfig {
                    name: k.clone(),
                    value: Some(v.clone()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }
}

/// What the controller says about a created (or, with validate-only, creatable) topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedTopic {
    /// The new topic's id (zero for validate-only).
    pub topic_id: Uuid,
    /// Number of partitions (-1 if the broker did not say).
    pub partitions: i32,
    /// Replication factor (-1 if the broker did not say).
    pub replication_factor: i16,
    /// The topic's configs as the broker resolved them (name → value; `None` = sensitive
    /// or unset).
    pub configs: BTreeMap<String, Option<String>>,
}

/// Creates topics (CreateTopics, sent to the controller). Topics refused with
/// NOT_CONTROLLER or THROTTLING_QUOTA_EXCEEDED are retried until the deadline.
#[derive(Debug)]
pub struct CreateTopics {
    items: Items<CreateTopicsRequest, String, CreatedTopic>,
    topics: Vec<NewTopic>,
    validate_only: bool,
    timeout: Timeout,
}

impl CreateTopics {
    /// Creates `topics`.
    pub fn new(topics: impl IntoIterator<Item = NewTopic>) -> Self {
        CreateTopics {
            items: Items::new("topic"),
            topics: topics.into_iter().collect(),
            validate_only: false,
            timeout: Timeout::default(),
        }
    }

    /// Only checks that the topics could be created (`validateOnly`).
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

fn absorb_created(
    batch: Batch<'_, String, CreatedTopic>,
    resp: CreateTopicsResponse,
) -> Absorbed<String> {
    let mut retry = Vec::new();
    for t in resp.topics {
        if controller_retriable(t.error_code) {
            retry.push(t.name);
            continue;
        }
        let result =
            AdminError::check(t.error_code, t.error_message.as_deref()).map(|()| CreatedTopic {
                topic_id: t.topic_id,
                partitions: t.num_partitions,
                replication_factor: t.replication_factor,
                configs: t
                    .configs
                    .unwrap_or_default()
                    .into_iter()
                    .map(|c| (c.name, c.value))
                    .collect(),
            });
        batch.results.insert(t.name, result);
    }
    Absorbed::Retry(retry)
}

impl Operation for CreateTopics {
    type Output = Result<ItemResults<String, CreatedTopic>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if !self.items.started() && !self.topics.is_empty() {
            let request = CreateTopicsRequest {
                topics: self.topics.iter().map(NewTopic::to_wire).collect(),
                timeout_ms: self.timeout.as_ms(cx),
                validate_only: self.validate_only,
                ..Default::default()
            };
            let names = self.topics.iter().map(|t| t.name.clone()).collect();
            self.items.start(Route::Controller, request, names);
        }
        self.items
            .poll(cx, deadline, absorb_created, |request, retry| {
                request.topics.retain(|t| retry.contains(&t.name));
            })
    }
}

/// A broker of the cluster, as DescribeCluster reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterBroker {
    /// Node id.
    pub node_id: i32,
    /// Host name.
    pub host: String,
    /// Port (0 if the broker reported one outside `u16`, as in the client's metadata).
    pub port: u16,
    /// Rack, if configured.
    pub rack: Option<String>,
    /// Whether the broker is fenced (only listed when fenced brokers are asked for).
    pub fenced: bool,
}

/// The cluster as DescribeCluster reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterDescription {
    /// Cluster id.
    pub cluster_id: String,
    /// The controller's node id (-1 if unknown).
    pub controller_id: i32,
    /// Brokers by node id.
    pub brokers: BTreeMap<i32, ClusterBroker>,
    /// Operations the caller may perform on the cluster (`None` unless asked for with
    /// [`DescribeCluster::include_authorized_operations`]).
    pub authorized_operations: Option<BTreeSet<AclOperation>>,
}

/// Describes the cluster: id, controller, brokers (DescribeCluster to any broker).
#[derive(Debug)]
pub struct DescribeCluster {
    call: Call<DescribeClusterRequest>,
    timeout: Timeout,
}

impl Default for DescribeCluster {
    fn default() -> Self {
        Self::new()
    }
}

impl DescribeCluster {
    /// Describes the cluster.
    pub fn new() -> Self {
        DescribeCluster {
            call: Call::new(Route::Any, DescribeClusterRequest::default()),
            timeout: Timeout::default(),
        }
    }

    /// Also reports the operations the caller is authorized to perform on the cluster.
    pub fn include_authorized_operations(mut self, yes: bool) -> Self {
        self.call
            .request_mut()
            .include_cluster_authorized_operations = yes;
        self
    }

    /// Also lists fenced brokers.
    pub fn include_fenced_brokers(mut self, yes: bool) -> Self {
        self.call.request_mut().include_fenced_brokers = yes;
        self
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

impl Operation for DescribeCluster {
    type Output = Result<ClusterDescription, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        let asked_ops = self
            .call
            .request_mut()
            .include_cluster_authorized_operations;
        let retriable = |r: &DescribeClusterResponse| {
            KafkaCode(r.error_code)
                .is_retriable()
                .then(|| Cause::code(r.error_code, r.error_message.as_deref()))
        };
        let resp = match self.call.poll_retrying(cx, deadline, retriable)? {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        Some(
            AdminError::check(resp.error_code, resp.error_message.as_deref()).map(|()| {
                ClusterDescription {
                    cluster_id: resp.cluster_id,
                    controller_id: resp.controller_id,
                    brokers: resp
                        .brokers
                        .into_iter()
                        .map(|b| {
                            let broker = ClusterBroker {
                                node_id: b.broker_id,
                                host: b.host,
                                port: u16::try_from(b.port).unwrap_or(0),
                                rack: b.rack,
                                fenced: b.is_fenced,
                            };
                            (b.broker_id, broker)
                        })
                        .collect(),
                    authorized_operations: asked_ops
                        .then(|| super::acl_operations(resp.cluster_authorized_operations)),
                }
            }),
        )
    }
}

/// The named methods of this group (see [`admin_methods!`](crate::admin_methods)).
#[doc(hidden)]
#[macro_export]
macro_rules! __admin_methods_topics {
    ($mode:ident $run:ident) => {
        $crate::__admin_method_list!($mode $run
            /// Creates topics (per-topic results); see [`CreateTopics`](kafka_core::admin::CreateTopics).
            fn create_topics(topics: impl IntoIterator<Item = $crate::admin::NewTopic>)
                -> ::std::collections::BTreeMap<String, Result<$crate::admin::CreatedTopic, $crate::admin::AdminError>>
                = $crate::admin::CreateTopics::new(topics);
            /// Describes the cluster: id, controller and brokers.
            fn describe_cluster() -> $crate::admin::ClusterDescription
                = $crate::admin::DescribeCluster::new();
            /// Deletes topics by name (per-topic results); see [`DeleteTopics`](kafka_core::admin::DeleteTopics).
            fn delete_topics(names: impl IntoIterator<Item = impl Into<String>>)
                -> ::std::collections::BTreeMap<String, Result<(), $crate::admin::AdminError>>
                = $crate::admin::DeleteTopics::new(names);
            /// Deletes topics by topic id (per-topic results).
            fn delete_topics_by_id(ids: impl IntoIterator<Item = $crate::protocol::Uuid>)
                -> ::std::collections::BTreeMap<$crate::protocol::Uuid, Result<(), $crate::admin::AdminError>>
                = $crate::admin::DeleteTopics::by_ids(ids);
            /// Adds partitions to topics (per-topic results); see [`CreatePartitions`](kafka_core::admin::CreatePartitions).
            fn create_partitions(topics: impl IntoIterator<Item = (impl Into<String>, $crate::admin::NewPartitions)>)
                -> ::std::collections::BTreeMap<String, Result<(), $crate::admin::AdminError>>
                = $crate::admin::CreatePartitions::new(topics);
            /// Lists the non-internal topics: name → id and internal flag.
            fn list_topics()
                -> ::std::collections::BTreeMap<String, $crate::admin::TopicListing>
                = $crate::admin::ListTopics::new();
            /// Describes topics by name (per-topic results); see [`DescribeTopics`](kafka_core::admin::DescribeTopics).
            fn describe_topics(names: impl IntoIterator<Item = impl Into<String>>)
                -> ::std::collections::BTreeMap<String, Result<$crate::admin::TopicDescription, $crate::admin::AdminError>>
                = $crate::admin::DescribeTopics::new(names);
            /// Describes topics by topic id (per-topic results).
            fn describe_topics_by_id(ids: impl IntoIterator<Item = $crate::protocol::Uuid>)
                -> ::std::collections::BTreeMap<$crate::protocol::Uuid, Result<$crate::admin::TopicDescription, $crate::admin::AdminError>>
                = $crate::admin::DescribeTopics::by_ids(ids);
        );
    };
}

#[cfg(test)]
mod tests;
