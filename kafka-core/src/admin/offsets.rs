//! Offset operations: list offsets (earliest, latest, by timestamp, max timestamp), delete records.
//!
//! Both fan out to partition leaders (see `fanout`): a refresh of the client's metadata finds
//! the leaders, one request per leader carries its partitions, and partitions answered with a
//! stale-leader or retriable error (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE,
//! UNKNOWN_TOPIC_OR_PARTITION right after creation, ...) are looked up and sent again
//! until the deadline.

mod fanout;

use std::collections::BTreeMap;
use std::time::Duration;

use self::fanout::{Answer, FanOut, PerLeader};
use super::{per_topic, AdminError, OpContext, Operation, Timeout, TopicPartition};
use crate::protocol::messages::delete_records::request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use crate::protocol::messages::delete_records::{DeleteRecordsRequest, DeleteRecordsResponse};
use crate::protocol::messages::list_offsets::request::{ListOffsetsPartition, ListOffsetsTopic};
use crate::protocol::messages::list_offsets::{ListOffsetsRequest, ListOffsetsResponse};

/// Which offset ListOffsets looks up for a partition (Java's `OffsetSpec`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSpec {
    /// The log start offset.
    Earliest,
    /// The log end offset (the high watermark, or the last stable offset under
    /// read-committed isolation).
    Latest,
    /// The offset of the record with the highest timestamp (and that timestamp).
    MaxTimestamp,
    /// The first offset whose timestamp is at or after this time (ms since the epoch);
    /// offset -1 when there is none.
    ByTimestamp(i64),
    /// The first offset on the leader's local log (differs from `Earliest` with tiered
    /// storage).
    EarliestLocal,
    /// The highest offset copied to tiered storage (-1 without tiered storage).
    LatestTiered,
}

impl OffsetSpec {
    /// The request's `timestamp` field for this spec.
    fn wire(self) -> i64 {
        match self {
            OffsetSpec::Latest => -1,
            OffsetSpec::Earliest => -2,
            OffsetSpec::MaxTimestamp => -3,
            OffsetSpec::EarliestLocal => -4,
            OffsetSpec::LatestTiered => -5,
            OffsetSpec::ByTimestamp(ms) => ms,
        }
    }
}

/// Which records count for [`OffsetSpec::Latest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IsolationLevel {
    /// Up to the high watermark.
    #[default]
    ReadUncommitted,
    /// Up to the last stable offset (no open transactions).
    ReadCommitted,
}

/// An offset ListOffsets found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListedOffset {
    /// The offset (-1 when no record matches a timestamp).
    pub offset: i64,
    /// The timestamp of the record at that offset (-1 when it does not apply).
    pub timestamp: i64,
    /// The leader epoch of the record, if the broker knows it.
    pub leader_epoch: Option<i32>,
}

/// The ListOffsets side of the fan-out.
#[derive(Debug)]
struct ListOffsetsApi {
    isolation: IsolationLevel,
    timeout: Timeout,
}

impl PerLeader for ListOffsetsApi {
    type Arg = OffsetSpec;
    type Request = ListOffsetsRequest;
    type Response = ListOffsetsResponse;
    type Value = ListedOffset;

    fn request(&self, items: &[(TopicPartition, OffsetSpec)], cx: &OpContext<'_>) -> Self::Request {
        let topics = per_topic(
            items.iter().map(|(tp, spec)| {
                let partition = ListOffsetsPartition {
                    partition_index: tp.partition,
                    timestamp: spec.wire(),
                    ..Default::default()
                };
                (tp, partition)
            }),
            |name, partitions| ListOffsetsTopic {
                name,
                partitions,
                ..Default::default()
            },
        );
        ListOffsetsRequest {
            // -1: a client, not a follower.
            replica_id: -1,
            isolation_level: match self.isolation {
                IsolationLevel::ReadUncommitted => 0,
                IsolationLevel::ReadCommitted => 1,
            },
            topics,
            timeout_ms: self.timeout.as_ms(cx),
            ..Default::default()
        }
    }

    fn answers(resp: ListOffsetsResponse) -> Vec<Answer<ListedOffset>> {
        let mut out = Vec::new();
        for t in resp.topics {
            for p in t.partitions {
                out.push(Answer {
                    tp: TopicPartition::new(t.name.clone(), p.partition_index),
                    error_code: p.error_code,
                    value: ListedOffset {
                        offset: p.offset,
                        timestamp: p.timestamp,
                        leader_epoch: (p.leader_epoch >= 0).then_some(p.leader_epoch),
                    },
                });
            }
        }
        out
    }
}

/// Looks up offsets of partitions (ListOffsets, one request per partition leader), with
/// per-partition results.
#[derive(Debug)]
pub struct ListOffsets {
    api: ListOffsetsApi,
    fan: Option<FanOut<ListOffsetsApi>>,
    specs: BTreeMap<TopicPartition, OffsetSpec>,
}

impl ListOffsets {
    /// Looks up `spec` for each partition.
    pub fn new(partitions: impl IntoIterator<Item = (TopicPartition, OffsetSpec)>) -> Self {
        ListOffsets {
            api: ListOffsetsApi {
                isolation: IsolationLevel::default(),
                timeout: Timeout::default(),
            },
            fan: None,
            specs: partitions.into_iter().collect(),
        }
    }

    /// Read-committed or read-uncommitted (the default) for [`OffsetSpec::Latest`].
    pub fn isolation_level(mut self, level: IsolationLevel) -> Self {
        self.api.isolation = level;
        self
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.api.timeout.set(limit);
        self
    }
}

impl Operation for ListOffsets {
    type Output = Result<BTreeMap<TopicPartition, Result<ListedOffset, AdminError>>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.api.timeout.deadline(cx);
        let fan = self
            .fan
            .get_or_insert_with(|| FanOut::new(std::mem::take(&mut self.specs)));
        fan.poll(&self.api, cx, deadline).map(Ok)
    }
}

/// The DeleteRecords side of the fan-out.
#[derive(Debug)]
struct DeleteRecordsApi {
    timeout: Timeout,
}

impl PerLeader for DeleteRecordsApi {
    type Arg = i64;
    type Request = DeleteRecordsRequest;
    type Response = DeleteRecordsResponse;
    type Value = i64;

    fn request(&self, items: &[(TopicPartition, i64)], cx: &OpContext<'_>) -> Self::Request {
        let topics = per_topic(
            items.iter().map(|(tp, before)| {
                let partition = DeleteRecordsPartition {
                    partition_index: tp.partition,
                    offset: *before,
                    ..Default::default()
                };
                (tp, partition)
            }),
            |name, partitions| DeleteRecordsTopic {
                name,
                partitions,
                ..Default::default()
            },
        );
        DeleteRecordsRequest {
            topics,
            timeout_ms: self.timeout.as_ms(cx),
            ..Default::default()
        }
    }

    fn answers(resp: DeleteRecordsResponse) -> Vec<Answer<i64>> {
        let mut out = Vec::new();
        for t in resp.topics {
            for p in t.partitions {
                out.push(Answer {
                    tp: TopicPartition::new(t.name.clone(), p.partition_index),
                    error_code: p.error_code,
                    value: p.low_watermark,
                });
            }
        }
        out
    }
}

/// Deletes the records of partitions before given offsets (DeleteRecords, one request
/// per partition leader). Each partition's result is its new low watermark (log start
/// offset). An offset of -1 means "up to the high watermark".
#[derive(Debug)]
pub struct DeleteRecords {
    api: DeleteRecordsApi,
    fan: Option<FanOut<DeleteRecordsApi>>,
    before: BTreeMap<TopicPartition, i64>,
}

impl DeleteRecords {
    /// Deletes, in each partition, the records before the given offset.
    pub fn new(before: impl IntoIterator<Item = (TopicPartition, i64)>) -> Self {
        DeleteRecords {
            api: DeleteRecordsApi {
                timeout: Timeout::default(),
            },
            fan: None,
            before: before.into_iter().collect(),
        }
    }

    /// Overrides `default.api.timeout.ms` (also sent as the broker-side timeout).
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.api.timeout.set(limit);
        self
    }
}

impl Operation for DeleteRecords {
    type Output = Result<BTreeMap<TopicPartition, Result<i64, AdminError>>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.api.timeout.deadline(cx);
        let fan = self
            .fan
            .get_or_insert_with(|| FanOut::new(std::mem::take(&mut self.before)));
        fan.poll(&self.api, cx, deadline).map(Ok)
    }
}

/// The named methods of this group (see [`admin_methods!`](crate::admin_methods)).
#[doc(hidden)]
#[macro_export]
macro_rules! __admin_methods_offsets {
    ($mode:ident $run:ident) => {
        $crate::__admin_method_list!($mode $run
            /// Looks up offsets of partitions (per-partition results); see [`ListOffsets`](kafka_core::admin::ListOffsets).
            fn list_offsets(partitions: impl IntoIterator<Item = ($crate::admin::TopicPartition, $crate::admin::OffsetSpec)>)
                -> ::std::collections::BTreeMap<$crate::admin::TopicPartition, Result<$crate::admin::ListedOffset, $crate::admin::AdminError>>
                = $crate::admin::ListOffsets::new(partitions);
            /// Deletes records before offsets; each result is the new low watermark.
            fn delete_records(before: impl IntoIterator<Item = ($crate::admin::TopicPartition, i64)>)
                -> ::std::collections::BTreeMap<$crate::admin::TopicPartition, Result<i64, $crate::admin::AdminError>>
                = $crate::admin::DeleteRecords::new(before);
        );
    };
}

#[cfg(test)]
pub(crate) mod tests;
