//! Consumer scenarios on a virtual clock against a scripted broker that keeps a log per
//! partition (plain, transactional and control batches) and a broker-side fetch session
//! cache that checks epochs the way Kafka does.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use bytes::Bytes;

use super::{ConsumeError, Consumer, ConsumerRecord};
use crate::client::{Client, ConnId, IoCommand, OpId};
use crate::config::ClientConfig;
use crate::protocol::messages::fetch::response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use crate::protocol::messages::fetch::{FetchRequest, FetchResponse};
use crate::protocol::messages::list_offsets::response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use crate::protocol::messages::list_offsets::{ListOffsetsRequest, ListOffsetsResponse};
use crate::protocol::messages::metadata::response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use crate::protocol::messages::metadata::MetadataResponse;
use crate::protocol::{ApiKey, KafkaCode, Message, Uuid};
use crate::record::{BatchBuilder, BatchOptions};
use crate::test_support::{broker_versions, origin, parse_requests, response_frame, Seen};

const TOPIC: &str = "t";
const PARTITIONS: i32 = 3;

/// One partition's log: encoded batches with their base offsets.
#[derive(Default)]
struct Log {
    batches: Vec<(i64, Bytes)>,
    next: i64,
    /// Aborted transactions (producer id, first offset).
    aborted: Vec<(i64, i64)>,
}

impl Log {
    fn append(&mut self, values: &[&str], producer: Option<(i64, bool)>) {
        let mut opts = BatchOptions {
            base_offset: self.next,
            ..Default::default()
        };
        if let Some((pid, _)) = producer {
            opts.producer_id = pid;
            opts.producer_epoch = 0;
            opts.base_sequence = 0;
            opts.transactional = true;
        }
        let mut b = BatchBuilder::new(opts, usize::MAX).unwrap();
        for v in values {
            let _ = b.append(1, None, Some(v.as_bytes()), &[]).unwrap();
        }
        let sealed = b.seal().unwrap();
        self.batches.push((self.next, sealed.bytes.freeze()));
        self.next += values.len() as i64;
    }

    /// A transaction marker for `pid` (commit or abort).
    fn marker(&mut self, pid: i64, commit: bool, first: i64) {
        let opts = BatchOptions {
            base_offset: self.next,
            producer_id: pid,
            producer_epoch: 0,
            transactional: true,
            control: true,
            ..Default::default()
        };
        let mut b = BatchBuilder::new(opts, usize::MAX).unwrap();
        let key = [0u8, 0, 0, if commit { 1 } else { 0 }];
        let value = [0u8, 0, 0, 0, 0, 5];
        let _ = b.append(1, Some(&key), Some(&value), &[]).unwrap();
        self.batches
            .push((self.next, b.seal().unwrap().bytes.freeze()));
        if !commit {
            self.aborted.push((pid, first));
        }
        self.next += 1;
    }

    /// Whole batches from the one holding `offset`, up to `max` bytes (at least one).
    fn read(&self, offset: i64, max: usize) -> Bytes {
        let mut out = Vec::new();
        for (base, bytes) in &self.batches {
            let records = i64::from(i32::from_be_bytes([
                bytes[57], bytes[58], bytes[59], bytes[60],
            ]));
            if base + records <= offset {
                continue;
            }
            if !out.is_empty() && out.len() + bytes.len() > max {
                break;
            }
            out.extend_from_slice(bytes);
        }
        Bytes::from(out)
    }
}

/// The broker's session cache entry.
struct BrokerSession {
    epoch: i32,
    partitions: BTreeMap<i32, i64>,
}

struct Harness {
    client: Client,
    now: std::time::Instant,
    consumer: OpId<Consumer>,
    logs: Vec<Log>,
    open: BTreeMap<ConnId, ()>,
    sessions: HashMap<i32, BrokerSession>,
    next_session: i32,
    /// Every Fetch seen: (session id, epoch, partitions sent, partitions forgotten).
    fetches: Vec<(i32, i32, Vec<i32>, Vec<i32>)>,
    /// Answer the next Fetch with this top-level error.
    fail_next_fetch: Option<KafkaCode>,
    records: Vec<ConsumerRecord>,
    errors: Vec<ConsumeError>,
    /// Fetches are kept unanswered (in `held`) while set.
    hold_fetches: bool,
    /// Metadata requests are kept unanswered (in `held`) while set.
    hold_metadata: bool,
    /// Answer every partition of the next ListOffsets with this error.
    refuse_list_offsets: Option<KafkaCode>,
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
            for b in 0..4 {
                let values: Vec<String> = (0..5).map(|i| format!("p{p}-{}", b * 5 + i)).collect();
                let refs: Vec<&str> = values.iter().map(String::as_str).collect();
                log.append(&refs, None);
            }
        }
        Harness {
            client,
            now,
            consumer,
            logs,
            open: BTreeMap::new(),
            sessions: HashMap::new(),
            next_session: 100,
            fetches: Vec::new(),
            fail_next_fetch: None,
            records: Vec::new(),
            errors: Vec::new(),
            hold_fetches: false,
            hold_metadata: false,
            refuse_list_offsets: None,
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

    fn serve(&mut self) {
        for _ in 0..4 {
            while let Some(cmd) = self.client.poll_io() {
                match cmd {
                    IoCommand::Connect { conn, .. } => {
                        self.open.insert(conn, ());
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
        match seen.api() {
            ApiKey::ApiVersions => self.reply(conn, seen, &broker_versions()),
            ApiKey::Metadata => {
                let m = metadata();
                self.reply(conn, seen, &m);
            }
            ApiKey::ListOffsets => {
                let req: ListOffsetsRequest = seen.decode();
                let refuse = self.refuse_list_offsets.take();
                let resp = ListOffsetsResponse {
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
                                    error_code: refuse.map_or(0, |c| c.0),
                                    offset: if refuse.is_some() {
                                        -1
                                    } else if p.timestamp == -2 {
                                        0
                                    } else {
                                        self.logs[p.partition_index as usize].next
                                    },
                                    timestamp: -1,
                                    ..Default::default()
                                })
                                .collect(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                };
                self.reply(conn, seen, &resp);
            }
            ApiKey::Fetch => {
                let req: FetchRequest = seen.decode();
                let resp = self.fetch(&req);
                self.reply(conn, seen, &resp);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    fn fetch(&mut self, req: &FetchRequest) -> FetchResponse {
        let sent: Vec<i32> = req
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.partition))
            .collect();
        let forgotten: Vec<i32> = req
            .forgotten_topics_data
            .iter()
            .flat_map(|t| t.partitions.iter().copied())
            .collect();
        self.fetches
            .push((req.session_id, req.session_epoch, sent, forgotten.clone()));
        if let Some(code) = self.fail_next_fetch.take() {
            self.sessions.remove(&req.session_id);
            return FetchResponse {
                error_code: code.0,
                ..Default::default()
            };
        }
        let mut wanted: BTreeMap<i32, i64> = BTreeMap::new();
        let session_id = if req.session_id == 0 {
            for t in &req.topics {
                for p in &t.partitions {
                    wanted.insert(p.partition, p.fetch_offset);
                }
            }
            if req.session_epoch == 0 {
                self.next_session += 1;
                self.sessions.insert(
                    self.next_session,
                    BrokerSession {
                        epoch: 1,
                        partitions: wanted.clone(),
                    },
                );
                self.next_session
            } else {
                0
            }
        } else {
            let Some(s) = self.sessions.get_mut(&req.session_id) else {
                return FetchResponse {
                    error_code: KafkaCode::FETCH_SESSION_ID_NOT_FOUND.0,
                    ..Default::default()
                };
            };
            if s.epoch != req.session_epoch {
                return FetchResponse {
                    error_code: KafkaCode::INVALID_FETCH_SESSION_EPOCH.0,
                    ..Default::default()
                };
            }
            s.epoch += 1;
            for t in &req.topics {
                for p in &t.partitions {
                    s.partitions.insert(p.partition, p.fetch_offset);
                }
            }
            for f in &forgotten {
                s.partitions.remove(f);
            }
            wanted = s.partitions.clone();
            req.session_id
        };
        let partitions = wanted
            .iter()
            .map(|(&p, &offset)| {
                let log = &self.logs[p as usize];
                if offset > log.next {
                    return PartitionData {
                        partition_index: p,
                        error_code: KafkaCode::OFFSET_OUT_OF_RANGE.0,
                        high_watermark: log.next,
                        ..Default::default()
                    };
                }
                let records = log.read(offset, 1 << 20);
                PartitionData {
                    partition_index: p,
                    high_watermark: log.next,
                    last_stable_offset: log.next,
                    aborted_transactions: Some(
                        log.aborted
                            .iter()
                            .map(|&(producer_id, first_offset)| AbortedTransaction {
                                producer_id,
                                first_offset,
                                ..Default::default()
                            })
                            .collect(),
                    ),
                    records: Some(records),
                    ..Default::default()
                }
            })
            .collect();
        FetchResponse {
            session_id,
            responses: vec![FetchableTopicResponse {
                topic: TOPIC.into(),
                topic_id: Uuid::from_bytes([4; 16]),
                partitions,
                ..Default::default()
            }],
            ..Default::default()
        }
    }
}

fn metadata() -> MetadataResponse {
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
            partitions: (0..PARTITIONS)
                .map(|p| MetadataResponsePartition {
                    partition_index: p,
                    leader_id: 1,
                    leader_epoch: 1,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn expected(p: i32, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("p{p}-{i}")).collect()
}

#[test]
fn assign_from_earliest_reads_every_partition_once_in_order() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    h.assign_all();
    h.run(Duration::from_millis(200));
    for p in 0..PARTITIONS {
        assert_eq!(h.values(p), expected(p, 20));
        let offsets: Vec<i64> = h
            .records
            .iter()
            .filter(|r| r.partition == p)
            .map(|r| r.offset)
            .collect();
        assert_eq!(offsets, (0..20).collect::<Vec<_>>());
    }
    let pos = h
        .client
        .command(h.now, h.consumer, |c, _| c.position(TOPIC, 1))
        .unwrap();
    assert_eq!(pos, Some(20));
    assert!(h.errors.is_empty(), "{:?}", h.errors);
}

#[test]
fn the_first_fetch_opens_a_session_and_later_ones_are_incremental() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    h.assign_all();
    h.run(Duration::from_millis(50));
    let (id, epoch, sent, _) = &h.fetches[0];
    assert_eq!(
        (*id, *epoch, sent.len()),
        (0, 0, 3),
        "full fetch opens the session"
    );
    let later = &h.fetches[1..];
    assert!(!later.is_empty());
    for (i, (id, epoch, sent, _)) in later.iter().enumerate() {
        assert_eq!(*id, 101, "the session is kept");
        assert_eq!(*epoch, i as i32 + 1, "epochs count up");
        assert!(sent.len() <= 3);
    }
    // Once caught up, nothing changes: the fetches name no partition at all.
    h.run(Duration::from_millis(50));
    assert!(
        h.fetches.last().unwrap().2.is_empty(),
        "{:?}",
        h.fetches.last()
    );
}

#[test]
fn a_session_error_falls_back_to_a_full_fetch_without_losing_or_repeating_records() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    // Records arrive in two steps so the error lands mid-stream.
    h.assign_all();
    h.run(Duration::from_millis(30));
    h.fail_next_fetch = Some(KafkaCode::FETCH_SESSION_ID_NOT_FOUND);
    for p in 0..PARTITIONS as usize {
        let values: Vec<String> = (20..25).map(|i| format!("p{p}-{i}")).collect();
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        h.logs[p].append(&refs, None);
    }
    h.run(Duration::from_millis(200));
    for p in 0..PARTITIONS {
        assert_eq!(h.values(p), expected(p, 25));
    }
    let full_again = h
        .fetches
        .iter()
        .skip(1)
        .any(|(id, epoch, _, _)| *id == 0 && *epoch == 0);
    assert!(full_again, "a new session was opened: {:?}", h.fetches);
}

#[test]
fn a_lost_connection_starts_a_new_session() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    h.assign_all();
    h.run(Duration::from_millis(30));
    h.reset_connections();
    for p in 0..PARTITIONS as usize {
        let values: Vec<String> = (20..25).map(|i| format!("p{p}-{i}")).collect();
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        h.logs[p].append(&refs, None);
    }
    h.run(Duration::from_millis(500));
    for p in 0..PARTITIONS {
        assert_eq!(h.values(p), expected(p, 25));
    }
    let opened = h
        .fetches
        .iter()
        .filter(|(id, epoch, _, _)| *id == 0 && *epoch == 0)
        .count();
    assert_eq!(opened, 2, "{:?}", h.fetches);
}

#[test]
fn read_committed_drops_aborted_transactions_and_control_records_never_surface() {
    for committed in [true, false] {
        let level = if committed {
            "read_committed"
        } else {
            "read_uncommitted"
        };
        let mut h = Harness::new(&[
            ("auto.offset.reset", "earliest"),
            ("isolation.level", level),
        ]);
        let log = &mut h.logs[0];
        let first = log.next;
        log.append(&["aborted-1", "aborted-2"], Some((7, true)));
        log.append(&["kept-1"], Some((8, true)));
        log.append(&["aborted-3"], Some((7, true)));
        log.marker(7, false, first);
        log.marker(8, true, first + 2);
        log.append(&["after"], None);
        h.assign_all();
        h.run(Duration::from_millis(200));
        let mut want = expected(0, 20);
        if committed {
            want.extend(["kept-1", "after"].map(String::from));
        } else {
            want.extend(
                ["aborted-1", "aborted-2", "kept-1", "aborted-3", "after"].map(String::from),
            );
        }
        assert_eq!(h.values(0), want, "{level}");
        let pos = h
            .client
            .command(h.now, h.consumer, |c, _| c.position(TOPIC, 0))
            .unwrap();
        assert_eq!(
            pos,
            Some(h.logs[0].next),
            "{level}: the position passes the markers"
        );
    }
}

#[test]
fn out_of_range_positions_reset_by_policy_or_fail_typed() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    h.assign_all();
    h.run(Duration::from_millis(30));
    h.client
        .command(h.now, h.consumer, |c, _| c.seek(TOPIC, 0, 1_000))
        .unwrap();
    h.records.clear();
    h.run(Duration::from_millis(100));
    assert_eq!(
        h.values(0),
        expected(0, 20),
        "reset to earliest and read again"
    );
    assert!(h.values(1).is_empty());
    let m = h
        .client
        .command(h.now, h.consumer, |c, _| c.metrics())
        .unwrap();
    assert_eq!(m.resets, 1);

    let mut none = Harness::new(&[("auto.offset.reset", "none")]);
    none.assign_all();
    none.run(Duration::from_millis(20));
    assert_eq!(none.errors.len(), 3);
    assert!(matches!(none.errors[0], ConsumeError::NoOffset { .. }));
    assert!(none.records.is_empty());
    none.client
        .command(none.now, none.consumer, |c, _| {
            c.seek(TOPIC, 0, 3);
            c.seek(TOPIC, 1, 1_000);
        })
        .unwrap();
    none.errors.clear();
    none.run(Duration::from_millis(100));
    assert_eq!(none.values(0), expected(0, 20)[3..].to_vec());
    assert!(
        matches!(
            none.errors[..],
            [ConsumeError::OffsetOutOfRange {
                partition: 1,
                offset: 1_000,
                ..
            }]
        ),
        "{:?}",
        none.errors
    );
}

#[test]
fn max_poll_records_and_the_buffer_budget_hold() {
    let mut h = Harness::new(&[
        ("auto.offset.reset", "earliest"),
        ("max.poll.records", "7"),
        ("queued.max.messages.kbytes", "1"),
    ]);
    h.assign_all();
    for _ in 0..20 {
        h.serve();
        let mut got = Vec::new();
        let n = h
            .client
            .command(h.now, h.consumer, |c, _| c.poll(&mut got))
            .unwrap();
        assert!(n <= 7);
        let m = h
            .client
            .command(h.now, h.consumer, |c, _| c.metrics())
            .unwrap();
        // One answer may pass the budget (like fetch.max.bytes); none is fetched after.
        assert!(
            m.buffered_bytes <= 1024 + 3 * 4 * 200,
            "{}",
            m.buffered_bytes
        );
        h.records.extend(got);
        h.now += Duration::from_millis(1);
        h.client.handle_timeout(h.now);
    }
    h.run(Duration::from_millis(100));
    for p in 0..PARTITIONS {
        assert_eq!(h.values(p), expected(p, 20));
    }
}

#[test]
fn corrupt_data_is_a_typed_error_and_the_rest_goes_on() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    // Flip a byte inside partition 1's second batch: its CRC no longer matches.
    let (base, bytes) = h.logs[1].batches[1].clone();
    let mut damaged = bytes.to_vec();
    let last = damaged.len() - 1;
    damaged[last] ^= 0xff;
    h.logs[1].batches[1] = (base, Bytes::from(damaged));
    h.assign_all();
    h.run(Duration::from_millis(200));
    assert_eq!(h.values(1), expected(1, 5), "records before the damage");
    assert!(matches!(
        h.errors[0],
        ConsumeError::Corrupt {
            partition: 1,
            offset: 5,
            ..
        }
    ));
    assert_eq!(h.values(0), expected(0, 20));
    assert_eq!(h.values(2), expected(2, 20));
}

#[test]
fn a_fetch_answered_after_a_seek_is_dropped_and_fetched_again_from_the_new_position() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    h.hold_fetches = true;
    h.assign_all();
    h.client
        .command(h.now, h.consumer, |c, _| c.seek(TOPIC, 0, 15))
        .unwrap();
    h.run(Duration::from_millis(20));
    assert_eq!(
        h.held.len(),
        1,
        "one Fetch, from offset 15 for partition 0, held"
    );
    // Rewind while that Fetch is out (a pause's rewind in the adapters does this too).
    h.client
        .command(h.now, h.consumer, |c, _| c.seek(TOPIC, 0, 5))
        .unwrap();
    h.hold_fetches = false;
    for (conn, seen) in std::mem::take(&mut h.held) {
        h.answer(conn, &seen);
    }
    h.run(Duration::from_millis(200));
    let want: Vec<String> = (5..20).map(|i| format!("p0-{i}")).collect();
    assert_eq!(
        h.values(0),
        want,
        "nothing from the stale answer, nothing skipped"
    );
    for p in 1..PARTITIONS {
        assert_eq!(h.values(p), expected(p, 20));
    }
}

#[test]
fn paused_partitions_buffered_records_wait_without_notifying_and_come_after_resume() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest"), ("max.poll.records", "1")]);
    h.assign_all();
    h.run(Duration::from_millis(5));
    assert!(!h.records.is_empty(), "chunks fetched and being handed out");
    let all = || (0..PARTITIONS).map(|p| (TOPIC, p));
    h.client
        .command(h.now, h.consumer, |c, _| c.pause(all()))
        .unwrap();
    let (pending, buffered) = h
        .client
        .command(h.now, h.consumer, |c, _| {
            (c.has_pending(), c.metrics().buffered_bytes)
        })
        .unwrap();
    assert!(buffered > 0, "the paused chunks are kept");
    assert!(
        !pending,
        "nothing to hand out while every partition is paused"
    );
    // No Notify while paused (an adapter pumping on Notify would spin otherwise).
    while h.client.poll_event().is_some() {}
    let before = h.records.len();
    h.run(Duration::from_millis(50));
    assert_eq!(h.records.len(), before);
    h.client
        .command(h.now, h.consumer, |c, _| c.resume(all()))
        .unwrap();
    h.run(Duration::from_millis(300));
    for p in 0..PARTITIONS {
        assert_eq!(
            h.values(p),
            expected(p, 20),
            "partition {p}: once, in order"
        );
    }
}

#[test]
fn caught_up_partitions_do_not_hold_the_broker_while_another_drains() {
    // A Fetch naming only partitions at their log end would wait out fetch.max.wait.ms
    // at a real broker, and the partition whose chunk is being drained could not be
    // fetched again until it returns (one Fetch in flight per broker).
    let mut h = Harness::new(&[("auto.offset.reset", "earliest"), ("max.poll.records", "2")]);
    h.assign_all();
    h.run(Duration::from_millis(100));
    for p in 0..PARTITIONS {
        assert_eq!(h.values(p), expected(p, 20), "all caught up first");
    }
    let values: Vec<String> = (20..25).map(|i| format!("p1-{i}")).collect();
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
    h.logs[1].append(&refs, None);

    // The next Fetch brings partition 1's new records; they wait for the application.
    let before = h.fetches.len();
    let mut waited = 0;
    for _ in 0..50 {
        h.serve();
        h.now += Duration::from_millis(1);
        h.client.handle_timeout(h.now);
        while h.client.poll_event().is_some() {}
        waited += 1;
    }
    let pending = h
        .client
        .command(h.now, h.consumer, |c, _| c.metrics().buffered_bytes)
        .unwrap();
    assert!(pending > 0, "partition 1's chunk waits");
    let sent = h.fetches.len() - before;
    assert!(
        sent <= 2,
        "{sent} Fetches in {waited} ms with only caught-up partitions to fetch: {:?}",
        &h.fetches[before..]
    );

    // Handing the chunk out lets the next Fetch go, and every record arrives once.
    h.run(Duration::from_millis(50));
    assert!(h.fetches.len() - before > sent, "fetching goes on");
    assert_eq!(h.values(1), expected(1, 25));
    assert_eq!(h.values(0), expected(0, 20));
}

#[test]
fn a_reset_waiting_for_an_unknown_leader_does_not_wake_itself_in_a_busy_loop() {
    // As the simulation found it: a partition's ListOffsets is refused with a leader
    // error, which forgets its leader and asks for metadata; the answer is slow to come.
    // Once the retry time has passed the partition can only wait for metadata, and the
    // consumer must not keep asking to be woken at that past instant.
    let mut h = Harness::new(&[
        ("auto.offset.reset", "earliest"),
        ("retry.backoff.ms", "50"),
    ]);
    h.assign_all();
    h.run(Duration::from_millis(100));
    for p in 0..PARTITIONS {
        assert_eq!(h.values(p), expected(p, 20));
    }
    h.records.clear();
    h.refuse_list_offsets = Some(KafkaCode::NOT_LEADER_OR_FOLLOWER);
    h.hold_metadata = true;
    h.client
        .command(h.now, h.consumer, |c, _| c.seek_to_beginning([(TOPIC, 0)]))
        .unwrap();
    h.run(Duration::from_millis(5));
    assert!(
        h.refuse_list_offsets.is_none(),
        "the ListOffsets was refused"
    );
    assert!(
        h.held.iter().any(|(_, s)| s.api() == ApiKey::Metadata),
        "metadata asked for, and held"
    );
    // Well past the retry backoff, with the leader still unknown.
    for _ in 0..500 {
        h.step();
        let next = h.client.poll_timeout();
        assert!(
            next.is_none_or(|t| t > h.now),
            "woken again at {:?} after handle_timeout({:?}): a busy loop",
            next.map(|t| t - origin()),
            h.now - origin()
        );
    }
    assert!(
        h.values(0).is_empty(),
        "no position while the leader is unknown"
    );
    // Metadata names the leader again: the reset completes and partition 0 is read again.
    h.hold_metadata = false;
    for (conn, seen) in std::mem::take(&mut h.held) {
        h.answer(conn, &seen);
    }
    h.run(Duration::from_millis(300));
    assert_eq!(h.values(0), expected(0, 20));
    assert!(h.values(1).is_empty() && h.values(2).is_empty());
    assert!(h.errors.is_empty(), "{:?}", h.errors);
}
