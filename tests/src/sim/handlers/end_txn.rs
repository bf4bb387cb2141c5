//! EndTxn on the transactional id's coordinator (Kafka's `endTransaction`): an open
//! transaction moves to PrepareCommit or PrepareAbort and is answered at once, its
//! markers written after the marker delay (`txn_state`); a retry of an end already
//! applied is answered CONCURRENT_TRANSACTIONS while its markers are pending and
//! success once they are written; the other decision is INVALID_TXN_STATE; another
//! epoch is PRODUCER_FENCED. Transactions v2 (v5+ on a v2 cluster): the epoch is
//! bumped and the answer carries the new one; a retry comes with the epoch before the
//! bump; an abort with nothing open is allowed (and bumps too); while markers are
//! pending, an EndTxn at the new epoch is PRODUCER_FENCED (as Kafka 4.x answers).

use kafka_core::protocol::messages::end_txn::{EndTxnRequest, EndTxnResponse};
use kafka_core::protocol::{ApiKey, KafkaCode};

use super::super::cluster::SimCluster;
use super::super::txn_state::Phase;
use super::super::wire::{answer, Frame};

/// The answer to `frame` arriving at `node`.
pub fn handle(cluster: &mut SimCluster, node: i32, frame: &Frame) -> Vec<u8> {
    let req: EndTxnRequest = frame.decode().expect("EndTxn decodes");
    let bump = cluster.txn.v2 && frame.version >= 5;
    let body = match end(cluster, node, &req, bump) {
        Ok((producer_id, producer_epoch)) => EndTxnResponse {
            producer_id,
            producer_epoch,
            ..Default::default()
        },
        Err(code) => {
            cluster.count_error(code.0);
            cluster.txn.count(code);
            EndTxnResponse {
                error_code: code.0,
                producer_id: -1,
                producer_epoch: -1,
                ..Default::default()
            }
        }
    };
    answer(frame, &body)
}

fn end(
    cluster: &mut SimCluster,
    node: i32,
    req: &EndTxnRequest,
    bump: bool,
) -> Result<(i64, i16), KafkaCode> {
    let id = req.transactional_id.as_str();
    let txn = &mut cluster.txn;
    txn.gate(ApiKey::EndTxn, id, node)?;
    let Some(e) = txn.ids.get(id) else {
        return Err(KafkaCode::INVALID_PRODUCER_ID_MAPPING);
    };
    if e.pid != req.producer_id {
        return Err(KafkaCode::INVALID_PRODUCER_ID_MAPPING);
    }
    let commit = req.committed;
    let ended = matches!(
        e.phase,
        Phase::PrepareCommit | Phase::PrepareAbort | Phase::CompleteCommit | Phase::CompleteAbort
    );
    // v2: the retry of an EndTxn that bumped the epoch comes with the epoch before.
    let retry = bump && ended && e.last_epoch >= 0 && req.producer_epoch == e.last_epoch;
    if req.producer_epoch != e.epoch && !retry {
        return Err(KafkaCode::PRODUCER_FENCED);
    }
    let preparing = matches!(e.phase, Phase::PrepareCommit | Phase::PrepareAbort);
    if bump && preparing && !retry {
        // Kafka 4.x (`endTransaction` under v2): while the last transaction's markers
        // are pending only a retry (the epoch before the bump) is valid; the new epoch
        // is answered PRODUCER_FENCED.
        txn.counters.prepare_fences += 1;
        return Err(KafkaCode::PRODUCER_FENCED);
    }
    let current = (e.pid, e.epoch);
    let same = |c: bool| c == commit;
    match e.phase {
        Phase::Ongoing if !retry => {
            txn.prepare_end(id, commit, bump);
            let e = &txn.ids[id];
            Ok((e.pid, e.epoch))
        }
        Phase::PrepareCommit | Phase::PrepareAbort => {
            if same(e.phase == Phase::PrepareCommit) {
                txn.counters.end_retries += 1;
                Err(KafkaCode::CONCURRENT_TRANSACTIONS)
            } else {
                Err(KafkaCode::INVALID_TXN_STATE)
            }
        }
        Phase::CompleteCommit | Phase::CompleteAbort
            if same(e.phase == Phase::CompleteCommit) && (retry || !bump) =>
        {
            txn.counters.end_retries += 1;
            Ok(current)
        }
        Phase::Empty | Phase::CompleteCommit | Phase::CompleteAbort
            if bump && !commit && !retry =>
        {
            // v2: an abort with nothing open (the records never reached a leader) still
            // ends the transaction with a new epoch.
            txn.prepare_end(id, false, true);
            let e = txn.ids.get_mut(id).expect("known");
            e.phase = Phase::CompleteAbort;
            Ok((e.pid, e.epoch))
        }
        _ => Err(KafkaCode::INVALID_TXN_STATE),
    }
}
