//! Real broker: exactly-once consume-transform-produce under crashes. 200,000 records
//! go through `txn_worker` (a group consumer reading `read_committed` and a
//! transactional producer, offsets committed inside each transaction), which is killed
//! with SIGKILL at random points and restarted three times. The output, read
//! `read_committed`, holds every input record exactly once. The whole run is done under
//! both transaction protocols: the rig's `transaction.version` (2, KIP-890) and then 1.
//!
//! The random points come from a seed printed at the start (`TXN_PIPELINE_SEED` replays
//! one); `TXN_PIPELINE_RECORDS` changes the record count (default 200,000).

mod txn_common;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kafka_blocking::{Producer, Record};
use kafka_core::admin::ListConsumerGroupOffsets;
use kafka_core::config::ClientConfig;
use kafka_tests::broker_or_skip;
use kafka_tests::child::KilledOnDrop;
use txn_common::{client, read_all, topic, under_both_transaction_versions, unique};

const PARTITIONS: i32 = 6;

/// A running worker, killed (SIGKILL) when dropped, so a failing test leaves none.
struct Worker(KilledOnDrop);

impl Worker {
    fn start(addr: &str, input: &str, output: &str, group: &str, txn_id: &str) -> Worker {
        let child = Command::new(env!("CARGO_BIN_EXE_txn_worker"))
            .args([addr, input, output, group, txn_id])
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn txn_worker");
        Worker(KilledOnDrop(child))
    }

    fn alive(&mut self) -> bool {
        self.0.alive()
    }

    fn kill(&mut self) {
        self.0.kill();
    }
}

/// Input records the group has committed (the sum over partitions).
fn committed(addr: &str, group: &str) -> u64 {
    let got = client(addr)
        .run_op(ListConsumerGroupOffsets::new(group))
        .expect("driver");
    let Ok(mut all) = got else { return 0 };
    let Some(Ok(offsets)) = all.remove(group) else {
        return 0;
    };
    offsets
        .values()
        .filter_map(|o| o.as_ref().ok().and_then(|o| o.as_ref()))
        .map(|o| o.offset.max(0) as u64)
        .sum()
}

/// A small xorshift generator: the kill points, from the printed seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn every_record_once_through_three_crashes_under_both_protocols() {
    let Some(addr) = broker_or_skip("broker_txn_pipeline") else {
        return;
    };
    let n: u64 = std::env::var("TXN_PIPELINE_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let seed: u64 = std::env::var("TXN_PIPELINE_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    println!("TXN_PIPELINE_SEED={seed}");
    let mut rng = Rng(seed);
    under_both_transaction_versions(&addr, |level| {
        println!("transaction.version {level}");
        every_record_once_through_three_crashes(&addr, n, &mut rng);
    });
}

fn every_record_once_through_three_crashes(addr: &str, n: u64, rng: &mut Rng) {
    let addr = addr.to_string();
    let input = topic(&addr, "eos-in", PARTITIONS);
    let output = topic(&addr, "eos-out", PARTITIONS);
    let group = unique("eos-g");
    let txn_id = unique("eos-tx");
    let producer = Producer::new(
        ClientConfig::from_pairs([("bootstrap.servers", addr.as_str()), ("linger.ms", "10")])
            .expect("config"),
    )
    .expect("producer");
    let deliveries: Vec<_> = (0..n)
        .map(|i| {
            producer
                .send(Record::new(input.as_str(), i.to_string()).key(i.to_string()))
                .expect("send")
        })
        .collect();
    for d in deliveries {
        d.wait().expect("input delivered");
    }

    let deadline = Instant::now() + Duration::from_secs(600);
    let mut crashes = 0;
    for crash in 0..3 {
        let before = committed(&addr, &group);
        // Crash k comes once a random point of the k-th quarter of the input is
        // committed (in its second half), then a random moment later: inside a
        // transaction, between them, or while committing. Not after a fixed delay: a
        // worker commits ~100,000 records a second, so a delay of up to a second let
        // it finish the input before the third crash (a CI run saw exactly that).
        let quarter = n / 4;
        let point = quarter * crash + quarter / 2 + rng.below(quarter / 2 + 1);
        let mut w = Worker::start(&addr, &input, &output, &group, &txn_id);
        // It must first wait out the killed member's session.
        loop {
            let now = committed(&addr, &group);
            if now > before && now >= point {
                break;
            }
            assert!(Instant::now() < deadline, "crash {crash}: no progress");
            assert!(w.alive(), "worker exited");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(rng.below(50)));
        w.kill();
        let at = committed(&addr, &group);
        println!("crash {crash}: killed at {at} committed");
        crashes += 1;
        if at >= n {
            break;
        }
    }
    assert!(
        crashes == 3 || n < 200_000,
        "only {crashes} crashes before the end"
    );
    let mut w = Worker::start(&addr, &input, &output, &group, &txn_id);
    while committed(&addr, &group) < n {
        assert!(
            Instant::now() < deadline,
            "stuck at {}",
            committed(&addr, &group)
        );
        assert!(w.alive(), "worker exited");
        std::thread::sleep(Duration::from_millis(100));
    }
    w.kill();
    assert_eq!(
        committed(&addr, &group),
        n,
        "the group consumed exactly the input"
    );

    let out = read_all(&addr, &output, PARTITIONS, "read_committed");
    let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
    for v in &out {
        *seen.entry(v.parse().expect("number")).or_insert(0) += 1;
    }
    let dups: Vec<_> = seen.iter().filter(|(_, &c)| c > 1).take(5).collect();
    assert!(
        dups.is_empty(),
        "duplicates in the committed output: {dups:?}"
    );
    assert_eq!(seen.len() as u64, n, "every input record in the output");
    assert_eq!(out.len() as u64, n);
}
