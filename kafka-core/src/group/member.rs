//! Classic group membership (`group.protocol=classic`): JoinGroup with the member id
//! required first (KIP-394), the leader's assignment, SyncGroup, heartbeats on their own
//! timer, LeaveGroup, and the error handling of Java's `AbstractCoordinator`.
//!
//! A sub-machine of the group consumer: it owns no partitions and no offsets. It is told
//! the subscription and the partitions owned, and reports [`MemberEvent`]s: a new
//! assignment, the membership lost, a fatal refusal. Before an eager rejoin it waits for
//! the consumer to give up its partitions ([`Classic::join_allowed`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::assignor::{
    self, Assignor, MemberSubscription, PartitionRacks, RebalanceProtocol, TopicLayout,
};
use super::protocol::{Assignment, Subscription, TopicPartitions};
use super::GroupError;
use crate::client::{OpContext, RequestId, RequestOptions};
use crate::cluster::Route;
use crate::config::ClientConfig;
use crate::protocol::messages::heartbeat::HeartbeatRequest;
use crate::protocol::messages::join_group::request::JoinGroupRequestProtocol;
use crate::protocol::messages::join_group::{JoinGroupRequest, JoinGroupResponse};
use crate::protocol::messages::leave_group::request::MemberIdentity;
use crate::protocol::messages::leave_group::LeaveGroupRequest;
use crate::protocol::messages::sync_group::request::SyncGroupRequestAssignment;
use crate::protocol::messages::sync_group::SyncGroupRequest;
use crate::protocol::KafkaCode;

/// The ConsumerProtocol version we write (owned partitions, generation, rack).
const SUBSCRIPTION_VERSION: i16 = 3;

/// A partition, as the group layer names it.
pub type TopicPartition = (Arc<str>, i32);

/// What the member tells the group consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MemberEvent {
    /// SyncGroup gave this assignment for `generation`.
    Assigned {
        generation: i32,
        partitions: BTreeSet<TopicPartition>,
    },
    /// The member must give up everything it owns before joining (eager protocol), or
    /// has lost its membership: see `lost`.
    Revoke { lost: bool },
    /// The coordinator refused the member for good.
    Failed(GroupError),
}

#[derive(Debug)]
enum Phase {
    /// Not subscribed (or left).
    Idle,
    /// Wants to join; waits for `join_allowed` (eager revocation) or a backoff.
    Waiting {
        at: Instant,
    },
    Joining(RequestId<JoinGroupRequest>),
    /// The leader waits for metadata of every member's topics.
    Leading {
        /// Every member's subscription, decoded once from the JoinGroup answer.
        members: Vec<MemberSubscription>,
        /// The ConsumerProtocol version each member wrote (its assignment's version).
        versions: BTreeMap<String, i16>,
        /// The union of their topics.
        topics: BTreeSet<String>,
        metadata_generation: u64,
    },
    Syncing(RequestId<SyncGroupRequest>),
    Stable,
    Failed,
}

/// The classic member. See the module docs.
pub(crate) struct Classic {
    group: String,
    instance: Option<String>,
    rack: Option<String>,
    session_timeout: Duration,
    rebalance_timeout: Duration,
    heartbeat_interval: Duration,
    request_timeout: Duration,
    assignors: Vec<Arc<dyn Assignor>>,
    protocol: RebalanceProtocol,
    pub(crate) member_id: String,
    pub(crate) generation: i32,
    /// The assignor the coordinator chose in the last JoinGroup.
    chosen: Option<String>,
    /// This member computed the last generation's assignment.
    pub(crate) leader: bool,
    phase: Phase,
    attempts: u32,
    /// The consumer has given up what eager rejoining needs (or nothing was owned).
    join_gate_open: bool,
    /// `Revoke` raised for the pending join and not yet answered by `join_allowed`.
    revoke_raised: bool,
    rejoin_reason: Option<String>,
    heartbeat: Option<RequestId<HeartbeatRequest>>,
    next_heartbeat: Option<Instant>,
    last_heartbeat_ok: Option<Instant>,
    /// Partition counts of the topics the assignment was made from.
    layout_seen: BTreeMap<String, usize>,
    /// The subscription the last JoinGroup carried (a change since forces a rejoin).
    joined_topics: BTreeSet<String>,
    /// Topics of every member, when leading (metadata changes there force a rejoin).
    group_topics: BTreeSet<String>,
    leave: Option<RequestId<crate::protocol::messages::leave_group::LeaveGroupRequest>>,
    pub(crate) rebalances: u64,
}

impl std::fmt::Debug for Classic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Classic")
            .field("group", &self.group)
            .field("member_id", &self.member_id)
            .field("generation", &self.generation)
            .field("phase", &self.phase)
            .finish_non_exhaustive()
    }
}

impl Classic {
    /// A member for `config`'s group settings.
    pub(crate) fn new(config: &ClientConfig) -> Result<Self, GroupError> {
        let g = config.group();
        let group = g.group_id.clone().ok_or(GroupError::NoGroupId)?;
        // The application's own assignors not named in the strategy go first.
        let custom = &g.custom_assignors;
        let mut assignors: Vec<Arc<dyn Assignor>> = custom
            .iter()
            .filter(|a| !g.assignment_strategy.iter().any(|n| n == a.name()))
            .cloned()
            .collect();
        for name in &g.assignment_strategy {
            let a = match custom.get(name) {
                Some(a) => a.clone(),
                None => assignor::builtin(name)
                    .map(Arc::from)
                    .ok_or_else(|| GroupError::UnknownAssignor(name.clone()))?,
            };
            assignors.push(a);
        }
        // Cooperative only when every assignor supports it (Java's rule).
        let protocol = if assignors
            .iter()
            .all(|a| a.protocols().contains(&RebalanceProtocol::Cooperative))
        {
            RebalanceProtocol::Cooperative
        } else {
            RebalanceProtocol::Eager
        };
        Ok(Classic {
            group,
            instance: g.group_instance_id.clone(),
            rack: config.common().client_rack.clone(),
            session_timeout: g.session_timeout,
            rebalance_timeout: g.max_poll_interval,
            heartbeat_interval: g.heartbeat_interval,
            request_timeout: config.common().request_timeout,
            assignors,
            protocol,
            member_id: String::new(),
            generation: -1,
            chosen: None,
            leader: false,
            phase: Phase::Idle,
            attempts: 0,
            join_gate_open: false,
            revoke_raised: false,
            rejoin_reason: None,
            heartbeat: None,
            next_heartbeat: None,
            last_heartbeat_ok: None,
            layout_seen: BTreeMap::new(),
            joined_topics: BTreeSet::new(),
            group_topics: BTreeSet::new(),
            leave: None,
            rebalances: 0,
        })
    }

    /// The group id.
    pub(crate) fn group(&self) -> &str {
        &self.group
    }

    /// The static member id, if any.
    pub(crate) fn instance(&self) -> Option<&str> {
        self.instance.as_deref()
    }

    /// Whether the member is in a generation it may commit for.
    pub(crate) fn is_stable(&self) -> bool {
        matches!(self.phase, Phase::Stable)
    }

    /// Whether the member left or never joined.
    pub(crate) fn is_idle(&self) -> bool {
        matches!(self.phase, Phase::Idle | Phase::Failed)
    }

    /// Asks for a (re)join: on subscribe, after a cooperative revocation, on metadata
    /// changes, after errors.
    pub(crate) fn request_rejoin(&mut self, now: Instant, reason: impl Into<String>) {
        if matches!(self.phase, Phase::Failed) {
            return;
        }
        if self.rejoin_reason.is_none() {
            self.rejoin_reason = Some(reason.into());
        }
        if matches!(self.phase, Phase::Idle | Phase::Stable) {
            self.phase = Phase::Waiting { at: now };
            self.join_gate_open = false;
            self.revoke_raised = false;
        }
    }

    /// The consumer has given up its partitions (or kept them, cooperatively): the join
    /// may be sent.
    pub(crate) fn join_allowed(&mut self) {
        self.join_gate_open = true;
    }

    /// Forgets the membership (member id and generation), as after UNKNOWN_MEMBER_ID.
    fn reset_generation(&mut self, forget_member: bool) {
        self.generation = -1;
        if forget_member {
            self.member_id.clear();
        }
    }

    /// Advances the member. `topics` is the subscription, `owned` the partitions the
    /// consumer holds now; `out` collects events.
    pub(crate) fn poll(
        &mut self,
        cx: &mut OpContext<'_>,
        topics: &BTreeSet<String>,
        owned: &BTreeSet<TopicPartition>,
        out: &mut Vec<MemberEvent>,
    ) {
        let now = cx.now();
        self.collect_heartbeat(cx, out);
        if let Some(id) = self.leave {
            if cx.take_response(id).is_some() {
                self.leave = None;
            }
        }
        self.check_metadata(cx, topics);
        loop {
            match &self.phase {
                Phase::Idle | Phase::Failed => break,
                Phase::Waiting { at } => {
                    if *at > now {
                        cx.wake_at(*at);
                        break;
                    }
                    if !self.join_gate_open {
                        // Eager: everything owned goes before the join. Cooperative:
                        // nothing is given up here (revocations follow the assignment).
                        let must_revoke =
                            self.protocol == RebalanceProtocol::Eager && !owned.is_empty();
                        if !must_revoke {
                            self.join_gate_open = true;
                        } else if !self.revoke_raised {
                            self.revoke_raised = true;
                            out.push(MemberEvent::Revoke { lost: false });
                            break;
                        } else {
                            break;
                        }
                    }
                    let req = self.join_request(topics, owned);
                    self.joined_topics.clone_from(topics);
                    let timeout = self.rebalance_timeout + Duration::from_secs(5);
                    let opts = RequestOptions::default().timeout(timeout.max(self.request_timeout));
                    let id = cx.send_with(Route::GroupCoordinator(self.group.clone()), req, opts);
                    self.phase = Phase::Joining(id);
                    self.rejoin_reason = None;
                }
                Phase::Joining(id) => {
                    let id = *id;
                    let Some(answer) = cx.take_response(id) else {
                        break;
                    };
                    match answer {
                        Ok(resp) => self.joined(cx, resp, out),
                        Err(e) => self.retry(cx, format!("JoinGroup: {e}")),
                    }
                }
                Phase::Leading {
                    metadata_generation,
                    ..
                } => {
                    let waited = *metadata_generation;
                    if !self.lead(cx, waited, out) {
                        break;
                    }
                }
                Phase::Syncing(id) => {
                    let id = *id;
                    let Some(answer) = cx.take_response(id) else {
                        break;
                    };
                    match answer {
                        Ok(resp) => {
                            let code = KafkaCode(resp.error_code);
                            if code == KafkaCode::NONE {
                                let assignment = if resp.assignment.is_empty() {
                                    Assignment::default()
                                } else {
                                    match Assignment::decode(&resp.assignment) {
                                        Ok(a) => a,
                                        Err(e) => {
                                            self.retry(cx, format!("undecodable assignment: {e}"));
                                            continue;
                                        }
                                    }
                                };
                                let partitions = assignment
                                    .partitions
                                    .iter()
                                    .flat_map(|t| {
                                        let topic: Arc<str> = t.topic.as_str().into();
                                        t.partitions.iter().map(move |&p| (topic.clone(), p))
                                    })
                                    .collect();
                                self.phase = Phase::Stable;
                                self.attempts = 0;
                                self.rebalances += 1;
                                self.last_heartbeat_ok = Some(now);
                                self.next_heartbeat = Some(now + self.heartbeat_interval);
                                self.layout_seen = self.layout_of(cx, topics);
                                out.push(MemberEvent::Assigned {
                                    generation: self.generation,
                                    partitions,
                                });
                            } else {
                                self.join_error(cx, "SyncGroup", code, out);
                            }
                        }
                        Err(e) => self.retry(cx, format!("SyncGroup: {e}")),
                    }
                }
                Phase::Stable => break,
            }
        }
        self.send_heartbeat(cx);
    }

    fn join_request(
        &self,
        topics: &BTreeSet<String>,
        owned: &BTreeSet<TopicPartition>,
    ) -> JoinGroupRequest {
        let owned_partitions = group_by_topic(owned.iter());
        let protocols = self
            .assignors
            .iter()
            .filter_map(|a| {
                let sub = Subscription {
                    topics: topics.iter().cloned().collect(),
                    user_data: a.user_data(&owned_partitions, self.generation),
                    owned_partitions: owned_partitions.clone(),
                    generation_id: self.generation,
                    rack_id: self.rack.clone(),
                };
                // Only a topic or rack name over Kafka's string limit fails here; such a
                // protocol is left out (the join then fails INCONSISTENT_GROUP_PROTOCOL).
                let metadata = sub.try_encode(SUBSCRIPTION_VERSION).ok()?;
                Some(JoinGroupRequestProtocol {
                    name: a.name().to_string(),
                    metadata: metadata.into(),
                    ..Default::default()
                })
            })
            .collect();
        JoinGroupRequest {
            group_id: self.group.clone(),
            session_timeout_ms: millis(self.session_timeout),
            rebalance_timeout_ms: millis(self.rebalance_timeout),
            member_id: self.member_id.clone(),
            group_instance_id: self.instance.clone(),
            protocol_type: "consumer".into(),
            protocols,
            reason: self.rejoin_reason.clone(),
            ..Default::default()
        }
    }

    fn joined(
        &mut self,
        cx: &mut OpContext<'_>,
        resp: JoinGroupResponse,
        out: &mut Vec<MemberEvent>,
    ) {
        let code = KafkaCode(resp.error_code);
        if code == KafkaCode::MEMBER_ID_REQUIRED {
            // KIP-394: join again at once with the id the coordinator gave.
            self.member_id = resp.member_id;
            self.phase = Phase::Waiting { at: cx.now() };
            self.join_gate_open = true;
            return;
        }
        if code != KafkaCode::NONE {
            self.join_error(cx, "JoinGroup", code, out);
            return;
        }
        self.member_id = resp.member_id.clone();
        self.generation = resp.generation_id;
        self.chosen = resp.protocol_name.clone();
        self.leader = resp.leader == resp.member_id;
        if resp.leader == resp.member_id && !resp.skip_assignment {
            let metadata_generation = cx.metadata().generation();
            let mut members = Vec::new();
            let mut versions = BTreeMap::new();
            let mut topics = BTreeSet::new();
            for m in resp.members {
                let version = m
                    .metadata
                    .get(..2)
                    .map_or(0, |b| i16::from_be_bytes([b[0], b[1]]));
                let subscription = Subscription::decode(&m.metadata).unwrap_or_default();
                topics.extend(subscription.topics.iter().cloned());
                versions.insert(m.member_id.clone(), version.clamp(0, SUBSCRIPTION_VERSION));
                members.push(MemberSubscription {
                    member_id: m.member_id,
                    instance_id: m.group_instance_id,
                    subscription,
                });
            }
            cx.request_metadata(topics.iter().cloned());
            self.phase = Phase::Leading {
                members,
                versions,
                topics,
                metadata_generation,
            };
        } else {
            self.sync(cx, Vec::new());
        }
    }

    /// The leader assigns once every member's topic is in the metadata (or one refresh
    /// after the join has come back without it). Returns whether it moved on.
    fn lead(&mut self, cx: &mut OpContext<'_>, waited: u64, out: &mut Vec<MemberEvent>) -> bool {
        let Phase::Leading { topics, .. } = &self.phase else {
            return false;
        };
        let all_known = topics.iter().all(|t| {
            cx.metadata()
                .topic(t)
                .is_some_and(|i| !i.partitions.is_empty())
        });
        if !all_known && cx.metadata().generation() == waited {
            return false;
        }
        let Phase::Leading {
            members,
            versions,
            topics,
            ..
        } = std::mem::replace(&mut self.phase, Phase::Idle)
        else {
            return false;
        };
        let chosen = self.chosen.clone().unwrap_or_default();
        let Some(assignor) = self.assignors.iter().find(|a| a.name() == chosen) else {
            let error = GroupError::Assign(format!("the coordinator chose {chosen}, not ours"));
            self.fail(error, out);
            return true;
        };
        let layout = self.topic_layout(cx, &topics);
        let assignments = match assignor.assign(&layout, &members) {
            Ok(a) => a,
            Err(e) => {
                self.fail(GroupError::Assign(e.to_string()), out);
                return true;
            }
        };
        self.group_topics = topics;
        let mut encoded = Vec::with_capacity(assignments.len());
        for (member_id, a) in assignments {
            let version = versions.get(&member_id).copied().unwrap_or(0);
            match a.try_encode(version) {
                Ok(bytes) => encoded.push(SyncGroupRequestAssignment {
                    assignment: bytes.into(),
                    member_id,
                    ..Default::default()
                }),
                Err(e) => {
                    self.fail(
                        GroupError::Assign(format!("assignment for {member_id}: {e}")),
                        out,
                    );
                    return true;
                }
            }
        }
        let assignments = encoded;
        self.sync(cx, assignments);
        true
    }

    fn topic_layout(&self, cx: &OpContext<'_>, topics: &BTreeSet<String>) -> TopicLayout {
        let md = cx.metadata();
        let mut layout = TopicLayout::default();
        for t in topics {
            let Some(info) = md.topic(t) else { continue };
            if info.partitions.is_empty() {
                continue;
            }
            let parts = info
                .partitions
                .iter()
                .map(|(&partition, p)| PartitionRacks {
                    partition,
                    racks: p
                        .replicas
                        .iter()
                        .filter_map(|&n| md.broker(n).and_then(|b| b.rack.clone()))
                        .collect(),
                })
                .collect();
            layout.topics.insert(t.clone(), parts);
        }
        layout
    }

    fn sync(&mut self, cx: &mut OpContext<'_>, assignments: Vec<SyncGroupRequestAssignment>) {
        let req = SyncGroupRequest {
            group_id: self.group.clone(),
            generation_id: self.generation,
            member_id: self.member_id.clone(),
            group_instance_id: self.instance.clone(),
            protocol_type: Some("consumer".into()),
            protocol_name: self.chosen.clone(),
            assignments,
            ..Default::default()
        };
        let id = cx.send(Route::GroupCoordinator(self.group.clone()), req);
        self.phase = Phase::Syncing(id);
    }

    /// Errors of JoinGroup and SyncGroup, as Java's coordinator treats them.
    fn join_error(
        &mut self,
        cx: &mut OpContext<'_>,
        api: &'static str,
        code: KafkaCode,
        out: &mut Vec<MemberEvent>,
    ) {
        match code {
            KafkaCode::UNKNOWN_MEMBER_ID => {
                self.reset_generation(true);
                self.rejoin_now(cx, format!("{api}: {code}"));
            }
            KafkaCode::ILLEGAL_GENERATION => {
                self.reset_generation(false);
                self.rejoin_now(cx, format!("{api}: {code}"));
            }
            KafkaCode::REBALANCE_IN_PROGRESS => self.rejoin_now(cx, format!("{api}: {code}")),
            KafkaCode::NOT_COORDINATOR
            | KafkaCode::COORDINATOR_NOT_AVAILABLE
            | KafkaCode::COORDINATOR_LOAD_IN_PROGRESS => {
                cx.invalidate_coordinator(&self.group.clone());
                self.retry(cx, format!("{api}: {code}"));
            }
            KafkaCode::FENCED_INSTANCE_ID
            | KafkaCode::GROUP_AUTHORIZATION_FAILED
            | KafkaCode::INCONSISTENT_GROUP_PROTOCOL
            | KafkaCode::INVALID_SESSION_TIMEOUT
            | KafkaCode::GROUP_MAX_SIZE_REACHED
            | KafkaCode::UNSUPPORTED_VERSION => self.fail(GroupError::Refused { api, code }, out),
            _ if code.is_retriable() => self.retry(cx, format!("{api}: {code}")),
            _ => self.fail(GroupError::Refused { api, code }, out),
        }
    }

    fn fail(&mut self, error: GroupError, out: &mut Vec<MemberEvent>) {
        self.phase = Phase::Failed;
        self.heartbeat = None;
        out.push(MemberEvent::Failed(error));
    }

    /// Joins again at once (the gate stays as it was: eager revocations are done).
    fn rejoin_now(&mut self, cx: &OpContext<'_>, reason: String) {
        self.rejoin_reason = Some(reason);
        self.phase = Phase::Waiting { at: cx.now() };
    }

    /// Joins again after the retry backoff.
    fn retry(&mut self, cx: &mut OpContext<'_>, reason: String) {
        self.attempts += 1;
        let at = cx.now() + cx.retry_backoff(self.attempts);
        self.rejoin_reason = Some(reason);
        self.phase = Phase::Waiting { at };
    }

    fn layout_of(&self, cx: &OpContext<'_>, topics: &BTreeSet<String>) -> BTreeMap<String, usize> {
        topics
            .iter()
            .chain(self.group_topics.iter())
            .filter_map(|t| Some((t.clone(), cx.metadata().topic(t)?.partitions.len())))
            .collect()
    }

    /// A subscribed topic (or, for the leader, any member's) that appeared or changed
    /// its partition count since the assignment forces a rejoin.
    fn check_metadata(&mut self, cx: &OpContext<'_>, topics: &BTreeSet<String>) {
        if !self.is_stable() {
            return;
        }
        if *topics != self.joined_topics {
            // Changed while joining (a pattern's topics, a new subscription): Java's
            // `joinedSubscription` check.
            self.request_rejoin(cx.now(), "the subscription changed since the join");
            return;
        }
        let now_layout = self.layout_of(cx, topics);
        if now_layout != self.layout_seen {
            let grown = now_layout
                .iter()
                .any(|(t, n)| self.layout_seen.get(t).is_none_or(|seen| seen != n));
            self.layout_seen = now_layout;
            if grown {
                self.request_rejoin(cx.now(), "metadata changed");
            }
        }
    }

    fn send_heartbeat(&mut self, cx: &mut OpContext<'_>) {
        let beating = matches!(self.phase, Phase::Stable)
            || (matches!(self.phase, Phase::Waiting { .. }) && self.generation >= 0);
        if !beating || self.heartbeat.is_some() {
            return;
        }
        let Some(at) = self.next_heartbeat else {
            return;
        };
        if at > cx.now() {
            cx.wake_at(at);
            return;
        }
        let req = HeartbeatRequest {
            group_id: self.group.clone(),
            generation_id: self.generation,
            member_id: self.member_id.clone(),
            group_instance_id: self.instance.clone(),
            ..Default::default()
        };
        self.heartbeat = Some(cx.send(Route::GroupCoordinator(self.group.clone()), req));
        self.next_heartbeat = Some(cx.now() + self.heartbeat_interval);
    }

    fn collect_heartbeat(&mut self, cx: &mut OpContext<'_>, out: &mut Vec<MemberEvent>) {
        let now = cx.now();
        if let Some(answer) = self.heartbeat.and_then(|id| cx.take_response(id)) {
            self.heartbeat = None;
            let code = match answer {
                Ok(r) => KafkaCode(r.error_code),
                Err(_) => KafkaCode::REQUEST_TIMED_OUT,
            };
            match code {
                KafkaCode::NONE => self.last_heartbeat_ok = Some(now),
                KafkaCode::REBALANCE_IN_PROGRESS => {
                    self.last_heartbeat_ok = Some(now);
                    self.request_rejoin(now, "the group is rebalancing");
                }
                KafkaCode::ILLEGAL_GENERATION | KafkaCode::UNKNOWN_MEMBER_ID => {
                    self.lost(now, code == KafkaCode::UNKNOWN_MEMBER_ID, code, out);
                }
                KafkaCode::FENCED_INSTANCE_ID => self.fail(
                    GroupError::Refused {
                        api: "Heartbeat",
                        code,
                    },
                    out,
                ),
                _ => {
                    // Coordinator moved or the request failed: retry after a backoff.
                    if code == KafkaCode::NOT_COORDINATOR
                        || code == KafkaCode::COORDINATOR_NOT_AVAILABLE
                    {
                        cx.invalidate_coordinator(&self.group.clone());
                    }
                    let backoff = cx.retry_backoff(1);
                    self.next_heartbeat = Some(now + backoff);
                }
            }
        }
        // No heartbeat answered for a whole session: the coordinator has dropped us.
        // Also while a heartbeat is still on its way (a coordinator that stopped
        // answering holds it up to `request.timeout.ms`): by then its successor may have
        // given our partitions to another member.
        if self.is_stable() {
            if let Some(ok) = self.last_heartbeat_ok {
                let expiry = ok + self.session_timeout;
                if now >= expiry {
                    if let Some(id) = self.heartbeat.take() {
                        cx.discard(id);
                    }
                    cx.invalidate_coordinator(&self.group.clone());
                    self.lost(now, false, KafkaCode::REQUEST_TIMED_OUT, out);
                } else if self.heartbeat.is_some() {
                    cx.wake_at(expiry);
                }
            }
        }
    }

    /// The membership is gone: the consumer loses its partitions (no commit possible)
    /// and the member joins again.
    fn lost(
        &mut self,
        now: Instant,
        forget_member: bool,
        code: KafkaCode,
        out: &mut Vec<MemberEvent>,
    ) {
        self.reset_generation(forget_member);
        out.push(MemberEvent::Revoke { lost: true });
        self.phase = Phase::Waiting { at: now };
        self.join_gate_open = true;
        self.rejoin_reason = Some(format!("membership lost: {code}"));
    }

    /// Leaves the group (LeaveGroup, not for static members, which keep their
    /// partitions until the session times out), and stops.
    pub(crate) fn leave(&mut self, cx: &mut OpContext<'_>, reason: &str) {
        let joined =
            !self.member_id.is_empty() && !matches!(self.phase, Phase::Idle | Phase::Failed);
        if joined && self.instance.is_none() {
            // v3+ (Kafka 2.4+) names members in the array only.
            let req = LeaveGroupRequest {
                group_id: self.group.clone(),
                members: vec![MemberIdentity {
                    member_id: self.member_id.clone(),
                    group_instance_id: None,
                    reason: Some(reason.to_string()),
                    ..Default::default()
                }],
                ..Default::default()
            };
            self.leave = Some(cx.send(Route::GroupCoordinator(self.group.clone()), req));
        }
        if let Some(id) = self.heartbeat.take() {
            cx.discard(id);
        }
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Joining(id) => cx.discard(id),
            Phase::Syncing(id) => cx.discard(id),
            _ => {}
        }
        self.reset_generation(self.instance.is_none());
    }

    /// Whether a LeaveGroup is still in flight.
    pub(crate) fn leaving(&self) -> bool {
        self.leave.is_some()
    }
}

/// Partitions grouped per topic, in order.
pub(crate) fn group_by_topic<'a>(
    parts: impl Iterator<Item = &'a TopicPartition>,
) -> Vec<TopicPartitions> {
    let mut out: Vec<TopicPartitions> = Vec::new();
    for (topic, p) in parts {
        match out.last_mut() {
            Some(t) if *t.topic == **topic => t.partitions.push(*p),
            _ => out.push(TopicPartitions {
                topic: topic.to_string(),
                partitions: vec![*p],
            }),
        }
    }
    out
}

fn millis(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}
