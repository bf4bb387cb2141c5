//! LeaveGroup (classic groups) on the group's coordinator: each member named (v3+: in
//! the array; before: the one `member_id`) is removed and the group rebalances
//! (`classic_state`); an unknown one is UNKNOWN_MEMBER_ID in its entry (before v3, at the
//! top).

use kafka_core::protocol::messages::leave_group::response::MemberResponse;
use kafka_core::protocol::messages::leave_group::{LeaveGroupRequest, LeaveGroupResponse};
use kafka_core::protocol::ApiKey;

use super::super::cluster::SimCluster;
use super::super::wire::{answer, Frame};

/// The answer to `frame` arriving at `node`.
pub fn handle(cluster: &mut SimCluster, node: i32, frame: &Frame) -> Vec<u8> {
    let req: LeaveGroupRequest = frame.decode().expect("LeaveGroup decodes");
    let group = req.group_id.as_str();
    let mut body = LeaveGroupResponse::default();
    if let Err(code) = cluster.txn.gate(ApiKey::LeaveGroup, group, node) {
        cluster.count_error(code.0);
        body.error_code = code.0;
        return answer(frame, &body);
    }
    let now_ms = cluster.txn.now_ms();
    if frame.version < 3 {
        let code = cluster.classic.leave(group, &req.member_id, now_ms);
        cluster.count_error(code.0);
        body.error_code = code.0;
        return answer(frame, &body);
    }
    for m in &req.members {
        let code = cluster.classic.leave(group, &m.member_id, now_ms);
        cluster.count_error(code.0);
        body.members.push(MemberResponse {
            member_id: m.member_id.clone(),
            group_instance_id: m.group_instance_id.clone(),
            error_code: code.0,
            ..Default::default()
        });
    }
    answer(frame, &body)
}
