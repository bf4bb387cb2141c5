//! DescribeClassicGroups: DescribeGroups for classic groups of any protocol type (Java's
//! `describeClassicGroups`), each on its coordinator.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::describe::{decode_assignment, MemberDescription};
use super::keyed::{coordinator_step, Keyed, Step};
use crate::admin::{acl_operations, AclOperation, AdminError, Call, OpContext, Operation, Timeout};
use crate::cluster::Route;
use crate::protocol::messages::describe_groups::response::DescribedGroup;
use crate::protocol::messages::describe_groups::{DescribeGroupsRequest, DescribeGroupsResponse};

/// A classic group as its coordinator describes it (Java's `ClassicGroupDescription`):
/// consumer groups, Connect workers, Kafka Streams before KIP-1071, anything that joins
/// with JoinGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicGroupDescription {
    /// Group id.
    pub group_id: String,
    /// Protocol type (`consumer`, `connect`, ...; empty for a group that only commits
    /// offsets).
    pub protocol_type: String,
    /// The protocol the group chose (for consumers: the partition assignor).
    pub protocol: String,
    /// Members; assignments are decoded for `consumer` groups only (empty otherwise).
    pub members: Vec<MemberDescription>,
    /// State (`Stable`, `PreparingRebalance`, `CompletingRebalance`, `Empty`, `Dead`).
    pub state: String,
    /// The coordinator's node id, when known.
    pub coordinator: Option<i32>,
    /// Operations the caller may perform on the group (`None` unless asked for).
    pub authorized_operations: Option<BTreeSet<AclOperation>>,
}

fn classic_description(
    g: DescribedGroup,
    coordinator: Option<i32>,
    asked_ops: bool,
) -> Result<ClassicGroupDescription, AdminError> {
    let consumer = g.protocol_type == "consumer" || g.protocol_type.is_empty();
    let mut members = Vec::with_capacity(g.members.len());
    for m in g.members {
        let assignment = if consumer {
            decode_assignment(&m.member_assignment)?
        } else {
            BTreeSet::new()
        };
        members.push(MemberDescription {
            member_id: m.member_id,
            group_instance_id: m.group_instance_id,
            client_id: m.client_id,
            host: m.client_host,
            assignment,
            target_assignment: None,
            member_epoch: None,
            upgraded: None,
        });
    }
    Ok(ClassicGroupDescription {
        group_id: g.group_id,
        protocol_type: g.protocol_type,
        protocol: g.protocol_data,
        members,
        state: g.group_state,
        coordinator,
        authorized_operations: asked_ops.then(|| acl_operations(g.authorized_operations)),
    })
}

/// Describes classic groups (DescribeGroups to each group's coordinator). Per-group
/// results; a moved or loading coordinator is retried until the deadline, any other
/// error code settles the group. A group the coordinator does not know is described in
/// state `Dead`, as the broker reports it; a KIP-848 group fails with its
/// GROUP_ID_NOT_FOUND.
#[derive(Debug)]
pub struct DescribeClassicGroups {
    groups: Vec<String>,
    include_authorized_operations: bool,
    calls: Option<Keyed<String, DescribeGroupsRequest, ClassicGroupDescription>>,
    timeout: Timeout,
}

impl DescribeClassicGroups {
    /// Describes `groups`.
    pub fn new(groups: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut groups: Vec<String> = groups.into_iter().map(Into::into).collect();
        groups.sort();
        groups.dedup();
        DescribeClassicGroups {
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
    resp: DescribeGroupsResponse,
    asked_ops: bool,
    cx: &mut OpContext<'_>,
) -> Step<ClassicGroupDescription> {
    let Some(g) = resp.groups.into_iter().find(|g| g.group_id == group) else {
        return Step::Done(Err(AdminError::missing("group")));
    };
    if let Some(step) = coordinator_step(cx, group, g.error_code, g.error_message.as_deref()) {
        return step;
    }
    if let Err(e) = AdminError::check(g.error_code, g.error_message.as_deref()) {
        return Step::Done(Err(e));
    }
    Step::Done(classic_description(g, cx.coordinator(0, group), asked_ops))
}

impl Operation for DescribeClassicGroups {
    type Output = Result<BTreeMap<String, Result<ClassicGroupDescription, AdminError>>, AdminError>;

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
                let request = DescribeGroupsRequest {
                    groups: vec![g.clone()],
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::groups::scripted::{coordinator_b1, reply, two_brokers, Cluster};
    use crate::protocol::messages::describe_groups::response::DescribedGroupMember;
    use crate::protocol::{ApiKey, KafkaCode};
    use bytes::Bytes;

    #[test]
    fn classic_groups_of_any_protocol_are_described_after_a_moved_coordinator() {
        let mut cluster = Cluster::new();
        let mut asked = 0;
        let op = DescribeClassicGroups::new(["worker", "gone"]).include_authorized_operations(true);
        let out = cluster.run(op, |_, seen| match seen.api() {
            ApiKey::Metadata => reply(seen, &two_brokers()),
            ApiKey::FindCoordinator => coordinator_b1(seen),
            ApiKey::DescribeGroups => {
                let req: DescribeGroupsRequest = seen.decode();
                assert!(req.include_authorized_operations);
                let id = req.groups[0].clone();
                asked += 1;
                let g = match id.as_str() {
                    "worker" if asked == 1 => DescribedGroup {
                        group_id: id,
                        error_code: KafkaCode::NOT_COORDINATOR.0,
                        ..Default::default()
                    },
                    "worker" => DescribedGroup {
                        group_id: id,
                        group_state: "Stable".into(),
                        protocol_type: "connect".into(),
                        protocol_data: "sessioned".into(),
                        authorized_operations: 1 << 3,
                        members: vec![DescribedGroupMember {
                            member_id: "m".into(),
                            client_id: "c".into(),
                            // Not a consumer assignment: left undecoded.
                            member_assignment: Bytes::from_static(b"\xff\xff"),
                            ..Default::default()
                        }],
                        ..Default::default()
                    },
                    _ => DescribedGroup {
                        group_id: id,
                        group_state: "Dead".into(),
                        ..Default::default()
                    },
                };
                reply(
                    seen,
                    &DescribeGroupsResponse {
                        groups: vec![g],
                        ..Default::default()
                    },
                )
            }
            other => panic!("unexpected {other:?}"),
        });
        let out = out.unwrap();
        let w = out["worker"].as_ref().unwrap();
        assert_eq!(
            (w.protocol_type.as_str(), w.protocol.as_str()),
            ("connect", "sessioned")
        );
        assert_eq!(w.members[0].member_id, "m");
        assert!(w.members[0].assignment.is_empty());
        assert_eq!(w.coordinator, Some(1));
        assert_eq!(w.authorized_operations.as_ref().map(|o| o.len()), Some(1));
        assert_eq!(out["gone"].as_ref().unwrap().state, "Dead");
    }
}
