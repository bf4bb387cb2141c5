//! InitProducerId for idempotent producers: a new id at epoch 0, or the next epoch of a
//! known id (KIP-360 bumps).

use kafka_core::protocol::messages::init_producer_id::{
    InitProducerIdRequest, InitProducerIdResponse,
};

use super::super::cluster::SimCluster;
use super::super::wire::{answer, Frame};

/// The answer to `frame`.
pub fn handle(cluster: &mut SimCluster, frame: &Frame) -> Vec<u8> {
    let req: InitProducerIdRequest = frame.decode().expect("InitProducerId decodes");
    assert!(
        req.transactional_id.is_none(),
        "the simulated cluster has no transaction coordinator yet"
    );
    let (id, epoch) = match cluster.producer_ids.get(&req.producer_id) {
        Some(&e) if req.producer_id >= 0 => (req.producer_id, e + 1),
        _ => {
            cluster.next_producer_id += 1;
            (cluster.next_producer_id, 0)
        }
    };
    cluster.producer_ids.insert(id, epoch);
    let body = InitProducerIdResponse {
        producer_id: id,
        producer_epoch: epoch,
        ..Default::default()
    };
    answer(frame, &body)
}
