//! AddOffsetsToTxn (transactions v1): on the transactional id's coordinator, with its
//! producer id and exact epoch, the group joins the open transaction (opening one), so
//! a TxnOffsetCommit for it may follow; CONCURRENT_TRANSACTIONS while markers are
//! being written.

use kafka_core::protocol::messages::add_offsets_to_txn::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse,
};
use kafka_core::protocol::ApiKey;

use super::super::cluster::SimCluster;
use super::super::wire::{answer, Frame};

/// The answer to `frame` arriving at `node`.
pub fn handle(cluster: &mut SimCluster, node: i32, frame: &Frame) -> Vec<u8> {
    let req: AddOffsetsToTxnRequest = frame.decode().expect("AddOffsetsToTxn decodes");
    let id = req.transactional_id.as_str();
    let txn = &mut cluster.txn;
    let outcome = txn.gate(ApiKey::AddOffsetsToTxn, id, node).and_then(|()| {
        txn.entry_for(id, req.producer_id, req.producer_epoch)?;
        let e = txn.ensure_open(id, false)?;
        e.groups.insert(req.group_id.clone());
        Ok(())
    });
    let code = outcome.err().map_or(0, |c| c.0);
    cluster.count_error(code);
    let body = AddOffsetsToTxnResponse {
        error_code: code,
        ..Default::default()
    };
    answer(frame, &body)
}
