//! Share groups (KIP-932): DescribeShareGroups (ShareGroupDescribe to each group's
//! coordinator) and DeleteShareGroups (DeleteGroups, as for any group).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::keyed::{coordinator_step, Keyed, Step};
use crate::admin::{
    acl_operations, AclOperation, AdminError, Call, OpContext, Operation, Timeout, TopicPartition,
};
use crate::cluster::Route;
use crate::protocol::messages::share_group_describe::response::{Assignment, DescribedGroup};
use crate::protocol::messages::share_group_describe::{
    ShareGroupDescribeRequest, ShareGroupDescribeResponse,
};

/// Deletes share groups: DeleteGroups to each group's coordinator, as for consumer groups
/// (Java's `deleteShareGroups`); a group must be empty (else NON_EMPTY_GROUP).
pub type DeleteShareGroups = super::DeleteConsumerGroups;

/// A member of a share group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareMemberDescription {
    /// Member id.
    pub member_id: String,
    /// Rack id, if the member set one.
    pub rack_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host as the coordinator saw it.
    pub host: String,
    /// The topics the member subscribed to.
    pub subscribed_topics: BTreeSet<String>,
    /// The partitions assigned to the member (shared with the other members).
    pub assignment: BTreeSet<TopicPartition>,
    /// The member epoch.
    pub member_epoch: i32,
}

/// A share group as its coordinator describes it (Java's `ShareGroupDescription`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGroupDescription {
    /// Group id.
    pub group_id: String,
    /// Members.
    pub members: Vec<ShareMemberDescription>,
    /// State (`Empty`, `Stable`, `Dead`, ...).
    pub state: String,
    /// The server-side assignor.
    pub assignor: String,
    /// The coordinator's node id, when known.
    pub coordinator: Option<i32>,
    /// The group epoch.
    pub group_epoch: i32,
    /// The target assignment epoch.
    pub target_assignment_epoch: i32,
    /// Operations the caller may perform on the group (`None` unless asked for).
    pub authorized_operations: Option<BTreeSet<AclOperation>>,
}

fn assigned(a: Assignment) -> BTreeSet<TopicPartition> {
    a.topic_partitions
        .into_iter()
        .flat_map(|t| {
            let topic = t.topic_name;
            t.partitions
                .into_iter()
                .map(move |p| TopicPartition::new(topic.clone(), p))
        })
        .collect()
}

fn share_description(
    g: DescribedGroup,
    coordinator: Option<i32>,
    ops: bool,
) -> ShareGroupDescription {
    ShareGroupDescription {
        members: g
            .members
            .into_iter()
            .map(|m| ShareMemberDescription {
                member_id: m.member_id,
                rack_id: m.rack_id,
                client_id: m.client_id,
                host: m.client_host,
                subscribed_topics: m.subscribed_topic_names.into_iter().collect(),
                assignment: assigned(m.assignment),
                member_epoch: m.member_epoch,
            })
            .collect(),
        state: g.group_state,
        assignor: g.assignor_name,
        coordinator,
        group_epoch: g.group_epoch,
        target_assignment_epoch: g.assignment_epoch,
        authorized_operations: ops.then(|| acl_operations(g.authorized_operations)),
        group_id: g.group_id,
    }
}

/// Describes share groups (ShareGroupDescribe to each group's coordinator; Java's
/// `describeShareGroups`). Per-group results; a moved or loading coordinator is retried
/// until the deadline; an unknown group (or a group of another type) fails with
/// GROUP_ID_NOT_FOUND.
#[derive(Debug)]
pub struct DescribeShareGroups {
    groups: Vec<String>,
    include_authorized_operations: bool,
    calls: Option<Keyed<String, ShareGroupDescribeRequest, ShareGroupDescription>>,
    timeout: Timeout,
}

impl DescribeShareGroups {
    /// Describes `groups`.
    pub fn new(groups: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut groups: Vec<String> = groups.into_iter().map(Into::into).collect();
        groups.sort();
        groups.dedup();
        DescribeShareGroups {
            groups,
            include_authorized_operations: false,
            calls: None,
            timeout: Timeout::default(),
        }
    }

    /// Also reports the operations the caller may perform on each group.
    pub fn include_authorized_operations(mut self, yes: bool) -> Self {
        self.include_authorized_operations = yes;
        self
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

fn described(
    group: &str,
    resp: ShareGroupDescribeResponse,
    ops: bool,
    cx: &mut OpContext<'_>,
) -> Step<ShareGroupDescription> {
    let Some(g) = resp.groups.into_iter().find(|g| g.group_id == group) else {
        return Step::Done(Err(AdminError::missing("group")));
    };
    if let Some(step) = coordinator_step(cx, group, g.error_code, g.error_message.as_deref()) {
        return step;
    }
    if let Err(e) = AdminError::check(g.error_code, g.error_message.as_deref()) {
        return Step::Done(Err(e));
    }
    Step::Done(Ok(share_description(g, cx.coordinator(0, group), ops)))
}

impl Operation for DescribeShareGroups {
    type Output = Result<BTreeMap<String, Result<ShareGroupDescription, AdminError>>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        let ops = self.include_authorized_operations;
        let groups = &self.groups;
        let calls = self.calls.get_or_insert_with(|| {
            let mut keyed = Keyed::new();
            for g in groups {
                if g.is_empty() {
                    keyed.settle(g.clone(), Err(AdminError::Invalid("empty group id".into())));
                    continue;
                }
                let request = ShareGroupDescribeRequest {
                    group_ids: vec![g.clone()],
                    include_authorized_operations: ops,
                    ..Default::default()
                };
                keyed.insert(
                    g.clone(),
                    Call::new(Route::GroupCoordinator(g.clone()), request),
                );
            }
            keyed
        });
        let done = calls.poll(cx, deadline, |group, _, outcome, cx| match outcome {
            Ok(resp) => described(group, resp, ops, cx),
            Err(e) => Step::Done(Err(e)),
        });
        done.then(|| Ok(calls.take_results()))
    }
}
