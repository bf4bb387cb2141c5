//! DescribeLogDirs and AlterReplicaLogDirs: one request per broker.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::admin::{AdminError, Call, OpContext, Operation, Timeout, TopicPartition};
use crate::cluster::Route;
use crate::protocol::messages::alter_replica_log_dirs::request::{
    AlterReplicaLogDir, AlterReplicaLogDirTopic,
};
use crate::protocol::messages::alter_replica_log_dirs::{
    AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse,
};
use crate::protocol::messages::describe_log_dirs::{
    DescribeLogDirsRequest, DescribeLogDirsResponse,
};
use crate::protocol::{KafkaCode, Request};

/// One request per broker, each with its own retries; yields each broker's outcome once.
#[derive(Debug)]
pub(super) struct PerBroker<R: Request> {
    calls: BTreeMap<i32, Call<R>>,
}

impl<R> PerBroker<R>
where
    R: Request + Clone + Send + Sync + 'static,
    R::Response: Send + 'static,
{
    pub(super) fn new(requests: impl IntoIterator<Item = (i32, R)>) -> Self {
        PerBroker {
            calls: requests
                .into_iter()
                .map(|(id, r)| (id, Call::new(Route::Broker(id), r)))
                .collect(),
        }
    }

    /// Polls every pending call; returns the outcomes that arrived.
    pub(super) fn poll(
        &mut self,
        cx: &mut OpContext<'_>,
        deadline: crate::admin::Deadline,
    ) -> Vec<(i32, Result<R::Response, AdminError>)> {
        let mut done = Vec::new();
        for (&broker, call) in &mut self.calls {
            if let Some(outcome) = call.poll(cx, deadline) {
                done.push((broker, outcome));
            }
        }
        for (broker, _) in &done {
            self.calls.remove(broker);
        }
        done
    }

    pub(super) fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }
}

/// A replica of a partition on one broker: the key of replica log dir results.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartitionReplica {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// The broker holding the replica.
    pub broker_id: i32,
}

impl TopicPartitionReplica {
    /// The replica of `topic`-`partition` on `broker_id`.
    pub fn new(topic: impl Into<String>, partition: i32, broker_id: i32) -> Self {
        TopicPartitionReplica {
            topic: topic.into(),
            partition,
            broker_id,
        }
    }
}

/// A partition replica stored in a log dir.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaInfo {
    /// Size of the replica's log in bytes.
    pub size: i64,
    /// How far the replica is behind: the log end offset's lag behind the high watermark
    /// (for a future replica: behind the current replica).
    pub offset_lag: i64,
    /// Whether this is a future replica (the target of a move between log dirs, still
    /// catching up).
    pub is_future: bool,
}

/// One log dir of a broker, as DescribeLogDirs reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDirDescription {
    /// The dir's error (e.g. `KAFKA_STORAGE_ERROR` for an offline dir), `None` if healthy.
    pub error: Option<AdminError>,
    /// The replicas stored in the dir.
    pub replicas: BTreeMap<TopicPartition, ReplicaInfo>,
    /// Size of the dir's volume in bytes (`None` if the broker did not say).
    pub total_bytes: Option<i64>,
    /// Usable space left on the dir's volume in bytes (`None` if the broker did not say).
    pub usable_bytes: Option<i64>,
    /// Whether the dir is cordoned (takes no new replicas).
    pub is_cordoned: bool,
}

/// Per-broker results of [`DescribeLogDirs`]: log dir path → description.
pub type BrokerLogDirs = BTreeMap<String, LogDirDescription>;

/// Describes the log dirs of brokers (DescribeLogDirs to each broker, all partitions).
/// One result per broker: a broker that fails says nothing about the others.
#[derive(Debug)]
pub struct DescribeLogDirs {
    brokers: Vec<i32>,
    calls: Option<PerBroker<DescribeLogDirsRequest>>,
    timeout: Timeout,
    results: BTreeMap<i32, Result<BrokerLogDirs, AdminError>>,
}

impl DescribeLogDirs {
    /// Describes every log dir of each of `brokers` (node ids).
    pub fn new(brokers: impl IntoIterator<Item = i32>) -> Self {
        DescribeLogDirs {
            brokers: brokers.into_iter().collect(),
            calls: None,
            timeout: Timeout::default(),
            results: BTreeMap::new(),
        }
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

/// A DescribeLogDirs request for every partition in every dir (`topics: None`; the
/// codec's default is an empty list, which asks for none).
fn describe_all() -> DescribeLogDirsRequest {
    DescribeLogDirsRequest {
        topics: None,
        ..Default::default()
    }
}

/// One broker's DescribeLogDirs answer as log dir descriptions. Like the Java client, an
/// answer without any dir and without an error code (versions before 3 had none) means
/// the caller may not describe the cluster.
fn log_dir_descriptions(resp: DescribeLogDirsResponse) -> Result<BrokerLogDirs, AdminError> {
    AdminError::check(resp.error_code, None)?;
    if resp.results.is_empty() {
        return Err(AdminError::Kafka {
            code: KafkaCode::CLUSTER_AUTHORIZATION_FAILED,
            message: Some("no log dirs in the response".into()),
        });
    }
    let known = |v: i64| (v >= 0).then_some(v);
    Ok(resp
        .results
        .into_iter()
        .map(|dir| {
            let replicas = dir
                .topics
                .into_iter()
                .flat_map(|t| {
                    let topic = t.name;
                    t.partitions.into_iter().map(move |p| {
                        let info = ReplicaInfo {
                            size: p.partition_size,
                            offset_lag: p.offset_lag,
                            is_future: p.is_future_key,
                        };
                        (TopicPartition::new(topic.clone(), p.partition_index), info)
                    })
                })
                .collect();
            let description = LogDirDescription {
                error: AdminError::check(dir.error_code, None).err(),
                replicas,
                total_bytes: known(dir.total_bytes),
                usable_bytes: known(dir.usable_bytes),
                is_cordoned: dir.is_cordoned,
            };
            (dir.log_dir, description)
        })
        .collect())
}

impl Operation for DescribeLogDirs {
    type Output = Result<BTreeMap<i32, Result<BrokerLogDirs, AdminError>>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        let calls = self.calls.get_or_insert_with(|| {
            PerBroker::new(self.brokers.iter().map(|&id| (id, describe_all())))
        });
        for (broker, outcome) in calls.poll(cx, deadline) {
            self.results
                .insert(broker, outcome.and_then(log_dir_descriptions));
        }
        calls
            .is_empty()
            .then(|| Ok(std::mem::take(&mut self.results)))
    }
}

/// Moves replicas between the log dirs of their brokers (AlterReplicaLogDirs to each
/// replica's broker). The move itself runs in the background: the broker creates a
/// future replica in the target dir and swaps it in once it caught up (watch it with
/// [`DescribeLogDirs`]). A replica the broker does not host yet answers
/// `REPLICA_NOT_AVAILABLE`, and the broker remembers the dir for when it gets the
/// replica. Like the Java client, per-replica errors are reported, not retried.
#[derive(Debug)]
pub struct AlterReplicaLogDirs {
    assignments: BTreeMap<TopicPartitionReplica, String>,
    calls: Option<PerBroker<AlterReplicaLogDirsRequest>>,
    timeout: Timeout,
    results: BTreeMap<TopicPartitionReplica, Result<(), AdminError>>,
}

impl AlterReplicaLogDirs {
    /// Moves each replica to its log dir (an absolute path on the replica's broker).
    pub fn new(assignments: impl IntoIterator<Item = (TopicPartitionReplica, String)>) -> Self {
        AlterReplicaLogDirs {
            assignments: assignments.into_iter().collect(),
            calls: None,
            timeout: Timeout::default(),
            results: BTreeMap::new(),
        }
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }

    /// One request per broker: dirs → topics → partitions.
    fn requests(&self) -> BTreeMap<i32, AlterReplicaLogDirsRequest> {
        let mut by_broker: BTreeMap<i32, BTreeMap<&str, BTreeMap<&str, Vec<i32>>>> =
            BTreeMap::new();
        for (replica, dir) in &self.assignments {
            by_broker
                .entry(replica.broker_id)
                .or_default()
                .entry(dir)
                .or_default()
                .entry(&replica.topic)
                .or_default()
                .push(replica.partition);
        }
        by_broker
            .into_iter()
            .map(|(broker, dirs)| {
                let request = AlterReplicaLogDirsRequest {
                    dirs: dirs
                        .into_iter()
                        .map(|(path, topics)| AlterReplicaLogDir {
                            path: path.to_owned(),
                            topics: topics
                                .into_iter()
                                .map(|(name, partitions)| AlterReplicaLogDirTopic {
                                    name: name.to_owned(),
                                    partitions,
                                    ..Default::default()
                                })
                                .collect(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                };
                (broker, request)
            })
            .collect()
    }

    /// Records one broker's outcome for its replicas.
    fn absorb(&mut self, broker: i32, outcome: Result<AlterReplicaLogDirsResponse, AdminError>) {
        match outcome {
            Ok(resp) => {
                for t in resp.results {
                    for p in t.partitions {
                        let replica =
                            TopicPartitionReplica::new(&t.topic_name, p.partition_index, broker);
                        if self.assignments.contains_key(&replica) {
                            self.results
                                .insert(replica, AdminError::check(p.error_code, None));
                        }
                    }
                }
            }
            Err(e) => {
                for replica in self.assignments.keys().filter(|r| r.broker_id == broker) {
                    self.results.insert(replica.clone(), Err(e.clone()));
                }
            }
        }
        for replica in self.assignments.keys().filter(|r| r.broker_id == broker) {
            self.results.entry(replica.clone()).or_insert_with(|| {
                Err(AdminError::Protocol(format!(
                    "broker {broker} did not answer for this replica"
                )))
            });
        }
    }
}

impl Operation for AlterReplicaLogDirs {
    type Output = Result<BTreeMap<TopicPartitionReplica, Result<(), AdminError>>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if self.calls.is_none() {
            self.calls = Some(PerBroker::new(self.requests()));
        }
        let done = self.calls.as_mut()?.poll(cx, deadline);
        for (broker, outcome) in done {
            self.absorb(broker, outcome);
        }
        self.calls
            .as_ref()?
            .is_empty()
            .then(|| Ok(std::mem::take(&mut self.results)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::messages::alter_replica_log_dirs::response::{
        AlterReplicaLogDirPartitionResult, AlterReplicaLogDirTopicResult,
    };
    use crate::protocol::messages::describe_log_dirs::response::{
        DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
    };

    #[test]
    fn log_dirs_keep_dir_errors_and_unknown_sizes() {
        let resp = DescribeLogDirsResponse {
            results: vec![
                DescribeLogDirsResult {
                    log_dir: "/a".into(),
                    total_bytes: 100,
                    usable_bytes: 40,
                    topics: vec![DescribeLogDirsTopic {
                        name: "t".into(),
                        partitions: vec![DescribeLogDirsPartition {
                            partition_index: 2,
                            partition_size: 7,
                            offset_lag: 0,
                            is_future_key: true,
                            ..Default::default()
                        }],
                        ..Default::default()
                    }],
                    ..Default::default()
                },
                DescribeLogDirsResult {
                    log_dir: "/b".into(),
                    error_code: KafkaCode::KAFKA_STORAGE_ERROR.0,
                    total_bytes: -1,
                    usable_bytes: -1,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let dirs = log_dir_descriptions(resp).unwrap();
        let a = &dirs["/a"];
        assert_eq!(a.error, None);
        assert_eq!((a.total_bytes, a.usable_bytes), (Some(100), Some(40)));
        let info = a.replicas[&TopicPartition::new("t", 2)];
        assert_eq!((info.size, info.is_future), (7, true));
        let b = &dirs["/b"];
        assert_eq!(
            b.error.as_ref().and_then(AdminError::code),
            Some(KafkaCode::KAFKA_STORAGE_ERROR)
        );
        assert_eq!(b.total_bytes, None);
    }

    #[test]
    fn describe_asks_for_every_partition() {
        assert_eq!(describe_all().topics, None);
    }

    #[test]
    fn empty_or_failed_log_dirs_answer_is_an_error() {
        let empty = log_dir_descriptions(DescribeLogDirsResponse::default()).unwrap_err();
        assert_eq!(empty.code(), Some(KafkaCode::CLUSTER_AUTHORIZATION_FAILED));
        let failed = log_dir_descriptions(DescribeLogDirsResponse {
            error_code: KafkaCode::UNKNOWN_SERVER_ERROR.0,
            ..Default::default()
        })
        .unwrap_err();
        assert_eq!(failed.code(), Some(KafkaCode::UNKNOWN_SERVER_ERROR));
    }

    #[test]
    fn replica_moves_are_grouped_per_broker_and_dir() {
        let op = AlterReplicaLogDirs::new([
            (TopicPartitionReplica::new("t", 0, 1), "/a".to_string()),
            (TopicPartitionReplica::new("t", 1, 1), "/a".to_string()),
            (TopicPartitionReplica::new("u", 0, 1), "/b".to_string()),
            (TopicPartitionReplica::new("t", 0, 2), "/a".to_string()),
        ]);
        let requests = op.requests();
        assert_eq!(requests.len(), 2);
        let one = &requests[&1];
        assert_eq!(one.dirs.len(), 2);
        assert_eq!(one.dirs[0].path, "/a");
        assert_eq!(one.dirs[0].topics[0].partitions, vec![0, 1]);
        assert_eq!(one.dirs[1].topics[0].name, "u");
        assert_eq!(requests[&2].dirs[0].topics[0].partitions, vec![0]);
    }

    #[test]
    fn replica_results_are_per_replica_and_per_broker() {
        let mut op = AlterReplicaLogDirs::new([
            (TopicPartitionReplica::new("t", 0, 1), "/a".to_string()),
            (TopicPartitionReplica::new("t", 1, 1), "/a".to_string()),
            (TopicPartitionReplica::new("t", 2, 1), "/a".to_string()),
            (TopicPartitionReplica::new("t", 0, 2), "/a".to_string()),
        ]);
        let resp = AlterReplicaLogDirsResponse {
            results: vec![AlterReplicaLogDirTopicResult {
                topic_name: "t".into(),
                partitions: [(0, 0), (1, KafkaCode::LOG_DIR_NOT_FOUND.0)]
                    .into_iter()
                    .map(|(p, e)| AlterReplicaLogDirPartitionResult {
                        partition_index: p,
                        error_code: e,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        };
        op.absorb(1, Ok(resp));
        op.absorb(
            2,
            Err(AdminError::Timeout {
                after: std::time::Duration::from_secs(1),
                last_cause: None,
            }),
        );
        let r = &op.results;
        assert_eq!(r[&TopicPartitionReplica::new("t", 0, 1)], Ok(()));
        assert_eq!(
            r[&TopicPartitionReplica::new("t", 1, 1)]
                .as_ref()
                .unwrap_err()
                .code(),
            Some(KafkaCode::LOG_DIR_NOT_FOUND)
        );
        assert!(matches!(
            r[&TopicPartitionReplica::new("t", 2, 1)],
            Err(AdminError::Protocol(_))
        ));
        assert_eq!(
            r[&TopicPartitionReplica::new("t", 0, 2)],
            Err(AdminError::Timeout {
                after: std::time::Duration::from_secs(1),
                last_cause: None
            })
        );
    }
}
