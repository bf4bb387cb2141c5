//! A leader that lost the last batches of a producer (F6): an unclean election whose
//! new leader lacks the log's last batches (`SimCluster::unclean_election`) and, as
//! Kafka rebuilds it from the log, the producers' state as of the log it kept. The
//! producer's next batch carries a sequence past the new leader's last one: the
//! leader answers OUT_OF_ORDER_SEQUENCE_NUMBER, and the client must not leave a silent
//! gap. The values of the records cut off are returned, so the history can be told
//! they were destroyed by the broker (`History::records_lost_by_broker`).

use std::collections::VecDeque;

use kafka_core::record::{BatchHeader, DecodeOptions, RecordBatch};

use super::cluster::{ProducerState, SimCluster};

impl SimCluster {
    /// `to` becomes the leader of `topic`/`partition` without the last `drop_batches`
    /// batches; the producers' state is rebuilt from the batches kept. The values of the
    /// records cut off.
    pub fn lose_last_batches(
        &mut self,
        topic: &str,
        partition: i32,
        to: i32,
        drop_batches: usize,
    ) -> Vec<Vec<u8>> {
        let Some(p) = self
            .topics
            .get(topic)
            .and_then(|t| t.partitions.get(partition as usize))
        else {
            return Vec::new();
        };
        if p.leader == to {
            return Vec::new();
        }
        let keep = p.log.len().saturating_sub(drop_batches);
        let cut = (p.log.len() - keep) as u64;
        let mut values = Vec::new();
        for b in &p.log[keep..] {
            let Ok((batch, _)) = RecordBatch::decode(&b.bytes, &DecodeOptions::default()) else {
                continue;
            };
            for r in batch.records().into_iter().flatten().flatten() {
                values.push(r.value.map(|v| v.to_vec()).unwrap_or_default());
            }
        }
        if self.unclean_election(topic, partition, to, drop_batches) == 0 {
            return Vec::new();
        }
        let p = self
            .topics
            .get_mut(topic)
            .and_then(|t| t.partitions.get_mut(partition as usize))
            .expect("just cut");
        p.producers.clear();
        for b in &p.log {
            let Ok(h) = BatchHeader::parse(&b.bytes) else {
                continue;
            };
            if h.producer_id < 0 || h.attributes.control {
                continue;
            }
            let last_seq = h.base_sequence.wrapping_add(h.records_count - 1);
            let state = p.producers.entry(h.producer_id).or_insert(ProducerState {
                epoch: h.producer_epoch,
                recent: VecDeque::new(),
            });
            if h.producer_epoch != state.epoch {
                state.epoch = h.producer_epoch;
                state.recent.clear();
            }
            state.recent.push_back((h.base_sequence, last_seq, b.base));
            if state.recent.len() > 5 {
                state.recent.pop_front();
            }
        }
        self.counters.batches_lost += cut;
        values
    }
}
