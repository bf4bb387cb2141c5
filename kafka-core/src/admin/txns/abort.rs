//! AbortTransaction (KIP-664): an ABORT marker for one producer's open transaction on
//! one partition, written with WriteTxnMarkers by the partition's leader.

use std::time::Duration;

use crate::admin::{AdminError, Call, OpContext, Operation, Timeout, TopicPartition};
use crate::cluster::Route;
use crate::protocol::messages::write_txn_markers::request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use crate::protocol::messages::write_txn_markers::{
    WriteTxnMarkersRequest, WriteTxnMarkersResponse,
};
use crate::protocol::KafkaCode;

/// What to abort (Java's `AbortTransactionSpec`): the partition and the producer whose
/// open transaction there is to end, as [`DescribeProducers`](crate::admin::DescribeProducers)
/// reports them (`producer_epoch`, and `coordinator_epoch` — use 0 when none is known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbortTransactionSpec {
    /// The partition with the open transaction.
    pub topic_partition: TopicPartition,
    /// The producer id.
    pub producer_id: i64,
    /// The producer's current epoch.
    pub producer_epoch: i16,
    /// The epoch of the coordinator that last wrote a marker for the producer.
    pub coordinator_epoch: i32,
}

/// Aborts a hanging transaction on one partition (WriteTxnMarkers to the partition's
/// leader, like Java's `abortTransaction`): for a transaction its coordinator no longer
/// knows, which blocks `read_committed` consumers at its first offset. Needs
/// `ClusterAction` on the cluster. A moved leader (NOT_LEADER_OR_FOLLOWER,
/// UNKNOWN_TOPIC_OR_PARTITION, REPLICA_NOT_AVAILABLE, BROKER_NOT_AVAILABLE) is looked up
/// again and retried until the deadline; other errors (INVALID_PRODUCER_EPOCH,
/// TRANSACTION_COORDINATOR_FENCED, CLUSTER_AUTHORIZATION_FAILED...) end the call.
#[derive(Debug)]
pub struct AbortTransaction {
    spec: AbortTransactionSpec,
    call: Call<WriteTxnMarkersRequest>,
    timeout: Timeout,
}

impl AbortTransaction {
    /// Aborts the transaction `spec` names.
    pub fn new(spec: AbortTransactionSpec) -> Self {
        let tp = &spec.topic_partition;
        let request = WriteTxnMarkersRequest {
            markers: vec![WritableTxnMarker {
                producer_id: spec.producer_id,
                producer_epoch: spec.producer_epoch,
                transaction_result: false,
                topics: vec![WritableTxnMarkerTopic {
                    name: tp.topic.clone(),
                    partition_indexes: vec![tp.partition],
                    ..Default::default()
                }],
                coordinator_epoch: spec.coordinator_epoch,
                ..Default::default()
            }],
            ..Default::default()
        };
        let route = Route::Leader {
            topic: tp.topic.clone(),
            partition: tp.partition,
        };
        AbortTransaction {
            call: Call::new(route, request),
            spec,
            timeout: Timeout::default(),
        }
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

/// The partition's error code from an answer, or a protocol error when the answer is
/// not exactly about the one marker, topic and partition asked for.
fn marker_code(
    spec: &AbortTransactionSpec,
    resp: WriteTxnMarkersResponse,
) -> Result<KafkaCode, AdminError> {
    let tp = &spec.topic_partition;
    let unexpected = |what: &str| {
        AdminError::Protocol(format!(
            "WriteTxnMarkers answer does not fit the abort of producer {} on {}-{}: {what}",
            spec.producer_id, tp.topic, tp.partition
        ))
    };
    let [marker] = <[_; 1]>::try_from(resp.markers).map_err(|_| unexpected("markers"))?;
    if marker.producer_id != spec.producer_id {
        return Err(unexpected("producer id"));
    }
    let [topic] = <[_; 1]>::try_from(marker.topics).map_err(|_| unexpected("topics"))?;
    if topic.name != tp.topic {
        return Err(unexpected("topic"));
    }
    let [partition] = <[_; 1]>::try_from(topic.partitions).map_err(|_| unexpected("partitions"))?;
    if partition.partition_index != tp.partition {
        return Err(unexpected("partition"));
    }
    Ok(KafkaCode(partition.error_code))
}

/// Codes after which the partition's leader is looked up again.
fn leader_moved(code: KafkaCode) -> bool {
    code == KafkaCode::NOT_LEADER_OR_FOLLOWER
        || code == KafkaCode::REPLICA_NOT_AVAILABLE
        || code == KafkaCode::BROKER_NOT_AVAILABLE
        || code == KafkaCode::UNKNOWN_TOPIC_OR_PARTITION
}

impl Operation for AbortTransaction {
    type Output = Result<(), AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        loop {
            let resp = match self.call.poll(cx, deadline)? {
                Ok(resp) => resp,
                Err(e) => return Some(Err(e)),
            };
            let code = match marker_code(&self.spec, resp) {
                Ok(code) => code,
                Err(e) => return Some(Err(e)),
            };
            if leader_moved(code) && !deadline.passed(cx) {
                let tp = &self.spec.topic_partition;
                cx.invalidate_leader(&tp.topic, tp.partition);
                self.call.retry(cx);
                continue;
            }
            return Some(AdminError::check(code.0, None));
        }
    }
}
