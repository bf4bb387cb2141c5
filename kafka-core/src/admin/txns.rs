//! Producer and transaction operations: describe producers, describe and list
//! transactions, abort a hanging transaction (`abort`), fence producers (`fence`).

mod abort;
mod fence;

pub use abort::{AbortTransaction, AbortTransactionSpec};
pub use fence::{FenceProducers, ProducerIdAndEpoch};

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::groups::keyed::{AllBrokers, Keyed, Step};
use super::{AdminError, Call, OpContext, Operation, Timeout, TopicPartition};
use crate::cluster::Route;
use crate::protocol::messages::describe_producers::request::TopicRequest;
use crate::protocol::messages::describe_producers::{
    DescribeProducersRequest, DescribeProducersResponse,
};
use crate::protocol::messages::describe_transactions::{
    DescribeTransactionsRequest, DescribeTransactionsResponse,
};
use crate::protocol::messages::list_transactions::{
    ListTransactionsRequest, ListTransactionsResponse,
};
use crate::protocol::KafkaCode;

#[cfg(test)]
mod tests;

/// An active producer of a partition, as its leader tracks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerState {
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i32,
    /// Sequence number of the last record appended (-1 if none).
    pub last_sequence: i32,
    /// Timestamp of the last record appended (-1 if none).
    pub last_timestamp: i64,
    /// Epoch of the transaction coordinator that last wrote a marker, if any.
    pub coordinator_epoch: Option<i32>,
    /// First offset of the producer's open transaction, if one is open.
    pub current_transaction_start_offset: Option<i64>,
}

/// Describes the active producers of partitions (DescribeProducers to each partition's
/// leader, or to one given broker). Per-partition results; NOT_LEADER_OR_FOLLOWER makes
/// the partition's leader be looked up again and the partition retried.
#[derive(Debug)]
pub struct DescribeProducers {
    partitions: BTreeSet<TopicPartition>,
    broker: Option<i32>,
    calls: Option<Keyed<TopicPartition, DescribeProducersRequest, Vec<ProducerState>>>,
    timeout: Timeout,
}

impl DescribeProducers {
    /// Describes the producers of `partitions`.
    pub fn new(partitions: impl IntoIterator<Item = TopicPartition>) -> Self {
        DescribeProducers {
            partitions: partitions.into_iter().collect(),
            broker: None,
            calls: None,
            timeout: Timeout::default(),
        }
    }

    /// Asks this broker (e.g. a follower) instead of each partition's leader.
    pub fn broker(mut self, node_id: i32) -> Self {
        self.broker = Some(node_id);
        self
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

fn producers(
    tp: &TopicPartition,
    to_leader: bool,
    resp: DescribeProducersResponse,
    cx: &mut OpContext<'_>,
) -> Step<Vec<ProducerState>> {
    let found = resp
        .topics
        .into_iter()
        .filter(|t| t.name == tp.topic)
        .flat_map(|t| t.partitions)
        .find(|p| p.partition_index == tp.partition);
    let Some(p) = found else {
        return Step::Done(Err(AdminError::missing("partition")));
    };
    let code = KafkaCode(p.error_code);
    let err = || AdminError::Kafka {
        code,
        message: p.error_message.clone(),
    };
    if to_leader
        && (code == KafkaCode::NOT_LEADER_OR_FOLLOWER
            || code == KafkaCode::UNKNOWN_TOPIC_OR_PARTITION)
    {
        cx.invalidate_leader(&tp.topic, tp.partition);
        return Step::Retry(err());
    }
    if code != KafkaCode::NONE {
        return Step::Done(Err(err()));
    }
    Step::Done(Ok(p
        .active_producers
        .into_iter()
        .map(|s| ProducerState {
            producer_id: s.producer_id,
            producer_epoch: s.producer_epoch,
            last_sequence: s.last_sequence,
            last_timestamp: s.last_timestamp,
            coordinator_epoch: (s.coordinator_epoch >= 0).then_some(s.coordinator_epoch),
            current_transaction_start_offset: (s.current_txn_start_offset >= 0)
                .then_some(s.current_txn_start_offset),
        })
        .collect()))
}

impl Operation for DescribeProducers {
    type Output =
        Result<BTreeMap<TopicPartition, Result<Vec<ProducerState>, AdminError>>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        let (partitions, broker) = (&self.partitions, self.broker);
        let calls = self.calls.get_or_insert_with(|| {
            let mut keyed = Keyed::new();
            for tp in partitions {
                let route = match broker {
                    Some(n) => Route::Broker(n),
                    None => Route::Leader {
                        topic: tp.topic.clone(),
                        partition: tp.partition,
                    },
                };
                let request = DescribeProducersRequest {
                    topics: vec![TopicRequest {
                        name: tp.topic.clone(),
                        partition_indexes: vec![tp.partition],
                        ..Default::default()
                    }],
                    ..Default::default()
                };
                keyed.insert(tp.clone(), Call::new(route, request));
            }
            keyed
        });
        let to_leader = broker.is_none();
        let done = calls.poll(cx, deadline, |tp, _, outcome, cx| match outcome {
            Ok(resp) => producers(tp, to_leader, resp, cx),
            Err(e) => Step::Done(Err(e)),
        });
        done.then(|| Ok(calls.take_results()))
    }
}

/// A transaction as its coordinator describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionDescription {
    /// The coordinator's node id, when known.
    pub coordinator: Option<i32>,
    /// State (`Empty`, `Ongoing`, `PrepareCommit`, `CompleteCommit`, ...).
    pub state: String,
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i16,
    /// Transaction timeout in milliseconds.
    pub transaction_timeout_ms: i32,
    /// When the open transaction started (ms since the epoch), if one is open.
    pub transaction_start_time_ms: Option<i64>,
    /// Partitions in the open transaction.
    pub topic_partitions: BTreeSet<TopicPartition>,
}

/// Describes transactions (DescribeTransactions to each transactional id's
/// coordinator). Per-id results; coordinator errors are retried.
#[derive(Debug)]
pub struct DescribeTransactions {
    ids: Vec<String>,
    calls: Option<Keyed<String, DescribeTransactionsRequest, TransactionDescription>>,
    timeout: Timeout,
}

impl DescribeTransactions {
    /// Describes the transactions of `transactional_ids`.
    pub fn new(transactional_ids: impl IntoIterator<Item = impl Into<String>>) -> Self {
        DescribeTransactions {
            ids: transactional_ids.into_iter().map(Into::into).collect(),
            calls: None,
            timeout: Timeout::default(),
        }
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

fn described_txn(
    id: &str,
    resp: DescribeTransactionsResponse,
    cx: &mut OpContext<'_>,
) -> Step<TransactionDescription> {
    let Some(s) = resp
        .transaction_states
        .into_iter()
        .find(|s| s.transactional_id == id)
    else {
        return Step::Done(Err(AdminError::missing("transactional id")));
    };
    if let Some(step) = super::groups::keyed::coordinator_step(cx, id, s.error_code, None) {
        return step;
    }
    if let Err(e) = AdminError::check(s.error_code, None) {
        return Step::Done(Err(e));
    }
    Step::Done(Ok(TransactionDescription {
        coordinator: cx.coordinator(1, id),
        state: s.transaction_state,
        producer_id: s.producer_id,
        producer_epoch: s.producer_epoch,
        transaction_timeout_ms: s.transaction_timeout_ms,
        transaction_start_time_ms: (s.transaction_start_time_ms >= 0)
            .then_some(s.transaction_start_time_ms),
        topic_partitions: s
            .topics
            .into_iter()
            .flat_map(|t| {
                let topic = t.topic;
                t.partitions
                    .into_iter()
                    .map(move |p| TopicPartition::new(topic.clone(), p))
            })
            .collect(),
    }))
}

impl Operation for DescribeTransactions {
    type Output = Result<BTreeMap<String, Result<TransactionDescription, AdminError>>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        let ids = &self.ids;
        let calls = self.calls.get_or_insert_with(|| {
            let mut keyed = Keyed::new();
            for id in ids {
                let request = DescribeTransactionsRequest {
                    transactional_ids: vec![id.clone()],
                    ..Default::default()
                };
                keyed.insert(
                    id.clone(),
                    Call::new(Route::TxnCoordinator(id.clone()), request),
                );
            }
            keyed
        });
        let done = calls.poll(cx, deadline, |id, _, outcome, cx| match outcome {
            Ok(resp) => described_txn(id, resp, cx),
            Err(e) => Step::Done(Err(e)),
        });
        done.then(|| Ok(calls.take_results()))
    }
}

/// A transaction as ListTransactions reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionListing {
    /// Transactional id.
    pub transactional_id: String,
    /// Producer id.
    pub producer_id: i64,
    /// State (`Ongoing`, `Empty`, ...).
    pub state: String,
    /// The broker (coordinator) that listed it.
    pub coordinator: i32,
}

/// The merged listing, and the brokers that could not be asked.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TransactionListings {
    /// Transactions by transactional id.
    pub transactions: BTreeMap<String, TransactionListing>,
    /// Brokers whose answer is missing, by node id, with why.
    pub errors: BTreeMap<i32, AdminError>,
}

/// Lists transactions: ListTransactions to every broker (each coordinates some
/// transactional ids), merged. Filters by state, producer id and (KIP-994, v1+) minimum
/// running time; a broker too old for a filter fails with an `Invalid` error in
/// [`TransactionListings::errors`].
#[derive(Debug)]
pub struct ListTransactions {
    fanout: AllBrokers<ListTransactionsRequest, Vec<TransactionListing>>,
    timeout: Timeout,
}

impl Default for ListTransactions {
    fn default() -> Self {
        Self::new()
    }
}

impl ListTransactions {
    /// Lists every transaction.
    pub fn new() -> Self {
        ListTransactions {
            fanout: AllBrokers::new(ListTransactionsRequest::default()),
            timeout: Timeout::default(),
        }
    }

    /// Only transactions in these states (`Ongoing`, `Empty`, ...).
    pub fn states(mut self, states: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.fanout.request_mut().state_filters = states.into_iter().map(Into::into).collect();
        self
    }

    /// Only transactions of these producer ids.
    pub fn producer_ids(mut self, ids: impl IntoIterator<Item = i64>) -> Self {
        self.fanout.request_mut().producer_id_filters = ids.into_iter().collect();
        self
    }

    /// Only transactions running longer than `d` (ListTransactions v1+).
    pub fn running_longer_than(mut self, d: Duration) -> Self {
        self.fanout.request_mut().duration_filter =
            i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        self
    }

    /// Only transactional ids matching this regular expression (ListTransactions v2+).
    pub fn transactional_id_pattern(mut self, pattern: impl Into<String>) -> Self {
        self.fanout.request_mut().transactional_id_pattern = Some(pattern.into());
        self
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

fn listed(broker: i32, resp: ListTransactionsResponse) -> Step<Vec<TransactionListing>> {
    let code = KafkaCode(resp.error_code);
    if code == KafkaCode::COORDINATOR_LOAD_IN_PROGRESS {
        return Step::Retry(AdminError::Kafka {
            code,
            message: None,
        });
    }
    if let Err(e) = AdminError::check(resp.error_code, None) {
        return Step::Done(Err(e));
    }
    Step::Done(Ok(resp
        .transaction_states
        .into_iter()
        .map(|s| TransactionListing {
            transactional_id: s.transactional_id,
            producer_id: s.producer_id,
            state: s.transaction_state,
            coordinator: broker,
        })
        .collect()))
}

impl Operation for ListTransactions {
    type Output = Result<TransactionListings, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        let listing = self
            .fanout
            .poll_listing(cx, deadline, listed, |t| t.transactional_id.clone())?;
        Some(listing.map(|(transactions, errors)| TransactionListings {
            transactions,
            errors,
        }))
    }
}

/// The named methods of this group (see [`admin_methods!`](crate::admin_methods)).
#[doc(hidden)]
#[macro_export]
macro_rules! __admin_methods_txns {
    ($mode:ident $run:ident) => {
        $crate::__admin_method_list!($mode $run
            /// Describes the active producers of partitions (per-partition results).
            fn describe_producers(partitions: impl IntoIterator<Item = $crate::admin::TopicPartition>)
                -> ::std::collections::BTreeMap<$crate::admin::TopicPartition, Result<Vec<$crate::admin::ProducerState>, $crate::admin::AdminError>>
                = $crate::admin::DescribeProducers::new(partitions);
            /// Describes transactions by transactional id (per-id results).
            fn describe_transactions(transactional_ids: impl IntoIterator<Item = impl Into<String>>)
                -> ::std::collections::BTreeMap<String, Result<$crate::admin::TransactionDescription, $crate::admin::AdminError>>
                = $crate::admin::DescribeTransactions::new(transactional_ids);
            /// Lists transactions on every broker; see [`ListTransactions`](kafka_core::admin::ListTransactions).
            fn list_transactions() -> $crate::admin::TransactionListings
                = $crate::admin::ListTransactions::new();
            /// Aborts a hanging transaction on one partition; see
            /// [`AbortTransaction`](kafka_core::admin::AbortTransaction).
            fn abort_transaction(spec: $crate::admin::AbortTransactionSpec) -> ()
                = $crate::admin::AbortTransaction::new(spec);
            /// Fences the producers of transactional ids (per-id results); see
            /// [`FenceProducers`](kafka_core::admin::FenceProducers).
            fn fence_producers(transactional_ids: impl IntoIterator<Item = impl Into<String>>)
                -> ::std::collections::BTreeMap<String, Result<$crate::admin::ProducerIdAndEpoch, $crate::admin::AdminError>>
                = $crate::admin::FenceProducers::new(transactional_ids);
        );
    };
}
