//! AddPartitionsToTxn in the client form (v1–v3; v4+ is broker-to-broker): on the
//! transactional id's coordinator, with its producer id and exact epoch
//! (PRODUCER_FENCED otherwise), CONCURRENT_TRANSACTIONS while the last transaction's
//! markers are being written; the partitions join the open transaction (opening one).

use kafka_core::protocol::messages::add_partitions_to_txn::response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use kafka_core::protocol::messages::add_partitions_to_txn::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse,
};
use kafka_core::protocol::{ApiKey, KafkaCode};

use super::super::cluster::SimCluster;
use super::super::wire::{answer, Frame};

/// The answer to `frame` arriving at `node`.
pub fn handle(cluster: &mut SimCluster, node: i32, frame: &Frame) -> Vec<u8> {
    let req: AddPartitionsToTxnRequest = frame.decode().expect("AddPartitionsToTxn decodes");
    assert!(
        frame.version <= 3,
        "AddPartitionsToTxn v{} is for brokers",
        frame.version
    );
    let id = req.v3_and_below_transactional_id.as_str();
    let unknown = |c: &SimCluster, t: &str, p: i32| {
        c.topics
            .get(t)
            .is_none_or(|topic| p < 0 || p as usize >= topic.partitions.len())
    };
    let any_unknown = req
        .v3_and_below_topics
        .iter()
        .any(|t| t.partitions.iter().any(|&p| unknown(cluster, &t.name, p)));
    let outcome = cluster
        .txn
        .gate(ApiKey::AddPartitionsToTxn, id, node)
        .and_then(|()| {
            let txn = &mut cluster.txn;
            txn.entry_for(
                id,
                req.v3_and_below_producer_id,
                req.v3_and_below_producer_epoch,
            )?;
            if any_unknown {
                return Err(KafkaCode::OPERATION_NOT_ATTEMPTED);
            }
            let e = txn.ensure_open(id, false)?;
            for t in &req.v3_and_below_topics {
                for &p in &t.partitions {
                    e.partitions.insert((t.name.clone(), p));
                }
            }
            Ok(())
        });
    let results_by_topic_v3_and_below = req
        .v3_and_below_topics
        .iter()
        .map(|t| AddPartitionsToTxnTopicResult {
            name: t.name.clone(),
            results_by_partition: t
                .partitions
                .iter()
                .map(|&p| {
                    let code = match outcome {
                        Err(KafkaCode::OPERATION_NOT_ATTEMPTED) if unknown(cluster, &t.name, p) => {
                            KafkaCode::UNKNOWN_TOPIC_OR_PARTITION
                        }
                        Err(c) => c,
                        Ok(()) => KafkaCode::NONE,
                    };
                    AddPartitionsToTxnPartitionResult {
                        partition_index: p,
                        partition_error_code: code.0,
                        ..Default::default()
                    }
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    if let Err(code) = outcome {
        cluster.count_error(code.0);
    }
    let body = AddPartitionsToTxnResponse {
        results_by_topic_v3_and_below,
        ..Default::default()
    };
    answer(frame, &body)
}
