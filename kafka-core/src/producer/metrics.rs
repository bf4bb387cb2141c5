//! Counters the producer keeps, and the snapshot the application reads.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::protocol::KafkaCode;

/// Running counters (the machine updates them; nothing per record but additions).
#[derive(Debug, Default, Clone)]
pub(super) struct Metrics {
    pub(super) records_appended: u64,
    pub(super) records_sent: u64,
    pub(super) records_delivered: u64,
    pub(super) records_failed: u64,
    pub(super) batches_sent: u64,
    pub(super) bytes_sent: u64,
    pub(super) requests_sent: u64,
    pub(super) retries: u64,
    pub(super) duplicates: u64,
    pub(super) unexpected_responses: u64,
    pub(super) leader_hints: u64,
    pub(super) batch_splits: u64,
    pub(super) errors: BTreeMap<i16, u64>,
    latency_sum: Duration,
    latency_max: Duration,
    latency_count: u64,
}

impl Metrics {
    pub(super) fn count_error(&mut self, code: KafkaCode) {
        *self.errors.entry(code.0).or_insert(0) += 1;
    }

    pub(super) fn record_latency(&mut self, d: Duration) {
        self.latency_sum += d;
        self.latency_max = self.latency_max.max(d);
        self.latency_count += 1;
    }

    pub(super) fn average_latency(&self) -> Option<Duration> {
        let n = u32::try_from(self.latency_count).ok().filter(|&n| n > 0)?;
        Some(self.latency_sum / n)
    }

    pub(super) fn max_latency(&self) -> Duration {
        self.latency_max
    }
}

/// A snapshot of the producer's counters and gauges.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ProducerMetrics {
    /// Records taken by `send`.
    pub records_appended: u64,
    /// Records put in Produce requests (retries counted again).
    pub records_sent: u64,
    /// Records acknowledged.
    pub records_delivered: u64,
    /// Records reported failed.
    pub records_failed: u64,
    /// Batches put in Produce requests.
    pub batches_sent: u64,
    /// Batch bytes put in Produce requests.
    pub bytes_sent: u64,
    /// Produce requests sent.
    pub requests_sent: u64,
    /// Batches sent again.
    pub retries: u64,
    /// Batches the broker already had (DUPLICATE_SEQUENCE_NUMBER, counted delivered).
    pub duplicates: u64,
    /// Answers that left out a partition we sent.
    pub unexpected_responses: u64,
    /// Leader hints from Produce answers applied without a metadata round trip (KIP-951).
    pub leader_hints: u64,
    /// Batches split after the broker refused them as too large (MESSAGE_TOO_LARGE).
    pub batch_splits: u64,
    /// Error codes seen in Produce answers, by code.
    pub errors: BTreeMap<i16, u64>,
    /// Mean time from send to answer of a Produce request.
    pub request_latency_avg: Option<Duration>,
    /// Longest time from send to answer.
    pub request_latency_max: Duration,
    /// Produce requests in flight.
    pub requests_in_flight: usize,
    /// Bytes charged to `buffer.memory`.
    pub buffer_used: usize,
    /// `buffer.memory`.
    pub buffer_limit: usize,
    /// Memory of finished batches kept for the next ones (as Java's `BufferPool`);
    /// with `buffer_used` at most `buffer_limit`.
    pub buffer_pooled: usize,
    /// Batches not yet fully reported (a split batch counts once).
    pub batches_outstanding: usize,
    /// Epoch bumps and producer id renewals.
    pub epoch_bumps: u64,
    /// Transactions committed (EndTxn answered, or nothing to end).
    pub transactions_committed: u64,
    /// Transactions aborted.
    pub transactions_aborted: u64,
    /// The transaction protocol of the last transaction begun: 2 (KIP-890), 1, or 0
    /// (not transactional, or none begun).
    pub transaction_version: i16,
}
