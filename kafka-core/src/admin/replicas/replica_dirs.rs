//! DescribeReplicaLogDirs: where given replicas live, DescribeLogDirs to each replica's
//! broker about its replicas only.

use std::collections::BTreeMap;
use std::time::Duration;

use super::log_dirs::PerBroker;
use super::TopicPartitionReplica;
use crate::admin::{AdminError, OpContext, Operation, Timeout};
use crate::protocol::messages::describe_log_dirs::request::DescribableLogDirTopic;
use crate::protocol::messages::describe_log_dirs::{
    DescribeLogDirsRequest, DescribeLogDirsResponse,
};
use crate::protocol::KafkaCode;

/// Where a replica lives on its broker (Java's `ReplicaLogDirInfo`): its current log dir
/// and, while it moves between dirs, the future replica's. All `None` when the broker
/// does not host the replica.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplicaLogDirInfo {
    /// The log dir holding the replica.
    pub current_replica_log_dir: Option<String>,
    /// How far the current replica's log end offset is behind the high watermark.
    pub current_replica_offset_lag: Option<i64>,
    /// The log dir the replica moves to (`AlterReplicaLogDirs`), while it catches up.
    pub future_replica_log_dir: Option<String>,
    /// How far the future replica is behind the current one.
    pub future_replica_offset_lag: Option<i64>,
}

/// Describes where replicas live: DescribeLogDirs to each replica's broker, asking only
/// about its replicas; one result per replica. Like Java, an offline log dir
/// (KAFKA_STORAGE_ERROR) is skipped, any other dir error fails that broker's replicas,
/// and a failed broker says nothing about the others.
#[derive(Debug)]
pub struct DescribeReplicaLogDirs {
    replicas: Vec<TopicPartitionReplica>,
    calls: Option<PerBroker<DescribeLogDirsRequest>>,
    timeout: Timeout,
    results: BTreeMap<TopicPartitionReplica, Result<ReplicaLogDirInfo, AdminError>>,
}

impl DescribeReplicaLogDirs {
    /// Describes `replicas`.
    pub fn new(replicas: impl IntoIterator<Item = TopicPartitionReplica>) -> Self {
        let mut replicas: Vec<_> = replicas.into_iter().collect();
        replicas.sort();
        replicas.dedup();
        DescribeReplicaLogDirs {
            replicas,
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

    /// One request per broker: its replicas, by topic (sorted, so the same input gives
    /// the same bytes).
    fn requests(&self) -> BTreeMap<i32, DescribeLogDirsRequest> {
        let mut by_broker: BTreeMap<i32, BTreeMap<&str, Vec<i32>>> = BTreeMap::new();
        for r in &self.replicas {
            by_broker
                .entry(r.broker_id)
                .or_default()
                .entry(&r.topic)
                .or_default()
                .push(r.partition);
        }
        by_broker
            .into_iter()
            .map(|(broker, topics)| {
                let topics = topics
                    .into_iter()
                    .map(|(topic, partitions)| DescribableLogDirTopic {
                        topic: topic.to_owned(),
                        partitions,
                        ..Default::default()
                    })
                    .collect();
                let request = DescribeLogDirsRequest {
                    topics: Some(topics),
                    ..Default::default()
                };
                (broker, request)
            })
            .collect()
    }

    /// Records one broker's answer (or failure) for its replicas.
    fn absorb(&mut self, broker: i32, outcome: Result<DescribeLogDirsResponse, AdminError>) {
        let mine = self.replicas.iter().filter(|r| r.broker_id == broker);
        let infos = outcome.and_then(|resp| replica_infos(broker, resp));
        for r in mine {
            let result = match &infos {
                Ok(infos) => Ok(infos
                    .get(&(r.topic.clone(), r.partition))
                    .cloned()
                    .unwrap_or_default()),
                Err(e) => Err(e.clone()),
            };
            self.results.insert(r.clone(), result);
        }
    }
}

/// Every replica one broker reported, by (topic, partition); an answer without any dir
/// (as Java reads it) reports none.
fn replica_infos(
    broker: i32,
    resp: DescribeLogDirsResponse,
) -> Result<BTreeMap<(String, i32), ReplicaLogDirInfo>, AdminError> {
    AdminError::check(resp.error_code, None)?;
    let mut owned: BTreeMap<(String, i32), ReplicaLogDirInfo> = BTreeMap::new();
    for dir in resp.results {
        let code = KafkaCode(dir.error_code);
        if code == KafkaCode::KAFKA_STORAGE_ERROR {
            continue; // offline: no replica info
        }
        if code != KafkaCode::NONE {
            return Err(AdminError::Protocol(format!(
                "broker {broker} answered {code} for log dir {}",
                dir.log_dir
            )));
        }
        for t in dir.topics {
            for p in t.partitions {
                let info = owned
                    .entry((t.name.clone(), p.partition_index))
                    .or_default();
                let lag = (p.offset_lag >= 0).then_some(p.offset_lag);
                if p.is_future_key {
                    info.future_replica_log_dir = Some(dir.log_dir.clone());
                    info.future_replica_offset_lag = lag;
                } else {
                    info.current_replica_log_dir = Some(dir.log_dir.clone());
                    info.current_replica_offset_lag = lag;
                }
            }
        }
    }
    Ok(owned)
}

impl Operation for DescribeReplicaLogDirs {
    type Output =
        Result<BTreeMap<TopicPartitionReplica, Result<ReplicaLogDirInfo, AdminError>>, AdminError>;

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
    use crate::admin::groups::scripted::{reply, two_brokers, Cluster};
    use crate::protocol::messages::describe_log_dirs::response::{
        DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
    };
    use crate::protocol::ApiKey;

    fn dir(path: &str, code: KafkaCode, parts: &[(&str, i32, i64, bool)]) -> DescribeLogDirsResult {
        let mut topics: BTreeMap<&str, Vec<DescribeLogDirsPartition>> = BTreeMap::new();
        for &(t, p, lag, future) in parts {
            topics.entry(t).or_default().push(DescribeLogDirsPartition {
                partition_index: p,
                offset_lag: lag,
                is_future_key: future,
                ..Default::default()
            });
        }
        DescribeLogDirsResult {
            log_dir: path.into(),
            error_code: code.0,
            topics: topics
                .into_iter()
                .map(|(name, partitions)| DescribeLogDirsTopic {
                    name: name.into(),
                    partitions,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn each_broker_is_asked_about_its_replicas_and_answers_per_replica() {
        let mut cluster = Cluster::new();
        let op = DescribeReplicaLogDirs::new([
            TopicPartitionReplica::new("t", 0, 1),
            TopicPartitionReplica::new("t", 1, 1),
            TopicPartitionReplica::new("u", 0, 1),
            TopicPartitionReplica::new("t", 0, 2),
        ]);
        let out = cluster.run(op, |host, seen| match seen.api() {
            ApiKey::Metadata => reply(seen, &two_brokers()),
            ApiKey::DescribeLogDirs => {
                let req: DescribeLogDirsRequest = seen.decode();
                let asked: Vec<(String, Vec<i32>)> = req
                    .topics
                    .unwrap()
                    .into_iter()
                    .map(|t| (t.topic, t.partitions))
                    .collect();
                let resp = if host == "b1" {
                    assert_eq!(
                        asked,
                        [("t".to_string(), vec![0, 1]), ("u".to_string(), vec![0])]
                    );
                    DescribeLogDirsResponse {
                        results: vec![
                            dir(
                                "/a",
                                KafkaCode::NONE,
                                &[("t", 0, 0, false), ("t", 1, 3, false)],
                            ),
                            dir("/b", KafkaCode::NONE, &[("t", 1, 9, true)]),
                            dir("/c", KafkaCode::KAFKA_STORAGE_ERROR, &[]),
                        ],
                        ..Default::default()
                    }
                } else {
                    assert_eq!(asked, [("t".to_string(), vec![0])]);
                    DescribeLogDirsResponse {
                        results: vec![dir("/x", KafkaCode::LOG_DIR_NOT_FOUND, &[])],
                        ..Default::default()
                    }
                };
                reply(seen, &resp)
            }
            other => panic!("unexpected {other:?}"),
        });
        let out = out.unwrap();
        let t0 = out[&TopicPartitionReplica::new("t", 0, 1)]
            .as_ref()
            .unwrap();
        assert_eq!(t0.current_replica_log_dir.as_deref(), Some("/a"));
        assert_eq!(
            (
                t0.current_replica_offset_lag,
                t0.future_replica_log_dir.as_deref()
            ),
            (Some(0), None)
        );
        let t1 = out[&TopicPartitionReplica::new("t", 1, 1)]
            .as_ref()
            .unwrap();
        assert_eq!(t1.current_replica_log_dir.as_deref(), Some("/a"));
        assert_eq!(t1.future_replica_log_dir.as_deref(), Some("/b"));
        assert_eq!(t1.future_replica_offset_lag, Some(9));
        let absent = out[&TopicPartitionReplica::new("u", 0, 1)]
            .as_ref()
            .unwrap();
        assert_eq!(
            absent,
            &ReplicaLogDirInfo::default(),
            "not hosted: nothing known"
        );
        let failed = out[&TopicPartitionReplica::new("t", 0, 2)]
            .as_ref()
            .unwrap_err();
        assert!(
            matches!(failed, AdminError::Protocol(m) if m.contains("LOG_DIR_NOT_FOUND")),
            "{failed}"
        );
    }
}
