//! Heartbeat (classic groups) on the group's coordinator: UNKNOWN_MEMBER_ID,
//! ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS during a join phase, else NONE
//! (`classic_state`); NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS as for the
//! other coordinator APIs.

use kafka_core::protocol::messages::heartbeat::{HeartbeatRequest, HeartbeatResponse};
use kafka_core::protocol::ApiKey;

use super::super::cluster::SimCluster;
use super::super::wire::{answer, Frame};

/// The answer to `frame` arriving at `node`.
pub fn handle(cluster: &mut SimCluster, node: i32, frame: &Frame) -> Vec<u8> {
    let req: HeartbeatRequest = frame.decode().expect("Heartbeat decodes");
    let now_ms = cluster.txn.now_ms();
    let code = match cluster.txn.gate(ApiKey::Heartbeat, &req.group_id, node) {
        Err(code) => code,
        Ok(()) => {
            cluster
                .classic
                .heartbeat(&req.group_id, &req.member_id, req.generation_id, now_ms)
        }
    };
    cluster.count_error(code.0);
    answer(
        frame,
        &HeartbeatResponse {
            error_code: code.0,
            ..Default::default()
        },
    )
}
