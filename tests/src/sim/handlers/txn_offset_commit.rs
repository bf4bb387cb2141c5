//! TxnOffsetCommit on the group's coordinator: the offsets are staged in the producer's
//! open transaction and become the group's committed offsets only when its COMMIT
//! markers are written (dropped on abort). The producer id and epoch must be the
//! transactional id's current ones (PRODUCER_FENCED otherwise). Under transactions v1
//! (up to v4) the group must have been added with AddOffsetsToTxn (INVALID_TXN_STATE
//! otherwise); v5+ on a transactions-v2 cluster adds it implicitly.
//! CONCURRENT_TRANSACTIONS while the last transaction's markers are being written.
//! The member's generation and id are not checked (no group membership is simulated
//! here: every group is empty, as for an assign-mode consumer).

use kafka_core::protocol::messages::txn_offset_commit::response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_core::protocol::messages::txn_offset_commit::{
    TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};
use kafka_core::protocol::{ApiKey, KafkaCode};

use super::super::cluster::SimCluster;
use super::super::txn_state::Phase;
use super::super::wire::{answer, Frame};

/// The answer to `frame` arriving at `node`.
pub fn handle(cluster: &mut SimCluster, node: i32, frame: &Frame) -> Vec<u8> {
    let req: TxnOffsetCommitRequest = frame.decode().expect("TxnOffsetCommit decodes");
    let id = req.transactional_id.as_str();
    let group = req.group_id.as_str();
    let implicit = cluster.txn.v2 && frame.version >= 5;
    let txn = &mut cluster.txn;
    let outcome = txn
        .gate(ApiKey::TxnOffsetCommit, group, node)
        .and_then(|()| {
            txn.entry_for(id, req.producer_id, req.producer_epoch)?;
            let e = if implicit {
                let e = txn.ensure_open(id, true)?;
                e.groups.insert(group.to_string());
                e
            } else {
                let e = txn.ids.get_mut(id).expect("checked");
                if e.phase != Phase::Ongoing || !e.groups.contains(group) {
                    return Err(KafkaCode::INVALID_TXN_STATE);
                }
                e
            };
            for t in &req.topics {
                for p in &t.partitions {
                    let key = (group.to_string(), t.name.clone(), p.partition_index);
                    e.staged
                        .insert(key, (p.committed_offset, p.committed_leader_epoch));
                }
            }
            Ok(())
        });
    let code = outcome.err().map_or(0, |c| c.0);
    let topics = req
        .topics
        .iter()
        .map(|t| TxnOffsetCommitResponseTopic {
            name: t.name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    cluster.count_error(code);
                    TxnOffsetCommitResponsePartition {
                        partition_index: p.partition_index,
                        error_code: code,
                        ..Default::default()
                    }
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    answer(
        frame,
        &TxnOffsetCommitResponse {
            topics,
            ..Default::default()
        },
    )
}
