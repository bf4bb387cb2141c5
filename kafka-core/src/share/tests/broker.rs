//! A scripted broker for share groups: the share coordinator (members, epochs, every
//! partition assigned to every member, fencing on demand) and the leader of every
//! partition (share sessions with epoch checks, record states with delivery counts and
//! acquisitions by member, acknowledgements applied as Kafka's share partition does).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::admin::groups::scripted::coordinator_b1;
use crate::protocol::messages::metadata::response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use crate::protocol::messages::metadata::MetadataResponse;
use crate::protocol::messages::share_acknowledge::response as ack_resp;
use crate::protocol::messages::share_acknowledge::{
    ShareAcknowledgeRequest, ShareAcknowledgeResponse,
};
use crate::protocol::messages::share_fetch::response::{
    AcquiredRecords, PartitionData, ShareFetchableTopicResponse,
};
use crate::protocol::messages::share_fetch::{ShareFetchRequest, ShareFetchResponse};
use crate::protocol::messages::share_group_heartbeat::response::{Assignment, TopicPartitions};
use crate::protocol::messages::share_group_heartbeat::{
    ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse,
};
use crate::protocol::{ApiKey, KafkaCode, Message, Uuid};
use crate::record::{BatchBuilder, BatchOptions};
use crate::test_support::{broker_versions, origin, response_frame, Seen};

use super::TOPIC;

pub(crate) const TOPIC_ID: Uuid = Uuid::from_bytes([7; 16]);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Available,
    Acquired,
    Acknowledged,
    Archived,
}

#[derive(Debug, Clone)]
pub(crate) struct Rec {
    pub(super) state: State,
    pub(super) count: i16,
    pub(super) owner: String,
    /// Renewals (type 4) of the current acquisition.
    pub(super) renewals: u32,
    /// When the current acquisition lock started (acquired or renewed).
    pub(super) locked_at: Instant,
}

pub(crate) struct Broker {
    /// Per partition, per offset.
    pub(super) logs: Vec<Vec<Rec>>,
    /// Member id → epoch.
    pub(super) members: BTreeMap<String, i32>,
    /// Member id → (next expected session epoch, partitions in the session).
    pub(super) sessions: BTreeMap<String, (i32, BTreeSet<i32>)>,
    pub(super) heartbeats: Vec<ShareGroupHeartbeatRequest>,
    pub(super) fetches: Vec<ShareFetchRequest>,
    pub(super) acknowledges: Vec<ShareAcknowledgeRequest>,
    /// Top-level errors for the next requests of an API.
    pub(super) faults: BTreeMap<ApiKey, Vec<KafkaCode>>,
    /// Assign only these partitions (all when `None`).
    pub(super) assign_only: Option<Vec<i32>>,
    /// Answer every ShareFetch with hostile acquired ranges and garbage records.
    pub(super) hostile: bool,
    /// The newest ShareFetch/ShareAcknowledge version advertised (2: renewals).
    pub(super) share_max_version: i16,
    /// The acquisition lock timeout reported in every answer.
    pub(super) lock_ms: i32,
    /// Locks expire `lock_ms` after they start, on the world's clock ([`Broker::tick`]);
    /// off, they never do.
    pub(super) expiring_locks: bool,
    /// `group.share.delivery.count.limit`: a record whose lock expires or that is released
    /// after this many deliveries is archived.
    pub(super) delivery_limit: i16,
    /// The world's clock, as of the last [`Broker::tick`].
    now: Instant,
}

impl Broker {
    pub(super) fn new(partitions: i32, records: i64) -> Self {
        let rec = Rec {
            state: State::Available,
            count: 0,
            owner: String::new(),
            renewals: 0,
            locked_at: origin(),
        };
        Broker {
            logs: (0..partitions)
                .map(|_| vec![rec.clone(); records as usize])
                .collect(),
            members: BTreeMap::new(),
            sessions: BTreeMap::new(),
            heartbeats: Vec::new(),
            fetches: Vec::new(),
            acknowledges: Vec::new(),
            faults: BTreeMap::new(),
            assign_only: None,
            hostile: false,
            share_max_version: 2,
            lock_ms: 15_000,
            expiring_locks: false,
            delivery_limit: 5,
            now: origin(),
        }
    }

    /// The clock moved to `now`: with `expiring_locks`, every lock older than `lock_ms`
    /// expires — the record becomes available again, or archived once it was delivered
    /// `delivery_limit` times.
    pub(super) fn tick(&mut self, now: Instant) {
        self.now = now;
        if !self.expiring_locks {
            return;
        }
        let lock = Duration::from_millis(self.lock_ms as u64);
        let limit = self.delivery_limit;
        for log in &mut self.logs {
            for r in log.iter_mut() {
                if r.state == State::Acquired && now >= r.locked_at + lock {
                    r.state = after_delivery(r.count, limit);
                    r.owner.clear();
                    r.renewals = 0;
                }
            }
        }
    }

    pub(super) fn fail_next(&mut self, api: ApiKey, codes: &[KafkaCode]) {
        self.faults.entry(api).or_default().extend_from_slice(codes);
    }

    fn fault(&mut self, api: ApiKey) -> Option<KafkaCode> {
        let f = self.faults.get_mut(&api)?;
        (!f.is_empty()).then(|| f.remove(0))
    }

    pub(super) fn answer(&mut self, seen: &Seen) -> Vec<u8> {
        match seen.api() {
            ApiKey::ApiVersions => {
                let mut v = broker_versions();
                for k in &mut v.api_keys {
                    if k.api_key == ApiKey::ShareFetch as i16
                        || k.api_key == ApiKey::ShareAcknowledge as i16
                    {
                        k.max_version = k.max_version.min(self.share_max_version);
                    }
                }
                frame(seen, &v)
            }
            ApiKey::Metadata => frame(seen, &self.metadata()),
            ApiKey::FindCoordinator => coordinator_b1(seen),
            ApiKey::ShareGroupHeartbeat => {
                let r = self.heartbeat(seen.decode());
                frame(seen, &r)
            }
            ApiKey::ShareFetch => {
                let r = self.fetch(seen.decode());
                frame(seen, &r)
            }
            ApiKey::ShareAcknowledge => {
                let r = self.acknowledge(seen.decode());
                frame(seen, &r)
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    fn metadata(&self) -> MetadataResponse {
        MetadataResponse {
            brokers: vec![MetadataResponseBroker {
                node_id: 1,
                host: "b1".into(),
                port: 9092,
                ..Default::default()
            }],
            controller_id: 1,
            cluster_id: Some("c".into()),
            topics: vec![MetadataResponseTopic {
                name: Some(TOPIC.into()),
                topic_id: TOPIC_ID,
                partitions: (0..self.logs.len() as i32)
                    .map(|p| MetadataResponsePartition {
                        partition_index: p,
                        leader_id: 1,
                        leader_epoch: 1,
                        replica_nodes: vec![1],
                        isr_nodes: vec![1],
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn heartbeat(&mut self, req: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse {
        self.heartbeats.push(req.clone());
        if let Some(code) = self.fault(ApiKey::ShareGroupHeartbeat) {
            return ShareGroupHeartbeatResponse {
                error_code: code.0,
                ..Default::default()
            };
        }
        if req.member_epoch == -1 {
            self.members.remove(&req.member_id);
            self.sessions.remove(&req.member_id);
            return ShareGroupHeartbeatResponse {
                member_id: Some(req.member_id),
                member_epoch: -1,
                ..Default::default()
            };
        }
        let epoch = match (req.member_epoch, self.members.get(&req.member_id)) {
            (0, _) => {
                self.members.insert(req.member_id.clone(), 1);
                1
            }
            (e, Some(&known)) if e == known => known,
            _ => {
                return ShareGroupHeartbeatResponse {
                    error_code: KafkaCode::FENCED_MEMBER_EPOCH.0,
                    ..Default::default()
                }
            }
        };
        ShareGroupHeartbeatResponse {
            member_id: Some(req.member_id),
            member_epoch: epoch,
            heartbeat_interval_ms: 1000,
            assignment: Some(Assignment {
                topic_partitions: vec![TopicPartitions {
                    topic_id: TOPIC_ID,
                    partitions: self
                        .assign_only
                        .clone()
                        .unwrap_or_else(|| (0..self.logs.len() as i32).collect()),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Checks the session epoch; `Err` is the top-level error.
    fn session(&mut self, member: &str, epoch: i32) -> Result<(), KafkaCode> {
        if !self.members.contains_key(member) {
            return Err(KafkaCode::UNKNOWN_MEMBER_ID);
        }
        if epoch == 0 {
            self.sessions
                .insert(member.to_string(), (1, BTreeSet::new()));
            return Ok(());
        }
        let Some(s) = self.sessions.get_mut(member) else {
            return Err(KafkaCode::SHARE_SESSION_NOT_FOUND);
        };
        if epoch == -1 {
            self.sessions.remove(member);
            return Ok(());
        }
        if s.0 != epoch {
            return Err(KafkaCode::INVALID_SHARE_SESSION_EPOCH);
        }
        s.0 += 1;
        Ok(())
    }

    /// Applies one partition's acknowledgement batches; the partition's ack error.
    fn apply(
        &mut self,
        member: &str,
        p: i32,
        batches: &[(i64, i64, Vec<i8>)],
        renew_flag: bool,
    ) -> KafkaCode {
        let renews = batches.iter().any(|b| b.2.contains(&4));
        if renews && !renew_flag {
            return KafkaCode::INVALID_REQUEST;
        }
        let log = &mut self.logs[p as usize];
        for (first, last, types) in batches {
            for o in *first..=*last {
                let t = if types.len() == 1 {
                    types[0]
                } else {
                    types[(o - first) as usize]
                };
                let Some(r) = log.get_mut(o as usize) else {
                    return KafkaCode::INVALID_RECORD_STATE;
                };
                if r.state != State::Acquired || r.owner != member {
                    return KafkaCode::INVALID_RECORD_STATE;
                }
                if t == 4 {
                    // Renewed: still acquired by the member, the lock starts again.
                    r.renewals += 1;
                    r.locked_at = self.now;
                    continue;
                }
                r.renewals = 0;
                r.state = match t {
                    1 => State::Acknowledged,
                    2 => after_delivery(r.count, self.delivery_limit),
                    3 => State::Archived,
                    _ => State::Archived,
                };
            }
        }
        KafkaCode::NONE
    }

    fn fetch(&mut self, req: ShareFetchRequest) -> ShareFetchResponse {
        self.fetches.push(req.clone());
        let member = req.member_id.clone().unwrap_or_default();
        let top = |code: KafkaCode| ShareFetchResponse {
            error_code: code.0,
            ..Default::default()
        };
        if let Some(code) = self.fault(ApiKey::ShareFetch) {
            return top(code);
        }
        let has_acks = req
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .any(|p| !p.acknowledgement_batches.is_empty());
        if req.share_session_epoch == 0 && has_acks {
            return top(KafkaCode::INVALID_REQUEST);
        }
        if let Err(code) = self.session(&member, req.share_session_epoch) {
            return top(code);
        }
        if self.hostile {
            return hostile();
        }
        let mut ack_codes = BTreeMap::new();
        for t in &req.topics {
            for p in &t.partitions {
                if let Some(s) = self.sessions.get_mut(&member) {
                    s.1.insert(p.partition_index);
                }
                if !p.acknowledgement_batches.is_empty() {
                    let b: Vec<_> = p
                        .acknowledgement_batches
                        .iter()
                        .map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.clone()))
                        .collect();
                    let code = self.apply(&member, p.partition_index, &b, req.is_renew_ack);
                    ack_codes.insert(p.partition_index, code);
                }
            }
        }
        for t in &req.forgotten_topics_data {
            for p in &t.partitions {
                if let Some(s) = self.sessions.get_mut(&member) {
                    s.1.remove(p);
                }
            }
        }
        let parts: Vec<i32> = self
            .sessions
            .get(&member)
            .map(|s| s.1.iter().copied().collect())
            .unwrap_or_default();
        let mut budget = req.max_records.max(1) as usize;
        let mut out = Vec::new();
        for p in parts {
            let mut acquired = Vec::new();
            let log = &mut self.logs[p as usize];
            for (o, r) in log.iter_mut().enumerate() {
                if budget == 0 {
                    break;
                }
                if r.state == State::Available {
                    r.state = State::Acquired;
                    r.count += 1;
                    r.locked_at = self.now;
                    r.owner = member.clone();
                    acquired.push((o as i64, r.count));
                    budget -= 1;
                }
            }
            let ack = ack_codes.remove(&p);
            if acquired.is_empty() && ack.is_none() {
                continue;
            }
            out.push(partition_data(p, &acquired, ack.unwrap_or(KafkaCode::NONE)));
        }
        for (p, code) in ack_codes {
            out.push(partition_data(p, &[], code));
        }
        ShareFetchResponse {
            acquisition_lock_timeout_ms: self.lock_ms,
            responses: vec![ShareFetchableTopicResponse {
                topic_id: TOPIC_ID,
                partitions: out,
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn acknowledge(&mut self, req: ShareAcknowledgeRequest) -> ShareAcknowledgeResponse {
        self.acknowledges.push(req.clone());
        let member = req.member_id.clone().unwrap_or_default();
        if let Some(code) = self.fault(ApiKey::ShareAcknowledge) {
            return ShareAcknowledgeResponse {
                error_code: code.0,
                ..Default::default()
            };
        }
        if req.share_session_epoch == 0 {
            return ShareAcknowledgeResponse {
                error_code: KafkaCode::INVALID_SHARE_SESSION_EPOCH.0,
                ..Default::default()
            };
        }
        if let Err(code) = self.session(&member, req.share_session_epoch) {
            return ShareAcknowledgeResponse {
                error_code: code.0,
                ..Default::default()
            };
        }
        let mut partitions = Vec::new();
        for t in &req.topics {
            for p in &t.partitions {
                let b: Vec<_> = p
                    .acknowledgement_batches
                    .iter()
                    .map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.clone()))
                    .collect();
                let code = self.apply(&member, p.partition_index, &b, req.is_renew_ack);
                partitions.push(ack_resp::PartitionData {
                    partition_index: p.partition_index,
                    error_code: code.0,
                    ..Default::default()
                });
            }
        }
        ShareAcknowledgeResponse {
            acquisition_lock_timeout_ms: self.lock_ms,
            responses: vec![ack_resp::ShareAcknowledgeTopicResponse {
                topic_id: TOPIC_ID,
                partitions,
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    /// Every acquisition lock expires and another member acquires the records.
    pub(super) fn expire_locks(&mut self) {
        for log in &mut self.logs {
            for r in log.iter_mut().filter(|r| r.state == State::Acquired) {
                r.owner = "another member".into();
                r.count += 1;
                r.renewals = 0;
            }
        }
    }

    /// Offsets of partition `p` in `state`.
    pub(super) fn offsets_in(&self, p: i32, state: State) -> Vec<i64> {
        self.logs[p as usize]
            .iter()
            .enumerate()
            .filter(|(_, r)| r.state == state)
            .map(|(o, _)| o as i64)
            .collect()
    }

    /// Acknowledgement batches of partition `p` in every ShareFetch so far:
    /// `(fetch index, first, last, types)`.
    pub(super) fn fetch_acks(&self, p: i32) -> Vec<(usize, i64, i64, Vec<i8>)> {
        let mut out = Vec::new();
        for (i, f) in self.fetches.iter().enumerate() {
            for t in &f.topics {
                for q in t.partitions.iter().filter(|q| q.partition_index == p) {
                    for b in &q.acknowledgement_batches {
                        out.push((
                            i,
                            b.first_offset,
                            b.last_offset,
                            b.acknowledge_types.clone(),
                        ));
                    }
                }
            }
        }
        out
    }
}

/// Acquired ranges no broker should send (huge, overlapping, reversed, negative) over a
/// real batch followed by garbage.
/// Where a record goes when its delivery ends without an acknowledgement (released, or
/// its lock expired): available again, or archived after `limit` deliveries.
fn after_delivery(count: i16, limit: i16) -> State {
    if count >= limit {
        State::Archived
    } else {
        State::Available
    }
}

fn hostile() -> ShareFetchResponse {
    let mut p = partition_data(0, &[(0, 1), (1, 1), (2, 1)], KafkaCode::NONE);
    let mut bytes = p.records.to_vec();
    bytes.extend_from_slice(&[0xff; 61]);
    p.records = bytes.into();
    p.acquired_records = [
        (0, i64::MAX, 1),
        (1, 2, 3),
        (5, 2, 1),
        (-7, -1, 1),
        (i64::MIN, 0, -4),
    ]
    .iter()
    .map(
        |&(first_offset, last_offset, delivery_count)| AcquiredRecords {
            first_offset,
            last_offset,
            delivery_count,
            ..Default::default()
        },
    )
    .collect();
    ShareFetchResponse {
        responses: vec![ShareFetchableTopicResponse {
            topic_id: TOPIC_ID,
            partitions: vec![p],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// A partition's answer: one batch per contiguous acquired run.
fn partition_data(p: i32, acquired: &[(i64, i16)], ack: KafkaCode) -> PartitionData {
    let mut runs: Vec<(i64, i64, i16)> = Vec::new();
    for &(o, c) in acquired {
        match runs.last_mut() {
            Some(r) if r.1 + 1 == o && r.2 == c => r.1 = o,
            _ => runs.push((o, o, c)),
        }
    }
    let mut bytes = Vec::new();
    for &(first, last, _) in &runs {
        let opts = BatchOptions {
            base_offset: first,
            ..Default::default()
        };
        let mut b = BatchBuilder::new(opts, usize::MAX).unwrap();
        for o in first..=last {
            let v = format!("p{p}-{o}");
            let _ = b.append(1, None, Some(v.as_bytes()), &[]).unwrap();
        }
        bytes.extend_from_slice(&b.seal().unwrap().bytes);
    }
    PartitionData {
        partition_index: p,
        acknowledge_error_code: ack.0,
        records: bytes.into(),
        acquired_records: runs
            .iter()
            .map(
                |&(first_offset, last_offset, delivery_count)| AcquiredRecords {
                    first_offset,
                    last_offset,
                    delivery_count,
                    ..Default::default()
                },
            )
            .collect(),
        ..Default::default()
    }
}

fn frame<M: Message>(seen: &Seen, body: &M) -> Vec<u8> {
    response_frame(seen, body, seen.version())
}
