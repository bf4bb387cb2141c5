//! JoinGroup (classic groups) on the group's coordinator: the request is read into a
//! [`Join`] and applied by the classic coordinator (`classic_state`), which answers at
//! once or parks it until the join phase ends. A request at the wrong broker is
//! NOT_COORDINATOR, one while the coordinator loads COORDINATOR_LOAD_IN_PROGRESS
//! (injected ones too).

use kafka_core::protocol::messages::join_group::{JoinGroupRequest, JoinGroupResponse};
use kafka_core::protocol::{ApiKey, KafkaCode};

use super::super::classic_state::{Join, Reply};
use super::super::cluster::SimCluster;
use super::super::wire::{answer, Frame};

/// The answer to `frame` arriving at `node`, or the ticket it is parked under.
pub fn handle(cluster: &mut SimCluster, node: i32, frame: &Frame) -> Reply<Vec<u8>> {
    let req: JoinGroupRequest = frame.decode().expect("JoinGroup decodes");
    if let Err(code) = cluster.txn.gate(ApiKey::JoinGroup, &req.group_id, node) {
        cluster.count_error(code.0);
        let body = JoinGroupResponse {
            error_code: code.0,
            generation_id: -1,
            member_id: req.member_id.clone(),
            ..Default::default()
        };
        return Reply::Now(answer(frame, &body));
    }
    let session = u64::try_from(req.session_timeout_ms).unwrap_or(0);
    let rebalance = if frame.version >= 1 {
        u64::try_from(req.rebalance_timeout_ms).unwrap_or(session)
    } else {
        session
    };
    let join = Join {
        member_id: req.member_id.clone(),
        client_id: frame.header.client_id.clone().unwrap_or_default(),
        session_timeout_ms: session,
        rebalance_timeout_ms: rebalance,
        protocol_type: req.protocol_type.clone(),
        protocols: req
            .protocols
            .iter()
            .map(|p| (p.name.clone(), p.metadata.clone()))
            .collect(),
        require_member_id: frame.version >= 4,
    };
    let now_ms = cluster.txn.now_ms();
    match cluster.classic.join(&req.group_id, join, frame, now_ms) {
        Reply::Now(body) => {
            if body.error_code != KafkaCode::MEMBER_ID_REQUIRED.0 {
                cluster.count_error(body.error_code);
            }
            Reply::Now(answer(frame, &body))
        }
        Reply::Parked(t) => Reply::Parked(t),
    }
}
