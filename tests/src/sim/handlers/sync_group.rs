//! SyncGroup (classic groups) on the group's coordinator: the leader's assignment is
//! handed to the classic coordinator (`classic_state`), which answers at once (a stable
//! group, an error) or parks the request until the leader's SyncGroup arrives.

use kafka_core::protocol::messages::sync_group::{SyncGroupRequest, SyncGroupResponse};
use kafka_core::protocol::{ApiKey, KafkaCode};

use super::super::classic_state::Reply;
use super::super::cluster::SimCluster;
use super::super::wire::{answer, Frame};

/// The answer to `frame` arriving at `node`, or the ticket it is parked under.
pub fn handle(cluster: &mut SimCluster, node: i32, frame: &Frame) -> Reply<Vec<u8>> {
    let req: SyncGroupRequest = frame.decode().expect("SyncGroup decodes");
    let group = req.group_id.as_str();
    let refuse = |code: KafkaCode| SyncGroupResponse {
        error_code: code.0,
        ..Default::default()
    };
    if let Err(code) = cluster.txn.gate(ApiKey::SyncGroup, group, node) {
        cluster.count_error(code.0);
        return Reply::Now(answer(frame, &refuse(code)));
    }
    // v5: the protocol named must be the group's — checked, as Kafka does, only for a
    // member of the current generation (others get UNKNOWN_MEMBER_ID or
    // ILLEGAL_GENERATION from the coordinator) and only where both sides name one (a
    // group reloaded empty after a coordinator move names none).
    if let Some(g) = cluster.classic.groups.get(group) {
        let current = g.members.contains_key(&req.member_id) && g.generation == req.generation_id;
        let differs = |theirs: &Option<String>, ours: &Option<String>| matches!((theirs, ours), (Some(t), Some(o)) if t != o);
        if current
            && (differs(&req.protocol_type, &g.protocol_type)
                || differs(&req.protocol_name, &g.protocol))
        {
            let code = KafkaCode::INCONSISTENT_GROUP_PROTOCOL;
            cluster.count_error(code.0);
            return Reply::Now(answer(frame, &refuse(code)));
        }
    }
    let assignments = req
        .assignments
        .iter()
        .map(|a| (a.member_id.clone(), a.assignment.clone()))
        .collect();
    let now_ms = cluster.txn.now_ms();
    match cluster.classic.sync(
        group,
        &req.member_id,
        req.generation_id,
        assignments,
        frame,
        now_ms,
    ) {
        Reply::Now(body) => {
            cluster.count_error(body.error_code);
            Reply::Now(answer(frame, &body))
        }
        Reply::Parked(t) => Reply::Parked(t),
    }
}
