//! KIP-848 membership (`group.protocol=consumer`): one ConsumerGroupHeartbeat request on
//! the member's own timer carries the subscription and the partitions owned; the
//! coordinator answers with the member epoch and, when it changes, the target
//! assignment, computed server-side (`group.remote.assignor`).
//!
//! Reconciliation as Java's `ConsumerMembershipManager` does it: a new target is handed
//! to the group consumer only when no revocation or offset lookup of the previous one is
//! running; partitions to give up are revoked first (the application handles them), then
//! the heartbeat that acknowledges them is sent at once; partitions of topics whose
//! metadata is unknown wait until it is known (a pattern member asks for them by topic
//! id: `topic_names.rs`). Fencing (FENCED_MEMBER_EPOCH,
//! UNKNOWN_MEMBER_ID) loses the partitions and rejoins with epoch 0 under the same
//! member id. Leaving sends epoch -1 (a static member -2, which keeps its place).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::member::{MemberEvent, TopicPartition};
use super::topic_names::TopicNames;
use super::GroupError;
use crate::client::{OpContext, RequestId};
use crate::cluster::Route;
use crate::config::ClientConfig;
use crate::conn::RequestError;
use crate::protocol::messages::consumer_group_heartbeat::request::TopicPartitions as OwnedTopic;
use crate::protocol::messages::consumer_group_heartbeat::ConsumerGroupHeartbeatRequest;
use crate::protocol::{KafkaCode, Uuid};

/// Epoch values with a meaning of their own.
const JOIN: i32 = 0;
const LEAVE: i32 = -1;
const LEAVE_STATIC: i32 = -2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not subscribed, left, or waiting for the application to poll again.
    Idle,
    /// Joined or joining: heartbeats flow.
    Member,
    Failed,
}

/// The KIP-848 member. See the module docs.
pub(crate) struct Kip848 {
    group: String,
    instance: Option<String>,
    rack: Option<String>,
    rebalance_timeout: Duration,
    assignor: Option<String>,
    pub(crate) member_id: String,
    pub(crate) epoch: i32,
    phase: Phase,
    heartbeat: Option<RequestId<ConsumerGroupHeartbeatRequest>>,
    interval: Duration,
    next_heartbeat: Option<Instant>,
    attempts: u32,
    /// The coordinator's latest target, by topic id.
    target: Option<BTreeMap<Uuid, Vec<i32>>>,
    /// The target last handed to the group consumer.
    delivered: Option<BTreeSet<TopicPartition>>,
    leave: Option<RequestId<ConsumerGroupHeartbeatRequest>>,
    pub(crate) rebalances: u64,
    /// A pattern subscription (`SubscribedTopicRegex`, v1+), matched by the coordinator.
    pub(crate) pattern: Option<String>,
    /// The regex the coordinator has from us (sent and answered).
    regex_sent: Option<String>,
    /// The `SubscribedTopicRegex` the heartbeat in flight carries, if any ("" clears).
    regex_in_flight: Option<String>,
    /// Names of the target's topic ids.
    names: TopicNames,
}

impl std::fmt::Debug for Kip848 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kip848")
            .field("group", &self.group)
            .field("member_id", &self.member_id)
            .field("epoch", &self.epoch)
            .field("phase", &self.phase)
            .finish_non_exhaustive()
    }
}

impl Kip848 {
    /// A member for `config`'s group settings. Its member id is made at the first
    /// heartbeat from the client's seed (KIP-1082: the client names itself).
    pub(crate) fn new(config: &ClientConfig) -> Result<Self, GroupError> {
        let g = config.group();
        let group = g.group_id.clone().ok_or(GroupError::NoGroupId)?;
        if !g.custom_assignors.is_empty() {
            // Java refuses client-side assignors with group.protocol=consumer too.
            return Err(GroupError::Unsupported(
                "client-side assignors need group.protocol=classic (KIP-848 assigns on the broker: group.remote.assignor)",
            ));
        }
        Ok(Kip848 {
            group,
            instance: g.group_instance_id.clone(),
            rack: config.common().client_rack.clone(),
            rebalance_timeout: g.max_poll_interval,
            assignor: g.remote_assignor.clone(),
            member_id: String::new(),
            epoch: JOIN,
            phase: Phase::Idle,
            heartbeat: None,
            interval: g.heartbeat_interval,
            next_heartbeat: None,
            attempts: 0,
            target: None,
            delivered: None,
            leave: None,
            rebalances: 0,
            pattern: None,
            regex_sent: None,
            regex_in_flight: None,
            names: TopicNames::default(),
        })
    }

    pub(crate) fn group(&self) -> &str {
        &self.group
    }

    pub(crate) fn instance(&self) -> Option<&str> {
        self.instance.as_deref()
    }

    /// In the group with an epoch commits may use.
    pub(crate) fn is_stable(&self) -> bool {
        self.phase == Phase::Member && self.epoch > 0
    }

    pub(crate) fn is_idle(&self) -> bool {
        matches!(self.phase, Phase::Idle | Phase::Failed)
    }

    /// Joins (or, joined, heartbeats at once: a subscription change, an acknowledgement).
    pub(crate) fn request_rejoin(&mut self, now: Instant) {
        match self.phase {
            Phase::Failed => {}
            Phase::Idle => {
                self.phase = Phase::Member;
                self.epoch = JOIN;
                self.target = None;
                self.delivered = None;
                self.next_heartbeat = Some(now);
            }
            Phase::Member => self.next_heartbeat = Some(now),
        }
    }

    /// Advances the member. `busy`: a revocation or offset lookup of the last target is
    /// still running, so a newer target waits.
    pub(crate) fn poll(
        &mut self,
        cx: &mut OpContext<'_>,
        topics: &BTreeSet<String>,
        owned: &BTreeSet<TopicPartition>,
        busy: bool,
        out: &mut Vec<MemberEvent>,
    ) {
        if let Some(id) = self.leave {
            if cx.take_response(id).is_some() {
                self.leave = None;
            }
        }
        self.collect(cx, out);
        self.names.collect(cx);
        if self.phase != Phase::Member {
            return;
        }
        if !busy {
            self.deliver(cx, owned, out);
        }
        self.send(cx, topics, owned);
    }

    fn collect(&mut self, cx: &mut OpContext<'_>, out: &mut Vec<MemberEvent>) {
        let Some(id) = self.heartbeat else { return };
        let Some(answer) = cx.take_response(id) else {
            return;
        };
        self.heartbeat = None;
        let regex = self.regex_in_flight.take();
        let now = cx.now();
        let resp = match answer {
            Ok(r) => r,
            Err(RequestError::Encode(_)) if regex.is_some() => {
                // The broker's ConsumerGroupHeartbeat is v0: no SubscribedTopicRegex.
                self.phase = Phase::Failed;
                let why = "pattern subscriptions need ConsumerGroupHeartbeat v1 (Kafka 4.0+)";
                out.push(MemberEvent::Failed(GroupError::Unsupported(why)));
                return;
            }
            Err(_) => {
                self.backoff(cx);
                return;
            }
        };
        let code = KafkaCode(resp.error_code);
        match code {
            KafkaCode::NONE => {
                self.attempts = 0;
                if let Some(r) = regex {
                    self.regex_sent = (!r.is_empty()).then_some(r);
                }
                if let Some(id) = resp.member_id.filter(|m| !m.is_empty()) {
                    self.member_id = id;
                }
                if resp.member_epoch != self.epoch {
                    self.epoch = resp.member_epoch;
                }
                if resp.heartbeat_interval_ms > 0 {
                    self.interval = Duration::from_millis(resp.heartbeat_interval_ms as u64);
                }
                if let Some(a) = resp.assignment {
                    let mut target: BTreeMap<Uuid, Vec<i32>> = BTreeMap::new();
                    for t in a.topic_partitions {
                        target.entry(t.topic_id).or_default().extend(t.partitions);
                    }
                    self.target = Some(target);
                }
                let due = now + self.interval;
                self.next_heartbeat = Some(self.next_heartbeat.map_or(due, |n| n.max(due)));
            }
            KafkaCode::FENCED_MEMBER_EPOCH | KafkaCode::UNKNOWN_MEMBER_ID => {
                // Fenced: what we own may be someone else's already. Rejoin at epoch 0.
                out.push(MemberEvent::Revoke { lost: true });
                self.epoch = JOIN;
                self.target = None;
                self.delivered = None;
                self.names.clear(cx);
                self.next_heartbeat = Some(now);
            }
            KafkaCode::NOT_COORDINATOR
            | KafkaCode::COORDINATOR_NOT_AVAILABLE
            | KafkaCode::COORDINATOR_LOAD_IN_PROGRESS => {
                cx.invalidate_coordinator(&self.group.clone());
                self.backoff(cx);
            }
            KafkaCode::INVALID_REGULAR_EXPRESSION => {
                self.phase = Phase::Failed;
                out.push(MemberEvent::Failed(GroupError::InvalidPattern {
                    pattern: self.pattern.clone().unwrap_or_default(),
                    reason: resp.error_message.unwrap_or_else(|| code.to_string()),
                }));
            }
            _ if code.is_retriable() => self.backoff(cx),
            _ => {
                self.phase = Phase::Failed;
                out.push(MemberEvent::Failed(GroupError::Refused {
                    api: "ConsumerGroupHeartbeat",
                    code,
                }));
            }
        }
    }

    fn backoff(&mut self, cx: &mut OpContext<'_>) {
        self.attempts += 1;
        self.next_heartbeat = Some(cx.now() + cx.retry_backoff(self.attempts));
    }

    /// Hands the target (names resolved) to the group consumer once it differs from what
    /// was handed last; partitions of topics not named yet wait: a member subscribed to
    /// names refreshes its metadata, a pattern member asks for those topic ids.
    fn deliver(
        &mut self,
        cx: &mut OpContext<'_>,
        owned: &BTreeSet<TopicPartition>,
        out: &mut Vec<MemberEvent>,
    ) {
        let Some(target) = &self.target else { return };
        let (resolved, unnamed) = self.names.name_target(cx, target);
        if !unnamed.is_empty() {
            if self.pattern.is_some() {
                self.names.look_up(cx, &unnamed);
            } else {
                cx.request_metadata(std::iter::empty());
            }
        }
        if self.delivered.as_ref() != Some(&resolved) {
            // Names of topics neither assigned nor owned any more are forgotten.
            let mut keep: BTreeSet<Uuid> = target.keys().copied().collect();
            let owned_topics: BTreeSet<&str> = owned.iter().map(|(t, _)| &**t).collect();
            keep.extend(owned_topics.iter().filter_map(|t| self.names.id_of(cx, t)));
            self.names.retain(&keep);
            self.delivered = Some(resolved.clone());
            self.rebalances += 1;
            out.push(MemberEvent::Assigned {
                generation: self.epoch,
                partitions: resolved,
            });
        }
    }

    fn send(
        &mut self,
        cx: &mut OpContext<'_>,
        topics: &BTreeSet<String>,
        owned: &BTreeSet<TopicPartition>,
    ) {
        if self.heartbeat.is_some() {
            return;
        }
        let now = cx.now();
        let Some(at) = self.next_heartbeat else {
            return;
        };
        if at > now {
            cx.wake_at(at);
            return;
        }
        if self.member_id.is_empty() {
            let seed = cx.seed() ^ (cx.wall_clock_ms() as u64).rotate_left(17);
            let mut id = [0u8; 16];
            id[..8].copy_from_slice(&seed.to_be_bytes());
            let mixed = seed.rotate_left(29).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            id[8..].copy_from_slice(&mixed.to_be_bytes());
            self.member_id = Uuid::from_bytes(id).to_string();
        }
        let joining = self.epoch == JOIN;
        // A (re-)joining member owns nothing in the group: Kafka refuses a heartbeat at
        // epoch 0 with owned partitions (INVALID_REQUEST, "TopicPartitions must be empty
        // when (re-)joining"). After a fence the consumer still lists what it is giving
        // up as lost when this heartbeat goes out in the same poll.
        let mut by_topic: BTreeMap<Uuid, Vec<i32>> = BTreeMap::new();
        for (t, p) in owned.iter().filter(|_| !joining) {
            if let Some(id) = self.names.id_of(cx, t) {
                by_topic.entry(id).or_default().push(*p);
            }
        }
        // SubscribedTopicRegex goes on a joining (full) heartbeat and when it changed
        // since the coordinator took it; "" removes a pattern it has (Java's rules).
        // With a pattern no names are sent, but an empty list alongside the regex
        // clears names an earlier subscription left there.
        let regex = match &self.pattern {
            Some(p) if joining || self.regex_sent.as_ref() != Some(p) => Some(p.clone()),
            None if self.regex_sent.is_some() => Some(String::new()),
            _ => None,
        };
        let names = match &self.pattern {
            Some(_) => regex.as_ref().map(|_| Vec::new()),
            None => Some(topics.iter().cloned().collect()),
        };
        self.regex_in_flight.clone_from(&regex);
        let req = ConsumerGroupHeartbeatRequest {
            group_id: self.group.clone(),
            member_id: self.member_id.clone(),
            member_epoch: self.epoch,
            instance_id: self.instance.clone(),
            rack_id: self.rack.clone(),
            rebalance_timeout_ms: millis(self.rebalance_timeout),
            subscribed_topic_names: names,
            subscribed_topic_regex: regex,
            server_assignor: self.assignor.clone(),
            topic_partitions: Some(
                by_topic
                    .into_iter()
                    .map(|(topic_id, partitions)| OwnedTopic {
                        topic_id,
                        partitions,
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        };
        self.heartbeat = Some(cx.send(Route::GroupCoordinator(self.group.clone()), req));
        // The answer sets the next one (the coordinator's interval); until then, none.
        self.next_heartbeat = None;
    }

    /// Leaves: epoch -1 (a static member -2: its place is kept for the session timeout).
    pub(crate) fn leave(&mut self, cx: &mut OpContext<'_>) {
        if let Some(id) = self.heartbeat.take() {
            cx.discard(id);
        }
        if self.phase == Phase::Member && self.epoch > 0 {
            let epoch = if self.instance.is_some() {
                LEAVE_STATIC
            } else {
                LEAVE
            };
            let req = ConsumerGroupHeartbeatRequest {
                group_id: self.group.clone(),
                member_id: self.member_id.clone(),
                member_epoch: epoch,
                instance_id: self.instance.clone(),
                ..Default::default()
            };
            self.leave = Some(cx.send(Route::GroupCoordinator(self.group.clone()), req));
        }
        if self.phase != Phase::Failed {
            self.phase = Phase::Idle;
        }
        self.epoch = JOIN;
        self.target = None;
        self.delivered = None;
        self.regex_sent = None;
        self.regex_in_flight = None;
        self.names.clear(cx);
    }

    pub(crate) fn leaving(&self) -> bool {
        self.leave.is_some()
    }
}

fn millis(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}
