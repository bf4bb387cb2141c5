//! The KRaft quorum and broker registrations: DescribeQuorum, UnregisterBroker,
//! AddRaftVoter and RemoveRaftVoter. Like Java's admin client, each goes to any broker
//! (brokers forward them to the active controller), one request per call.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::admin::{AdminError, Call, OpContext, Operation, Timeout};
use crate::cluster::Route;
use crate::protocol::messages::add_raft_voter::request::Listener as AddListener;
use crate::protocol::messages::add_raft_voter::AddRaftVoterRequest;
use crate::protocol::messages::describe_quorum::request::{
    PartitionData as AskPartition, TopicData as AskTopic,
};
use crate::protocol::messages::describe_quorum::response::{
    Node as WireNode, PartitionData, ReplicaState,
};
use crate::protocol::messages::describe_quorum::{DescribeQuorumRequest, DescribeQuorumResponse};
use crate::protocol::messages::remove_raft_voter::RemoveRaftVoterRequest;
use crate::protocol::messages::unregister_broker::UnregisterBrokerRequest;
use crate::protocol::{KafkaCode, Uuid};

/// The metadata log's topic, the one partition the KRaft quorum replicates.
const METADATA_TOPIC: &str = "__cluster_metadata";

/// A listener of a KRaft voter (controller): name, host and port.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RaftVoterEndpoint {
    /// Listener name (e.g. `CONTROLLER`).
    pub name: String,
    /// Host.
    pub host: String,
    /// Port.
    pub port: u16,
}

impl RaftVoterEndpoint {
    /// The listener `name` at `host`:`port`.
    pub fn new(name: impl Into<String>, host: impl Into<String>, port: u16) -> Self {
        RaftVoterEndpoint {
            name: name.into(),
            host: host.into(),
            port,
        }
    }
}

/// A voter or observer of the metadata quorum, as the leader tracks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumReplica {
    /// Node id.
    pub replica_id: i32,
    /// The replica's metadata log directory id (`Uuid::ZERO` if the broker did not say:
    /// DescribeQuorum before v2, or a static quorum).
    pub replica_directory_id: Uuid,
    /// The replica's log end offset (-1 if unknown).
    pub log_end_offset: i64,
    /// When the replica last fetched from the leader (ms since the epoch), if known.
    pub last_fetch_timestamp: Option<i64>,
    /// When the replica was last caught up with the leader (ms since the epoch), if known.
    pub last_caught_up_timestamp: Option<i64>,
}

/// The KRaft metadata quorum as its leader describes it (Java's `QuorumInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumInfo {
    /// The leader's node id.
    pub leader_id: i32,
    /// The leader's epoch.
    pub leader_epoch: i32,
    /// The metadata log's high watermark.
    pub high_watermark: i64,
    /// The voters (controllers).
    pub voters: Vec<QuorumReplica>,
    /// The observers (brokers, controllers that do not vote).
    pub observers: Vec<QuorumReplica>,
    /// The voters' listeners by node id (DescribeQuorum v2+; empty before).
    pub nodes: BTreeMap<i32, Vec<RaftVoterEndpoint>>,
}

fn replica(r: ReplicaState) -> QuorumReplica {
    let known = |t: i64| (t != -1).then_some(t);
    QuorumReplica {
        replica_id: r.replica_id,
        replica_directory_id: r.replica_directory_id,
        log_end_offset: r.log_end_offset,
        last_fetch_timestamp: known(r.last_fetch_timestamp),
        last_caught_up_timestamp: known(r.last_caught_up_timestamp),
    }
}

fn quorum_info(p: PartitionData, nodes: Vec<WireNode>) -> QuorumInfo {
    QuorumInfo {
        leader_id: p.leader_id,
        leader_epoch: p.leader_epoch,
        high_watermark: p.high_watermark,
        voters: p.current_voters.into_iter().map(replica).collect(),
        observers: p.observers.into_iter().map(replica).collect(),
        nodes: nodes
            .into_iter()
            .map(|n| {
                let endpoints = n
                    .listeners
                    .into_iter()
                    .map(|l| RaftVoterEndpoint::new(l.name, l.host, l.port))
                    .collect();
                (n.node_id, endpoints)
            })
            .collect(),
    }
}

/// What one DescribeQuorum answer means: the quorum, a retriable error to ask again
/// after, or the call's failure.
fn described_quorum(resp: DescribeQuorumResponse) -> Result<QuorumInfo, AdminError> {
    AdminError::check(resp.error_code, resp.error_message.as_deref())?;
    let [topic] = <[_; 1]>::try_from(resp.topics).map_err(|t| {
        AdminError::Protocol(format!(
            "{} topics in DescribeQuorum answer, not 1",
            t.len()
        ))
    })?;
    if topic.topic_name != METADATA_TOPIC {
        return Err(AdminError::Protocol(format!(
            "DescribeQuorum answered about topic {}",
            topic.topic_name
        )));
    }
    let [partition] = <[_; 1]>::try_from(topic.partitions).map_err(|p| {
        AdminError::Protocol(format!(
            "{} partitions in DescribeQuorum answer, not 1",
            p.len()
        ))
    })?;
    if partition.partition_index != 0 {
        return Err(AdminError::Protocol(format!(
            "DescribeQuorum answered about partition {}",
            partition.partition_index
        )));
    }
    AdminError::check(partition.error_code, partition.error_message.as_deref())?;
    Ok(quorum_info(partition, resp.nodes))
}

/// Whether a DescribeQuorum answer carries a retriable code (top-level or partition):
/// Java retries those until the deadline.
fn quorum_retriable(resp: &DescribeQuorumResponse) -> Option<crate::client::Cause> {
    let partition_codes = resp
        .topics
        .iter()
        .flat_map(|t| &t.partitions)
        .map(|p| p.error_code);
    std::iter::once(resp.error_code)
        .chain(partition_codes)
        .find(|&c| KafkaCode(c).is_retriable())
        .map(|c| crate::client::Cause::code(c, None))
}

/// Describes the KRaft metadata quorum: leader, epoch, high watermark, voters and
/// observers with their log end offsets and fetch times (DescribeQuorum to any broker,
/// which forwards it to the active controller). Retriable error codes are retried until
/// the deadline.
#[derive(Debug)]
pub struct DescribeMetadataQuorum {
    call: Call<DescribeQuorumRequest>,
    timeout: Timeout,
}

impl Default for DescribeMetadataQuorum {
    fn default() -> Self {
        Self::new()
    }
}

impl DescribeMetadataQuorum {
    /// Describes the quorum.
    pub fn new() -> Self {
        let request = DescribeQuorumRequest {
            topics: vec![AskTopic {
                topic_name: METADATA_TOPIC.into(),
                partitions: vec![AskPartition {
                    partition_index: 0,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        DescribeMetadataQuorum {
            call: Call::new(Route::Any, request),
            timeout: Timeout::default(),
        }
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

impl Operation for DescribeMetadataQuorum {
    type Output = Result<QuorumInfo, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        let outcome = self.call.poll_retrying(cx, deadline, quorum_retriable)?;
        Some(outcome.and_then(described_quorum))
    }
}

/// Removes a broker's registration from the cluster metadata (UnregisterBroker to any
/// broker, forwarded to the controller), for a broker that is gone for good. Like Java,
/// REQUEST_TIMED_OUT is retried until the deadline; any other error fails the call
/// (BROKER_ID_NOT_REGISTERED for an id the cluster does not know).
#[derive(Debug)]
pub struct UnregisterBroker {
    call: Call<UnregisterBrokerRequest>,
    timeout: Timeout,
}

impl UnregisterBroker {
    /// Unregisters broker `broker_id`.
    pub fn new(broker_id: i32) -> Self {
        let request = UnregisterBrokerRequest {
            broker_id,
            ..Default::default()
        };
        UnregisterBroker {
            call: Call::new(Route::Any, request),
            timeout: Timeout::default(),
        }
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

impl Operation for UnregisterBroker {
    type Output = Result<(), AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        let outcome = self.call.poll_retrying(cx, deadline, |r| {
            (KafkaCode(r.error_code) == KafkaCode::REQUEST_TIMED_OUT)
                .then(|| crate::client::Cause::code(r.error_code, None))
        })?;
        Some(outcome.and_then(|r| AdminError::check(r.error_code, r.error_message.as_deref())))
    }
}

/// Adds a controller to the KRaft voter set (AddRaftVoter to any broker, forwarded to
/// the active controller; KIP-853). Needs a dynamic quorum (`kraft.version` 1): a
/// static `controller.quorum.voters` quorum refuses with UNSUPPORTED_VERSION. Errors
/// are not retried (as in Java).
#[derive(Debug)]
pub struct AddRaftVoter {
    request: AddRaftVoterRequest,
    call: Option<Call<AddRaftVoterRequest>>,
    timeout: Timeout,
}

impl AddRaftVoter {
    /// Adds voter `voter_id` with metadata log directory `directory_id`, reachable at
    /// `endpoints`.
    pub fn new(
        voter_id: i32,
        directory_id: Uuid,
        endpoints: impl IntoIterator<Item = RaftVoterEndpoint>,
    ) -> Self {
        let request = AddRaftVoterRequest {
            // The codec's default is `Some("")`, which the broker would check against its
            // cluster id; `None` skips the check.
            cluster_id: None,
            voter_id,
            voter_directory_id: directory_id,
            listeners: endpoints
                .into_iter()
                .map(|e| AddListener {
                    name: e.name,
                    host: e.host,
                    port: e.port,
                    ..Default::default()
                })
                .collect(),
            ack_when_committed: true,
            ..Default::default()
        };
        AddRaftVoter {
            request,
            call: None,
            timeout: Timeout::default(),
        }
    }

    /// Only if the cluster has this id (the broker refuses with INCONSISTENT_CLUSTER_ID).
    pub fn cluster_id(mut self, id: impl Into<String>) -> Self {
        self.request.cluster_id = Some(id.into());
        self
    }

    /// Overrides `default.api.timeout.ms` (also the broker-side `timeout_ms`).
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

impl Operation for AddRaftVoter {
    type Output = Result<(), AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if self.call.is_none() {
            self.request.timeout_ms = self.timeout.as_ms(cx);
            self.call = Some(Call::new(Route::Any, self.request.clone()));
        }
        let outcome = self.call.as_mut()?.poll(cx, deadline)?;
        Some(outcome.and_then(|r| AdminError::check(r.error_code, r.error_message.as_deref())))
    }
}

/// Removes a controller from the KRaft voter set (RemoveRaftVoter to any broker,
/// forwarded to the active controller; KIP-853). Needs a dynamic quorum, like
/// [`AddRaftVoter`]. Errors are not retried (as in Java).
#[derive(Debug)]
pub struct RemoveRaftVoter {
    call: Call<RemoveRaftVoterRequest>,
    timeout: Timeout,
}

impl RemoveRaftVoter {
    /// Removes voter `voter_id` with metadata log directory `directory_id`.
    pub fn new(voter_id: i32, directory_id: Uuid) -> Self {
        let request = RemoveRaftVoterRequest {
            cluster_id: None,
            voter_id,
            voter_directory_id: directory_id,
            ..Default::default()
        };
        RemoveRaftVoter {
            call: Call::new(Route::Any, request),
            timeout: Timeout::default(),
        }
    }

    /// Only if the cluster has this id (the broker refuses with INCONSISTENT_CLUSTER_ID).
    pub fn cluster_id(mut self, id: impl Into<String>) -> Self {
        self.call.request_mut().cluster_id = Some(id.into());
        self
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

impl Operation for RemoveRaftVoter {
    type Output = Result<(), AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        let outcome = self.call.poll(cx, deadline)?;
        Some(outcome.and_then(|r| AdminError::check(r.error_code, r.error_message.as_deref())))
    }
}

#[cfg(test)]
mod tests;
