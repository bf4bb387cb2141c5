//! DeleteRecords on the simulated cluster (F7): a partition's records are deleted up to
//! its end (the log start moves there) and, as Kafka does when the log start passes a
//! producer's last batch, the producers' state there goes with them. The producer's
//! next batch then meets a broker with no state for it: Kafka 4.x accepts any first
//! sequence; with [`SimCluster::strict_unknown_producers`] the broker answers
//! UNKNOWN_PRODUCER_ID unless the batch starts at sequence 0, as brokers before
//! KIP-360 did. Scenarios tell the history (`History::records_deleted`), so the
//! deleted acknowledged records are not counted lost.

use super::cluster::SimCluster;

impl SimCluster {
    /// Deletes every record of `topic`/`partition` (the log start moves to its end) and
    /// the producers' state there; the new log start, if the partition exists.
    pub fn delete_records(&mut self, topic: &str, partition: i32) -> Option<i64> {
        let p = self
            .topics
            .get_mut(topic)
            .and_then(|t| t.partitions.get_mut(partition as usize))?;
        self.counters.records_deleted += (p.next_offset - p.log_start) as u64;
        self.counters.producers_forgotten += p.producers.len() as u64;
        p.log_start = p.next_offset;
        p.log.clear();
        p.producers.clear();
        Some(p.log_start)
    }
}
