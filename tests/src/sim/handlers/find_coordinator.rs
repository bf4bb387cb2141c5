//! FindCoordinator for both key types (0: group, 1: transaction): the coordinator of
//! a key is the running broker chosen by a hash of the key (`txn_state`), so it moves
//! when that broker stops or another starts. v4+ answers every key of the batch; older
//! versions the one key. Injected COORDINATOR_NOT_AVAILABLE per key while the
//! coordinator faults are on.

use kafka_core::protocol::messages::find_coordinator::response::Coordinator;
use kafka_core::protocol::messages::find_coordinator::{
    FindCoordinatorRequest, FindCoordinatorResponse,
};
use kafka_core::protocol::KafkaCode;

use super::super::cluster::SimCluster;
use super::super::wire::{answer, Frame};

/// The answer to `frame`.
pub fn handle(cluster: &mut SimCluster, frame: &Frame) -> Vec<u8> {
    let req: FindCoordinatorRequest = frame.decode().expect("FindCoordinator decodes");
    let keys = if frame.version >= 4 {
        req.coordinator_keys.clone()
    } else {
        vec![req.key.clone()]
    };
    let coordinators: Vec<Coordinator> = keys
        .into_iter()
        .map(|key| {
            let found = if cluster.txn.lookup_refused() {
                None
            } else {
                cluster.txn.coordinator_of(&key)
            };
            let c = match found.and_then(|n| cluster.broker(n)) {
                Some(b) => Coordinator {
                    key,
                    node_id: b.id,
                    host: b.host.clone(),
                    port: b.port,
                    ..Default::default()
                },
                None => Coordinator {
                    key,
                    node_id: -1,
                    port: -1,
                    error_code: KafkaCode::COORDINATOR_NOT_AVAILABLE.0,
                    ..Default::default()
                },
            };
            cluster.count_error(c.error_code);
            c
        })
        .collect();
    let body = if frame.version >= 4 {
        FindCoordinatorResponse {
            coordinators,
            ..Default::default()
        }
    } else {
        let c = coordinators.into_iter().next().unwrap_or_default();
        FindCoordinatorResponse {
            error_code: c.error_code,
            node_id: c.node_id,
            host: c.host,
            port: c.port,
            ..Default::default()
        }
    };
    answer(frame, &body)
}
