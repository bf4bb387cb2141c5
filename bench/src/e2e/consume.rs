//! Consume runs (W5, W6): the source topics (one per codec and record count, each filled
//! once, when the first workload needs it; S3 reads one too), one client reading a source from the log start (assign) or
//! in a fresh group of one or more members, and the verification that every record was
//! read exactly once.

use std::path::Path;

use super::admin::Watermarks;
use super::peers::{Client, ConsumeSpec, PartResult, Peer, ProduceSpec};
use super::report::RunRecord;
use super::workloads::{Compression, Group, Protocol, Workload};
use super::{Harness, Variant, PARTITIONS};

/// A topic the consume workloads read: filled once, with its watermarks.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    pub(crate) topic: String,
    pub(crate) records: u64,
    pub(crate) marks: Vec<Watermarks>,
    pub(crate) log_bytes: Option<u64>,
}

impl Harness {
    /// The source topic written with `codec` holding `w.records` records, filled now by
    /// the first available producer (franz-go, rdkafka, Java, ours) if no workload has
    /// needed it yet.
    pub(super) fn source(
        &mut self,
        codec: Compression,
        w: &Workload,
        pool: &Path,
    ) -> Result<Source, String> {
        let key = (codec, w.records);
        if let Some(s) = self.sources.get(&key) {
            return Ok(s.clone());
        }
        let topic = format!("e2e-{}-source-{}-{}", self.tag, codec.name(), w.records);
        self.admin.create_topic(&topic, PARTITIONS)?;
        let order = [Client::FranzGo, Client::Rdkafka, Client::Java, Client::Ours];
        let Some(peer) = order
            .iter()
            .find_map(|c| self.peers.iter().find(|p| p.client == *c))
        else {
            return Err("no producer to fill the consume topic".into());
        };
        let cmd = peer.produce_cmd(&ProduceSpec {
            bootstrap: &self.broker.bootstrap,
            topic: &topic,
            records: w.records,
            payload_file: pool,
            compression: codec.name(),
            rate: None,
            txn: None,
            java_txn_ms: 0,
            extra: &[],
        });
        eprintln!(
            "e2e: filling {topic} with {} records ({}, compression {})",
            w.records,
            peer.client.name(),
            codec.name()
        );
        // Created before the fill, so an interrupted fill is still cleaned up.
        let source = Source {
            topic: topic.clone(),
            records: w.records,
            marks: Vec::new(),
            log_bytes: None,
        };
        self.sources.insert(key, source.clone());
        let (out, _, _) = self.spawn(&cmd, &format!("fill-{topic}"), self.timeout)?;
        if !out.success() {
            return Err(format!(
                "filling the consume topic failed: {}",
                out.failure()
            ));
        }
        let marks = self.admin.watermarks(&topic, PARTITIONS)?;
        let total: i64 = marks.iter().map(|m| m.latest - m.earliest).sum();
        if total != w.records as i64 {
            return Err(format!(
                "consume topic holds {total} records, expected {}",
                w.records
            ));
        }
        let log_bytes = self.admin.log_bytes(&topic);
        self.notes.push(format!(
            "consume workloads read `{topic}`: {} records of {} B written by {} (idempotent, compression {}{}), per partition {:?}",
            w.records,
            w.value_bytes,
            peer.client.name(),
            codec.name(),
            log_bytes.map_or(String::new(), |b| format!(
                ", {:.1} log B/record",
                b as f64 / w.records as f64
            )),
            marks.iter().map(|m| m.latest - m.earliest).collect::<Vec<_>>()
        ));
        let source = Source {
            marks,
            log_bytes,
            ..source
        };
        self.sources.insert(key, source.clone());
        Ok(source)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn measure_consume(
        &mut self,
        peer: &Peer,
        w: &Workload,
        name: &str,
        codec: Compression,
        group: Option<Group>,
        v: &Variant,
        pool: &Path,
        rec: &mut RunRecord,
    ) -> Result<(), String> {
        let src = self.source(codec, w, pool)?;
        let n = src.records;
        let group_id = group.map(|_| name.to_string());
        let mut extra = v.extra.clone();
        if let Some(g) = group.filter(|g| g.protocol != Protocol::Classic) {
            extra.push(("group.protocol".into(), g.protocol.name().into()));
        }
        let cmd = peer.consume_cmd(
            &ConsumeSpec {
                bootstrap: &self.broker.bootstrap,
                topic: &src.topic,
                records: n,
                partitions: PARTITIONS,
                group: group_id.clone(),
                members: group.map_or(1, |g| g.members),
                read_committed: false,
                value_bytes: w.value_bytes,
                extra: &extra,
            },
            v.java,
        );
        rec.cmd = cmd.display();
        rec.log_bytes = src.log_bytes;
        let (out, broker, load1) = self.spawn(&cmd, name, self.timeout)?;
        if !out.success() {
            return Err(out.failure());
        }
        let res = peer.parse(false, v.java, &out)?;
        Self::fill_record(rec, &out, &res, broker, load1);
        rec.bytes = res.bytes;
        if res.records != n || res.errors > 0 || res.bad_values > 0 {
            return Err(format!(
                "read {} of {n} records, {} errors, {} bad values {}",
                res.records, res.errors, res.bad_values, res.error
            ));
        }
        let want_bytes = n * w.value_bytes as u64;
        if peer.java_tool(v.java) {
            // ConsumerPerformance prints MiB with 4 decimals: ±53 bytes; no offsets.
            if res.bytes.abs_diff(want_bytes) > 110 {
                return Err(format!(
                    "read {} value bytes, expected {want_bytes}",
                    res.bytes
                ));
            }
            rec.bytes = want_bytes;
        } else {
            if res.bytes != want_bytes {
                return Err(format!(
                    "read {} value bytes, expected {want_bytes}",
                    res.bytes
                ));
            }
            exactly_once(&src.marks, &res.partitions)?;
        }
        if let (Some(g), Some(spec)) = (&group_id, group) {
            // The broker says which protocol the group ran (a client that ignored
            // `group.protocol` would otherwise pass as KIP-848).
            let kind = self.admin.group_type(g)?;
            if kind.as_deref() != Some(spec.protocol.name()) {
                return Err(format!(
                    "group {g} is of type {kind:?} on the broker, expected {}",
                    spec.protocol.name()
                ));
            }
            let committed = self.admin.committed(g, &src.topic, PARTITIONS)?;
            for (p, (c, m)) in committed.iter().zip(&src.marks).enumerate() {
                if m.latest > m.earliest && *c != Some(m.latest) {
                    return Err(format!(
                        "group {g} partition {p}: committed {c:?}, log end {}",
                        m.latest
                    ));
                }
            }
        }
        Ok(())
    }
}

/// One partition as all members read it: with `runs`, count, first, last, duplicates
/// (`backwards`: offsets read more than once) and holes (`gaps`) come from the runs
/// merged in offset order; without, the peer's own figures stand.
pub(crate) fn merge_runs(p: &PartResult) -> Result<PartResult, String> {
    if p.runs.is_empty() {
        return Ok(p.clone());
    }
    let mut runs = p.runs.clone();
    if let Some(bad) = runs.iter().find(|(f, l)| *f < 0 || l < f) {
        return Err(format!("partition {}: bad run {bad:?}", p.partition));
    }
    runs.sort_unstable();
    let mut m = PartResult {
        partition: p.partition,
        first: runs[0].0,
        last: runs[0].1,
        count: (runs[0].1 - runs[0].0 + 1) as u64,
        ..PartResult::default()
    };
    for &(f, l) in &runs[1..] {
        if f <= m.last {
            m.backwards += (l.min(m.last) - f + 1) as u64;
        } else if f > m.last + 1 {
            m.gaps += 1;
        }
        m.count += (l - f + 1) as u64;
        m.last = m.last.max(l);
    }
    if m.count != p.count {
        return Err(format!(
            "partition {}: runs cover {} offsets, count says {}",
            p.partition, m.count, p.count
        ));
    }
    Ok(m)
}

/// Every partition read from its log start to its end, each offset once.
pub(crate) fn exactly_once(marks: &[Watermarks], parts: &[PartResult]) -> Result<(), String> {
    if let Some(p) = parts
        .iter()
        .find(|p| p.partition < 0 || p.partition as usize >= marks.len())
    {
        return Err(format!("records of unknown partition {}", p.partition));
    }
    for (p, m) in marks.iter().enumerate() {
        let got: Vec<&PartResult> = parts.iter().filter(|r| r.partition == p as i32).collect();
        let expect = (m.latest - m.earliest) as u64;
        let ok = match got.as_slice() {
            [] => expect == 0,
            [r] => {
                let r = merge_runs(r)?;
                r.count == expect
                    && r.first == m.earliest
                    && r.last == m.latest - 1
                    && r.backwards == 0
                    && r.gaps == 0
            }
            _ => return Err(format!("partition {p} reported {} times", got.len())),
        };
        if !ok {
            return Err(format!(
                "partition {p}: read {:?}, the log holds {}..{}",
                got.first().map(|r| merge_runs(r)),
                m.earliest,
                m.latest
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A partition's result made of these offset runs.
    pub(in crate::e2e) fn part(p: i32, runs: &[(i64, i64)]) -> PartResult {
        PartResult {
            partition: p,
            count: runs.iter().map(|(f, l)| (l - f + 1) as u64).sum(),
            first: runs.iter().map(|r| r.0).min().unwrap_or(-1),
            last: runs.iter().map(|r| r.1).max().unwrap_or(-1),
            runs: runs.to_vec(),
            ..PartResult::default()
        }
    }

    /// Watermarks from 0 to each of `ends`.
    pub(in crate::e2e) fn marks(ends: &[i64]) -> Vec<Watermarks> {
        ends.iter()
            .map(|&e| Watermarks {
                earliest: 0,
                latest: e,
            })
            .collect()
    }

    #[test]
    fn members_that_hand_partitions_over_tile_the_log() {
        // Member A read 0..=99 of partition 0, B took over at 100, A got it back at 300.
        let p0 = part(0, &[(0, 99), (300, 499), (100, 299)]);
        let m = merge_runs(&p0).unwrap();
        assert_eq!(
            (m.count, m.first, m.last, m.backwards, m.gaps),
            (500, 0, 499, 0, 0)
        );
        let p1 = part(1, &[(0, 9)]);
        assert!(exactly_once(&marks(&[500, 10, 0]), &[p0, p1]).is_ok());
    }

    #[test]
    fn a_partition_read_twice_after_a_handover_is_a_duplicate() {
        // B restarted from an offset A had already read: 90..=99 twice.
        let m = merge_runs(&part(0, &[(0, 99), (90, 199)])).unwrap();
        assert_eq!((m.count, m.backwards, m.gaps), (210, 10, 0));
        let err = exactly_once(&marks(&[200]), &[part(0, &[(0, 99), (90, 199)])]).unwrap_err();
        assert!(err.contains("partition 0"), "{err}");
    }

    #[test]
    fn a_hole_between_members_is_a_gap() {
        let m = merge_runs(&part(0, &[(0, 99), (150, 199)])).unwrap();
        assert_eq!((m.count, m.backwards, m.gaps, m.last), (150, 0, 1, 199));
        assert!(exactly_once(&marks(&[200]), &[part(0, &[(0, 99), (150, 199)])]).is_err());
        // Nothing read of a partition that holds records.
        assert!(exactly_once(&marks(&[200, 5]), &[part(0, &[(0, 199)])]).is_err());
    }

    #[test]
    fn runs_that_disagree_with_the_count_or_are_malformed_are_refused() {
        let mut p = part(0, &[(0, 99)]);
        p.count = 101;
        assert!(merge_runs(&p).unwrap_err().contains("count says 101"));
        assert!(merge_runs(&part(0, &[(5, 4)])).is_err());
        assert!(exactly_once(&marks(&[100]), &[part(3, &[(0, 99)])]).is_err());
    }

    #[test]
    fn without_runs_the_peers_own_figures_stand() {
        let p = PartResult {
            partition: 0,
            count: 100,
            first: 0,
            last: 99,
            ..PartResult::default()
        };
        assert!(exactly_once(&marks(&[100]), std::slice::from_ref(&p)).is_ok());
        let dup = PartResult { backwards: 1, ..p };
        assert!(exactly_once(&marks(&[100]), &[dup]).is_err());
    }
}
