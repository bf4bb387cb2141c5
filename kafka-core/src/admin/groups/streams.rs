//! Streams groups (KIP-1071): DescribeStreamsGroups, StreamsGroupDescribe to each
//! group's coordinator.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::keyed::{coordinator_step, Keyed, Step};
use crate::admin::{acl_operations, AclOperation, AdminError, Call, OpContext, Operation, Timeout};
use crate::cluster::Route;
use crate::protocol::messages::streams_group_describe::response::{
    Assignment, DescribedGroup, Member, Subtopology, TaskIds, TaskOffset, TopicInfo,
};
use crate::protocol::messages::streams_group_describe::{
    StreamsGroupDescribeRequest, StreamsGroupDescribeResponse,
};

/// Tasks by subtopology id: the partitions (task ids) of each.
pub type StreamsTasks = BTreeMap<String, BTreeSet<i32>>;

/// The tasks of a streams group member.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamsMemberAssignment {
    /// Active tasks.
    pub active_tasks: StreamsTasks,
    /// Standby tasks.
    pub standby_tasks: StreamsTasks,
    /// Warm-up tasks.
    pub warmup_tasks: StreamsTasks,
}

/// A member of a streams group (one Kafka Streams thread).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamsMemberDescription {
    /// Member id.
    pub member_id: String,
    /// Member epoch.
    pub member_epoch: i32,
    /// Static membership id, if set.
    pub instance_id: Option<String>,
    /// Rack id, if set.
    pub rack_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host as the coordinator saw it.
    pub host: String,
    /// The topology epoch the member runs.
    pub topology_epoch: i32,
    /// The Kafka Streams process (client) id.
    pub process_id: String,
    /// The endpoint for interactive queries (`host`, `port`), if set.
    pub user_endpoint: Option<(String, u16)>,
    /// Client tags (rack awareness).
    pub client_tags: BTreeMap<String, String>,
    /// Cumulative changelog offsets per task: (subtopology, partition) → offset.
    pub task_offsets: BTreeMap<(String, i32), i64>,
    /// Changelog end offsets per task.
    pub task_end_offsets: BTreeMap<(String, i32), i64>,
    /// The tasks the member runs.
    pub assignment: StreamsMemberAssignment,
    /// The tasks the coordinator moves the member to.
    pub target_assignment: StreamsMemberAssignment,
    /// Whether the member still uses the classic protocol.
    pub is_classic: bool,
}

/// An internal topic of a subtopology: its partitions and replication factor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamsTopicInfo {
    /// Partitions (0: decided by the coordinator).
    pub partitions: i32,
    /// Replication factor (0: the broker default).
    pub replication_factor: i16,
    /// Topic configs.
    pub configs: BTreeMap<String, String>,
}

/// One subtopology of a streams group's topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamsSubtopologyDescription {
    /// Source topics.
    pub source_topics: Vec<String>,
    /// Repartition topics it writes to.
    pub repartition_sink_topics: Vec<String>,
    /// State changelog topics by name.
    pub state_changelog_topics: BTreeMap<String, StreamsTopicInfo>,
    /// Repartition topics it reads from, by name.
    pub repartition_source_topics: BTreeMap<String, StreamsTopicInfo>,
}

/// A streams group as its coordinator describes it (Java's `StreamsGroupDescription`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamsGroupDescription {
    /// Group id.
    pub group_id: String,
    /// State (`Empty`, `NotReady`, `Assigning`, `Reconciling`, `Stable`, `Dead`).
    pub state: String,
    /// Group epoch.
    pub group_epoch: i32,
    /// Target assignment epoch.
    pub target_assignment_epoch: i32,
    /// The topology's epoch, if the group has a topology.
    pub topology_epoch: Option<i32>,
    /// Subtopologies by id (empty while the topology is not configured).
    pub subtopologies: BTreeMap<String, StreamsSubtopologyDescription>,
    /// Members.
    pub members: Vec<StreamsMemberDescription>,
    /// The coordinator's node id, when known.
    pub coordinator: Option<i32>,
    /// Operations the caller may perform on the group (`None` unless asked for).
    pub authorized_operations: Option<BTreeSet<AclOperation>>,
}

fn tasks(ids: Vec<TaskIds>) -> StreamsTasks {
    let mut out = StreamsTasks::new();
    for t in ids {
        out.entry(t.subtopology_id)
            .or_default()
            .extend(t.partitions);
    }
    out
}

fn assignment(a: Assignment) -> StreamsMemberAssignment {
    StreamsMemberAssignment {
        active_tasks: tasks(a.active_tasks),
        standby_tasks: tasks(a.standby_tasks),
        warmup_tasks: tasks(a.warmup_tasks),
    }
}

fn offsets(o: Vec<TaskOffset>) -> BTreeMap<(String, i32), i64> {
    o.into_iter()
        .map(|t| ((t.subtopology_id, t.partition), t.offset))
        .collect()
}

fn topic_infos(infos: Vec<TopicInfo>) -> BTreeMap<String, StreamsTopicInfo> {
    infos
        .into_iter()
        .map(|t| {
            let info = StreamsTopicInfo {
                partitions: t.partitions,
                replication_factor: t.replication_factor,
                configs: t
                    .topic_configs
                    .into_iter()
                    .map(|kv| (kv.key, kv.value))
                    .collect(),
            };
            (t.name, info)
        })
        .collect()
}

fn member(m: Member) -> StreamsMemberDescription {
    StreamsMemberDescription {
        member_id: m.member_id,
        member_epoch: m.member_epoch,
        instance_id: m.instance_id,
        rack_id: m.rack_id,
        client_id: m.client_id,
        host: m.client_host,
        topology_epoch: m.topology_epoch,
        process_id: m.process_id,
        user_endpoint: m.user_endpoint.map(|e| (e.host, e.port)),
        client_tags: m
            .client_tags
            .into_iter()
            .map(|kv| (kv.key, kv.value))
            .collect(),
        task_offsets: offsets(m.task_offsets),
        task_end_offsets: offsets(m.task_end_offsets),
        assignment: assignment(m.assignment),
        target_assignment: assignment(m.target_assignment),
        is_classic: m.is_classic,
    }
}

fn subtopology(s: Subtopology) -> (String, StreamsSubtopologyDescription) {
    let d = StreamsSubtopologyDescription {
        source_topics: s.source_topics,
        repartition_sink_topics: s.repartition_sink_topics,
        state_changelog_topics: topic_infos(s.state_changelog_topics),
        repartition_source_topics: topic_infos(s.repartition_source_topics),
    };
    (s.subtopology_id, d)
}

fn streams_description(
    g: DescribedGroup,
    coordinator: Option<i32>,
    ops: bool,
) -> StreamsGroupDescription {
    let topology_epoch = g.topology.as_ref().map(|t| t.epoch);
    let subtopologies = g
        .topology
        .and_then(|t| t.subtopologies)
        .unwrap_or_default()
        .into_iter()
        .map(subtopology)
        .collect();
    StreamsGroupDescription {
        state: g.group_state,
        group_epoch: g.group_epoch,
        target_assignment_epoch: g.assignment_epoch,
        topology_epoch,
        subtopologies,
        members: g.members.into_iter().map(member).collect(),
        coordinator,
        authorized_operations: ops.then(|| acl_operations(g.authorized_operations)),
        group_id: g.group_id,
    }
}

/// Describes streams groups (StreamsGroupDescribe to each group's coordinator; Java's
/// `describeStreamsGroups`): topology, members and their tasks. Per-group results; a
/// moved or loading coordinator is retried until the deadline; an unknown group (or one
/// of another type) fails with GROUP_ID_NOT_FOUND.
#[derive(Debug)]
pub struct DescribeStreamsGroups {
    groups: Vec<String>,
    include_authorized_operations: bool,
    calls: Option<Keyed<String, StreamsGroupDescribeRequest, StreamsGroupDescription>>,
    timeout: Timeout,
}

impl DescribeStreamsGroups {
    /// Describes `groups`.
    pub fn new(groups: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut groups: Vec<String> = groups.into_iter().map(Into::into).collect();
        groups.sort();
        groups.dedup();
        DescribeStreamsGroups {
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
    resp: StreamsGroupDescribeResponse,
    ops: bool,
    cx: &mut OpContext<'_>,
) -> Step<StreamsGroupDescription> {
    let Some(g) = resp.groups.into_iter().find(|g| g.group_id == group) else {
        return Step::Done(Err(AdminError::missing("group")));
    };
    if let Some(step) = coordinator_step(cx, group, g.error_code, g.error_message.as_deref()) {
        return step;
    }
    if let Err(e) = AdminError::check(g.error_code, g.error_message.as_deref()) {
        return Step::Done(Err(e));
    }
    Step::Done(Ok(streams_description(g, cx.coordinator(0, group), ops)))
}

impl Operation for DescribeStreamsGroups {
    type Output = Result<BTreeMap<String, Result<StreamsGroupDescription, AdminError>>, AdminError>;

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
                let request = StreamsGroupDescribeRequest {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::groups::scripted::{coordinator_b1, reply, two_brokers, Cluster};
    use crate::protocol::messages::streams_group_describe::response::{Endpoint, Topology};
    use crate::protocol::{ApiKey, KafkaCode};

    #[test]
    fn streams_groups_are_described_with_topology_and_tasks() {
        let mut cluster = Cluster::new();
        let op = DescribeStreamsGroups::new(["app", "missing"]);
        let out = cluster.run(op, |_, seen| match seen.api() {
            ApiKey::Metadata => reply(seen, &two_brokers()),
            ApiKey::FindCoordinator => coordinator_b1(seen),
            ApiKey::StreamsGroupDescribe => {
                let req: StreamsGroupDescribeRequest = seen.decode();
                let id = req.group_ids[0].clone();
                let g = if id == "app" {
                    DescribedGroup {
                        group_id: id,
                        group_state: "Stable".into(),
                        group_epoch: 4,
                        assignment_epoch: 4,
                        topology: Some(Topology {
                            epoch: 1,
                            subtopologies: Some(vec![Subtopology {
                                subtopology_id: "0".into(),
                                source_topics: vec!["in".into()],
                                state_changelog_topics: vec![TopicInfo {
                                    name: "app-store-changelog".into(),
                                    partitions: 2,
                                    ..Default::default()
                                }],
                                ..Default::default()
                            }]),
                            ..Default::default()
                        }),
                        members: vec![Member {
                            member_id: "m".into(),
                            member_epoch: 4,
                            process_id: "p".into(),
                            user_endpoint: Some(Endpoint {
                                host: "h".into(),
                                port: 7070,
                                ..Default::default()
                            }),
                            assignment: Assignment {
                                active_tasks: vec![TaskIds {
                                    subtopology_id: "0".into(),
                                    partitions: vec![1, 0],
                                    ..Default::default()
                                }],
                                ..Default::default()
                            },
                            ..Default::default()
                        }],
                        ..Default::default()
                    }
                } else {
                    DescribedGroup {
                        group_id: id,
                        error_code: KafkaCode::GROUP_ID_NOT_FOUND.0,
                        ..Default::default()
                    }
                };
                reply(
                    seen,
                    &StreamsGroupDescribeResponse {
                        groups: vec![g],
                        ..Default::default()
                    },
                )
            }
            other => panic!("unexpected {other:?}"),
        });
        let out = out.unwrap();
        let app = out["app"].as_ref().unwrap();
        assert_eq!((app.topology_epoch, app.coordinator), (Some(1), Some(1)));
        let sub = &app.subtopologies["0"];
        assert_eq!(sub.source_topics, ["in"]);
        assert_eq!(
            sub.state_changelog_topics["app-store-changelog"].partitions,
            2
        );
        let m = &app.members[0];
        assert_eq!(m.user_endpoint, Some(("h".to_string(), 7070)));
        assert_eq!(m.assignment.active_tasks["0"], [0, 1].into_iter().collect());
        assert_eq!(
            out["missing"].as_ref().unwrap_err().code(),
            Some(KafkaCode::GROUP_ID_NOT_FOUND)
        );
    }
}
