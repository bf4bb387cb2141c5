//! What goes in (a record, borrowed) and what comes out (where it was appended, and one
//! report per batch saying how every record in it ended).

use std::sync::Arc;

use crate::client::Cause;
use crate::protocol::KafkaCode;
use crate::record::{NewHeader, RecordError};

/// A record to produce. Borrowed: the producer copies its bytes into the open batch at
/// once, so the caller's buffers are free again when [`send`](super::Producer::send)
/// returns.
#[derive(Debug, Clone, Copy)]
pub struct ProducerRecord<'a> {
    /// The topic.
    pub topic: &'a str,
    /// An explicit partition (wins over the partitioner).
    pub partition: Option<i32>,
    /// The key (`None`: null).
    pub key: Option<&'a [u8]>,
    /// The value (`None`: null, a tombstone in compacted topics).
    pub value: Option<&'a [u8]>,
    /// Headers.
    pub headers: &'a [NewHeader<'a>],
    /// Create time in milliseconds since the Unix epoch; `None`: the wall clock the
    /// adapter gave the client.
    pub timestamp: Option<i64>,
}

impl<'a> ProducerRecord<'a> {
    /// A keyless record with this value.
    pub fn new(topic: &'a str, value: &'a [u8]) -> Self {
        Self {
            topic,
            partition: None,
            key: None,
            value: Some(value),
            headers: &[],
            timestamp: None,
        }
    }

    /// With this key.
    pub fn key(mut self, key: &'a [u8]) -> Self {
        self.key = Some(key);
        self
    }

    /// To this partition.
    pub fn partition(mut self, partition: i32) -> Self {
        self.partition = Some(partition);
        self
    }

    /// With these headers.
    pub fn headers(mut self, headers: &'a [NewHeader<'a>]) -> Self {
        self.headers = headers;
        self
    }

    /// With this create time (ms since the Unix epoch).
    pub fn timestamp(mut self, ms: i64) -> Self {
        self.timestamp = Some(ms);
        self
    }
}

/// A batch of one partition, as named in [`Appended`] and [`Report`]. Ids grow by one
/// per batch opened and are never reused by a producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BatchId(pub u64);

/// Where [`send`](super::Producer::send) put a record: its outcome arrives in the
/// [`Report`] of `batch`, at `index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// The batch holding the record.
    pub batch: BatchId,
    /// The record's position in the batch (its offset is the batch's base offset plus
    /// this).
    pub index: u32,
    /// The partition chosen.
    pub partition: i32,
    /// The create time written.
    pub timestamp: i64,
}

/// Why [`send`](super::Producer::send) did not take a record. Nothing was appended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// Try again later: the topic's metadata is not known yet, or `buffer.memory` is
    /// used up. The producer notifies ([`Event::Notify`](crate::client::Event::Notify))
    /// when either may have changed; adapters wait up to `max.block.ms`.
    #[error("would block: {0}")]
    WouldBlock(Blocked),
    /// The record alone is larger than `max.request.size` or `buffer.memory`.
    #[error("record of {size} bytes is larger than {limit} ({key})")]
    RecordTooLarge {
        /// Its encoded size.
        size: usize,
        /// The limit.
        limit: usize,
        /// The setting that limits it.
        key: &'static str,
    },
    /// The partition does not exist.
    #[error("topic {topic} has no partition {partition}")]
    UnknownPartition {
        /// Topic.
        topic: String,
        /// The partition asked for.
        partition: i32,
    },
    /// The metadata answer for the topic was an error (e.g. not authorized).
    #[error("topic {topic}: {code}")]
    Topic {
        /// Topic.
        topic: String,
        /// The broker's error code.
        code: KafkaCode,
    },
    /// The record cannot be encoded (a field over `i32::MAX` bytes).
    #[error("record cannot be encoded: {0}")]
    Encode(#[from] RecordError),
    /// The producer is closing or closed.
    #[error("producer is closed")]
    Closed,
    /// The producer hit a fatal error; it takes no more records.
    #[error("producer failed: {0}")]
    Fatal(ProduceError),
    /// A transactional producer takes records only inside a transaction
    /// (`begin_transaction` first; after an abortable error, abort first).
    #[error("transaction: {0}")]
    Transaction(crate::producer::TxnError),
}

/// What a [`SendError::WouldBlock`] waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Blocked {
    /// Metadata of the topic.
    #[error("metadata of the topic is not known yet")]
    Metadata,
    /// Room in `buffer.memory`.
    #[error("buffer.memory is full")]
    BufferFull,
}

/// How a run of records of one batch ended: indexes [`indexes`](Self::indexes) of
/// [`Appended::index`] in `batch`.
///
/// Usually one report covers the whole batch (`first` is 0). A batch the broker refused
/// as too large (MESSAGE_TOO_LARGE) is split and its pieces sent on their own: each piece
/// then has its report, and together the reports of a batch cover each of its records
/// exactly once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The batch (as named in [`Appended::batch`]).
    pub batch: BatchId,
    /// Its topic.
    pub topic: Arc<str>,
    /// Its partition.
    pub partition: i32,
    /// The [`Appended::index`] of the first record this report covers (0 unless the
    /// batch was split).
    pub first: u32,
    /// Records covered: indexes `first..first + records`.
    pub records: u32,
    /// The outcome, the same for every record covered.
    pub outcome: Result<Delivered, ProduceError>,
}

impl Report {
    /// The [`Appended::index`]es of the records this report covers.
    pub fn indexes(&self) -> std::ops::Range<u32> {
        self.first..self.first + self.records
    }
}

/// Where a batch (or a piece of a split batch) was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivered {
    /// Offset of the first record covered (the one at [`first_index`](Self::first_index));
    /// `-1` with `acks=0` (unknown).
    pub base_offset: i64,
    /// The [`Appended::index`] of the record written at `base_offset` (the report's
    /// [`first`](Report::first)).
    pub first_index: u32,
    /// The broker's append time when the topic uses LogAppendTime (every record then
    /// has it); `None`: each record keeps its create time.
    pub log_append_time: Option<i64>,
    /// The partition's log start offset (`-1` when not reported).
    pub log_start_offset: i64,
}

impl Delivered {
    /// The offset of the record at [`Appended::index`] `index` (`-1` when unknown, or
    /// when `index` is before the records this covers).
    pub fn offset(&self, index: u32) -> i64 {
        match index.checked_sub(self.first_index) {
            Some(i) if self.base_offset >= 0 => self.base_offset + i64::from(i),
            _ => -1,
        }
    }
}

/// Why a batch was not delivered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProduceError {
    /// The broker refused the batch with a non-retriable error (or a retriable one
    /// after `retries` attempts).
    #[error("broker refused the batch: {code}{}", message.as_deref().map(|m| format!(" ({m})")).unwrap_or_default())]
    Broker {
        /// The error code.
        code: KafkaCode,
        /// The broker's message, if any.
        message: Option<String>,
        /// Records the broker blamed (`INVALID_RECORD`): index in the batch and why.
        record_errors: Vec<(i32, Option<String>)>,
    },
    /// `delivery.timeout.ms` passed first. `possibly_delivered`: a request carrying the
    /// batch was written and its outcome never learnt, so the broker may have it.
    #[error("delivery timed out ({}){}", if *possibly_delivered { "possibly delivered" } else { "not delivered" }, last_cause.as_ref().map(|c| format!("; last cause: {c}")).unwrap_or_default())]
    TimedOut {
        /// Whether the broker may nevertheless have the batch.
        possibly_delivered: bool,
        /// The last failure seen for the batch (a retriable code, a failed connection),
        /// or while it waited for its leader, if any.
        last_cause: Option<Box<Cause>>,
    },
    /// The producer was closed (or its close timed out) before the batch was delivered.
    #[error("producer closed before delivery ({})", if *possibly_delivered { "possibly delivered" } else { "not delivered" })]
    Closed {
        /// Whether the broker may nevertheless have the batch.
        possibly_delivered: bool,
    },
    /// The producer's id/epoch had to be renewed while the batch's earlier attempt was
    /// unresolved: resending it under the new epoch could duplicate it, so it is not
    /// resent. Also the outcome of a batch that fails for any other reason (refused,
    /// aborted with its transaction, the producer failed) after an earlier attempt may
    /// have been appended — e.g. a retry refused as out of order once the first attempt
    /// left the broker's duplicate window: the broker may have it.
    #[error("batch failed after an attempt with an unknown outcome (possibly delivered)")]
    Unresolved,
    /// The broker refused a batch of one record as too large (MESSAGE_TOO_LARGE: over
    /// the topic's `max.message.bytes`). Larger batches are split instead.
    #[error("record too large for the broker: a batch of one record is {bytes} bytes")]
    RecordTooLarge {
        /// The size of the one-record batch refused.
        bytes: usize,
    },
    /// The request could not be sent at all (no common API version, encoding failure).
    #[error("request failed: {0}")]
    Request(String),
    /// The transaction was aborted before the batch was sent: it was never written.
    #[error("transaction aborted before the batch was sent")]
    Aborted,
    /// The producer is fenced or its id was refused: fatal, it produces no more.
    #[error("fatal producer error: {code}")]
    Fatal {
        /// The error code.
        code: KafkaCode,
    },
}

impl ProduceError {
    /// Whether the broker may have written the batch although it is reported failed.
    pub fn possibly_delivered(&self) -> bool {
        match self {
            ProduceError::TimedOut {
                possibly_delivered, ..
            }
            | ProduceError::Closed { possibly_delivered } => *possibly_delivered,
            ProduceError::Unresolved => true,
            _ => false,
        }
    }
}
