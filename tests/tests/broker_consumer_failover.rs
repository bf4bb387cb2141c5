//! Real 3-node cluster: our consumer reads a replicated topic (RF 3, 6 partitions) while
//! the leader of partition 0 is killed (kill -9 through the rig) mid-consumption and
//! restarted, and more records are written under the new leaders. The consumer follows
//! the new leader, validates its position there (KIP-320: OffsetForLeaderEpoch) and
//! must read every record exactly once, in offset order per partition, no offset
//! skipped, with the counter each was sent with.

mod producer_common;

use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};

use kafka_blocking::{Consumer, Error, Producer, Record};
use kafka_core::config::ClientConfig;
use kafka_core::consumer::ConsumeError;
use kafka_tests::{cluster_or_skip, rig_var};
use producer_common::{key, produce, value, PARTITIONS};

/// Records written before the kill, and after the restart.
const BEFORE: u64 = 60_000;
const AFTER: u64 = 6_000;
/// The whole test, failover included, stays well under a minute.
const BOUND: Duration = Duration::from_secs(90);

fn rig(args: &[&str]) {
    let rig = concat!(env!("CARGO_MANIFEST_DIR"), "/broker/rig");
    let status = Command::new(rig).args(args).status().expect("run rig");
    assert!(status.success(), "rig {args:?} failed");
}

/// Restarts the killed node whatever happens (`rig restart` waits until it has started),
/// so a failed assertion leaves the cluster whole for the suites after this one.
struct Restart(Option<i32>);

impl Restart {
    fn now(&mut self) {
        if let Some(node) = self.0.take() {
            rig(&["restart", &node.to_string()]);
        }
    }
}

impl Drop for Restart {
    fn drop(&mut self) {
        self.now();
    }
}

/// What the consumer read so far: the next offset per partition, and how many.
struct Reader {
    want: HashMap<(i32, i64), u64>,
    next: [i64; PARTITIONS as usize],
    read: u64,
    no_offset: usize,
}

impl Reader {
    /// Polls once (paced, so the failover happens mid-consumption) and checks each
    /// record: the next offset of its partition, the counter written there.
    fn poll(&mut self, consumer: &Consumer, started: Instant) {
        assert!(
            started.elapsed() < BOUND,
            "{} records read after {BOUND:?}; next offsets {:?}",
            self.read,
            self.next
        );
        let records = match consumer.poll(Duration::from_millis(200)) {
            Ok(records) => records,
            // `assign` before the seeks: each partition had no position for a moment.
            Err(Error::Consume(ConsumeError::NoOffset { .. })) if self.read == 0 => {
                self.no_offset += 1;
                return;
            }
            Err(e) => panic!("poll: {e}"),
        };
        for r in records {
            let p = r.partition as usize;
            assert_eq!(
                r.offset, self.next[p],
                "partition {p}: in order, once, no gap"
            );
            self.next[p] += 1;
            let v = r.value.as_deref().expect("value");
            let counter = u64::from_be_bytes(v[..8].try_into().expect("8 bytes"));
            assert_eq!(
                Some(&counter),
                self.want.get(&(r.partition, r.offset)),
                "the record at {p}@{}",
                r.offset
            );
            self.read += 1;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_leader_killed_and_restarted_mid_consumption_skips_and_repeats_nothing() {
    let test = "a_leader_killed_and_restarted_mid_consumption_skips_and_repeats_nothing";
    let Some(addr) = cluster_or_skip(test) else {
        return;
    };
    let bootstrap = rig_var("KAFKA_CLUSTER_BOOTSTRAP").unwrap_or(addr.clone());
    let topic = format!(
        "consumer-failover-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    );
    let (sent, _client) = produce(&bootstrap, &topic, "none", BEFORE, 3, |_| {});
    let mut want: HashMap<(i32, i64), u64> = HashMap::new();
    for r in &sent.reports {
        let d = r.outcome.as_ref().expect("every batch delivered");
        for i in 0..r.records {
            want.insert((r.partition, d.offset(i)), sent.at[&(r.batch.0, i)]);
        }
    }
    assert_eq!(want.len() as u64, BEFORE);

    let started = Instant::now();
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap.as_str()),
        ("auto.offset.reset", "none"),
        // Small fetches and a small buffer: little is read ahead of the application.
        ("max.partition.fetch.bytes", "8192"),
        ("queued.max.messages.kbytes", "64"),
        ("max.poll.records", "200"),
        ("request.timeout.ms", "5000"),
        ("reconnect.backoff.max.ms", "500"),
        ("metadata.max.age.ms", "5000"),
    ])
    .expect("config");
    let consumer = Consumer::new(config).expect("consumer");
    consumer
        .assign((0..PARTITIONS).map(|p| (topic.as_str(), p)))
        .expect("assign");
    // With auto.offset.reset=none a truncation would be a typed error, never a silent
    // move: start every partition at 0 explicitly.
    for p in 0..PARTITIONS {
        consumer.seek(&topic, p, 0).expect("seek");
    }
    let mut reader = Reader {
        want,
        next: [0; PARTITIONS as usize],
        read: 0,
        no_offset: 0,
    };

    // 1. A tenth into partition 0, kill its leader.
    while reader.next[0] < 1_000 {
        reader.poll(&consumer, started);
    }
    let t = topic.clone();
    let node = consumer
        .client()
        .with_core(move |c| c.metadata().leader(&t, 0))
        .expect("driver")
        .expect("leader of partition 0");
    let at_kill = reader.next[0];
    eprintln!("killing node {node}, the leader of partition 0 (read {at_kill} of it)");
    rig(&["kill", &node.to_string()]);
    let mut restart = Restart(Some(node));
    let killed_at = Instant::now();

    // 2. Partition 0 goes on from its new leader: past what was fetched before the kill
    // (at most one producer batch of 256 KiB, ~2,300 records, in the core and
    // `max.poll.records` twice in the adapter's queue).
    while reader.next[0] < at_kill + 3_000 {
        reader.poll(&consumer, started);
    }
    let t = topic.clone();
    let now_leader = consumer
        .client()
        .with_core(move |c| c.metadata().leader(&t, 0))
        .expect("driver");
    eprintln!(
        "partition 0 read on to {} from leader {now_leader:?}, {:?} after the kill",
        reader.next[0],
        killed_at.elapsed()
    );
    assert_ne!(now_leader, Some(node), "a new leader");

    // 3. The old leader comes back (as a follower) while the consumer reads on; then
    // more records are written under the new leader epochs.
    restart.now();
    let producer_config = ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap.as_str()),
        ("linger.ms", "5"),
    ])
    .expect("config");
    let producer = Producer::new(producer_config).expect("producer");
    let deliveries: Vec<_> = (BEFORE..BEFORE + AFTER)
        .map(|i| {
            let record = Record::new(topic.clone(), value(i).to_vec()).key(key(i));
            (i, producer.send(record).expect("send"))
        })
        .collect();
    for (i, d) in deliveries {
        let at = d.wait().expect("delivered");
        reader.want.insert((at.partition, at.offset), i);
    }
    producer
        .close(Duration::from_secs(10))
        .expect("close producer");

    // 4. To the end: every record once.
    while reader.read < BEFORE + AFTER {
        reader.poll(&consumer, started);
    }
    assert!(
        reader.no_offset <= PARTITIONS as usize,
        "NoOffset only for the assign before the seeks"
    );
    let total: i64 = reader.next.iter().sum();
    assert_eq!(
        total as u64,
        BEFORE + AFTER,
        "no offset skipped: {:?}",
        reader.next
    );
    let extra = consumer.poll(Duration::from_millis(500)).expect("poll");
    assert!(
        extra.is_empty(),
        "nothing after the end: {} more",
        extra.len()
    );
    let m = consumer.close().expect("close");
    eprintln!(
        "read {} records in {:?}; validations {}, truncations {}, resets {}",
        reader.read,
        started.elapsed(),
        m.validations,
        m.truncations,
        m.resets
    );
    assert!(m.validations >= 1, "the new leader was validated: {m:?}");
    assert_eq!((m.truncations, m.resets), (0, 0), "{m:?}");
}
