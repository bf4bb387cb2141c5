//! Share group runs (S3, KIP-932): a fresh share group per run, set to start at the
//! earliest offset through our admin client, whose members (in one client process)
//! drain the uncompressed source topic with implicit acknowledgement; the verification
//! that every record was handed out at least once (a share group may hand a record out
//! again after its acquisition lock expired: counted, not a failure) and that the group
//! has acknowledged everything (its lag, as the broker reports it, is 0).

use std::path::Path;
use std::time::{Duration, Instant};

use super::admin::Watermarks;
use super::consume::{merge_runs, Source};
use super::peers::{Client, PartResult, Peer, ShareSpec};
use super::proc::Cmd;
use super::report::RunRecord;
use super::workloads::{Compression, Workload};
use super::{Harness, PARTITIONS};

/// How long the group's lag may take to reach 0 after the client exited.
const LAG_WAIT: Duration = Duration::from_secs(20);

impl Harness {
    /// The command of a share run of `peer` in the fresh group `group`, which is set to
    /// start at the earliest offset first.
    pub(super) fn share_cmd(
        &self,
        peer: &Peer,
        group: &str,
        topic: &str,
        records: u64,
        members: u32,
        value_bytes: usize,
    ) -> Result<Cmd, String> {
        self.admin
            .set_group_configs(group, &[("share.auto.offset.reset", "earliest")])?;
        Ok(peer.share_cmd(&ShareSpec {
            bootstrap: &self.broker.bootstrap,
            topic,
            records,
            group,
            members,
            value_bytes,
        }))
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn measure_share(
        &mut self,
        peer: &Peer,
        w: &Workload,
        name: &str,
        members: u32,
        pool: &Path,
        rec: &mut RunRecord,
    ) -> Result<(), String> {
        let src = self.source(Compression::None, w, pool)?;
        let n = src.records;
        let cmd = self.share_cmd(peer, name, &src.topic, n, members, w.value_bytes)?;
        rec.cmd = cmd.display();
        rec.log_bytes = src.log_bytes;
        let (out, broker, load1) = self.spawn(&cmd, name, self.timeout)?;
        if !out.success() {
            return Err(out.failure());
        }
        let res = peer.parse_share(&out)?;
        Self::fill_record(rec, &out, &res, broker, load1);
        // Rates and CPU per GB count each record once (what was drained).
        rec.records = n;
        rec.bytes = n * w.value_bytes as u64;
        if res.errors > 0 || res.bad_values > 0 {
            return Err(format!(
                "{} errors, {} bad values {}",
                res.errors, res.bad_values, res.error
            ));
        }
        let want_bytes = n * w.value_bytes as u64;
        if peer.client == Client::Java {
            // ShareConsumerPerformance: counts only (MiB with 4 decimals: ±53 bytes), and
            // it counts a record handed out twice twice.
            if res.records != n || res.bytes.abs_diff(want_bytes) > 110 {
                return Err(format!(
                    "read {} records, {} value bytes; expected {n}, {want_bytes}",
                    res.records, res.bytes
                ));
            }
        } else {
            let duplicates = at_least_once(&src.marks, &res.partitions)?;
            if res.records != n + duplicates {
                return Err(format!(
                    "handed out {} records, {n} distinct + {duplicates} again",
                    res.records
                ));
            }
            rec.duplicates = Some(duplicates);
            rec.redelivered = Some(res.redelivered);
        }
        self.share_lag_zero(name, &src)
    }

    /// Waits until the broker reports lag 0 for the group in every partition that holds
    /// records: each record delivered and acknowledged.
    fn share_lag_zero(&self, group: &str, src: &Source) -> Result<(), String> {
        let deadline = Instant::now() + LAG_WAIT;
        loop {
            let lag = self.admin.share_lag(group, &src.topic, PARTITIONS)?;
            let behind: Vec<(usize, Option<i64>)> = lag
                .iter()
                .zip(&src.marks)
                .enumerate()
                .filter(|(_, (l, m))| m.latest > m.earliest && **l != Some(0))
                .map(|(p, (l, _))| (p, *l))
                .collect();
            if behind.is_empty() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "share group {group}: (partition, lag) not 0 after {LAG_WAIT:?}: {behind:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

/// Every partition's records handed out at least once (the runs, merged, cover the log
/// from its start to its end without a hole); `Ok` is how many were handed out again.
pub(crate) fn at_least_once(marks: &[Watermarks], parts: &[PartResult]) -> Result<u64, String> {
    if let Some(p) = parts
        .iter()
        .find(|p| p.partition < 0 || p.partition as usize >= marks.len())
    {
        return Err(format!("records of unknown partition {}", p.partition));
    }
    let mut again = 0;
    for (p, m) in marks.iter().enumerate() {
        let got: Vec<&PartResult> = parts.iter().filter(|r| r.partition == p as i32).collect();
        let expect = (m.latest - m.earliest) as u64;
        let r = match got.as_slice() {
            [] if expect == 0 => continue,
            [] => return Err(format!("partition {p}: nothing of {expect} records")),
            [r] if r.runs.is_empty() => return Err(format!("partition {p}: no runs")),
            [r] => merge_runs(r)?,
            _ => return Err(format!("partition {p} reported {} times", got.len())),
        };
        let distinct = r.count - r.backwards;
        if distinct != expect || r.first != m.earliest || r.last != m.latest - 1 || r.gaps > 0 {
            return Err(format!(
                "partition {p}: {distinct} distinct records of {}..={} with {} holes, the log holds {}..{}",
                r.first, r.last, r.gaps, m.earliest, m.latest
            ));
        }
        again += r.backwards;
    }
    Ok(again)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::e2e::consume::tests::{marks, part};

    #[test]
    fn members_interleaving_batches_of_a_partition_cover_it_once() {
        // Two members' runs of partition 0, concatenated by the peer, out of order.
        let p0 = part(0, &[(0, 499), (1000, 1499), (500, 999)]);
        let p1 = part(1, &[(0, 9)]);
        assert_eq!(at_least_once(&marks(&[1500, 10, 0]), &[p0, p1]), Ok(0));
    }

    #[test]
    fn a_record_handed_out_again_is_counted_not_refused() {
        // 400..=499 came back after a lock expired and went to another member.
        let p0 = part(0, &[(0, 499), (400, 999)]);
        assert_eq!(at_least_once(&marks(&[1000]), &[p0]), Ok(100));
    }

    #[test]
    fn a_record_never_handed_out_is_a_failure() {
        let hole = part(0, &[(0, 499), (501, 999)]);
        assert!(at_least_once(&marks(&[1000]), &[hole]).is_err());
        let short = part(0, &[(0, 998)]);
        assert!(at_least_once(&marks(&[1000]), &[short]).is_err());
        // A partition with records nobody read.
        assert!(at_least_once(&marks(&[10, 5]), &[part(0, &[(0, 9)])]).is_err());
        assert!(at_least_once(&marks(&[10]), &[part(4, &[(0, 9)])]).is_err());
    }
}
