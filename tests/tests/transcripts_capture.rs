//! Captures the transcripts of `vectors/transcripts/` from a real broker: each scenario
//! creates its topics straight at the broker, then drives our blocking client through
//! the fault proxy in recording mode (`FaultProxy::start_recording`) and writes every
//! exchange with the real answers (`transcript_common`). `sim_fidelity.rs` replays them
//! against the simulated cluster.
//!
//! Ignored by default: it needs a fresh single-node rig (fixed topic names, ids and
//! group ids, so a second run against the same broker fails on existing topics) and
//! rewrites the committed files. Refresh:
//!
//! ```sh
//! RIG_DIR=/tmp/rig-transcripts RIG_PORT_BASE=39092 tests/broker/rig up --restart
//! RIG_DIR=/tmp/rig-transcripts cargo test -p kafka-tests --test transcripts_capture -- --ignored --nocapture
//! RIG_DIR=/tmp/rig-transcripts tests/broker/rig down
//! ```
//!
//! `TRANSCRIPTS_OUT=<dir>` writes elsewhere (to compare with the committed ones).

mod transcript_common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_blocking::{BlockingClient, Consumer, GroupConsumer, Offsets, Producer, Record};
use kafka_core::cluster::Route;
use kafka_core::config::ClientConfig;
use kafka_core::protocol::messages::api_versions::ApiVersionsResponse;
use kafka_core::protocol::messages::create_topics::request::CreatableTopic;
use kafka_core::protocol::messages::create_topics::CreateTopicsRequest;
use kafka_core::protocol::messages::fetch::request::{FetchPartition, FetchTopic};
use kafka_core::protocol::messages::fetch::FetchRequest;
use kafka_core::protocol::messages::find_coordinator::FindCoordinatorRequest;
use kafka_core::protocol::messages::init_producer_id::InitProducerIdRequest;
use kafka_core::protocol::messages::metadata::request::MetadataRequestTopic;
use kafka_core::protocol::messages::metadata::MetadataRequest;
use kafka_core::protocol::messages::produce::request::{PartitionProduceData, TopicProduceData};
use kafka_core::protocol::messages::produce::ProduceRequest;
use kafka_core::protocol::messages::response_header::ResponseHeader;
use kafka_core::protocol::{ApiKey, Decodable, Message, Uuid};
use kafka_core::record::{BatchEncoder, BatchOptions, NewRecord};
use kafka_tests::fault_proxy::{Exchange, FaultProxy};
use transcript_common::{Recorded, Setup, TopicSetup, Transcript};

const T: Duration = Duration::from_secs(30);
/// The record timestamp of hand-built batches (fixed so transcripts diff cleanly).
const STAMP: i64 = 1_767_225_600_000;

fn config(addr: &str, pairs: &[(&str, &str)]) -> ClientConfig {
    let mut all = vec![("bootstrap.servers", addr), ("client.id", "transcripts")];
    all.extend_from_slice(pairs);
    ClientConfig::from_pairs(all).expect("config")
}

/// One scenario's recording session against the rig at `addr`.
struct Capture {
    name: &'static str,
    about: &'static str,
    topics: Vec<TopicSetup>,
    proxy: FaultProxy,
}

impl Capture {
    /// Creates `topics` straight at the broker, then starts a recording proxy.
    fn start(
        addr: &str,
        name: &'static str,
        about: &'static str,
        topics: &[(&str, i32)],
    ) -> Capture {
        let direct = BlockingClient::new(config(addr, &[])).expect("client");
        let mut made = Vec::new();
        for &(topic, partitions) in topics {
            let create = CreateTopicsRequest {
                topics: vec![CreatableTopic {
                    name: topic.into(),
                    num_partitions: partitions,
                    replication_factor: 1,
                    ..Default::default()
                }],
                timeout_ms: 30_000,
                ..Default::default()
            };
            let resp = direct.call(Route::Controller, create).expect("create");
            let t = &resp.topics[0];
            assert_eq!(
                t.error_code, 0,
                "{topic}: {t:?} (capture needs a fresh rig)"
            );
            made.push(TopicSetup {
                name: topic.into(),
                id: t.topic_id.to_string(),
                partitions,
            });
        }
        // Until the broker knows every new topic's leader.
        let deadline = Instant::now() + T;
        for t in &made {
            loop {
                let m = direct
                    .call(Route::Any, metadata(&[&t.name], false))
                    .expect("metadata");
                let ready = m.topics[0].error_code == 0
                    && m.topics[0].partitions.len() as i32 == t.partitions
                    && m.topics[0].partitions.iter().all(|p| p.leader_id >= 0);
                if ready {
                    break;
                }
                assert!(Instant::now() < deadline, "{} never got leaders", t.name);
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let proxy = FaultProxy::start(&[(1, addr.to_string())]).expect("proxy");
        proxy.start_recording();
        Capture {
            name,
            about,
            topics: made,
            proxy,
        }
    }

    /// The proxy's address, for the client under recording.
    fn via(&self) -> String {
        self.proxy.bootstrap()
    }

    /// Stops recording and writes the transcript.
    fn finish(self) {
        std::thread::sleep(Duration::from_millis(200));
        let exchanges = self.proxy.take_recording();
        let transaction_version = exchanges
            .iter()
            .find_map(finalized_transaction_version)
            .expect("an ApiVersions exchange was recorded");
        let t = Transcript {
            name: self.name.into(),
            about: self.about.into(),
            setup: Setup {
                node: 1,
                transaction_version,
                topics: self.topics,
            },
            exchanges: exchanges.iter().map(recorded).collect(),
        };
        let text = transcript_common::render(&t).expect("render");
        let dir = std::env::var("TRANSCRIPTS_OUT")
            .map_or_else(|_| transcript_common::dir(), PathBuf::from);
        std::fs::create_dir_all(&dir).expect("out dir");
        let path = dir.join(format!("{}.json", self.name));
        std::fs::write(&path, text).expect("write");
        println!(
            "{}: {} exchanges -> {}",
            self.name,
            t.exchanges.len(),
            path.display()
        );
    }
}

/// The `transaction.version` an ApiVersions answer names as finalized (0 if none).
fn finalized_transaction_version(x: &Exchange) -> Option<i16> {
    if x.request.get(..2)? != (ApiKey::ApiVersions as i16).to_be_bytes() {
        return None;
    }
    let version = i16::from_be_bytes([x.request[2], x.request[3]]);
    let mut body = Bytes::copy_from_slice(x.response.as_ref()?);
    ResponseHeader::decode(&mut body, 0).ok()?;
    let r = ApiVersionsResponse::decode_from(body, version).ok()?;
    let level = r
        .finalized_features
        .iter()
        .find(|f| f.name == "transaction.version");
    Some(level.map_or(0, |f| f.max_version_level))
}

fn recorded(x: &Exchange) -> Recorded {
    let key = i16::from_be_bytes([x.request[0], x.request[1]]);
    Recorded {
        seq: x.seq,
        at_ms: x.at.as_millis() as u64,
        conn: x.conn,
        node: x.node,
        api: ApiKey::from_i16(key).expect("known api"),
        version: i16::from_be_bytes([x.request[2], x.request[3]]),
        request: x.request.clone(),
        response: x.response.clone(),
    }
}

fn metadata(topics: &[&str], auto_create: bool) -> MetadataRequest {
    MetadataRequest {
        topics: Some(
            topics
                .iter()
                .map(|t| MetadataRequestTopic {
                    name: Some((*t).into()),
                    ..Default::default()
                })
                .collect(),
        ),
        allow_auto_topic_creation: auto_create,
        ..Default::default()
    }
}

/// Writes `n` records to `topic`/`partition` through `p`, waiting for each.
fn send(p: &Producer, topic: &str, partition: i32, tag: &str, n: usize) {
    let deliveries: Vec<_> = (0..n)
        .map(|i| {
            let r = Record::new(topic, format!("{tag}-{i}")).partition(partition);
            p.send(r).expect("send")
        })
        .collect();
    for d in deliveries {
        d.wait().expect("delivered");
    }
}

/// One v2 batch of `n` records with the given producer state, as a Produce request.
fn produce(
    topic: &TopicSetup,
    partition: i32,
    pid: i64,
    epoch: i16,
    seq: i32,
    n: usize,
) -> ProduceRequest {
    let values: Vec<Vec<u8>> = (0..n)
        .map(|i| format!("raw-{seq}-{i}").into_bytes())
        .collect();
    let records = values.iter().map(|v| NewRecord {
        timestamp: STAMP,
        key: None,
        value: Some(v),
        headers: &[],
    });
    let opts = BatchOptions {
        producer_id: pid,
        producer_epoch: epoch,
        base_sequence: seq,
        ..Default::default()
    };
    let mut out = Vec::new();
    let batch = BatchEncoder::new()
        .encode(&opts, records, &mut out)
        .expect("batch");
    assert_eq!(batch.len, out.len(), "one batch");
    ProduceRequest {
        acks: -1,
        timeout_ms: 30_000,
        topic_data: vec![TopicProduceData {
            name: topic.name.clone(),
            topic_id: Uuid::parse(&topic.id).unwrap_or_default(),
            partition_data: vec![PartitionProduceData {
                index: partition,
                records: Some(out.into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Polls `c` until `want` records came (or fails after [`T`]).
fn read(c: &Consumer, want: usize) {
    let (mut got, deadline) = (0, Instant::now() + T);
    while got < want {
        assert!(Instant::now() < deadline, "read {got} of {want}");
        got += c.poll(Duration::from_millis(200)).expect("poll").len();
    }
}

#[test]
#[ignore = "needs a fresh rig and rewrites vectors/transcripts (see the module docs)"]
fn capture_transcripts() {
    let addr = kafka_tests::broker_or_skip("capture_transcripts")
        .expect("capture_transcripts needs a running rig (RIG_DIR)");
    warm_up(&addr);
    bootstrap_and_metadata(&addr);
    idempotent_produce(&addr);
    fetch_with_sessions(&addr);
    group_join_and_rebalance(&addr);
    transaction_commit_and_abort(&addr);
    common_errors(&addr);
}

/// Has the broker create its internal topics (`__consumer_offsets`,
/// `__transaction_state`) before anything is recorded: on a fresh cluster the first
/// coordinator lookups answer COORDINATOR_NOT_AVAILABLE while they are made, and the
/// simulator models a cluster that has run before.
fn warm_up(addr: &str) {
    let direct = BlockingClient::new(config(addr, &[])).expect("client");
    let deadline = Instant::now() + T;
    for key_type in [0i8, 1] {
        loop {
            let r = direct
                .call(
                    Route::Any,
                    FindCoordinatorRequest {
                        key_type,
                        coordinator_keys: vec!["warm-up".into()],
                        ..Default::default()
                    },
                )
                .expect("find coordinator");
            if r.coordinators.iter().all(|c| c.error_code == 0) {
                break;
            }
            assert!(Instant::now() < deadline, "no coordinator: {r:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    // The broker's first producer-id block comes from the controller.
    loop {
        let r = direct
            .call(
                Route::Any,
                InitProducerIdRequest {
                    transactional_id: None,
                    transaction_timeout_ms: -1,
                    producer_id: -1,
                    producer_epoch: -1,
                    ..Default::default()
                },
            )
            .expect("init producer id");
        if r.error_code == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "no producer id: {r:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn bootstrap_and_metadata(addr: &str) {
    let cap = Capture::start(
        addr,
        "bootstrap_metadata",
        "a client connects (ApiVersions), asks for two topics' metadata, then for one again",
        &[("tr-meta-a", 3), ("tr-meta-b", 1)],
    );
    let c = BlockingClient::new(config(&cap.via(), &[])).expect("client");
    c.call(Route::Any, metadata(&["tr-meta-a", "tr-meta-b"], false))
        .expect("metadata");
    c.call(Route::Any, metadata(&["tr-meta-b"], false))
        .expect("metadata");
    drop(c);
    cap.finish();
}

fn idempotent_produce(addr: &str) {
    let cap = Capture::start(
        addr,
        "idempotent_produce",
        "an idempotent producer (InitProducerId) writes to both partitions of a topic, one batch at a time",
        &[("tr-produce", 2)],
    );
    let p = Producer::new(config(
        &cap.via(),
        &[
            ("linger.ms", "0"),
            ("max.in.flight.requests.per.connection", "1"),
        ],
    ))
    .expect("producer");
    for round in 0..3 {
        send(&p, "tr-produce", 0, &format!("p0-{round}"), 2);
        send(&p, "tr-produce", 1, &format!("p1-{round}"), 3);
    }
    p.close(T).expect("close");
    cap.finish();
}

fn fetch_with_sessions(addr: &str) {
    let cap = Capture::start(
        addr,
        "fetch_sessions",
        "an idempotent producer writes records, then a consumer resets to the earliest \
         offsets (ListOffsets) and reads both partitions: a full Fetch opens a session, \
         incremental ones follow, empty ones wait max_wait_ms",
        &[("tr-fetch", 2)],
    );
    let direct = Producer::new(config(&cap.via(), &[("linger.ms", "0")])).expect("producer");
    send(&direct, "tr-fetch", 0, "f0", 5);
    send(&direct, "tr-fetch", 1, "f1", 3);
    direct.close(T).expect("close");
    let c = Consumer::new(config(
        &cap.via(),
        &[
            ("auto.offset.reset", "earliest"),
            ("fetch.max.wait.ms", "100"),
        ],
    ))
    .expect("consumer");
    c.assign([("tr-fetch", 0), ("tr-fetch", 1)])
        .expect("assign");
    read(&c, 8);
    for _ in 0..3 {
        assert!(c.poll(Duration::from_millis(150)).expect("poll").is_empty());
    }
    c.close().expect("close");
    cap.finish();
}

fn group_join_and_rebalance(addr: &str) {
    let cap = Capture::start(
        addr,
        "group_rebalance",
        "records written to four partitions, then a KIP-848 group (range assignor): member A joins and gets all four partitions, reads \
         and commits; member B joins, A gives up two, B takes them; both commit; B then A leave",
        &[("tr-group", 4)],
    );
    let direct = Producer::new(config(&cap.via(), &[("linger.ms", "0")])).expect("producer");
    for p in 0..4 {
        send(&direct, "tr-group", p, &format!("g{p}"), 2);
    }
    direct.close(T).expect("close");
    let member = |id: &str| {
        let c = GroupConsumer::new(config(
            &cap.via(),
            &[
                ("client.id", id),
                ("group.id", "tr-group-1"),
                ("group.protocol", "consumer"),
                ("group.remote.assignor", "range"),
                ("auto.offset.reset", "earliest"),
                ("enable.auto.commit", "false"),
                ("fetch.max.wait.ms", "100"),
            ],
        ))
        .expect("member");
        c.subscribe(["tr-group"]).expect("subscribe");
        c
    };
    let a = member("member-a");
    let deadline = Instant::now() + T;
    let mut read_a = 0;
    while read_a < 8 {
        assert!(Instant::now() < deadline, "A read {read_a}");
        read_a += a.poll(Duration::from_millis(100)).expect("poll a").len();
    }
    a.commit_sync(Offsets::Consumed, T).expect("commit a");
    let b = member("member-b");
    let deadline = Instant::now() + T;
    loop {
        assert!(Instant::now() < deadline, "no rebalance");
        a.poll(Duration::from_millis(50)).expect("poll a");
        b.poll(Duration::from_millis(50)).expect("poll b");
        let (na, nb) = (
            a.assignment().expect("a").len(),
            b.assignment().expect("b").len(),
        );
        if na == 2 && nb == 2 {
            break;
        }
    }
    a.commit_sync(Offsets::Consumed, T).expect("commit a");
    b.commit_sync(Offsets::Consumed, T).expect("commit b");
    b.close().expect("close b");
    a.close().expect("close a");
    cap.finish();
}

fn transaction_commit_and_abort(addr: &str) {
    let cap = Capture::start(
        addr,
        "txn_commit_abort",
        "a transactional producer commits a transaction (records on both partitions and \
         offsets for a group), then aborts one; a read_committed consumer reads the topic",
        &[("tr-txn", 2)],
    );
    let p = Producer::new(config(
        &cap.via(),
        &[("transactional.id", "tr-txn-1"), ("linger.ms", "0")],
    ))
    .expect("producer");
    p.init_transactions(T).expect("init");
    p.begin_transaction().expect("begin");
    send(&p, "tr-txn", 0, "c0", 2);
    send(&p, "tr-txn", 1, "c1", 1);
    let group = kafka_blocking::GroupMetadata {
        group_id: "tr-txn-group".into(),
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
    };
    p.send_offsets_to_transaction([("tr-txn", 0, 1i64)], &group, T)
        .expect("offsets");
    p.commit_transaction(T).expect("commit");
    p.begin_transaction().expect("begin");
    send(&p, "tr-txn", 0, "a0", 2);
    p.abort_transaction(T).expect("abort");
    p.close(T).expect("close");
    std::thread::sleep(Duration::from_millis(300));
    let c = Consumer::new(config(
        &cap.via(),
        &[
            ("auto.offset.reset", "earliest"),
            ("isolation.level", "read_committed"),
            ("fetch.max.wait.ms", "100"),
        ],
    ))
    .expect("consumer");
    c.assign([("tr-txn", 0), ("tr-txn", 1)]).expect("assign");
    read(&c, 3);
    assert!(c.poll(Duration::from_millis(300)).expect("poll").is_empty());
    c.close().expect("close");
    cap.finish();
}

fn common_errors(addr: &str) {
    let cap = Capture::start(
        addr,
        "common_errors",
        "hand-built requests: metadata and produce for a missing topic, a duplicate and \
         an out-of-order idempotent batch, a fetch out of range and with an unknown session",
        &[("tr-errors", 1)],
    );
    let c = BlockingClient::new(config(&cap.via(), &[])).expect("client");
    let topic = cap.topics[0].clone();
    let missing = TopicSetup {
        name: "tr-missing".into(),
        id: Uuid::from_bytes([7; 16]).to_string(),
        partitions: 1,
    };
    c.call(Route::Any, metadata(&["tr-missing"], false))
        .expect("metadata");
    c.call(Route::Broker(1), produce(&missing, 0, -1, -1, -1, 1))
        .expect("produce missing");
    let ids = c
        .call(
            Route::Any,
            InitProducerIdRequest {
                transactional_id: None,
                transaction_timeout_ms: -1,
                producer_id: -1,
                producer_epoch: -1,
                ..Default::default()
            },
        )
        .expect("init producer id");
    let (pid, epoch) = (ids.producer_id, ids.producer_epoch);
    let leader = Route::Broker(1);
    c.call(leader.clone(), produce(&topic, 0, pid, epoch, 0, 2))
        .expect("first");
    c.call(leader.clone(), produce(&topic, 0, pid, epoch, 2, 2))
        .expect("second");
    c.call(leader.clone(), produce(&topic, 0, pid, epoch, 0, 2))
        .expect("duplicate");
    c.call(leader.clone(), produce(&topic, 0, pid, epoch, 9, 1))
        .expect("gap");
    c.call(leader.clone(), produce(&topic, 0, pid, epoch + 1, 7, 1))
        .expect("new epoch, not 0");
    let fetch = |session_id: i32, session_epoch: i32, offset: i64| FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        min_bytes: 1,
        max_bytes: 1 << 20,
        session_id,
        session_epoch,
        topics: vec![FetchTopic {
            topic: topic.name.clone(),
            topic_id: Uuid::parse(&topic.id).unwrap_or_default(),
            partitions: vec![FetchPartition {
                partition: 0,
                current_leader_epoch: -1,
                fetch_offset: offset,
                last_fetched_epoch: -1,
                log_start_offset: -1,
                partition_max_bytes: 1 << 20,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    c.call(leader.clone(), fetch(0, -1, 100))
        .expect("out of range");
    c.call(leader.clone(), fetch(123_456, 3, 0))
        .expect("unknown session");
    c.call(leader, fetch(0, -1, 0)).expect("sessionless");
    drop(c);
    cap.finish();
}
