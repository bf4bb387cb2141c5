//! A scripted two-broker cluster for producer scenarios, on a virtual clock: it keeps
//! a log per partition, checks producer ids, epochs and sequences the way a broker does
//! (duplicates of the last five batches answered DUPLICATE_SEQUENCE_NUMBER, gaps
//! OUT_OF_ORDER_SEQUENCE_NUMBER, older epochs INVALID_PRODUCER_EPOCH), refuses batches
//! over `max.message.bytes` (MESSAGE_TOO_LARGE) when given one, and injects faults on
//! request.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::client::{Client, ConnId, Event, IoCommand, OpId};
use crate::config::ClientConfig;
use crate::producer::{Appended, Producer, ProducerRecord, Report, SendError};
use crate::protocol::messages::init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
use crate::protocol::messages::metadata::response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use crate::protocol::messages::metadata::MetadataResponse;
use crate::protocol::messages::produce::response::{
    PartitionProduceResponse, TopicProduceResponse,
};
use crate::protocol::messages::produce::{ProduceRequest, ProduceResponse};
use crate::protocol::{ApiKey, KafkaCode, Message, Uuid};
use crate::record::{DecodeOptions, RecordBatch};
use crate::test_support::{origin, parse_requests, response_frame, Seen};

use super::txn_broker::TxnBroker;

pub(super) const TOPIC: &str = "t";
pub(super) const PARTITIONS: i32 = 6;

/// A producer's state on one partition, as the broker keeps it.
#[derive(Debug, Default, Clone)]
struct ProducerEntry {
    epoch: i16,
    /// `(first seq, last seq, base offset)` of the last five batches.
    recent: VecDeque<(i32, i32, i64)>,
}

/// One partition: its leader, its log (record values) and producer states.
#[derive(Debug, Default)]
pub(super) struct PartLog {
    pub(super) leader: i32,
    pub(super) leader_epoch: i32,
    pub(super) values: Vec<Bytes>,
    /// Every batch appended: `(producer id, epoch, base sequence, records, bytes)`.
    pub(super) batches: Vec<(i64, i16, i32, i32, usize)>,
    /// The transaction of each record in `values` (`None`: not transactional).
    pub(super) txn_of: Vec<Option<u64>>,
    producers: HashMap<i64, ProducerEntry>,
}

/// Faults to inject, consumed as they fire.
#[derive(Debug, Default)]
pub(super) struct Faults {
    /// Produce requests to append and then lose the answer of (the connection resets).
    pub(super) lose_answers: usize,
    /// Produce requests to drop unread (the connection resets before the broker reads).
    pub(super) reset_before: usize,
    /// Partition answers to fail with these codes instead of appending, in order.
    pub(super) codes: VecDeque<i16>,
    /// Keep Produce requests unanswered until cleared.
    pub(super) hold: bool,
    /// Keep Produce requests to this broker alone unanswered until cleared (the others
    /// are answered).
    pub(super) hold_node: Option<i32>,
    /// Name the new leader in NOT_LEADER_OR_FOLLOWER answers (KIP-951).
    pub hints: bool,
    /// Metadata answers to give with the topic unknown (UNKNOWN_TOPIC_OR_PARTITION), as
    /// right after it was created.
    pub(super) unknown_topic: usize,
    /// Answer UNKNOWN_PRODUCER_ID to a producer with no state here that does not start
    /// at sequence 0 (brokers before KIP-360) instead of accepting it (Kafka 4.x).
    pub(super) unknown_producer_id: bool,
    /// Changes every Produce answer before it is sent (bad-input scenarios).
    pub(super) mangle: Option<fn(&mut ProduceResponse)>,
    /// The topic's `max.message.bytes`: larger batches are answered MESSAGE_TOO_LARGE.
    pub(super) max_message_bytes: Option<usize>,
}

/// The cluster and a client running one producer.
pub(super) struct Cluster {
    pub(super) client: Client,
    pub(super) now: Instant,
    pub(super) producer: OpId<Producer>,
    pub(super) parts: Vec<PartLog>,
    pub(super) faults: Faults,
    open: BTreeMap<ConnId, i32>,
    connecting: Vec<(ConnId, String)>,
    held: VecDeque<(ConnId, Seen)>,
    pub(super) next_pid: i64,
    pids: HashMap<i64, i16>,
    /// Every report taken, in order.
    pub(super) reports: Vec<Report>,
    /// What each appended record holds, by batch id and index.
    pub(super) sent: HashMap<(u64, u32), Bytes>,
    pub(super) produce_requests: usize,
    pub(super) metadata_requests: usize,
    /// `Event::Notify`s of the producer seen so far.
    pub(super) notifies: usize,
    pub(super) topic_id: Uuid,
    /// The transaction coordinator (`txn_broker.rs`).
    pub(super) txn: TxnBroker,
}

impl Cluster {
    /// A client with these extra settings, its producer, and a cluster where broker 1
    /// leads every partition of `t`.
    pub(super) fn new(extra: &[(&str, &str)]) -> Self {
        let mut pairs = vec![("bootstrap.servers", "b1:9092"), ("client.id", "p")];
        pairs.extend_from_slice(extra);
        let config = ClientConfig::from_pairs(pairs).expect("config");
        let mut client = Client::new(config.clone(), [9; 32]).expect("client");
        let now = origin();
        let producer = client.start_op(now, Producer::new(&config).expect("producer"));
        let parts = (0..PARTITIONS)
            .map(|_| PartLog {
                leader: 1,
                leader_epoch: 1,
                ..Default::default()
            })
            .collect();
        Cluster {
            client,
            now,
            producer,
            parts,
            faults: Faults::default(),
            open: BTreeMap::new(),
            connecting: Vec::new(),
            held: VecDeque::new(),
            next_pid: 1000,
            pids: HashMap::new(),
            reports: Vec::new(),
            sent: HashMap::new(),
            produce_requests: 0,
            metadata_requests: 0,
            notifies: 0,
            topic_id: Uuid::from_bytes([7; 16]),
            txn: TxnBroker::default(),
        }
    }

    /// Sends a record to `partition` with `value`; `Err` if the producer refused it.
    pub(super) fn send(&mut self, partition: i32, value: &[u8]) -> Result<Appended, SendError> {
        let rec = ProducerRecord::new(TOPIC, value)
            .partition(partition)
            .timestamp(1);
        let out = self
            .client
            .command(self.now, self.producer, |p, cx| p.send(cx, &rec))
            .expect("producer running");
        if let Ok(a) = &out {
            self.sent
                .insert((a.batch.0, a.index), Bytes::copy_from_slice(value));
        }
        out
    }

    /// Sends, first letting the cluster answer until metadata is known.
    pub(super) fn send_ok(&mut self, partition: i32, value: &[u8]) -> Appended {
        for _ in 0..100 {
            match self.send(partition, value) {
                Ok(a) => return a,
                Err(SendError::WouldBlock(_)) => self.step(Duration::from_millis(1)),
                Err(e) => panic!("send refused: {e}"),
            }
        }
        panic!("send kept blocking")
    }

    /// Runs the cluster for `d` of virtual time in 1 ms steps.
    pub(super) fn run(&mut self, d: Duration) {
        let end = self.now + d;
        while self.now < end {
            self.step(Duration::from_millis(1));
        }
    }

    /// Runs until `done` holds or `limit` passes; returns whether it held.
    pub(super) fn run_until(
        &mut self,
        limit: Duration,
        mut done: impl FnMut(&mut Cluster) -> bool,
    ) -> bool {
        let end = self.now + limit;
        while self.now < end {
            if done(self) {
                return true;
            }
            self.step(Duration::from_millis(1));
        }
        done(self)
    }

    /// One round: serve what was written, take reports, then advance the clock.
    pub(super) fn step(&mut self, d: Duration) {
        for _ in 0..8 {
            if !self.serve() {
                break;
            }
        }
        self.take_reports();
        self.now += d;
        self.client.handle_timeout(self.now);
        self.take_reports();
    }

    fn take_reports(&mut self) {
        while let Some(ev) = self.client.poll_event() {
            if let Event::Notify(r) = ev {
                assert!(self.producer == r);
                self.notifies += 1;
            }
        }
        let mut got = Vec::new();
        self.client.command(self.now, self.producer, |p, _| {
            while let Some(r) = p.take_report() {
                got.push(r);
            }
        });
        self.reports.extend(got);
    }

    fn io(&mut self) {
        while let Some(cmd) = self.client.poll_io() {
            match cmd {
                IoCommand::Connect { conn, host, .. } => self.connecting.push((conn, host)),
                IoCommand::Close { conn } => {
                    self.open.remove(&conn);
                }
            }
        }
        for (conn, host) in std::mem::take(&mut self.connecting) {
            let node = if host == "b2" { 2 } else { 1 };
            self.open.insert(conn, node);
            self.client.handle_connected(self.now, conn);
        }
    }

    /// Answers everything written; returns whether anything was.
    fn serve(&mut self) -> bool {
        self.io();
        let mut any = false;
        let conns: Vec<(ConnId, i32)> = self.open.iter().map(|(c, n)| (*c, *n)).collect();
        for (conn, node) in conns {
            let mut out = Vec::new();
            self.client.poll_transmit(self.now, conn, &mut out);
            for seen in parse_requests(out) {
                any = true;
                let held = match self.faults.hold_node {
                    Some(n) => n == node,
                    None => self.faults.hold || !self.held.is_empty(),
                };
                if seen.api() == ApiKey::Produce && held {
                    self.held.push_back((conn, seen));
                    continue;
                }
                self.answer(conn, node, seen);
            }
        }
        if !self.faults.hold && self.faults.hold_node.is_none() {
            while let Some((conn, seen)) = self.held.pop_front() {
                if let Some(&node) = self.open.get(&conn) {
                    self.answer(conn, node, seen);
                    any = true;
                }
            }
        }
        any
    }

    pub(super) fn reply_to<M: Message>(&mut self, conn: ConnId, to: &Seen, body: &M) {
        let frame = response_frame(to, body, to.version());
        self.client.handle_received(self.now, conn, &frame);
    }

    /// Resets a connection (the client hears it closed).
    pub(super) fn reset(&mut self, conn: ConnId) {
        if self.open.remove(&conn).is_some() {
            self.client
                .handle_closed(self.now, conn, "connection reset by the scripted broker");
        }
    }

    /// Resets every connection to `node`.
    pub(super) fn reset_node(&mut self, node: i32) {
        let conns: Vec<ConnId> = self
            .open
            .iter()
            .filter(|(_, n)| **n == node)
            .map(|(c, _)| *c)
            .collect();
        for c in conns {
            self.reset(c);
        }
    }

    fn answer(&mut self, conn: ConnId, node: i32, seen: Seen) {
        if self.answer_txn(conn, node, &seen) {
            return;
        }
        match seen.api() {
            ApiKey::ApiVersions => {
                let v = self.txn.api_versions();
                self.reply_to(conn, &seen, &v);
            }
            ApiKey::Metadata => {
                self.metadata_requests += 1;
                let mut m = self.metadata();
                if self.faults.unknown_topic > 0 {
                    self.faults.unknown_topic -= 1;
                    for t in &mut m.topics {
                        t.error_code = KafkaCode::UNKNOWN_TOPIC_OR_PARTITION.0;
                        t.partitions.clear();
                    }
                }
                self.reply_to(conn, &seen, &m);
            }
            ApiKey::InitProducerId => {
                let req: InitProducerIdRequest = seen.decode();
                let (pid, epoch) =
                    if req.producer_id >= 0 && self.pids.contains_key(&req.producer_id) {
                        let e = self.pids[&req.producer_id] + 1;
                        (req.producer_id, e)
                    } else {
                        self.next_pid += 1;
                        (self.next_pid, 0)
                    };
                self.pids.insert(pid, epoch);
                let resp = InitProducerIdResponse {
                    producer_id: pid,
                    producer_epoch: epoch,
                    ..Default::default()
                };
                self.reply_to(conn, &seen, &resp);
            }
            ApiKey::Produce => {
                self.produce_requests += 1;
                if self.faults.reset_before > 0 {
                    self.faults.reset_before -= 1;
                    self.reset(conn);
                    return;
                }
                let req: ProduceRequest = seen.decode();
                self.txn.seen.push((ApiKey::Produce, seen.version()));
                let mut resp = self.produce(node, &req, seen.version());
                if let Some(mangle) = self.faults.mangle {
                    mangle(&mut resp);
                }
                if req.acks == 0 {
                    return;
                }
                if self.faults.lose_answers > 0 {
                    self.faults.lose_answers -= 1;
                    self.reset(conn);
                    return;
                }
                self.reply_to(conn, &seen, &resp);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    fn metadata(&self) -> MetadataResponse {
        MetadataResponse {
            brokers: [(1, "b1"), (2, "b2")]
                .into_iter()
                .map(|(id, host)| MetadataResponseBroker {
                    node_id: id,
                    host: host.into(),
                    port: 9092,
                    ..Default::default()
                })
                .collect(),
            controller_id: 1,
            cluster_id: Some("c".into()),
            topics: vec![MetadataResponseTopic {
                name: Some(TOPIC.into()),
                topic_id: self.topic_id,
                partitions: self
                    .parts
                    .iter()
                    .enumerate()
                    .map(|(i, p)| MetadataResponsePartition {
                        partition_index: i as i32,
                        leader_id: p.leader,
                        leader_epoch: p.leader_epoch,
                        replica_nodes: vec![1, 2],
                        isr_nodes: vec![1, 2],
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn produce(&mut self, node: i32, req: &ProduceRequest, version: i16) -> ProduceResponse {
        let mut responses = Vec::new();
        for t in &req.topic_data {
            let mut partition_responses = Vec::new();
            for pd in &t.partition_data {
                let bytes = pd.records.clone().unwrap_or_default();
                let r = self.append(node, pd.index, bytes, version);
                partition_responses.push(r);
            }
            responses.push(TopicProduceResponse {
                name: t.name.clone(),
                topic_id: t.topic_id,
                partition_responses,
                ..Default::default()
            });
        }
        let node_endpoints = if self.faults.hints {
            vec![crate::protocol::messages::produce::response::NodeEndpoint {
                node_id: 2,
                host: "b2".into(),
                port: 9092,
                ..Default::default()
            }]
        } else {
            Vec::new()
        };
        ProduceResponse {
            responses,
            node_endpoints,
            ..Default::default()
        }
    }

    /// Appends one partition's batch as a broker would; the answer.
    fn append(
        &mut self,
        node: i32,
        index: i32,
        bytes: Bytes,
        version: i16,
    ) -> PartitionProduceResponse {
        let answer = |code: KafkaCode, base_offset: i64| PartitionProduceResponse {
            index,
            error_code: code.0,
            base_offset,
            log_append_time_ms: -1,
            log_start_offset: 0,
            ..Default::default()
        };
        let Some(part) = self.parts.get_mut(index as usize) else {
            return answer(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION, -1);
        };
        if part.leader != node {
            let mut a = answer(KafkaCode::NOT_LEADER_OR_FOLLOWER, -1);
            if self.faults.hints {
                a.current_leader.leader_id = part.leader;
                a.current_leader.leader_epoch = part.leader_epoch;
            }
            return a;
        }
        if let Some(code) = self.faults.codes.pop_front() {
            return answer(KafkaCode(code), -1);
        }
        if self
            .faults
            .max_message_bytes
            .is_some_and(|max| bytes.len() > max)
        {
            // Checked before the producer state, as a broker validates the batch first.
            return answer(KafkaCode::MESSAGE_TOO_LARGE, -1);
        }
        let (batch, _) = RecordBatch::decode(&bytes, &DecodeOptions::default()).expect("batch");
        let h = *batch.header();
        let count = h.records_count;
        let last_seq = h.base_sequence.wrapping_add(count - 1);
        let mut tag = None;
        if h.producer_id >= 0 {
            let known = part.producers.contains_key(&h.producer_id);
            if !known && h.base_sequence != 0 && self.faults.unknown_producer_id {
                // Brokers before KIP-360 refuse a producer whose state they lost.
                return answer(KafkaCode::UNKNOWN_PRODUCER_ID, -1);
            }
            let entry = part
                .producers
                .entry(h.producer_id)
                .or_insert(ProducerEntry {
                    epoch: h.producer_epoch,
                    recent: VecDeque::new(),
                });
            if h.producer_epoch < entry.epoch {
                return answer(KafkaCode::INVALID_PRODUCER_EPOCH, -1);
            }
            if h.producer_epoch > entry.epoch {
                entry.epoch = h.producer_epoch;
                entry.recent.clear();
            }
            if let Some(&(_, _, base)) = entry
                .recent
                .iter()
                .find(|(f, l, _)| *f == h.base_sequence && *l == last_seq)
            {
                return answer(KafkaCode::DUPLICATE_SEQUENCE_NUMBER, base);
            }
            if batch.is_transactional() {
                match self
                    .txn
                    .tag(h.producer_id, h.producer_epoch, index, version)
                {
                    Ok(serial) => tag = Some(serial),
                    Err(code) => return answer(code, -1),
                }
            }
            let expected = match entry.recent.back() {
                Some((_, l, _)) => l.wrapping_add(1),
                // As Kafka 4.x: a producer with no state here may start at any
                // sequence (its state may have expired with the log).
                None if !known => h.base_sequence,
                None => 0,
            };
            if h.base_sequence != expected {
                return answer(KafkaCode::OUT_OF_ORDER_SEQUENCE_NUMBER, -1);
            }
            let base = part.values.len() as i64;
            entry.recent.push_back((h.base_sequence, last_seq, base));
            if entry.recent.len() > 5 {
                entry.recent.pop_front();
            }
        }
        let base = part.values.len() as i64;
        part.batches.push((
            h.producer_id,
            h.producer_epoch,
            h.base_sequence,
            count,
            bytes.len(),
        ));
        for r in batch.records().expect("records") {
            let r = r.expect("record");
            part.values.push(r.value.clone().unwrap_or_default());
            part.txn_of.push(tag);
        }
        answer(KafkaCode::NONE, base)
    }

    /// Forgets every producer's state (as log retention would).
    pub(super) fn forget_producers(&mut self) {
        for p in &mut self.parts {
            p.producers.clear();
        }
    }

    /// Moves the leadership of `partition` to `node` (a newer leader epoch).
    pub(super) fn move_leader(&mut self, partition: i32, node: i32) {
        let p = &mut self.parts[partition as usize];
        p.leader = node;
        p.leader_epoch += 1;
    }

    /// Checks the guarantees over everything so far: no record is reported twice,
    /// every record reported delivered is in its partition's log exactly once at the
    /// offset reported, no value appears twice in any log, and each partition's log
    /// keeps send order (values are big-endian counters). Returns the number of records
    /// reported delivered.
    pub(super) fn check_guarantees(&self) -> usize {
        let mut delivered = 0;
        let mut seen_records = std::collections::HashSet::new();
        for r in &self.reports {
            for i in r.indexes() {
                assert!(
                    seen_records.insert((r.batch, i)),
                    "record {i} of batch {:?} reported twice",
                    r.batch
                );
            }
            let Ok(d) = &r.outcome else { continue };
            let log = &self.parts[r.partition as usize].values;
            for i in r.indexes() {
                let want = &self.sent[&(r.batch.0, i)];
                let at = d.offset(i);
                assert!(at >= 0, "delivered without an offset");
                assert_eq!(&log[at as usize], want, "record at the reported offset");
                delivered += 1;
            }
        }
        for (p, part) in self.parts.iter().enumerate() {
            let mut last: Option<u64> = None;
            let mut uniq = std::collections::HashSet::new();
            for v in &part.values {
                assert!(uniq.insert(v.clone()), "partition {p}: duplicate {v:?}");
                let n = u64::from_be_bytes(v[..8].try_into().expect("counter value"));
                assert!(
                    last.is_none_or(|l| l < n),
                    "partition {p}: order broken at {n}"
                );
                last = Some(n);
            }
        }
        delivered
    }

    /// Checks that the broker appended each producer's batches of every partition with
    /// contiguous sequences (per producer id and epoch, from 0): nothing was skipped or
    /// written twice under a sequence.
    pub(super) fn check_sequences(&self) {
        for (p, part) in self.parts.iter().enumerate() {
            let mut next: HashMap<(i64, i16), i32> = HashMap::new();
            for &(pid, epoch, base, count, _) in &part.batches {
                if pid < 0 {
                    continue;
                }
                let want = next.entry((pid, epoch)).or_insert(0);
                assert_eq!(base, *want, "partition {p}: sequence of pid {pid}/{epoch}");
                *want = base.wrapping_add(count);
            }
        }
    }

    /// The number of records in every report, delivered or not.
    pub(super) fn reported_records(&self) -> usize {
        self.reports.iter().map(|r| r.records as usize).sum()
    }
}
