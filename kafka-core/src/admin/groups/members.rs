//! Deleting consumer groups and removing members from them.

use std::collections::BTreeMap;
use std::time::Duration;

use super::describe::DescribeConsumerGroups;
use super::keyed::{coordinator_step, Keyed, Step};
use crate::admin::{AdminError, Call, OpContext, Operation, Timeout};
use crate::cluster::Route;
use crate::protocol::messages::delete_groups::{DeleteGroupsRequest, DeleteGroupsResponse};
use crate::protocol::messages::leave_group::request::MemberIdentity;
use crate::protocol::messages::leave_group::{LeaveGroupRequest, LeaveGroupResponse};

/// Deletes consumer groups (DeleteGroups to each group's coordinator); a group must be
/// empty (else NON_EMPTY_GROUP). Per-group results.
#[derive(Debug)]
pub struct DeleteConsumerGroups {
    groups: Vec<String>,
    calls: Option<Keyed<String, DeleteGroupsRequest, ()>>,
    timeout: Timeout,
}

impl DeleteConsumerGroups {
    /// Deletes `groups`.
    pub fn new(groups: impl IntoIterator<Item = impl Into<String>>) -> Self {
        DeleteConsumerGroups {
            groups: groups.into_iter().map(Into::into).collect(),
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

fn group_deleted(cx: &mut OpContext<'_>, group: &str, resp: DeleteGroupsResponse) -> Step<()> {
    let Some(r) = resp.results.into_iter().find(|r| r.group_id == group) else {
        return Step::Done(Err(AdminError::missing("group")));
    };
    if let Some(step) = coordinator_step(cx, group, r.error_code, None) {
        return step;
    }
    Step::Done(AdminError::check(r.error_code, None))
}

impl Operation for DeleteConsumerGroups {
    type Output = Result<BTreeMap<String, Result<(), AdminError>>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        let groups = &self.groups;
        let calls = self.calls.get_or_insert_with(|| {
            let mut keyed = Keyed::new();
            for g in groups {
                let request = DeleteGroupsRequest {
                    groups_names: vec![g.clone()],
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
            Ok(resp) => group_deleted(cx, group, resp),
            Err(e) => Step::Done(Err(e)),
        });
        done.then(|| Ok(calls.take_results()))
    }
}

/// A member to remove: by static `group.instance.id`, or by member id (dynamic members,
/// as [`RemoveMembersFromConsumerGroup::all`] finds them).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemberToRemove {
    /// Member id (empty when removing by instance id).
    pub member_id: String,
    /// Static membership id.
    pub group_instance_id: Option<String>,
}

impl MemberToRemove {
    /// The static member with this `group.instance.id`.
    pub fn instance(group_instance_id: impl Into<String>) -> Self {
        MemberToRemove {
            member_id: String::new(),
            group_instance_id: Some(group_instance_id.into()),
        }
    }

    /// The member with this member id.
    pub fn member(member_id: impl Into<String>) -> Self {
        MemberToRemove {
            member_id: member_id.into(),
            group_instance_id: None,
        }
    }

    fn matches(&self, member_id: &str, instance: Option<&str>) -> bool {
        match &self.group_instance_id {
            Some(i) => instance == Some(i.as_str()),
            None => self.member_id == member_id,
        }
    }
}

type MemberResults = BTreeMap<MemberToRemove, Result<(), AdminError>>;

/// Removes members from a consumer group (LeaveGroup v3+ to its coordinator), as if they
/// left: given static members, or every member (described first). Per-member results;
/// a group-level error fails the call.
#[derive(Debug)]
pub struct RemoveMembersFromConsumerGroup {
    group: String,
    members: Vec<MemberToRemove>,
    describe: Option<DescribeConsumerGroups>,
    reason: Option<String>,
    calls: Option<Keyed<String, LeaveGroupRequest, MemberResults>>,
    timeout: Timeout,
}

impl RemoveMembersFromConsumerGroup {
    /// Removes `members` from `group`.
    pub fn new(
        group: impl Into<String>,
        members: impl IntoIterator<Item = MemberToRemove>,
    ) -> Self {
        RemoveMembersFromConsumerGroup {
            group: group.into(),
            members: members.into_iter().collect(),
            describe: None,
            reason: None,
            calls: None,
            timeout: Timeout::default(),
        }
    }

    /// Removes every current member of `group` (found by describing the group first).
    pub fn all(group: impl Into<String>) -> Self {
        let group = group.into();
        let mut op = Self::new(group.clone(), []);
        op.describe = Some(DescribeConsumerGroups::new([group]));
        op
    }

    /// The reason the coordinator logs (LeaveGroup v5+).
    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        if let Some(d) = self.describe.take() {
            self.describe = Some(d.timeout(limit));
        }
        self
    }
}

fn members_left(
    cx: &mut OpContext<'_>,
    group: &str,
    asked: &[MemberToRemove],
    resp: LeaveGroupResponse,
) -> Step<MemberResults> {
    if let Some(step) = coordinator_step(cx, group, resp.error_code, None) {
        return step;
    }
    if let Err(e) = AdminError::check(resp.error_code, None) {
        return Step::Done(Err(e));
    }
    let mut out = MemberResults::new();
    for m in asked {
        let answer = resp
            .members
            .iter()
            .find(|r| m.matches(&r.member_id, r.group_instance_id.as_deref()));
        let result = match answer {
            Some(r) => AdminError::check(r.error_code, None),
            None => Err(AdminError::missing("member")),
        };
        out.insert(m.clone(), result);
    }
    Step::Done(Ok(out))
}

impl Operation for RemoveMembersFromConsumerGroup {
    type Output = Result<MemberResults, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if let Some(describe) = self.describe.as_mut() {
            let described = match describe.poll(cx)? {
                Ok(mut m) => m.remove(&self.group),
                Err(e) => return Some(Err(e)),
            };
            self.describe = None;
            match described {
                Some(Ok(d)) => {
                    self.members = d
                        .members
                        .into_iter()
                        .map(|m| MemberToRemove {
                            member_id: m.member_id,
                            group_instance_id: m.group_instance_id,
                        })
                        .collect();
                }
                Some(Err(e)) => return Some(Err(e)),
                None => return Some(Err(AdminError::Protocol("group not described".into()))),
            }
        }
        if self.members.is_empty() {
            return Some(Ok(MemberResults::new()));
        }
        if self.calls.is_none() {
            let request = LeaveGroupRequest {
                group_id: self.group.clone(),
                members: self
                    .members
                    .iter()
                    .map(|m| MemberIdentity {
                        member_id: m.member_id.clone(),
                        group_instance_id: m.group_instance_id.clone(),
                        reason: self.reason.clone(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            let mut keyed = Keyed::new();
            keyed.insert(
                self.group.clone(),
                Call::new(Route::GroupCoordinator(self.group.clone()), request),
            );
            self.calls = Some(keyed);
        }
        let calls = self.calls.as_mut()?;
        let asked = &self.members;
        let done = calls.poll(cx, deadline, |group, _, outcome, cx| match outcome {
            Ok(resp) => members_left(cx, group, asked, resp),
            Err(e) => Step::Done(Err(e)),
        });
        if !done {
            return None;
        }
        match calls.take_results().remove(&self.group) {
            Some(r) => Some(r),
            None => Some(Err(AdminError::Protocol("no result".into()))),
        }
    }
}
