//! ListConsumerGroups and ListGroups (every group type, KIP-1043): ListGroups to every
//! broker, merged.

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

/// A group of any type as ListGroups reports it (Java's `GroupListing`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    /// Group id.
    pub group_id: String,
    /// Type (`classic`, `consumer`, `share`, `streams`), from brokers that report it
    /// (ListGroups v5+, KIP-1043).
    pub group_type: Option<String>,
    /// Protocol type (`consumer`, `share`, `streams`, a Connect worker's `connect`, or
    /// empty for a group that only commits offsets).
    pub protocol_type: String,
    /// State (`Stable`, `Empty`, ...), from brokers that report it (ListGroups v4+).
    pub state: Option<String>,
}

/// The merged listing of [`ListGroups`], and the brokers that could not be asked.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupListings {
    /// Groups by id.
    pub groups: BTreeMap<String, GroupListing>,
    /// Brokers whose answer is missing, by node id, with why.
    pub errors: BTreeMap<i32, AdminError>,
}

/// Lists groups of every type (Java's `listGroups`, KIP-1043): ListGroups to every
/// broker, merged. Filters: group types (`types_filter`, ListGroups v5+) and states
/// (`states_filter`, v4+) go to the broker — one too old for a filter fails with an
/// `Invalid` error in [`GroupListings::errors`]; protocol types are filtered here, as
/// Java does. A broker that fails is reported, the others still listed.
#[derive(Debug)]
pub struct ListGroups {
    fanout: AllBrokers<ListGroupsRequest, Vec<GroupListing>>,
    protocol_types: BTreeSet<String>,
    timeout: Timeout,
}

impl Default for ListGroups {
    fn default() -> Self {
        Self::new()
    }
}

impl ListGroups {
    /// Lists every group.
    pub fn new() -> Self {
        ListGroups {
            fanout: AllBrokers::new(ListGroupsRequest::default()),
            protocol_types: BTreeSet::new(),
            timeout: Timeout::default(),
        }
    }

    /// Only groups of these types (`classic`, `consumer`, `share`, `streams`).
    pub fn types(mut self, types: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let set: BTreeSet<String> = types.into_iter().map(Into::into).collect();
        self.fanout.request_mut().types_filter = set.into_iter().collect();
        self
    }

    /// Only groups in these states (`Stable`, `Empty`, ...).
    pub fn states(mut self, states: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let set: BTreeSet<String> = states.into_iter().map(Into::into).collect();
        self.fanout.request_mut().states_filter = set.into_iter().collect();
        self
    }

    /// Only groups with these protocol types (`consumer`, `share`, ..., `""` for groups
    /// that only commit offsets); filtered by this client.
    pub fn protocol_types(mut self, types: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.protocol_types = types.into_iter().map(Into::into).collect();
        self
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

/// Every group of one broker's answer with an accepted protocol type (a retry for a
/// loading coordinator).
fn absorb_groups(
    resp: ListGroupsResponse,
    protocol_types: &BTreeSet<String>,
) -> Step<Vec<GroupListing>> {
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
        .filter(|g| protocol_types.is_empty() || protocol_types.contains(&g.protocol_type))
        .map(|g| GroupListing {
            group_id: g.group_id,
            group_type: Some(g.group_type).filter(|s| !s.is_empty()),
            protocol_type: g.protocol_type,
            state: Some(g.group_state).filter(|s| !s.is_empty()),
        })
        .collect();
    Step::Done(Ok(groups))
}

impl Operation for ListGroups {
    type Output = Result<GroupListings, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        let protocol_types = &self.protocol_types;
        let listing = self.fanout.poll_listing(
            cx,
            deadline,
            |_, resp| absorb_groups(resp, protocol_types),
            |g| g.group_id.clone(),
        )?;
        Some(listing.map(|(groups, errors)| GroupListings { groups, errors }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::groups::scripted::{reply, two_brokers, Cluster};
    use crate::protocol::messages::list_groups::response::ListedGroup;
    use crate::protocol::ApiKey;

    fn listed(id: &str, kind: &str, protocol: &str) -> ListedGroup {
        ListedGroup {
            group_id: id.into(),
            protocol_type: protocol.into(),
            group_state: "Stable".into(),
            group_type: kind.into(),
            ..Default::default()
        }
    }

    #[test]
    fn list_groups_sends_type_and_state_filters_and_keeps_every_type() {
        let mut cluster = Cluster::new();
        let op = ListGroups::new()
            .types(["share", "classic", "consumer", "streams"])
            .states(["Stable"]);
        let out = cluster.run(op, |host, seen| match seen.api() {
            ApiKey::Metadata => reply(seen, &two_brokers()),
            ApiKey::ListGroups => {
                let req: ListGroupsRequest = seen.decode();
                assert_eq!(
                    req.types_filter,
                    ["classic", "consumer", "share", "streams"]
                );
                assert_eq!(req.states_filter, ["Stable"]);
                let groups = if host == "b1" {
                    vec![
                        listed("c", "classic", "consumer"),
                        listed("s", "share", "share"),
                    ]
                } else {
                    vec![
                        listed("k", "consumer", "consumer"),
                        listed("st", "streams", "streams"),
                        listed("w", "classic", "connect"),
                    ]
                };
                reply(
                    seen,
                    &ListGroupsResponse {
                        groups,
                        ..Default::default()
                    },
                )
            }
            other => panic!("unexpected {other:?}"),
        });
        let out = out.unwrap();
        assert!(out.errors.is_empty(), "{out:?}");
        assert_eq!(
            out.groups.keys().map(String::as_str).collect::<Vec<_>>(),
            ["c", "k", "s", "st", "w"],
            "every type and protocol, unlike ListConsumerGroups"
        );
        assert_eq!(out.groups["s"].group_type.as_deref(), Some("share"));
        assert_eq!(out.groups["w"].protocol_type, "connect");
    }

    #[test]
    fn protocol_types_are_filtered_by_the_client() {
        let resp = ListGroupsResponse {
            groups: vec![listed("a", "", "consumer"), listed("b", "", "connect")],
            ..Default::default()
        };
        let only: BTreeSet<String> = ["connect".to_string()].into();
        let Step::Done(Ok(groups)) = absorb_groups(resp, &only) else {
            panic!("listed");
        };
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].group_id, "b");
        assert_eq!(groups[0].group_type, None, "an old broker does not say");
    }
}
