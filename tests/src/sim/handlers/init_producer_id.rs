//! InitProducerId. Without a transactional id: a new id at epoch 0, or the next epoch
//! of a known id (KIP-360 bumps). With one, on its coordinator (`txn_state`): a new id
//! for an unknown transactional id, else the next epoch (fencing every older
//! instance); an open transaction is aborted first (with an epoch bump) and the answer
//! is CONCURRENT_TRANSACTIONS until its markers are written, as while any markers are
//! pending; a bump asked with the current id and epoch (KIP-360) is checked against
//! them, and a retried one (the epoch before the last bump) gets the current epoch.

use kafka_core::protocol::messages::init_producer_id::{
    InitProducerIdRequest, InitProducerIdResponse,
};
use kafka_core::protocol::{ApiKey, KafkaCode};

use super::super::cluster::SimCluster;
use super::super::txn_state::{Phase, TxnEntry};
use super::super::wire::{answer, Frame};

/// The answer to `frame` arriving at `node`.
pub fn handle(cluster: &mut SimCluster, node: i32, frame: &Frame) -> Vec<u8> {
    let req: InitProducerIdRequest = frame.decode().expect("InitProducerId decodes");
    let body = match req.transactional_id.clone() {
        Some(id) => match transactional(cluster, node, &id, &req) {
            Ok((producer_id, producer_epoch)) => InitProducerIdResponse {
                producer_id,
                producer_epoch,
                ..Default::default()
            },
            Err(code) => {
                cluster.count_error(code.0);
                cluster.txn.count(code);
                InitProducerIdResponse {
                    error_code: code.0,
                    producer_id: -1,
                    producer_epoch: -1,
                    ..Default::default()
                }
            }
        },
        None => {
            let (id, epoch) = match cluster.producer_ids.get(&req.producer_id) {
                Some(&e) if req.producer_id >= 0 => (req.producer_id, e + 1),
                _ => {
                    cluster.next_producer_id += 1;
                    (cluster.next_producer_id - 1, 0)
                }
            };
            cluster.producer_ids.insert(id, epoch);
            InitProducerIdResponse {
                producer_id: id,
                producer_epoch: epoch,
                ..Default::default()
            }
        }
    };
    answer(frame, &body)
}

/// Kafka's `prepareInitProducerIdTransit`, on the coordinator of `id`.
fn transactional(
    cluster: &mut SimCluster,
    node: i32,
    id: &str,
    req: &InitProducerIdRequest,
) -> Result<(i64, i16), KafkaCode> {
    if id.is_empty() {
        return Err(KafkaCode::INVALID_REQUEST);
    }
    cluster.txn.gate(ApiKey::InitProducerId, id, node)?;
    if !cluster.txn.ids.contains_key(id) {
        cluster.next_producer_id += 1;
        let entry = TxnEntry {
            pid: cluster.next_producer_id - 1,
            epoch: -1,
            last_epoch: -1,
            timeout_ms: 60_000,
            phase: Phase::Empty,
            v2: false,
            partitions: Default::default(),
            groups: Default::default(),
            staged: Default::default(),
            started_ms: 0,
            markers_due_ms: 0,
            marker_epoch: -1,
        };
        cluster.txn.ids.insert(id.to_string(), entry);
    }
    let txn = &mut cluster.txn;
    let e = txn.ids.get_mut(id).expect("present");
    let expected = (req.producer_id >= 0).then_some((req.producer_id, req.producer_epoch));
    if let Some((pid, _)) = expected {
        if e.epoch >= 0 && pid != e.pid {
            return Err(KafkaCode::PRODUCER_FENCED);
        }
    }
    match e.phase {
        Phase::PrepareCommit | Phase::PrepareAbort => Err(KafkaCode::CONCURRENT_TRANSACTIONS),
        Phase::Ongoing => {
            // Abort what the older instance left open (fencing it), then let the
            // client retry once the markers are written.
            txn.counters.fenced_by_init += 1;
            txn.fence_abort(id);
            Err(KafkaCode::CONCURRENT_TRANSACTIONS)
        }
        Phase::Empty | Phase::CompleteCommit | Phase::CompleteAbort => {
            match expected {
                Some((_, epoch)) if e.epoch >= 0 && epoch != e.epoch => {
                    if epoch == e.last_epoch {
                        // A retried bump whose answer was lost.
                        return Ok((e.pid, e.epoch));
                    }
                    return Err(KafkaCode::PRODUCER_FENCED);
                }
                _ => {}
            }
            // Kafka's `prepareIncrementProducerEpoch`: a bump asked with the current
            // epoch (KIP-360) remembers it, so its retry is recognized; a new instance's
            // bump forgets it, so no older epoch passes for a retry of anything.
            e.last_epoch = if expected.is_some() { e.epoch } else { -1 };
            e.epoch += 1;
            e.timeout_ms = u64::try_from(req.transaction_timeout_ms).unwrap_or(60_000);
            Ok((e.pid, e.epoch))
        }
    }
}
