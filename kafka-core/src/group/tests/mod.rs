//! Group consumer scenarios on a virtual clock: several clients, each with its own
//! connections, against one scripted broker that is leader of every partition and the
//! group coordinator (`coordinator.rs`).

mod chaos;
mod coordinator;
mod coordinator848;
mod custom_assignor;
mod errors;
mod kip848;
mod pattern;
mod scenarios;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::{GroupConsumer, GroupEvent};
use crate::admin::groups::scripted::coordinator_b1;
use crate::client::{Client, ConnId, IoCommand, OpId};
use crate::config::ClientConfig;
use crate::consumer::ConsumerRecord;
use crate::protocol::messages::fetch::response::{FetchableTopicResponse, PartitionData};
use crate::protocol::messages::fetch::{FetchRequest, FetchResponse};
use crate::protocol::messages::heartbeat::HeartbeatResponse;
use crate::protocol::messages::join_group::JoinGroupResponse;
use crate::protocol::messages::list_offsets::response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use crate::protocol::messages::list_offsets::{ListOffsetsRequest, ListOffsetsResponse};
use crate::protocol::messages::metadata::response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use crate::protocol::messages::metadata::MetadataResponse;
use crate::protocol::messages::offset_commit::OffsetCommitRequest;
use crate::protocol::messages::sync_group::SyncGroupResponse;
use crate::protocol::{ApiKey, KafkaCode, Message, Uuid};
use crate::record::{BatchBuilder, BatchOptions};
use crate::test_support::{broker_versions, origin, parse_requests, response_frame, Seen};
use coordinator::{Answer, Coordinator};
use coordinator848::Coordinator848;

pub(super) const TOPIC: &str = "t";

/// One consumer process: its client, machine and what it got.
pub(super) struct Node {
    pub(super) client: Client,
    pub(super) id: OpId<GroupConsumer>,
    open: BTreeSet<ConnId>,
    pub(super) records: Vec<ConsumerRecord>,
    pub(super) events: Vec<GroupEvent>,
    /// Still polling (a stopped node simulates an application that hangs).
    pub(super) polling: bool,
    /// Killed: no I/O at all.
    pub(super) dead: bool,
    pub(super) done: bool,
    /// `Event::Notify` of its machine so far.
    pub(super) notifies: usize,
}

pub(super) struct World {
    pub(super) now: Instant,
    pub(super) nodes: Vec<Node>,
    pub(super) coordinator: Coordinator,
    pub(super) coordinator848: Coordinator848,
    /// Per partition: batches (base offset, bytes) and the next offset.
    logs: Vec<(Vec<(i64, Bytes)>, i64)>,
    partitions: i32,
    held: BTreeMap<usize, (usize, ConnId, Seen)>,
    next_ticket: usize,
    /// Every (node, partition, offset) handed out, in order.
    pub(super) log: Vec<(usize, i32, i64)>,
    /// Errors to answer the next requests of an API with (taken in order).
    pub(super) faults: BTreeMap<ApiKey, Vec<KafkaCode>>,
    /// Topics beside `TOPIC` (empty logs): name, id, partitions, internal.
    pub(super) extra: Vec<(String, Uuid, i32, bool)>,
    /// Topics each Metadata request named (`None`: all topics).
    pub(super) metadata_requests: Vec<Option<Vec<String>>>,
    /// Topic ids each Metadata request asked for (by id: v12+), when it did.
    pub(super) metadata_id_requests: Vec<Vec<Uuid>>,
    /// FindCoordinator requests answered.
    pub(super) coordinator_lookups: usize,
    /// Seeded answer delays and coordinator failovers (`chaos.rs`); `None`: answers at once.
    pub(super) net: Option<chaos::Net>,
    /// Heartbeats of these nodes are read and never answered (a coordinator that stopped
    /// answering them, its connection left open).
    pub(super) unanswered_heartbeats: BTreeSet<usize>,
    /// Every OffsetCommit request: the node, and the generation or member epoch it
    /// carried.
    pub(super) commit_requests: Vec<(usize, i32)>,
}

impl World {
    pub(super) fn new(partitions: i32, records_per_partition: usize) -> Self {
        let mut logs = Vec::new();
        for p in 0..partitions {
            let mut batches = Vec::new();
            let mut next = 0i64;
            for chunk in 0..records_per_partition.div_ceil(10) {
                let n = 10.min(records_per_partition - chunk * 10);
                let opts = BatchOptions {
                    base_offset: next,
                    ..Default::default()
                };
                let mut b = BatchBuilder::new(opts, usize::MAX).unwrap();
                for i in 0..n {
                    let v = format!("p{p}-{}", next + i as i64);
                    let _ = b.append(1, None, Some(v.as_bytes()), &[]).unwrap();
                }
                batches.push((next, b.seal().unwrap().bytes.freeze()));
                next += n as i64;
            }
            logs.push((batches, next));
        }
        World {
            now: origin(),
            nodes: Vec::new(),
            coordinator: Coordinator::new(),
            coordinator848: Coordinator848::new(Uuid::from_bytes([4; 16]), partitions),
            logs,
            partitions,
            held: BTreeMap::new(),
            next_ticket: 0,
            log: Vec::new(),
            faults: BTreeMap::new(),
            extra: Vec::new(),
            metadata_requests: Vec::new(),
            metadata_id_requests: Vec::new(),
            coordinator_lookups: 0,
            net: None,
            unanswered_heartbeats: BTreeSet::new(),
            commit_requests: Vec::new(),
        }
    }

    /// Answers the next requests of `api` with these errors, one each.
    pub(super) fn fail_next(&mut self, api: ApiKey, codes: &[KafkaCode]) {
        self.faults.entry(api).or_default().extend_from_slice(codes);
    }

    /// Grows the topic to `partitions` (new partitions are empty).
    pub(super) fn grow(&mut self, partitions: i32) {
        while self.partitions < partitions {
            self.logs.push((Vec::new(), 0));
            self.partitions += 1;
        }
    }

    /// Starts a consumer with these settings (on top of the test defaults) subscribed
    /// to the topic; returns its index.
    pub(super) fn add(&mut self, extra: &[(&str, &str)]) -> usize {
        self.add_with(extra, |g, cx| g.subscribe(cx, [TOPIC]))
    }

    /// Starts a consumer with these settings, subscribed by `subscribe`.
    pub(super) fn add_with(
        &mut self,
        extra: &[(&str, &str)],
        subscribe: impl FnOnce(&mut GroupConsumer, &mut crate::client::OpContext<'_>),
    ) -> usize {
        self.add_config(Self::config(extra), subscribe)
    }

    /// The settings every test consumer has, plus `extra`.
    pub(super) fn config(extra: &[(&str, &str)]) -> ClientConfig {
        let mut pairs = vec![
            ("bootstrap.servers", "b1:9092"),
            ("client.id", "c"),
            ("group.id", "g"),
            ("auto.offset.reset", "earliest"),
            ("session.timeout.ms", "10000"),
            ("heartbeat.interval.ms", "1000"),
            ("max.poll.interval.ms", "20000"),
            ("auto.commit.interval.ms", "1000"),
            ("fetch.max.wait.ms", "100"),
        ];
        pairs.extend_from_slice(extra);
        ClientConfig::from_pairs(pairs).unwrap()
    }

    /// Starts a consumer with `config`, subscribed by `subscribe`.
    pub(super) fn add_config(
        &mut self,
        config: ClientConfig,
        subscribe: impl FnOnce(&mut GroupConsumer, &mut crate::client::OpContext<'_>),
    ) -> usize {
        let seed = [self.nodes.len() as u8 + 1; 32];
        let mut client = Client::new(config.clone(), seed).unwrap();
        let id = client.start_op(self.now, GroupConsumer::new(&config).unwrap());
        client.command(self.now, id, subscribe).unwrap();
        self.nodes.push(Node {
            client,
            id,
            open: BTreeSet::new(),
            records: Vec::new(),
            events: Vec::new(),
            polling: true,
            dead: false,
            done: false,
            notifies: 0,
        });
        self.nodes.len() - 1
    }

    /// Runs every node for `d` of virtual time in 1 ms steps.
    pub(super) fn run(&mut self, d: Duration) {
        let end = self.now + d;
        while self.now < end {
            self.step();
        }
    }

    /// Runs until `cond` holds (or panics after `limit`).
    pub(super) fn run_until(&mut self, limit: Duration, mut cond: impl FnMut(&World) -> bool) {
        let end = self.now + limit;
        while !cond(self) {
            assert!(self.now < end, "condition not met within {limit:?}");
            self.step();
        }
    }

    fn step(&mut self) {
        self.serve();
        for i in 0..self.nodes.len() {
            let n = &mut self.nodes[i];
            if n.dead || n.done {
                continue;
            }
            if n.polling {
                let (mut got, mut evs) = (Vec::new(), Vec::new());
                let _ = n.client.command(self.now, n.id, |g, cx| {
                    while let Some(e) = g.take_event() {
                        evs.push(e);
                    }
                    g.poll(cx, &mut got);
                    while let Some(e) = g.take_event() {
                        evs.push(e);
                    }
                });
                for r in &got {
                    self.log.push((i, r.partition, r.offset));
                }
                n.records.extend(got);
                n.events.extend(evs);
            }
            while let Some(e) = n.client.poll_event() {
                match e {
                    crate::client::Event::OperationDone(op) if n.id == op => n.done = true,
                    crate::client::Event::Notify(op) if n.id == op => n.notifies += 1,
                    _ => {}
                }
            }
        }
        self.now += Duration::from_millis(1);
        self.coordinator.expire(self.now);
        self.coordinator848.expire(self.now);
        for n in &mut self.nodes {
            if !n.dead {
                n.client.handle_timeout(self.now);
            }
        }
    }

    /// Kills a node: its sockets vanish, it never speaks again.
    pub(super) fn kill(&mut self, i: usize) {
        self.nodes[i].dead = true;
        self.held.retain(|_, (n, _, _)| *n != i);
    }

    fn serve(&mut self) {
        self.deliver_due();
        for _ in 0..4 {
            let mut any = false;
            for i in 0..self.nodes.len() {
                if self.nodes[i].dead {
                    continue;
                }
                while let Some(cmd) = self.nodes[i].client.poll_io() {
                    match cmd {
                        IoCommand::Connect { conn, .. } => {
                            self.nodes[i].open.insert(conn);
                            self.nodes[i].client.handle_connected(self.now, conn);
                        }
                        IoCommand::Close { conn } => {
                            self.nodes[i].open.remove(&conn);
                        }
                    }
                }
                let conns: Vec<ConnId> = self.nodes[i].open.iter().copied().collect();
                for conn in conns {
                    let mut out = Vec::new();
                    self.nodes[i].client.poll_transmit(self.now, conn, &mut out);
                    for seen in parse_requests(out) {
                        any = true;
                        self.answer(i, conn, seen);
                    }
                }
            }
            for (t, answer) in std::mem::take(&mut self.coordinator.released) {
                let Some((i, conn, seen)) = self.held.remove(&t) else {
                    continue;
                };
                match answer {
                    Answer::Join(r) => self.reply(i, conn, &seen, &r),
                    Answer::Sync(r) => self.reply(i, conn, &seen, &r),
                }
                any = true;
            }
            if !any {
                break;
            }
        }
    }

    fn reply<M: Message>(&mut self, i: usize, conn: ConnId, to: &Seen, body: &M) {
        let frame = response_frame(to, body, to.version());
        self.send_frame(i, conn, frame);
    }

    fn answer(&mut self, i: usize, conn: ConnId, seen: Seen) {
        let now = self.now;
        if self.answer_while_moving(i, conn, &seen) {
            return;
        }
        match seen.api() {
            ApiKey::ApiVersions => self.reply(i, conn, &seen, &broker_versions()),
            ApiKey::Metadata => {
                let req: crate::protocol::messages::metadata::MetadataRequest = seen.decode();
                let ids: Vec<Uuid> = req
                    .topics
                    .iter()
                    .flatten()
                    .filter(|t| t.name.is_none())
                    .map(|t| t.topic_id)
                    .collect();
                if !ids.is_empty() {
                    let m = self.metadata_by_id(&ids);
                    self.metadata_id_requests.push(ids);
                    self.reply(i, conn, &seen, &m);
                    return;
                }
                let named = req
                    .topics
                    .map(|ts| ts.into_iter().filter_map(|t| t.name).collect::<Vec<_>>());
                let m = self.metadata(named.as_deref());
                self.metadata_requests.push(named);
                self.reply(i, conn, &seen, &m);
            }
            ApiKey::FindCoordinator => {
                self.coordinator_lookups += 1;
                let frame = coordinator_b1(&seen);
                self.send_frame(i, conn, frame);
            }
            api @ (ApiKey::JoinGroup | ApiKey::SyncGroup | ApiKey::Heartbeat)
                if self.faults.get(&api).is_some_and(|f| !f.is_empty()) =>
            {
                let code = self.faults.get_mut(&api).expect("fault").remove(0);
                match api {
                    ApiKey::JoinGroup => {
                        let r = JoinGroupResponse {
                            error_code: code.0,
                            generation_id: -1,
                            ..Default::default()
                        };
                        self.reply(i, conn, &seen, &r);
                    }
                    ApiKey::SyncGroup => {
                        let r = SyncGroupResponse {
                            error_code: code.0,
                            ..Default::default()
                        };
                        self.reply(i, conn, &seen, &r);
                    }
                    _ => {
                        let r = HeartbeatResponse {
                            error_code: code.0,
                            ..Default::default()
                        };
                        self.reply(i, conn, &seen, &r);
                    }
                }
            }
            ApiKey::JoinGroup => {
                let t = self.ticket();
                let req = seen.decode();
                match self.coordinator.join(now, t, &req) {
                    Some(r) => self.reply(i, conn, &seen, &r),
                    None => {
                        self.held.insert(t, (i, conn, seen));
                    }
                }
            }
            ApiKey::SyncGroup => {
                let t = self.ticket();
                let req = seen.decode();
                match self.coordinator.sync(now, t, &req) {
                    Some(r) => self.reply(i, conn, &seen, &r),
                    None => {
                        self.held.insert(t, (i, conn, seen));
                    }
                }
            }
            ApiKey::Heartbeat if self.unanswered_heartbeats.contains(&i) => {}
            ApiKey::Heartbeat => {
                let r = self.coordinator.heartbeat(now, &seen.decode());
                self.reply(i, conn, &seen, &r);
            }
            ApiKey::LeaveGroup => {
                let r = self.coordinator.leave(now, &seen.decode());
                self.reply(i, conn, &seen, &r);
            }
            ApiKey::OffsetCommit => {
                let req: OffsetCommitRequest = seen.decode();
                self.commit_requests
                    .push((i, req.generation_id_or_member_epoch));
                let fault = self
                    .faults
                    .get_mut(&ApiKey::OffsetCommit)
                    .filter(|f| !f.is_empty())
                    .map(|f| f.remove(0));
                let r = match fault {
                    Some(code) => self.coordinator.respond_commit(&req, code),
                    None if seen.version() >= 9 => {
                        let code = self.coordinator848.check_commit(&req);
                        self.coordinator.respond_commit(&req, code)
                    }
                    None => self.coordinator.commit(now, &req),
                };
                self.reply(i, conn, &seen, &r);
            }
            ApiKey::ConsumerGroupHeartbeat
                if self
                    .faults
                    .get(&ApiKey::ConsumerGroupHeartbeat)
                    .is_some_and(|f| !f.is_empty()) =>
            {
                let faults = self.faults.get_mut(&ApiKey::ConsumerGroupHeartbeat);
                let code = faults.expect("fault").remove(0);
                let r = crate::protocol::messages::consumer_group_heartbeat::ConsumerGroupHeartbeatResponse {
                    error_code: code.0,
                    ..Default::default()
                };
                self.reply(i, conn, &seen, &r);
            }
            ApiKey::ConsumerGroupHeartbeat => {
                let r = self.coordinator848.heartbeat(now, &seen.decode());
                self.reply(i, conn, &seen, &r);
            }
            ApiKey::OffsetFetch
                if self
                    .faults
                    .get(&ApiKey::OffsetFetch)
                    .is_some_and(|f| !f.is_empty()) =>
            {
                let code = self
                    .faults
                    .get_mut(&ApiKey::OffsetFetch)
                    .expect("fault")
                    .remove(0);
                let r = crate::protocol::messages::offset_fetch::OffsetFetchResponse {
                    error_code: code.0,
                    ..Default::default()
                };
                self.reply(i, conn, &seen, &r);
            }
            ApiKey::OffsetFetch => {
                let r = self.coordinator.fetch_offsets(&seen.decode());
                self.reply(i, conn, &seen, &r);
            }
            ApiKey::ListOffsets => {
                let req: ListOffsetsRequest = seen.decode();
                let r = self.list_offsets(&req);
                self.reply(i, conn, &seen, &r);
            }
            ApiKey::Fetch => {
                let req: FetchRequest = seen.decode();
                let r = self.fetch(&req);
                self.reply(i, conn, &seen, &r);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    fn ticket(&mut self) -> usize {
        self.next_ticket += 1;
        self.next_ticket
    }

    /// `TOPIC` always; the other topics when all are asked for or they are named.
    fn metadata(&self, named: Option<&[String]>) -> MetadataResponse {
        let mut m = self.metadata_of_topic();
        for (name, id, partitions, internal) in &self.extra {
            if named.is_some_and(|n| !n.contains(name)) {
                continue;
            }
            let mut t = m.topics[0].clone();
            t.name = Some(name.clone());
            t.topic_id = *id;
            t.is_internal = *internal;
            t.partitions.truncate(0);
            t.partitions
                .extend((0..*partitions).map(|p| MetadataResponsePartition {
                    partition_index: p,
                    leader_id: 1,
                    leader_epoch: 1,
                    replica_nodes: vec![1],
                    isr_nodes: vec![1],
                    ..Default::default()
                }));
            m.topics.push(t);
        }
        m
    }

    /// A request by topic id (as Kafka answers it: those topics only, an unknown id as
    /// UNKNOWN_TOPIC_ID without a name).
    fn metadata_by_id(&self, ids: &[Uuid]) -> MetadataResponse {
        let mut all = self.metadata(None);
        let mut topics = Vec::new();
        for id in ids {
            match all.topics.iter().find(|t| t.topic_id == *id) {
                Some(t) => topics.push(t.clone()),
                None => topics.push(MetadataResponseTopic {
                    error_code: KafkaCode::UNKNOWN_TOPIC_ID.0,
                    topic_id: *id,
                    ..Default::default()
                }),
            }
        }
        all.topics = topics;
        all
    }

    fn metadata_of_topic(&self) -> MetadataResponse {
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
                topic_id: Uuid::from_bytes([4; 16]),
                partitions: (0..self.partitions)
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

    fn list_offsets(&self, req: &ListOffsetsRequest) -> ListOffsetsResponse {
        ListOffsetsResponse {
            topics: req
                .topics
                .iter()
                .map(|t| ListOffsetsTopicResponse {
                    name: t.name.clone(),
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| ListOffsetsPartitionResponse {
                            partition_index: p.partition_index,
                            offset: if p.timestamp == -2 || t.name != TOPIC {
                                0
                            } else {
                                self.logs[p.partition_index as usize].1
                            },
                            timestamp: -1,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    /// Sessionless fetches (session id 0 in every answer): whole batches from the one
    /// holding the offset.
    fn fetch(&self, req: &FetchRequest) -> FetchResponse {
        let mut responses: Vec<FetchableTopicResponse> = req
            .topics
            .iter()
            .filter(|t| t.topic != TOPIC && t.topic_id != Uuid::from_bytes([4; 16]))
            .map(|t| FetchableTopicResponse {
                topic: t.topic.clone(),
                topic_id: t.topic_id,
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| PartitionData {
                        partition_index: p.partition,
                        records: Some(Bytes::new()),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        let partitions = req
            .topics
            .iter()
            .filter(|t| t.topic == TOPIC || t.topic_id == Uuid::from_bytes([4; 16]))
            .flat_map(|t| t.partitions.iter())
            .map(|p| {
                let (batches, next) = &self.logs[p.partition as usize];
                let mut out = Vec::new();
                for (base, bytes) in batches {
                    let n = i64::from(i32::from_be_bytes([
                        bytes[57], bytes[58], bytes[59], bytes[60],
                    ]));
                    if base + n > p.fetch_offset && out.len() < 4096 {
                        out.extend_from_slice(bytes);
                    }
                }
                PartitionData {
                    partition_index: p.partition,
                    high_watermark: *next,
                    last_stable_offset: *next,
                    records: Some(Bytes::from(out)),
                    ..Default::default()
                }
            })
            .collect();
        responses.push(FetchableTopicResponse {
            topic: TOPIC.into(),
            topic_id: Uuid::from_bytes([4; 16]),
            partitions,
            ..Default::default()
        });
        FetchResponse {
            session_id: 0,
            responses,
            ..Default::default()
        }
    }

    /// Partitions each live node owns now.
    /// Partitions a node owns, as its events tell (a command would need `&mut`).
    pub(super) fn owned(&self, i: usize) -> Vec<i32> {
        let mut owned: BTreeSet<i32> = BTreeSet::new();
        for e in &self.nodes[i].events {
            match e {
                GroupEvent::Assigned(ps) => owned.extend(ps.iter().map(|(_, p)| *p)),
                GroupEvent::Revoked(ps) | GroupEvent::Lost(ps) => {
                    for (_, p) in ps {
                        owned.remove(p);
                    }
                }
                _ => {}
            }
        }
        owned.into_iter().collect()
    }

    /// Panics if two live nodes own one partition now.
    pub(super) fn assert_disjoint(&self) {
        let mut seen = BTreeMap::new();
        for i in 0..self.nodes.len() {
            if self.nodes[i].dead || self.nodes[i].done {
                continue;
            }
            for p in self.owned(i) {
                if let Some(other) = seen.insert(p, i) {
                    panic!("partition {p} owned by nodes {other} and {i}");
                }
            }
        }
    }

    /// Whether every partition's committed offset is its log end.
    pub(super) fn committed_all(&self) -> bool {
        (0..self.partitions)
            .all(|p| self.coordinator.offsets.get(&(TOPIC.into(), p)) == Some(&self.log_end(p)))
    }

    /// The topic's partition count.
    pub(super) fn partitions(&self) -> i32 {
        self.partitions
    }

    /// Records per partition.
    pub(super) fn log_end(&self, p: i32) -> i64 {
        self.logs[p as usize].1
    }
}
