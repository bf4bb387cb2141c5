//! ListConsumerGroups: ListGroups to every broker, merged.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::keyed::{AllBrokers, Step};
use crate::admin::{AdminError, OpContext, Operation, Timeout};
use crate::protocol::messages::list_groups::{ListGroupsRequest, ListGroupsResponse};
use crate::protocol::KafkaCode;

/// A group as ListGroups reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupListing {
    /// Group id.
    pub group_id: String,
    /// Protocol type (`consumer`, or empty for a group that only commits offsets).
    pub protocol_type: String,
    /// State (`Stable`, `Empty`, ...), from brokers that report it (ListGroups v4+).
    pub state: Option<String>,
    /// Type (`classic`, `consumer`, ...), from brokers that report it (ListGroups v5+).
    pub group_type: Option<String>,
}

impl ConsumerGroupListing {
    /// Whether the group only commits offsets (no members ever joined with a protocol).
    pub fn is_simple_consumer_group(&self) -> bool {
        self.protocol_type.is_empty()
    }
}

/// The merged listing, and the brokers that could not be asked.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerGroupListings {
    /// Groups by id.
    pub groups: BTreeMap<String, ConsumerGroupListing>,
    /// Brokers whose answer is missing, by node id, with why.
    pub errors: BTreeMap<i32, AdminError>,
}

/// Lists consumer groups: ListGroups to every broker (each is the coordinator of some
/// groups), merged. Only groups with protocol type `consumer` or none are listed (like
/// Java's `listConsumerGroups`). A broker that fails is reported in
/// [`ConsumerGroupListings::errors`]; the others are still listed.
#[derive(Debug)]
pub struct ListConsumerGroups {
    fanout: AllBrokers<ListGroupsRequest, Vec<ConsumerGroupListing>>,
    states: BTreeSet<String>,
    types: BTreeSet<String>,
    timeout: Timeout,
}

impl Default for ListConsumerGroups {
    fn default() -> Self {
        Self::new()
    }
}

impl ListConsumerGroups {
    /// Lists every consumer group.
    pub fn new() -> Self {
        ListConsumerGroups {
            fanout: AllBrokers::new(ListGroupsRequest::default()),
            states: BTreeSet::new(),
            types: BTreeSet::new(),
            timeout: Timeout::default(),
        }
    }

    /// Only groups in these states (`Stable`, `Empty`, `PreparingRebalance`, ...; the
    /// broker filters with ListGroups v4+, older brokers fail the call per broker).
    pub fn states(mut self, states: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.states = states.into_iter().map(Into::into).collect();
        self.fanout.request_mut().states_filter = self.states.iter().cloned().collect();
        self
    }

    /// Only groups of these types (`classic`, `consumer`; ListGroups v5+).
    pub fn types(mut self, types: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.types = types.into_iter().map(Into::into).collect();
        self.fanout.request_mut().types_filter = self.types.iter().cloned().collect();
        self
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

/// The consumer groups of one broker's answer (a retry for a loading coordinator).
pub(crate) fn absorb_list(resp: ListGroupsResponse) -> Step<Vec<ConsumerGroupListing>> {
    let code = KafkaCode(resp.error_code);
    if code == KafkaCode::COORDINATOR_LOAD_IN_PROGRESS
        || code == KafkaCode::COORDINATOR_NOT_AVAILABLE
    {
        return Step::Retry(AdminError::Kafka {
            code,
            message: None,
        });
    }
    if let Err(e) = AdminError::check(resp.error_code, None) {
        return Step::Done(Err(e));
    }
    let groups = resp
        .groups
        .into_iter()
        .filter(|g| g.protocol_type == "consumer" || g.protocol_type.is_empty())
        .map(|g| ConsumerGroupListing {
            group_id: g.group_id,
            protocol_type: g.protocol_type,
            state: Some(g.group_state).filter(|s| !s.is_empty()),
            group_type: Some(g.group_type).filter(|s| !s.is_empty()),
        })
        .collect();
    Step::Done(Ok(groups))
}

impl Operation for ListConsumerGroups {
    type Output = Result<ConsumerGroupListings, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        let listing = self.fanout.poll_listing(
            cx,
            deadline,
            |_, resp| absorb_list(resp),
            |g| g.group_id.clone(),
        )?;
        Some(listing.map(|(groups, errors)| ConsumerGroupListings { groups, errors }))
    }
}
