//! Completed acknowledgements for the application (Java's acknowledgement commit
//! callback): per partition and outcome, the offsets of the records it was handed, as
//! merged ranges. The waiting report is one event, bounded by [`MAX_ACK_REPORT_RANGES`].

use super::ShareError;
use crate::group::TopicPartition;

/// The most offset ranges one waiting report lists; past it, offsets are only counted
/// (an application that never takes events keeps a bounded report).
pub const MAX_ACK_REPORT_RANGES: usize = 4096;

/// Acknowledgements of one partition that completed with one outcome: accepted by the
/// broker (`Ok`) or not (the records may be delivered again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckCompletion {
    /// The partition.
    pub partition: TopicPartition,
    /// Inclusive offset ranges of records handed to the application, sorted, adjacent
    /// ranges merged (whatever their acknowledgement type).
    pub offsets: Vec<(i64, i64)>,
    /// Offsets that completed but are not listed: the waiting report was full.
    pub omitted: u64,
    /// The outcome.
    pub result: Result<(), ShareError>,
}

impl AckCompletion {
    /// Every listed offset, in order.
    pub fn iter_offsets(&self) -> impl Iterator<Item = i64> + '_ {
        self.offsets.iter().flat_map(|&(first, last)| first..=last)
    }

    /// How many offsets completed (listed and omitted).
    pub fn count(&self) -> u64 {
        self.offsets
            .iter()
            .map(|&(f, l)| span(f, l))
            .fold(self.omitted, u64::saturating_add)
    }
}

fn span(first: i64, last: i64) -> u64 {
    u64::try_from(i128::from(last) - i128::from(first) + 1).unwrap_or(u64::MAX)
}

/// Adds the offset ranges of a completed acknowledgement to `report` (one entry per
/// partition and outcome).
pub(crate) fn add(
    report: &mut Vec<AckCompletion>,
    tp: &TopicPartition,
    mut new: Vec<(i64, i64)>,
    result: &Result<(), ShareError>,
) {
    let count: u64 = new
        .iter()
        .map(|&(f, l)| span(f, l))
        .fold(0, u64::saturating_add);
    let listed: usize = report.iter().map(|c| c.offsets.len()).sum();
    let i = match report
        .iter()
        .position(|c| &c.partition == tp && &c.result == result)
    {
        Some(i) => i,
        None => {
            report.push(AckCompletion {
                partition: tp.clone(),
                offsets: Vec::new(),
                omitted: 0,
                result: result.clone(),
            });
            report.len() - 1
        }
    };
    let entry = &mut report[i];
    let before = entry.offsets.len();
    new.extend_from_slice(&entry.offsets);
    let merged = merge(new);
    if listed - before + merged.len() > MAX_ACK_REPORT_RANGES {
        entry.omitted = entry.omitted.saturating_add(count);
    } else {
        entry.offsets = merged;
    }
}

/// Sorts inclusive ranges and merges overlapping or adjacent ones.
fn merge(mut ranges: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    ranges.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
    for (first, last) in ranges {
        match out.last_mut() {
            Some(prev) if first <= prev.1.saturating_add(1) => prev.1 = prev.1.max(last),
            _ => out.push((first, last)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_per_partition_and_outcome() {
        let tp: TopicPartition = ("t".into(), 0);
        let mut report = Vec::new();
        add(&mut report, &tp, vec![(3, 3), (0, 1)], &Ok(()));
        add(&mut report, &tp, vec![(2, 2), (7, 8)], &Ok(()));
        let failed = Err(ShareError::Closed);
        add(&mut report, &tp, vec![(10, 10)], &failed);
        assert_eq!(report.len(), 2);
        assert_eq!(report[0].offsets, vec![(0, 3), (7, 8)]);
        assert_eq!(report[0].count(), 6);
        assert_eq!(report[1].offsets, vec![(10, 10)]);
        assert_eq!(report[1].result, failed);
        let listed: Vec<i64> = report[0].iter_offsets().collect();
        assert_eq!(listed, vec![0, 1, 2, 3, 7, 8]);
        // A huge range from the wire stays one range.
        add(&mut report, &tp, vec![(20, i64::MAX)], &Ok(()));
        assert_eq!(report[0].offsets.len(), 3);
    }

    #[test]
    fn a_full_report_counts_offsets_instead_of_listing_them() {
        let tp: TopicPartition = ("t".into(), 0);
        let mut report = Vec::new();
        for i in 0..MAX_ACK_REPORT_RANGES as i64 + 10 {
            add(&mut report, &tp, vec![(i * 2, i * 2)], &Ok(()));
        }
        assert_eq!(report[0].offsets.len(), MAX_ACK_REPORT_RANGES);
        assert_eq!(report[0].omitted, 10);
        assert_eq!(report[0].count(), MAX_ACK_REPORT_RANGES as u64 + 10);
        // Another partition gets an entry even when the report is full.
        add(&mut report, &("t".into(), 1), vec![(0, 4)], &Ok(()));
        assert_eq!((report[1].offsets.len(), report[1].omitted), (0, 5));
        // Filling a hole still merges: it does not add a range.
        add(&mut report, &tp, vec![(1, 1)], &Ok(()));
        assert_eq!(report[0].offsets.len(), MAX_ACK_REPORT_RANGES - 1);
        assert_eq!(report[0].offsets[0], (0, 2));
    }
}
