//! Share group membership (KIP-932): ShareGroupHeartbeat on the coordinator's interval
//! (found with FindCoordinator key type GROUP), a member id the client makes itself (a
//! UUID in Kafka's base64 form, as the KIP-848 member does), the member epoch, and the
//! assignment computed by the coordinator, by topic id. Unlike a consumer group there is
//! no revocation to reconcile: records of a partition are shared, so a new assignment
//! takes effect at once and the heartbeat carries no owned partitions. Fencing
//! (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID) rejoins at epoch 0 under the same member id;
//! leaving sends epoch -1.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::ShareError;
use crate::client::{OpContext, RequestId};
use crate::cluster::Route;
use crate::config::ClientConfig;
use crate::conn::RequestError;
use crate::group::topic_names::TopicNames;
use crate::group::TopicPartition;
use crate::protocol::messages::share_group_heartbeat::ShareGroupHeartbeatRequest;
use crate::protocol::{KafkaCode, Uuid};

const JOIN: i32 = 0;
const LEAVE: i32 = -1;

/// What the member tells the share consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MemberEvent {
    /// The partitions assigned now (names resolved), replacing the previous set.
    Assigned(BTreeSet<TopicPartition>),
    /// Fenced: rejoining at epoch 0.
    Fenced(KafkaCode),
    /// The coordinator refused the member for good.
    Failed(ShareError),
}

/// The share group member. See the module docs.
pub(crate) struct ShareMember {
    group: String,
    rack: Option<String>,
    pub(crate) member_id: String,
    pub(crate) epoch: i32,
    /// Subscribed and not left: heartbeats flow.
    active: bool,
    failed: bool,
    heartbeat: Option<RequestId<ShareGroupHeartbeatRequest>>,
    interval: Duration,
    next_heartbeat: Option<Instant>,
    attempts: u32,
    /// The coordinator's latest assignment, by topic id.
    target: Option<BTreeMap<Uuid, Vec<i32>>>,
    /// The assignment last handed to the share consumer.
    delivered: Option<BTreeSet<TopicPartition>>,
    leave: Option<RequestId<ShareGroupHeartbeatRequest>>,
    names: TopicNames,
}

impl std::fmt::Debug for ShareMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShareMember")
            .field("group", &self.group)
            .field("member_id", &self.member_id)
            .field("epoch", &self.epoch)
            .field("active", &self.active)
            .finish_non_exhaustive()
    }
}

impl ShareMember {
    pub(crate) fn new(config: &ClientConfig) -> Result<Self, ShareError> {
        let g = config.group();
        let group = g.group_id.clone().ok_or(ShareError::NoGroupId)?;
        Ok(ShareMember {
            group,
            rack: config.common().client_rack.clone(),
            member_id: String::new(),
            epoch: JOIN,
            active: false,
            failed: false,
            heartbeat: None,
            interval: g.heartbeat_interval,
            next_heartbeat: None,
            attempts: 0,
            target: None,
            delivered: None,
            leave: None,
            names: TopicNames::default(),
        })
    }

    pub(crate) fn group(&self) -> &str {
        &self.group
    }

    /// In the group with an epoch the brokers accept.
    pub(crate) fn is_member(&self) -> bool {
        self.active && self.epoch > 0
    }

    /// Joins, or heartbeats at once (a subscription change).
    pub(crate) fn join(&mut self, now: Instant) {
        if self.failed {
            return;
        }
        if !self.active {
            self.active = true;
            self.epoch = JOIN;
            self.target = None;
            self.delivered = None;
        }
        self.next_heartbeat = Some(now);
    }

    pub(crate) fn poll(
        &mut self,
        cx: &mut OpContext<'_>,
        topics: &BTreeSet<String>,
        out: &mut Vec<MemberEvent>,
    ) {
        if let Some(id) = self.leave {
            if cx.take_response(id).is_some() {
                self.leave = None;
            }
        }
        self.collect(cx, out);
        if !self.active {
            return;
        }
        self.deliver(cx, topics, out);
        self.send(cx, topics);
    }

    fn collect(&mut self, cx: &mut OpContext<'_>, out: &mut Vec<MemberEvent>) {
        let Some(id) = self.heartbeat else { return };
        let Some(answer) = cx.take_response(id) else {
            return;
        };
        self.heartbeat = None;
        let now = cx.now();
        let resp = match answer {
            Ok(r) => r,
            Err(RequestError::Encode(_)) => {
                self.fail(
                    out,
                    ShareError::Refused {
                        api: "ShareGroupHeartbeat",
                        code: KafkaCode::UNSUPPORTED_VERSION,
                    },
                );
                return;
            }
            Err(_) => {
                self.backoff(cx);
                return;
            }
        };
        let code = KafkaCode(resp.error_code);
        crate::trace::debug!(
            %code,
            epoch = resp.member_epoch,
            assigned_topics = resp.assignment.as_ref().map(|a| a.topic_partitions.len()),
            interval_ms = resp.heartbeat_interval_ms,
            "kafka share heartbeat answered"
        );
        match code {
            KafkaCode::NONE => {
                self.attempts = 0;
                if let Some(id) = resp.member_id.filter(|m| !m.is_empty()) {
                    self.member_id = id;
                }
                self.epoch = resp.member_epoch;
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
                out.push(MemberEvent::Fenced(code));
                self.epoch = JOIN;
                self.target = None;
                self.delivered = None;
                self.next_heartbeat = Some(now);
            }
            KafkaCode::NOT_COORDINATOR
            | KafkaCode::COORDINATOR_NOT_AVAILABLE
            | KafkaCode::COORDINATOR_LOAD_IN_PROGRESS => {
                cx.invalidate_coordinator(&self.group.clone());
                self.backoff(cx);
            }
            _ if code.is_retriable() => self.backoff(cx),
            _ => self.fail(
                out,
                ShareError::Refused {
                    api: "ShareGroupHeartbeat",
                    code,
                },
            ),
        }
    }

    fn fail(&mut self, out: &mut Vec<MemberEvent>, e: ShareError) {
        self.failed = true;
        self.active = false;
        out.push(MemberEvent::Failed(e));
    }

    fn backoff(&mut self, cx: &mut OpContext<'_>) {
        self.attempts += 1;
        self.next_heartbeat = Some(cx.now() + cx.retry_backoff(self.attempts));
    }

    /// Hands the assignment (names resolved) over once it differs from the last one;
    /// partitions of topics not named yet wait for a metadata refresh.
    fn deliver(
        &mut self,
        cx: &mut OpContext<'_>,
        topics: &BTreeSet<String>,
        out: &mut Vec<MemberEvent>,
    ) {
        let Some(target) = &self.target else { return };
        let (resolved, unnamed) = self.names.name_target(cx, target);
        if !unnamed.is_empty() {
            cx.request_metadata(topics.iter().cloned());
        }
        if self.delivered.as_ref() != Some(&resolved) {
            let keep: BTreeSet<Uuid> = target.keys().copied().collect();
            self.names.retain(&keep);
            self.delivered = Some(resolved.clone());
            out.push(MemberEvent::Assigned(resolved));
        }
    }

    fn send(&mut self, cx: &mut OpContext<'_>, topics: &BTreeSet<String>) {
        if self.heartbeat.is_some() {
            return;
        }
        let Some(at) = self.next_heartbeat else {
            return;
        };
        if at > cx.now() {
            cx.wake_at(at);
            return;
        }
        if self.member_id.is_empty() {
            self.member_id = new_member_id(cx);
        }
        let req = ShareGroupHeartbeatRequest {
            group_id: self.group.clone(),
            member_id: self.member_id.clone(),
            member_epoch: self.epoch,
            rack_id: self.rack.clone(),
            subscribed_topic_names: Some(topics.iter().cloned().collect()),
            ..Default::default()
        };
        self.heartbeat = Some(cx.send(Route::GroupCoordinator(self.group.clone()), req));
        self.next_heartbeat = None;
    }

    /// Leaves with epoch -1 (only if joined); heartbeats stop.
    pub(crate) fn leave(&mut self, cx: &mut OpContext<'_>) {
        if let Some(id) = self.heartbeat.take() {
            cx.discard(id);
        }
        if self.active && self.epoch > 0 {
            let req = ShareGroupHeartbeatRequest {
                group_id: self.group.clone(),
                member_id: self.member_id.clone(),
                member_epoch: LEAVE,
                ..Default::default()
            };
            self.leave = Some(cx.send(Route::GroupCoordinator(self.group.clone()), req));
        }
        self.active = false;
        self.epoch = JOIN;
        self.target = None;
        self.delivered = None;
        self.names.clear(cx);
    }

    pub(crate) fn leaving(&self) -> bool {
        self.leave.is_some()
    }
}

/// A member id made by the client (KIP-1082): 16 bytes from the client's seed and the
/// wall clock, in Kafka's base64 UUID form.
fn new_member_id(cx: &OpContext<'_>) -> String {
    let seed = cx.seed() ^ (cx.wall_clock_ms() as u64).rotate_left(17);
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&seed.to_be_bytes());
    let mixed = seed.rotate_left(29).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    id[8..].copy_from_slice(&mixed.to_be_bytes());
    Uuid::from_bytes(id).to_string()
}
