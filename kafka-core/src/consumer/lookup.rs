//! The Java consumer's offset lookups, `beginningOffsets`, `endOffsets` and
//! `offsetsForTimes`, as one-shot operations next to the consumer machine. They send
//! ListOffsets to each partition's leader, with the consumer's `isolation.level` (the end
//! of a partition is its last stable offset under read_committed), and end within
//! `default.api.timeout.ms` or the caller's limit. Any partition that fails fails the
//! call, as the Java consumer throws.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::admin::{self, AdminError, ListOffsets, ListedOffset, OffsetSpec, TopicPartition};
use crate::client::{Notice, OpContext, Operation};
use crate::config::{ClientConfig, IsolationLevel};

/// The offset and timestamp of the first record at or after a time (Java's
/// `OffsetAndTimestamp`).
pub type OffsetAndTimestamp = ListedOffset;

fn isolation(config: &ClientConfig) -> admin::IsolationLevel {
    match config.consumer().isolation_level {
        IsolationLevel::ReadCommitted => admin::IsolationLevel::ReadCommitted,
        IsolationLevel::ReadUncommitted => admin::IsolationLevel::ReadUncommitted,
    }
}

/// A lookup of many partitions that ends with its first failure.
fn all_or_first_error<V>(
    results: BTreeMap<TopicPartition, Result<ListedOffset, AdminError>>,
    mut value: impl FnMut(ListedOffset) -> V,
) -> Result<BTreeMap<TopicPartition, V>, AdminError> {
    results
        .into_iter()
        .map(|(tp, r)| r.map(|listed| (tp, value(listed))))
        .collect()
}

/// The first or the next offset of partitions: `beginning_offsets` and `end_offsets`.
#[derive(Debug)]
pub struct EdgeOffsets {
    inner: ListOffsets,
}

impl EdgeOffsets {
    /// The log start offsets of `partitions`.
    pub fn beginning(
        config: &ClientConfig,
        partitions: impl IntoIterator<Item = TopicPartition>,
    ) -> Self {
        Self::of(config, partitions, OffsetSpec::Earliest)
    }

    /// The offsets after the last record of `partitions` (the high watermark, or the
    /// last stable offset under read_committed).
    pub fn end(
        config: &ClientConfig,
        partitions: impl IntoIterator<Item = TopicPartition>,
    ) -> Self {
        Self::of(config, partitions, OffsetSpec::Latest)
    }

    fn of(
        config: &ClientConfig,
        partitions: impl IntoIterator<Item = TopicPartition>,
        spec: OffsetSpec,
    ) -> Self {
        let inner = ListOffsets::new(partitions.into_iter().map(|tp| (tp, spec)))
            .isolation_level(isolation(config));
        EdgeOffsets { inner }
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.inner = self.inner.timeout(limit);
        self
    }
}

impl Operation for EdgeOffsets {
    type Output = Result<BTreeMap<TopicPartition, i64>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let out = self.inner.poll(cx)?;
        Some(out.and_then(|results| all_or_first_error(results, |listed| listed.offset)))
    }

    fn notice(&mut self, notice: &Notice<'_>) -> bool {
        self.inner.notice(notice)
    }
}

/// `offsets_for_times`: per partition, the first record whose timestamp is at or after
/// the given time (ms since the epoch), `None` when no record is that recent.
#[derive(Debug)]
pub struct OffsetsForTimes {
    inner: ListOffsets,
    /// A negative time was asked for (Java refuses it before sending anything).
    invalid: Option<TopicPartition>,
}

impl OffsetsForTimes {
    /// Looks up `(partition, timestamp)` pairs.
    pub fn new(
        config: &ClientConfig,
        times: impl IntoIterator<Item = (TopicPartition, i64)>,
    ) -> Self {
        let times: Vec<(TopicPartition, i64)> = times.into_iter().collect();
        let invalid = times.iter().find(|(_, t)| *t < 0).map(|(tp, _)| tp.clone());
        let inner = ListOffsets::new(
            times
                .into_iter()
                .map(|(tp, t)| (tp, OffsetSpec::ByTimestamp(t))),
        )
        .isolation_level(isolation(config));
        OffsetsForTimes { inner, invalid }
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.inner = self.inner.timeout(limit);
        self
    }
}

impl Operation for OffsetsForTimes {
    type Output = Result<BTreeMap<TopicPartition, Option<OffsetAndTimestamp>>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        if let Some(tp) = &self.invalid {
            return Some(Err(AdminError::Invalid(format!(
                "negative timestamp for {}-{}",
                tp.topic, tp.partition
            ))));
        }
        let out = self.inner.poll(cx)?;
        Some(out.and_then(|results| {
            all_or_first_error(results, |listed| (listed.offset >= 0).then_some(listed))
        }))
    }

    fn notice(&mut self, notice: &Notice<'_>) -> bool {
        self.inner.notice(notice)
    }
}
