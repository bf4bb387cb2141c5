//! ListTopics and DescribeTopics, both answered from a Metadata request.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::TopicKey;
use crate::admin::{acl_operations, AclOperation, AdminError, Call, OpContext, Operation, Timeout};
use crate::cluster::Route;
use crate::protocol::messages::metadata::response::MetadataResponseTopic;
use crate::protocol::messages::metadata::{MetadataRequest, MetadataResponse};
use crate::protocol::Uuid;

/// A topic as ListTopics reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicListing {
    /// Topic id.
    pub topic_id: Uuid,
    /// Whether it is an internal topic (`__consumer_offsets`, ...).
    pub internal: bool,
}

/// Lists the topics of the cluster (a Metadata request for all topics, to any broker).
/// Internal topics are left out unless [`ListTopics::list_internal`] says otherwise.
#[derive(Debug)]
pub struct ListTopics {
    call: Call<MetadataRequest>,
    list_internal: bool,
    timeout: Timeout,
}

impl Default for ListTopics {
    fn default() -> Self {
        Self::new()
    }
}

impl ListTopics {
    /// Lists the topics.
    pub fn new() -> Self {
        let request = MetadataRequest {
            topics: None,
            allow_auto_topic_creation: false,
            ..Default::default()
        };
        ListTopics {
            call: Call::new(Route::Any, request),
            list_internal: false,
            timeout: Timeout::default(),
        }
    }

    /// Also lists internal topics.
    pub fn list_internal(mut self, yes: bool) -> Self {
        self.list_internal = yes;
        self
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

impl Operation for ListTopics {
    type Output = Result<BTreeMap<String, TopicListing>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        let resp = match self.call.poll(cx, deadline)? {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        if let Err(e) = AdminError::check(resp.error_code, None) {
            return Some(Err(e));
        }
        Some(Ok(listings(resp, self.list_internal)))
    }
}

/// The error-free topics of a Metadata answer (internal ones only if asked for).
fn listings(resp: MetadataResponse, internal: bool) -> BTreeMap<String, TopicListing> {
    resp.topics
        .into_iter()
        .filter(|t| t.error_code == 0 && (internal || !t.is_internal))
        .filter_map(|t| {
            let listing = TopicListing {
                topic_id: t.topic_id,
                internal: t.is_internal,
            };
            Some((t.name?, listing))
        })
        .collect()
}

/// One partition of a described topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionDescription {
    /// Partition index.
    pub partition: i32,
    /// Leader broker id, `None` when the partition has no leader.
    pub leader: Option<i32>,
    /// Leader epoch (-1 if unknown).
    pub leader_epoch: i32,
    /// Replica broker ids.
    pub replicas: Vec<i32>,
    /// In-sync replica broker ids.
    pub isr: Vec<i32>,
    /// Replicas that are offline.
    pub offline_replicas: Vec<i32>,
}

/// A topic as DescribeTopics reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicDescription {
    /// Topic name.
    pub name: String,
    /// Topic id.
    pub topic_id: Uuid,
    /// Whether it is an internal topic.
    pub internal: bool,
    /// Partitions, by index.
    pub partitions: Vec<PartitionDescription>,
    /// Operations the caller may perform on the topic (`None` unless asked for with
    /// [`DescribeTopics::include_authorized_operations`]).
    pub authorized_operations: Option<BTreeSet<AclOperation>>,
}

impl TopicDescription {
    fn from_wire(t: MetadataResponseTopic, asked_ops: bool) -> Result<Self, AdminError> {
        let name = t
            .name
            .ok_or_else(|| AdminError::Protocol("described topic without a name".into()))?;
        let mut partitions: Vec<PartitionDescription> = t
            .partitions
            .into_iter()
            .map(|p| PartitionDescription {
                partition: p.partition_index,
                leader: (p.leader_id >= 0).then_some(p.leader_id),
                leader_epoch: p.leader_epoch,
                replicas: p.replica_nodes,
                isr: p.isr_nodes,
                offline_replicas: p.offline_replicas,
            })
            .collect();
        partitions.sort_by_key(|p| p.partition);
        Ok(TopicDescription {
            name,
            topic_id: t.topic_id,
            internal: t.is_internal,
            partitions,
            authorized_operations: asked_ops.then(|| acl_operations(t.topic_authorized_operations)),
        })
    }
}

/// Describes topics by name ([`DescribeTopics::new`]) or by id ([`DescribeTopics::by_ids`])
/// from a Metadata request to any broker: partitions with leader, replicas and ISR.
/// Unknown topics fail alone, with UNKNOWN_TOPIC_OR_PARTITION (by name) or
/// UNKNOWN_TOPIC_ID (by id).
#[derive(Debug)]
pub struct DescribeTopics<K: TopicKey = String> {
    topics: Vec<K>,
    authorized_operations: bool,
    call: Option<Call<MetadataRequest>>,
    timeout: Timeout,
}

impl DescribeTopics<String> {
    /// Describes the topics named `names`.
    pub fn new(names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self::with_keys(names.into_iter().map(Into::into))
    }
}

impl DescribeTopics<Uuid> {
    /// Describes the topics with ids `ids`.
    pub fn by_ids(ids: impl IntoIterator<Item = Uuid>) -> Self {
        Self::with_keys(ids)
    }
}

impl<K: TopicKey> DescribeTopics<K> {
    fn with_keys(keys: impl IntoIterator<Item = K>) -> Self {
        let mut topics: Vec<K> = keys.into_iter().collect();
        topics.sort();
        topics.dedup();
        DescribeTopics {
            topics,
            authorized_operations: false,
            call: None,
            timeout: Timeout::default(),
        }
    }

    /// Also reports the operations the caller may perform on each topic.
    pub fn include_authorized_operations(mut self, yes: bool) -> Self {
        self.authorized_operations = yes;
        self
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

/// Per-topic results of a Metadata answer for `wanted` topics.
fn describe_results<K: TopicKey>(
    wanted: &[K],
    resp: MetadataResponse,
    asked_ops: bool,
) -> BTreeMap<K, Result<TopicDescription, AdminError>> {
    let mut results = BTreeMap::new();
    for t in resp.topics {
        let Some(key) = K::from_metadata(&t) else {
            continue;
        };
        if !wanted.contains(&key) {
            continue;
        }
        let result = AdminError::check(t.error_code, None)
            .and_then(|()| TopicDescription::from_wire(t, asked_ops));
        results.insert(key, result);
    }
    for k in wanted {
        results
            .entry(k.clone())
            .or_insert_with(|| Err(AdminError::missing("topic")));
    }
    results
}

impl<K: TopicKey> Operation for DescribeTopics<K> {
    type Output = Result<BTreeMap<K, Result<TopicDescription, AdminError>>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if self.topics.is_empty() {
            return Some(Ok(BTreeMap::new()));
        }
        if self.topics.iter().any(TopicKey::is_unset) {
            return Some(Err(AdminError::Invalid(
                "empty topic name or zero topic id".into(),
            )));
        }
        let call = self.call.get_or_insert_with(|| {
            let request = MetadataRequest {
                topics: Some(self.topics.iter().map(TopicKey::metadata_topic).collect()),
                allow_auto_topic_creation: false,
                include_topic_authorized_operations: self.authorized_operations,
                ..Default::default()
            };
            Call::new(Route::Any, request)
        });
        let resp = match call.poll(cx, deadline)? {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        if let Err(e) = AdminError::check(resp.error_code, None) {
            return Some(Err(e));
        }
        Some(Ok(describe_results(
            &self.topics,
            resp,
            self.authorized_operations,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::messages::metadata::response::MetadataResponsePartition;
    use crate::protocol::KafkaCode;

    fn topic(name: Option<&str>, id: u8, code: i16) -> MetadataResponseTopic {
        MetadataResponseTopic {
            error_code: code,
            name: name.map(str::to_string),
            topic_id: Uuid::from_bytes([id; 16]),
            partitions: vec![
                MetadataResponsePartition {
                    partition_index: 1,
                    leader_id: -1,
                    ..Default::default()
                },
                MetadataResponsePartition {
                    partition_index: 0,
                    leader_id: 3,
                    replica_nodes: vec![3, 4],
                    isr_nodes: vec![3],
                    ..Default::default()
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn describe_by_name_maps_per_topic_errors_and_missing_topics() {
        let resp = MetadataResponse {
            topics: vec![
                topic(Some("a"), 1, 0),
                topic(Some("b"), 0, KafkaCode::UNKNOWN_TOPIC_OR_PARTITION.0),
                topic(Some("unasked"), 2, 0),
            ],
            ..Default::default()
        };
        let wanted = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let r = describe_results(&wanted, resp, false);
        assert_eq!(r.len(), 3);
        let a = r["a"].as_ref().expect("a described");
        assert_eq!(a.partitions[0].partition, 0, "sorted by index");
        assert_eq!(a.partitions[0].leader, Some(3));
        assert_eq!(a.partitions[1].leader, None);
        assert_eq!(a.authorized_operations, None);
        assert_eq!(
            r["b"].as_ref().err().and_then(AdminError::code),
            Some(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION)
        );
        assert!(matches!(r["c"], Err(AdminError::Protocol(_))));
    }

    #[test]
    fn describe_by_id_matches_ids() {
        let resp = MetadataResponse {
            topics: vec![
                topic(Some("a"), 1, 0),
                topic(None, 9, KafkaCode::UNKNOWN_TOPIC_ID.0),
            ],
            ..Default::default()
        };
        let wanted = vec![Uuid::from_bytes([1; 16]), Uuid::from_bytes([9; 16])];
        let r = describe_results(&wanted, resp, true);
        assert_eq!(r[&wanted[0]].as_ref().map(|d| d.name.as_str()), Ok("a"));
        assert_eq!(
            r[&wanted[1]].as_ref().err().and_then(AdminError::code),
            Some(KafkaCode::UNKNOWN_TOPIC_ID)
        );
    }

    #[test]
    fn listings_hide_internal_and_failed_topics() {
        let mut internal = topic(Some("__consumer_offsets"), 3, 0);
        internal.is_internal = true;
        let resp = MetadataResponse {
            topics: vec![
                topic(Some("a"), 1, 0),
                topic(Some("bad"), 2, KafkaCode::LEADER_NOT_AVAILABLE.0),
                internal,
            ],
            ..Default::default()
        };
        let plain = listings(resp.clone(), false);
        assert_eq!(plain.keys().collect::<Vec<_>>(), ["a"]);
        let all = listings(resp, true);
        assert!(all["__consumer_offsets"].internal);
        assert_eq!(all.len(), 2);
    }
}
