//! DescribeConsumerGroups: ConsumerGroupDescribe for KIP-848 groups, DescribeGroups for
//! classic ones.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use bytes::{Buf, Bytes};

use super::keyed::{coordinator_step, Keyed, Step};
use crate::admin::{
    acl_operations, AdminError, Call, Deadline, OpContext, Operation, Timeout, TopicPartition,
};
use crate::cluster::Route;
use crate::conn::RequestError;
use crate::protocol::messages::consumer_group_describe::response::DescribedGroup as NewGroup;
use crate::protocol::messages::consumer_group_describe::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
};
use crate::protocol::messages::consumer_protocol_assignment::ConsumerProtocolAssignment;
use crate::protocol::messages::describe_groups::response::DescribedGroup as ClassicGroup;
use crate::protocol::messages::describe_groups::{DescribeGroupsRequest, DescribeGroupsResponse};
use crate::protocol::{Decodable, KafkaCode};

/// A member of a consumer group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberDescription {
    /// Member id.
    pub member_id: String,
    /// Static membership id (`group.instance.id`), if set.
    pub group_instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host as the coordinator saw it.
    pub host: String,
    /// The partitions assigned to the member.
    pub assignment: BTreeSet<TopicPartition>,
    /// The partitions the coordinator is moving the member to (`consumer` groups only).
    pub target_assignment: Option<BTreeSet<TopicPartition>>,
    /// The member epoch (`consumer` groups only).
    pub member_epoch: Option<i32>,
    /// Whether the member uses the `consumer` protocol (`consumer` groups only, when the
    /// broker says: ConsumerGroupDescribe v1+).
    pub upgraded: Option<bool>,
}

/// A consumer group as its coordinator describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupDescription {
    /// Group id.
    pub group_id: String,
    /// Whether the group only commits offsets (classic group with no protocol type).
    pub is_simple_consumer_group: bool,
    /// Members.
    pub members: Vec<MemberDescription>,
    /// The partition assignor (classic: the protocol name; consumer: the server assignor).
    pub partition_assignor: String,
    /// `classic` or `consumer`.
    pub group_type: String,
    /// State (`Stable`, `Empty`, `Dead`, ...).
    pub state: String,
    /// The coordinator's node id, when known.
    pub coordinator: Option<i32>,
    /// Operations the caller may perform on the group (`None` unless asked for with
    /// [`DescribeConsumerGroups::include_authorized_operations`]).
    pub authorized_operations: Option<BTreeSet<crate::admin::AclOperation>>,
    /// Group epoch (`consumer` groups only).
    pub group_epoch: Option<i32>,
    /// Target assignment epoch (`consumer` groups only).
    pub target_assignment_epoch: Option<i32>,
}

/// Decodes a classic consumer member's assignment (ConsumerProtocol `Assignment`: a
/// version, then the topic partitions). Empty bytes are an empty assignment.
pub fn decode_assignment(bytes: &Bytes) -> Result<BTreeSet<TopicPartition>, AdminError> {
    let mut b = bytes.clone();
    if b.is_empty() {
        return Ok(BTreeSet::new());
    }
    if b.remaining() < 2 {
        return Err(AdminError::Protocol("truncated member assignment".into()));
    }
    let version = b.get_i16();
    if version < 0 {
        return Err(AdminError::Protocol(format!(
            "member assignment version {version}"
        )));
    }
    // Newer versions only add fields at the end: read what this client knows.
    let a = ConsumerProtocolAssignment::decode(&mut b, version.min(3))
        .map_err(|e| AdminError::Protocol(format!("member assignment: {e}")))?;
    Ok(a.assigned_partitions
        .into_iter()
        .flat_map(|t| {
            let topic = t.topic;
            t.partitions
                .into_iter()
                .map(move |p| TopicPartition::new(topic.clone(), p))
        })
        .collect())
}

fn new_assignment(
    a: crate::protocol::messages::consumer_group_describe::response::Assignment,
) -> BTreeSet<TopicPartition> {
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

fn from_new(g: NewGroup, coordinator: Option<i32>, asked_ops: bool) -> ConsumerGroupDescription {
    ConsumerGroupDescription {
        is_simple_consumer_group: false,
        members: g
            .members
            .into_iter()
            .map(|m| MemberDescription {
                member_id: m.member_id,
                group_instance_id: m.instance_id,
                client_id: m.client_id,
                host: m.client_host,
                assignment: new_assignment(m.assignment),
                target_assignment: Some(new_assignment(m.target_assignment)),
                member_epoch: Some(m.member_epoch),
                upgraded: (m.member_type >= 0).then_some(m.member_type == 1),
            })
            .collect(),
        partition_assignor: g.assignor_name,
        group_type: "consumer".into(),
        state: g.group_state,
        coordinator,
        authorized_operations: asked_ops.then(|| acl_operations(g.authorized_operations)),
        group_epoch: Some(g.group_epoch),
        target_assignment_epoch: Some(g.assignment_epoch),
        group_id: g.group_id,
    }
}

/// A classic group's description (an error for a group of another protocol type, or
/// an undecodable assignment).
pub(crate) fn from_classic(
    g: ClassicGroup,
    coordinator: Option<i32>,
    asked_ops: bool,
) -> Result<ConsumerGroupDescription, AdminError> {
    if !(g.protocol_type == "consumer" || g.protocol_type.is_empty()) {
        return Err(AdminError::Invalid(format!(
            "group {} is not a consumer group (protocol type {})",
            g.group_id, g.protocol_type
        )));
    }
    let mut members = Vec::with_capacity(g.members.len());
    for m in g.members {
        members.push(MemberDescription {
            assignment: decode_assignment(&m.member_assignment)?,
            member_id: m.member_id,
            group_instance_id: m.group_instance_id,
            client_id: m.client_id,
            host: m.client_host,
            target_assignment: None,
            member_epoch: None,
            upgraded: None,
        });
    }
    Ok(ConsumerGroupDescription {
        is_simple_consumer_group: g.protocol_type.is_empty(),
        members,
        partition_assignor: g.protocol_data,
        group_type: "classic".into(),
        state: g.group_state,
        coordinator,
        authorized_operations: asked_ops.then(|| acl_operations(g.authorized_operations)),
        group_epoch: None,
        target_assignment_epoch: None,
        group_id: g.group_id,
    })
}

/// Describes consumer groups, each on its coordinator: ConsumerGroupDescribe first (for
/// KIP-848 `consumer` groups), then DescribeGroups for groups it does not know
/// (GROUP_ID_NOT_FOUND: a classic group; UNSUPPORTED_VERSION) or when the broker lacks
/// the API. Per-group
/// results; an unknown group fails with GROUP_ID_NOT_FOUND.
#[derive(Debug)]
pub struct DescribeConsumerGroups {
    groups: Vec<String>,
    include_authorized_operations: bool,
    started: bool,
    modern: Keyed<String, ConsumerGroupDescribeRequest, ConsumerGroupDescription>,
    classic: Keyed<String, DescribeGroupsRequest, ConsumerGroupDescription>,
    timeout: Timeout,
}

impl DescribeConsumerGroups {
    /// Describes `groups`.
    pub fn new(groups: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut groups: Vec<String> = groups.into_iter().map(Into::into).collect();
        groups.sort();
        groups.dedup();
        DescribeConsumerGroups {
            groups,
            include_authorized_operations: false,
            started: false,
            modern: Keyed::new(),
            classic: Keyed::new(),
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

    fn classic_call(&self, group: &str) -> Call<DescribeGroupsRequest> {
        Call::new(
            Route::GroupCoordinator(group.to_string()),
            DescribeGroupsRequest {
                groups: vec![group.to_string()],
                include_authorized_operations: self.include_authorized_operations,
                ..Default::default()
            },
        )
    }
}

fn find<G>(groups: Vec<G>, id: impl Fn(&G) -> &str, want: &str) -> Option<G> {
    groups.into_iter().find(|g| id(g) == want)
}

impl Operation for DescribeConsumerGroups {
    type Output =
        Result<BTreeMap<String, Result<ConsumerGroupDescription, AdminError>>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        let ops = self.include_authorized_operations;
        if !self.started {
            self.started = true;
            for g in &self.groups {
                if g.is_empty() {
                    self.modern
                        .settle(g.clone(), Err(AdminError::Invalid("empty group id".into())));
                    continue;
                }
                let request = ConsumerGroupDescribeRequest {
                    group_ids: vec![g.clone()],
                    include_authorized_operations: ops,
                    ..Default::default()
                };
                self.modern.insert(
                    g.clone(),
                    Call::new(Route::GroupCoordinator(g.clone()), request),
                );
            }
        }
        let mut fallback = Vec::new();
        self.modern.poll(cx, deadline, |group, _, outcome, cx| {
            let resp: ConsumerGroupDescribeResponse = match outcome {
                Ok(r) => r,
                Err(AdminError::Request(RequestError::UnsupportedVersion { .. })) => {
                    fallback.push(group.clone());
                    return Step::Done(Err(placeholder(deadline)));
                }
                Err(e) => return Step::Done(Err(e)),
            };
            let Some(g) = find(resp.groups, |g| &g.group_id, group) else {
                return Step::Done(Err(AdminError::missing("group")));
            };
            if let Some(step) =
                coordinator_step(cx, group, g.error_code, g.error_message.as_deref())
            {
                return step;
            }
            let code = KafkaCode(g.error_code);
            // Not a `consumer` group (or the broker lacks them): maybe a classic one.
            if code == KafkaCode::GROUP_ID_NOT_FOUND || code == KafkaCode::UNSUPPORTED_VERSION {
                fallback.push(group.clone());
                return Step::Done(Err(placeholder(deadline)));
            }
            if let Err(e) = AdminError::check(g.error_code, g.error_message.as_deref()) {
                return Step::Done(Err(e));
            }
            Step::Done(Ok(from_new(g, cx.coordinator(0, group), ops)))
        });
        for g in fallback {
            let call = self.classic_call(&g);
            self.classic.insert(g, call);
        }
        self.classic.poll(cx, deadline, |group, _, outcome, cx| {
            let resp: DescribeGroupsResponse = match outcome {
                Ok(r) => r,
                Err(e) => return Step::Done(Err(e)),
            };
            let Some(g) = find(resp.groups, |g| &g.group_id, group) else {
                return Step::Done(Err(AdminError::missing("group")));
            };
            if let Some(step) =
                coordinator_step(cx, group, g.error_code, g.error_message.as_deref())
            {
                return step;
            }
            if let Err(e) = AdminError::check(g.error_code, g.error_message.as_deref()) {
                return Step::Done(Err(e));
            }
            Step::Done(from_classic(g, cx.coordinator(0, group), ops))
        });
        if !(self.modern.is_done() && self.classic.is_done()) {
            return None;
        }
        let mut out = self.modern.take_results();
        // Groups that fell back are settled by the classic describe.
        out.extend(self.classic.take_results());
        Some(Ok(out))
    }
}

/// The result of a group that falls back to the classic describe (replaced by its
/// answer).
fn placeholder(deadline: Deadline) -> AdminError {
    AdminError::Timeout {
        after: deadline.limit(),
        last_cause: None,
    }
}
