//! Consumer scenarios on a virtual clock against scripted brokers (nodes 1-3, racks
//! r1-r3) that keep a log per partition (plain, transactional and control batches,
//! written under leader epochs), a fetch session cache that checks epochs the way Kafka
//! does, leader epoch fencing, OffsetForLeaderEpoch, follower reads and a preferred read
//! replica. Scenarios by theme: `fetching`, `positions`, `epochs` (KIP-320), `replicas`
//! (KIP-392), `lookups` (offsets by edge and time), `hostile` (answers a broker should not send); the brokers' answers are in `broker`, the logs in `log`.

mod broker;
mod epochs;
mod fetching;
mod hostile;
mod log;
mod lookups;
mod positions;
mod replicas;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use self::broker::BrokerSession;
use self::log::Log;
use super::{ConsumeError, Consumer, ConsumerRecord};
use crate::client::{Client, ConnId, IoCommand, OpId};
use crate::config::ClientConfig;
use crate::protocol::messages::fetch::FetchRequest;
use crate::protocol::messages::list_offsets::ListOffsetsRequest;
use crate::protocol::messages::metadata::response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use crate::protocol::messages::metadata::MetadataResponse;
use crate::protocol::messages::offset_for_leader_epoch::OffsetForLeaderEpochRequest;
use crate::protocol::{ApiKey, KafkaCode, Message, Uuid};
use crate::test_support::{broker_versions, origin, parse_requests, response_frame, Seen};

const TOPIC: &str = "t";
const PARTITIONS: i32 = 3;
const NODES: i32 = 3;

/// One Fetch as a broker saw it: the node, `rack_id` and, per partition sent,
/// `(partition, fetch offset, current leader epoch, last fetched epoch)`.
#[derive(Debug, Clone)]
struct SeenFetch {
    node: i32,
    rack: String,
    parts: Vec<(i32, i64, i32, i32)>,
}

struct Harness {
    client: Client,
    now: std::time::Instant,
    consumer: OpId<Consumer>,
    logs: Vec<Log>,
    /// Each partition's leader node (its epoch is its log's).
    leaders: Vec<i32>,
    /// Open connections and the node each reaches.
    open: BTreeMap<ConnId, i32>,
    sessions: HashMap<i32, BrokerSession>,
    next_session: i32,
    /// Every Fetch seen: (session id, epoch, partitions sent, partitions forgotten).
    fetches: Vec<(i32, i32, Vec<i32>, Vec<i32>)>,
    /// Every Fetch seen, with epochs, node and rack.
    seen_fetches: Vec<SeenFetch>,
    /// Every OffsetForLeaderEpoch partition seen: (node, partition, leader epoch,
    /// current leader epoch).
    validations: Vec<(i32, i32, i32, i32)>,
    /// Every ListOffsets partition seen: (partition, current leader epoch).
    list_offsets_epochs: Vec<(i32, i32)>,
    /// Every ListOffsets partition seen: (partition, timestamp asked for).
    list_offsets_times: Vec<(i32, i64)>,
    /// The isolation level of every ListOffsets seen.
    list_offsets_isolation: Vec<i8>,
    /// The answer to a ListOffsets by timestamp per partition (none: offset -1, no
    /// record that recent).
    offsets_by_time: HashMap<i32, i64>,
    /// Answer the next Fetch with this top-level error.
    fail_next_fetch: Option<KafkaCode>,
    /// One-shot partition errors of Fetch answers: (node, partition, code).
    inject: Vec<(i32, i32, KafkaCode)>,
    /// Followers serve fetches (KIP-392); otherwise only leaders do.
    follower_reads: bool,
    /// The replica a leader's selector names for a consumer with a rack.
    prefer: Option<i32>,
    records: Vec<ConsumerRecord>,
    errors: Vec<ConsumeError>,
    /// Fetches are kept unanswered (in `held`) while set.
    hold_fetches: bool,
    /// Metadata requests are kept unanswered (in `held`) while set.
    hold_metadata: bool,
    /// Fetch answers end with half of a batch (cut at a size limit).
    partial_tails: bool,
    /// Answer every partition of the next ListOffsets with this error.
    refuse_list_offsets: Option<KafkaCode>,
    /// Answer every partition of the next OffsetForLeaderEpoch with this error.
    refuse_validation: Option<KafkaCode>,
    /// The brokers offer OffsetForLeaderEpoch up to this version (an old broker: v2).
    offset_for_leader_epoch_max: Option<i16>,
    held: Vec<(ConnId, Seen)>,
}

impl Harness {
    fn new(extra: &[(&str, &str)]) -> Self {
        let mut pairs = vec![("bootstrap.servers", "b1:9092"), ("client.id", "c")];
        pairs.extend_from_slice(extra);
        let config = ClientConfig::from_pairs(pairs).unwrap();
        let mut client = Client::new(config.clone(), [3; 32]).unwrap();
        let now = origin();
        let consumer = client.start_op(now, Consumer::new(&config));
        let mut logs: Vec<Log> = (0..PARTITIONS).map(|_| Log::default()).collect();
        for (p, log) in logs.iter_mut().enumerate() {
            let values: Vec<String> = (0..20).map(|i| format!("p{p}-{i}")).collect();
            log.append_values(&values);
        }
        Harness {
            client,
            now,
            consumer,
            logs,
            leaders: vec![1; PARTITIONS as usize],
            open: BTreeMap::new(),
            sessions: HashMap::new(),
            next_session: 100,
            fetches: Vec::new(),
            seen_fetches: Vec::new(),
            validations: Vec::new(),
            list_offsets_epochs: Vec::new(),
            list_offsets_times: Vec::new(),
            list_offsets_isolation: Vec::new(),
            offsets_by_time: HashMap::new(),
            fail_next_fetch: None,
            inject: Vec::new(),
            follower_reads: true,
            prefer: None,
            records: Vec::new(),
            errors: Vec::new(),
            hold_fetches: false,
            hold_metadata: false,
            partial_tails: false,
            refuse_list_offsets: None,
            refuse_validation: None,
            offset_for_leader_epoch_max: None,
            held: Vec::new(),
        }
    }

    fn assign_all(&mut self) {
        self.client
            .command(self.now, self.consumer, |c, cx| {
                c.assign(cx, (0..PARTITIONS).map(|p| (TOPIC, p)))
            })
            .unwrap();
    }

    fn run(&mut self, d: Duration) {
        let end = self.now + d;
        while self.now < end {
            self.step();
        }
    }

    /// One round: serve what was written, poll the consumer, advance the clock 1 ms.
    fn step(&mut self) {
        self.serve();
        let (mut got, mut errs) = (Vec::new(), Vec::new());
        self.client.command(self.now, self.consumer, |c, _| {
            c.poll(&mut got);
            while let Some(e) = c.take_error() {
                errs.push(e);
            }
        });
        self.records.extend(got);
        self.errors.extend(errs);
        while self.client.poll_event().is_some() {}
        self.now += Duration::from_millis(1);
        self.client.handle_timeout(self.now);
    }

    fn values(&self, partition: i32) -> Vec<String> {
        self.records
            .iter()
            .filter(|r| r.partition == partition)
            .map(|r| String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap())
            .collect()
    }

    fn reset_connections(&mut self) {
        for conn in std::mem::take(&mut self.open).into_keys() {
            self.client.handle_closed(self.now, conn, "reset");
        }
        self.sessions.clear();
    }

    /// A new leader for partition `p`: `node` at `epoch`, taking over at the log end.
    /// The consumer learns of it from its next metadata answer.
    fn elect(&mut self, p: i32, node: i32, epoch: i32) {
        self.leaders[p as usize] = node;
        self.logs[p as usize].new_epoch(epoch);
    }

    /// Makes the consumer refresh metadata now (as a leader error would).
    fn refresh_metadata(&mut self) {
        self.client
            .command(self.now, self.consumer, |_, cx| {
                cx.request_metadata([TOPIC.to_string()])
            })
            .unwrap();
    }

    fn consumer<T>(&mut self, f: impl FnOnce(&mut Consumer) -> T) -> T {
        self.client
            .command(self.now, self.consumer, |c, _| f(c))
            .unwrap()
    }

    fn serve(&mut self) {
        for _ in 0..4 {
            while let Some(cmd) = self.client.poll_io() {
                match cmd {
                    IoCommand::Connect { conn, host, .. } => {
                        let node = host.trim_start_matches('b').parse().unwrap_or(1);
                        self.open.insert(conn, node);
                        self.client.handle_connected(self.now, conn);
                    }
                    IoCommand::Close { conn } => {
                        self.open.remove(&conn);
                    }
                }
            }
            let conns: Vec<ConnId> = self.open.keys().copied().collect();
            let mut any = false;
            for conn in conns {
                let mut out = Vec::new();
                self.client.poll_transmit(self.now, conn, &mut out);
                for seen in parse_requests(out) {
                    any = true;
                    let hold = match seen.api() {
                        ApiKey::Fetch => self.hold_fetches,
                        ApiKey::Metadata => self.hold_metadata,
                        _ => false,
                    };
                    if hold {
                        self.held.push((conn, seen));
                    } else {
                        self.answer(conn, &seen);
                    }
                }
            }
            if !any {
                break;
            }
        }
    }

    fn reply<M: Message>(&mut self, conn: ConnId, to: &Seen, body: &M) {
        let frame = response_frame(to, body, to.version());
        self.client.handle_received(self.now, conn, &frame);
    }

    fn answer(&mut self, conn: ConnId, seen: &Seen) {
        let node = self.open.get(&conn).copied().unwrap_or(1);
        match seen.api() {
            ApiKey::ApiVersions => {
                let mut versions = broker_versions();
                if let Some(max) = self.offset_for_leader_epoch_max {
                    for k in &mut versions.api_keys {
                        if k.api_key == ApiKey::OffsetForLeaderEpoch as i16 {
                            k.max_version = max;
                        }
                    }
                }
                self.reply(conn, seen, &versions);
            }
            ApiKey::Metadata => {
                let m = self.metadata();
                self.reply(conn, seen, &m);
            }
            ApiKey::ListOffsets => {
                let req: ListOffsetsRequest = seen.decode();
                let resp = self.list_offsets(node, &req);
                self.reply(conn, seen, &resp);
            }
            ApiKey::OffsetForLeaderEpoch => {
                let req: OffsetForLeaderEpochRequest = seen.decode();
                let resp = self.offset_for_leader_epoch(node, &req);
                self.reply(conn, seen, &resp);
            }
            ApiKey::Fetch => {
                let req: FetchRequest = seen.decode();
                let resp = self.fetch(node, &req);
                self.reply(conn, seen, &resp);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    fn metadata(&self) -> MetadataResponse {
        MetadataResponse {
            brokers: (1..=NODES)
                .map(|n| MetadataResponseBroker {
                    node_id: n,
                    host: format!("b{n}"),
                    port: 9092,
                    rack: Some(format!("r{n}")),
                    ..Default::default()
                })
                .collect(),
            controller_id: 1,
            cluster_id: Some("c".into()),
            topics: vec![MetadataResponseTopic {
                name: Some(TOPIC.into()),
                topic_id: Uuid::from_bytes([4; 16]),
                partitions: (0..PARTITIONS)
                    .map(|p| MetadataResponsePartition {
                        partition_index: p,
                        leader_id: self.leaders[p as usize],
                        leader_epoch: self.logs[p as usize].epoch,
                        replica_nodes: (1..=NODES).collect(),
                        isr_nodes: (1..=NODES).collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }
}

fn expected(p: i32, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("p{p}-{i}")).collect()
}
