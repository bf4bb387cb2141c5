//! Produce runs (W1–W4): one client writes a fresh topic; the run is verified against
//! the log's watermarks, and a transactional one is read back `read_committed` by
//! another client.

use std::path::Path;
use std::time::Duration;

use super::peers::{Client, ConsumeSpec, JavaConsume, Peer, PeerResult, ProduceSpec};
use super::report::RunRecord;
use super::workloads::{self, Workload};
use super::{Harness, Variant, PARTITIONS};

impl Harness {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn measure_produce(
        &mut self,
        peer: &Peer,
        w: &Workload,
        topic: &str,
        compression: workloads::Compression,
        rate: Option<u64>,
        txn_records: Option<u64>,
        v: &Variant,
        pool: &Path,
        rec: &mut RunRecord,
    ) -> Result<(), String> {
        self.admin.create_topic(topic, PARTITIONS)?;
        let java_txn_ms = match self.java_w1_rps {
            Some(r) if r > 0.0 => {
                ((txn_records.unwrap_or(10_000) as f64 / r) * 1000.0).ceil() as u64
            }
            _ => 100,
        };
        let cmd = peer.produce_cmd(&ProduceSpec {
            bootstrap: &self.broker.bootstrap,
            topic,
            records: w.records,
            payload_file: pool,
            compression: compression.name(),
            rate,
            txn: txn_records.map(|k| (format!("{topic}-txn"), k)),
            java_txn_ms,
            extra: &v.extra,
        });
        rec.cmd = cmd.display();
        let timeout = match rate {
            Some(r) => Duration::from_secs(w.records / r.max(1) + 120),
            None => self.timeout,
        };
        let result = self
            .spawn(&cmd, topic, timeout)
            .and_then(|(out, broker, load1)| {
                if !out.success() {
                    return Err(out.failure());
                }
                let res = peer.parse(true, JavaConsume::Peer, &out)?;
                Self::fill_record(rec, &out, &res, broker, load1);
                // Java's tool prints no byte count: every record is one pool line.
                rec.bytes = if res.bytes > 0 {
                    res.bytes
                } else {
                    res.records * w.value_bytes as u64
                };
                self.verify_produce(peer, w, topic, txn_records.is_some(), &res, rec)
            });
        rec.log_bytes = self.admin.log_bytes(topic);
        if peer.client == Client::Java && txn_records.is_some() {
            self.notes.push(format!(
                "Java W4 commits by time (`--transaction-duration-ms {java_txn_ms}`, ≈10,000 records at its W1-none rate)"
            ));
        }
        self.admin.delete_topic(topic);
        result
    }

    fn verify_produce(
        &self,
        peer: &Peer,
        w: &Workload,
        topic: &str,
        txn: bool,
        res: &PeerResult,
        rec: &mut RunRecord,
    ) -> Result<(), String> {
        if res.records != w.records || res.errors > 0 {
            return Err(format!(
                "{} of {} records acknowledged, {} errors {}",
                res.records, w.records, res.errors, res.error
            ));
        }
        let marks = self.admin.watermarks(topic, PARTITIONS)?;
        let total: i64 = marks.iter().map(|m| m.latest - m.earliest).sum();
        if txn {
            let markers = total - w.records as i64;
            if markers < 1 {
                return Err(format!(
                    "transactional topic holds {total} offsets for {} records: no commit marker",
                    w.records
                ));
            }
            rec.markers = Some(markers as u64);
            // Read it back read_committed with another client: exactly the records, in order.
            // (Java, the last resort: its ConsumePeer, or without it ConsumerPerformance,
            // which checks the count only.)
            let verifier = [Client::FranzGo, Client::Rdkafka, Client::Java]
                .iter()
                .find_map(|c| self.peers.iter().find(|p| p.client == *c))
                .ok_or("no consumer to read the transactional topic back")?;
            let cmd = verifier.consume_cmd(
                &ConsumeSpec {
                    bootstrap: &self.broker.bootstrap,
                    topic,
                    records: w.records,
                    partitions: PARTITIONS,
                    group: (!verifier.can_assign()).then(|| format!("{topic}-verify")),
                    members: 1,
                    read_committed: true,
                    value_bytes: w.value_bytes,
                    extra: &[],
                },
                JavaConsume::Peer,
            );
            let (out, _, _) = self.spawn(&cmd, &format!("{topic}-verify"), self.timeout)?;
            if !out.success() {
                return Err(format!(
                    "read_committed read-back failed: {}",
                    out.failure()
                ));
            }
            let back = verifier.parse(false, JavaConsume::Peer, &out)?;
            let backwards: u64 = back.partitions.iter().map(|p| p.backwards).sum();
            if back.records != w.records || back.errors > 0 || back.bad_values > 0 || backwards > 0
            {
                return Err(format!(
                    "read_committed read-back ({}): {} records of {}, {} errors, {} bad values, {} out of order {}",
                    verifier.client.name(),
                    back.records,
                    w.records,
                    back.errors,
                    back.bad_values,
                    backwards,
                    back.error
                ));
            }
            return Ok(());
        }
        if total != w.records as i64 {
            return Err(format!(
                "the topic holds {total} records, {} were acknowledged",
                w.records
            ));
        }
        for p in &res.partitions {
            let m = marks
                .get(p.partition as usize)
                .ok_or(format!("ack for unknown partition {}", p.partition))?;
            if p.count as i64 != m.latest - m.earliest || p.last != m.latest - 1 {
                return Err(format!(
                    "partition {}: {} acks up to offset {}, the log holds {}..{}",
                    p.partition, p.count, p.last, m.earliest, m.latest
                ));
            }
        }
        let _ = peer;
        Ok(())
    }
}
