//! Shared by the real-broker producer suites: producing counted, keyed records through
//! the core's producer on the blocking adapter's driver thread, reading a topic back with
//! raw Fetch requests from each partition's leader, and checking exactly-once order.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_blocking::BlockingClient;
use kafka_core::client::OpId;
use kafka_core::cluster::Route;
use kafka_core::config::ClientConfig;
use kafka_core::producer::{Producer, ProducerRecord, Report, SendError};
use kafka_core::protocol::messages::create_topics::request::CreatableTopic;
use kafka_core::protocol::messages::create_topics::CreateTopicsRequest;
use kafka_core::protocol::messages::fetch::request::{FetchPartition, FetchTopic};
use kafka_core::protocol::messages::fetch::FetchRequest;
use kafka_core::protocol::{ApiKey, KafkaCode};
use kafka_core::record::{Batch, Batches, DecodeOptions};
use kafka_tests::RawClient;

pub(crate) const PARTITIONS: i32 = 6;
const KEYS: u64 = 1000;

static BATCH_SIZE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    std::env::var("PRODUCER_BATCH_SIZE").unwrap_or_else(|_| "262144".into())
});

pub(crate) fn records() -> u64 {
    std::env::var("PRODUCER_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

/// The value of record `n`: its counter (big-endian) and 92 bytes of padding.
pub(crate) fn value(n: u64) -> [u8; 100] {
    let mut v = [b'v'; 100];
    v[..8].copy_from_slice(&n.to_be_bytes());
    v
}

pub(crate) fn key(n: u64) -> String {
    format!("key-{}", n % KEYS)
}

/// What the producer side saw: `(batch, index) → counter`, and the reports.
#[derive(Default)]
pub(crate) struct Sent {
    pub(crate) at: HashMap<(u64, u32), u64>,
    pub(crate) reports: Vec<Report>,
}

pub(crate) fn create_topic(client: &BlockingClient, topic: &str, replication: i16) {
    let create = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: topic.into(),
            num_partitions: PARTITIONS,
            replication_factor: replication,
            ..Default::default()
        }],
        timeout_ms: 30_000,
        ..Default::default()
    };
    let resp = client
        .call(Route::Controller, create)
        .expect("create topic");
    assert_eq!(KafkaCode(resp.topics[0].error_code), KafkaCode::NONE);
}

/// Produces `n` records to a new topic (`replication` copies); `midway` runs once half
/// of them are handed over. Returns what was sent and reported, and the client.
pub(crate) fn produce(
    addr: &str,
    topic: &str,
    codec: &str,
    n: u64,
    replication: i16,
    mut midway: impl FnMut(&BlockingClient),
) -> (Sent, BlockingClient) {
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", addr),
        ("compression.type", codec),
        ("linger.ms", "5"),
        ("batch.size", BATCH_SIZE.as_str()),
    ])
    .expect("config");
    let client = BlockingClient::new(config.clone()).expect("client");
    create_topic(&client, topic, replication);
    let producer = Producer::new(&config).expect("producer");
    assert!(producer.is_idempotent(), "idempotence is on by default");
    let id: OpId<Producer> = client
        .with_core(move |c| c.start_op(Instant::now(), producer))
        .expect("start");
    let sent = Arc::new(Mutex::new(Sent::default()));
    let start = Instant::now();
    let mut next = 0u64;
    let mut half_done = false;
    while next < n {
        if !half_done && next >= n / 2 {
            half_done = true;
            midway(&client);
        }
        let (from, topic, sent2) = (next, topic.to_string(), sent.clone());
        // Hands the driver up to 20,000 records per command; it stops at WouldBlock.
        let taken = client
            .with_core(move |c| {
                c.command(Instant::now(), id, |p, cx| {
                    let mut s = sent2.lock().unwrap();
                    let mut i = from;
                    while i < n && i < from + 20_000 {
                        let (k, v) = (key(i), value(i));
                        let rec = ProducerRecord::new(&topic, &v).key(k.as_bytes());
                        match p.send(cx, &rec) {
                            Ok(a) => {
                                s.at.insert((a.batch.0, a.index), i);
                                i += 1;
                            }
                            Err(SendError::WouldBlock(_)) => break,
                            Err(e) => panic!("send {i}: {e}"),
                        }
                    }
                    while let Some(r) = p.take_report() {
                        s.reports.push(r);
                    }
                    i - from
                })
            })
            .expect("driver")
            .expect("producer running");
        next += taken;
        if taken == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "producing stalled at {next}"
        );
    }
    loop {
        let sent2 = sent.clone();
        let left = client
            .with_core(move |c| {
                c.command(Instant::now(), id, |p, _| {
                    let mut s = sent2.lock().unwrap();
                    while let Some(r) = p.take_report() {
                        s.reports.push(r);
                    }
                    p.batches_outstanding()
                })
            })
            .expect("driver")
            .expect("producer running");
        if left == 0 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "{left} batches unreported"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let secs = start.elapsed().as_secs_f64();
    eprintln!("{codec}: {n} records produced and acknowledged in {secs:.1}s");
    let metrics = client
        .with_core(move |c| c.command(Instant::now(), id, |p, _| p.metrics()))
        .expect("driver")
        .expect("running");
    assert_eq!(metrics.records_delivered, n, "{metrics:?}");
    assert_eq!(metrics.buffer_used, 0);
    eprintln!("{codec}: {metrics:?}");
    let sent = Arc::try_unwrap(sent)
        .ok()
        .expect("no other handle")
        .into_inner()
        .unwrap();
    (sent, client)
}

/// The `host:port` of each partition's leader, from the client's metadata.
pub(crate) fn leaders(client: &BlockingClient, topic: &str) -> Vec<String> {
    let t = topic.to_string();
    client
        .with_core(move |c| {
            let m = c.metadata();
            (0..PARTITIONS)
                .map(|p| {
                    let node = m.leader(&t, p).expect("leader known");
                    let b = m.broker(node).expect("broker known");
                    format!("{}:{}", b.host, b.port)
                })
                .collect()
        })
        .expect("driver")
}

/// Every record (offset, key, value) of each partition, in offset order from 0, read
/// from the partition leaders at `leaders[p]`.
pub(crate) fn read_back(
    leaders: &[String],
    topic: &str,
    expected: u64,
) -> Vec<Vec<(i64, Bytes, Bytes)>> {
    let mut conns: HashMap<String, RawClient> = HashMap::new();
    for addr in leaders {
        if !conns.contains_key(addr) {
            conns.insert(addr.clone(), RawClient::connect(addr).expect("connect"));
        }
    }
    let mut logs: Vec<Vec<(i64, Bytes, Bytes)>> = vec![Vec::new(); PARTITIONS as usize];
    let mut offsets = vec![0i64; PARTITIONS as usize];
    let mut high = vec![-1i64; PARTITIONS as usize];
    let start = Instant::now();
    loop {
        let total: usize = logs.iter().map(Vec::len).sum();
        let done = (0..PARTITIONS as usize).all(|p| high[p] >= 0 && offsets[p] >= high[p]);
        if done && total as u64 >= expected {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(180),
            "read back stalled at {total}"
        );
        for (addr, raw) in conns.iter_mut() {
            let version = raw.negotiated(ApiKey::Fetch).expect("fetch").min(12);
            let mine: Vec<i32> = (0..PARTITIONS)
                .filter(|&p| leaders[p as usize] == *addr)
                .collect();
            let request = FetchRequest {
                replica_id: -1,
                max_wait_ms: 100,
                min_bytes: 1,
                max_bytes: 50 << 20,
                isolation_level: 0,
                session_epoch: -1,
                topics: vec![FetchTopic {
                    topic: topic.into(),
                    partitions: mine
                        .iter()
                        .map(|&p| FetchPartition {
                            partition: p,
                            current_leader_epoch: -1,
                            fetch_offset: offsets[p as usize],
                            last_fetched_epoch: -1,
                            log_start_offset: -1,
                            partition_max_bytes: 8 << 20,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }],
                ..Default::default()
            };
            let resp = raw.call(version, &request).expect("fetch");
            for t in resp.responses {
                for pd in t.partitions {
                    assert_eq!(KafkaCode(pd.error_code), KafkaCode::NONE);
                    let p = pd.partition_index as usize;
                    high[p] = pd.high_watermark;
                    let data = pd.records.unwrap_or_default();
                    for batch in Batches::new(data, DecodeOptions::default()) {
                        let Ok(Batch::V2(batch)) = batch else {
                            break; // a partial batch at the end of the answer
                        };
                        assert!(batch.header().has_producer_id(), "idempotent batches");
                        for r in batch.records().expect("records") {
                            let r = r.expect("record");
                            if r.offset < offsets[p] {
                                continue;
                            }
                            logs[p].push((
                                r.offset,
                                r.key.clone().unwrap_or_default(),
                                r.value.clone().unwrap_or_default(),
                            ));
                            offsets[p] = r.offset + 1;
                        }
                    }
                }
            }
        }
    }
    logs
}

/// Checks the log against what was sent: every counter exactly once in the topic, in
/// send order per partition, each key in one partition, offsets contiguous from 0, and
/// every delivered report's offsets holding its records. Failed reports are allowed only
/// if `allow_failed` (their records may then be missing, never duplicated).
pub(crate) fn check_exactly_once(
    sent: &Sent,
    logs: &[Vec<(i64, Bytes, Bytes)>],
    n: u64,
    allow_failed: bool,
) {
    let mut seen = vec![false; n as usize];
    let mut key_partition: HashMap<Bytes, usize> = HashMap::new();
    for (p, log) in logs.iter().enumerate() {
        let mut last = None;
        for (i, (offset, k, v)) in log.iter().enumerate() {
            assert_eq!(*offset, i as i64, "partition {p}: offsets contiguous");
            let c = u64::from_be_bytes(v[..8].try_into().unwrap());
            assert!(c < n, "unknown record");
            assert!(!seen[c as usize], "record {c} twice");
            seen[c as usize] = true;
            assert!(
                last.is_none_or(|l| l < c),
                "partition {p}: order broken at {c}"
            );
            last = Some(c);
            assert_eq!(&k[..], key(c).as_bytes());
            let kp = *key_partition.entry(k.clone()).or_insert(p);
            assert_eq!(kp, p, "a key always in one partition");
        }
    }
    let mut reported = 0u64;
    for r in &sent.reports {
        reported += u64::from(r.records);
        let d = match &r.outcome {
            Ok(d) => d,
            Err(e) if allow_failed => {
                eprintln!("batch {:?} failed: {e}", r.batch);
                continue;
            }
            Err(e) => panic!("batch failed: {e}"),
        };
        for i in r.indexes() {
            let c = sent.at[&(r.batch.0, i)];
            let (off, _, v) = &logs[r.partition as usize][d.offset(i) as usize];
            assert_eq!(*off, d.offset(i));
            assert_eq!(u64::from_be_bytes(v[..8].try_into().unwrap()), c);
            assert!(seen[c as usize], "an acknowledged record is in the log");
        }
    }
    assert_eq!(reported, n, "one report covers each record once");
    if !allow_failed {
        assert!(seen.iter().all(|s| *s), "every record read back");
    }
}
