//! Transactions through the real adapters against the simulated cluster on loopback
//! sockets (`kafka_tests::sim::serve`): each adapter's transactional producer (blocking,
//! tokio, async-std, mio) runs transactions of [`PER_TXN`] keyed records (paced, for
//! 2 s: `SIM_TXN_MS`) over a 3-broker cluster, every third one aborted, under a seeded fault schedule whose
//! resets and kills aim at the transaction coordinator half the time (a kill or restart
//! moves it), with leader moves besides. A commit or abort that fails is followed by an
//! abort; if that fails too, the outcome is unknown and a new producer takes over (its
//! `init_transactions` fences the old one and ends what it left open).
//!
//! Then, healed, a `read_committed` consumer reads every partition up to its last stable
//! offset: no record of an aborted transaction, every record of a committed one exactly
//! once, and each transaction of unknown outcome all or nothing.
//!
//! `SIM_ADAPTER_SEED` replays a fault schedule (it is printed). More seeds:
//! `for i in $(seq 20); do cargo test -p kafka-tests --test sim_adapters_txn || break; done`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_core::config::ClientConfig;
use kafka_tests::sim::cluster::SimCluster;
use kafka_tests::sim::serve::{schedule_seed, FaultPlan, Faults, SimServer};

const TOPIC: &str = "t";
const PARTITIONS: i32 = 3;
/// Transactions per adapter, at least.
const TRANSACTIONS: usize = 30;
/// Pause after each send, so that faults land inside transactions.
const PACE: Duration = Duration::from_millis(5);

/// How long transactions run under faults, at least (`SIM_TXN_MS`, default 2000).
fn txn_ms() -> u64 {
    std::env::var("SIM_TXN_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000)
}
/// Records per transaction.
const PER_TXN: usize = 10;
/// How long a transactional call may take.
const CALL: Duration = Duration::from_secs(30);

/// One adapter's transactional producer, driven blocking.
trait Txn {
    fn begin(&mut self) -> Result<(), String>;
    /// Sends one record (its delivery is not awaited: the commit flushes).
    fn send(&mut self, key: &str, value: &str) -> Result<(), String>;
    fn commit(&mut self) -> Result<(), String>;
    fn abort(&mut self) -> Result<(), String>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Committed,
    Aborted,
    Unknown,
}

fn config(bootstrap: &str, txn_id: &str) -> ClientConfig {
    ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap),
        ("transactional.id", txn_id),
        ("transaction.timeout.ms", "20000"),
        ("linger.ms", "2"),
        ("request.timeout.ms", "2000"),
        ("retry.backoff.ms", "20"),
        ("retry.backoff.max.ms", "200"),
        ("reconnect.backoff.ms", "20"),
        ("reconnect.backoff.max.ms", "200"),
        ("metadata.max.age.ms", "1000"),
    ])
    .expect("producer config")
}

fn value(t: usize, i: usize) -> String {
    format!("tx{t:04}-{i:02}")
}

/// Runs the transactions with producers made by `make` under faults, then reads back.
fn run_txns(adapter: &str, mut make: impl FnMut(ClientConfig) -> Box<dyn Txn>) {
    let seed = schedule_seed(adapter);
    println!("{adapter}: seed {seed} (SIM_ADAPTER_SEED={seed} replays the schedule)");
    let txn_id = format!("tx-{adapter}");
    let mut cluster = SimCluster::new(3);
    cluster.create_topic(TOPIC, PARTITIONS);
    let server = Arc::new(SimServer::start(cluster));
    let bootstrap = server.bootstrap();
    let plan = FaultPlan {
        topic: TOPIC.into(),
        coordinator_of: Some(txn_id.clone()),
        every_ms: (20, 60),
    };
    let faults = Faults::start_plan(&server, adapter, seed, plan);
    let began = Instant::now();
    let mut producer = make(config(&bootstrap, &txn_id));
    let mut outcomes = Vec::new();
    let mut replaced = 0;
    let mut t = 0;
    while t < TRANSACTIONS || began.elapsed() < Duration::from_millis(txn_ms()) {
        let abort = t % 3 == 2;
        let mut run = || -> Result<(), String> {
            producer.begin()?;
            for i in 0..PER_TXN {
                producer.send(&format!("k{i}"), &value(t, i))?;
                std::thread::sleep(PACE);
            }
            if abort {
                producer.abort()
            } else {
                producer.commit()
            }
        };
        let outcome = match run() {
            Ok(()) if abort => Outcome::Aborted,
            Ok(()) => Outcome::Committed,
            Err(e) => {
                println!("{adapter}: transaction {t}: {e}; aborting");
                match producer.abort() {
                    Ok(()) => Outcome::Aborted,
                    Err(e) => {
                        println!(
                            "{adapter}: transaction {t}: abort failed too ({e}): a new producer"
                        );
                        replaced += 1;
                        producer = make(config(&bootstrap, &txn_id));
                        Outcome::Unknown
                    }
                }
            }
        };
        outcomes.push(outcome);
        t += 1;
    }
    drop(producer);
    let injected = faults.stop();
    let elapsed = began.elapsed();
    let read = read_committed(&bootstrap);
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for v in &read {
        *counts.entry(v.as_str()).or_default() += 1;
    }
    for (t, outcome) in outcomes.iter().enumerate() {
        let seen: Vec<usize> = (0..PER_TXN)
            .map(|i| counts.get(value(t, i).as_str()).copied().unwrap_or(0))
            .collect();
        match outcome {
            Outcome::Committed => assert!(
                seen.iter().all(|c| *c == 1),
                "{adapter} (seed {seed}): committed transaction {t} read {seen:?} times"
            ),
            Outcome::Aborted => assert!(
                seen.iter().all(|c| *c == 0),
                "{adapter} (seed {seed}): aborted transaction {t} read {seen:?} times"
            ),
            Outcome::Unknown => assert!(
                seen.iter().all(|c| *c == 1) || seen.iter().all(|c| *c == 0),
                "{adapter} (seed {seed}): transaction {t} of unknown outcome torn: {seen:?}"
            ),
        }
    }
    assert_eq!(
        read.len(),
        counts.values().sum::<usize>(),
        "{adapter}: counted every value read"
    );
    let known = |o: Outcome| outcomes.iter().filter(|x| **x == o).count();
    assert!(
        known(Outcome::Committed) > 0,
        "{adapter} (seed {seed}): nothing committed"
    );
    assert!(injected.total() > 0, "{adapter}: no fault was injected");
    println!(
        "{adapter}: {} transactions in {elapsed:?}: {} committed, {} aborted, {} unknown ({replaced} producers replaced); {} records read_committed; {injected:?}",
        outcomes.len(),
        known(Outcome::Committed),
        known(Outcome::Aborted),
        known(Outcome::Unknown),
        read.len()
    );
}

/// Every value a `read_committed` consumer reads up to each partition's last stable
/// offset.
fn read_committed(bootstrap: &str) -> Vec<String> {
    use kafka_blocking::Consumer;
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", bootstrap),
        ("auto.offset.reset", "earliest"),
        ("isolation.level", "read_committed"),
    ])
    .expect("consumer config");
    let consumer = Consumer::new(config).expect("consumer");
    let parts: Vec<(&str, i32)> = (0..PARTITIONS).map(|p| (TOPIC, p)).collect();
    consumer.assign(parts.iter().copied()).expect("assign");
    let deadline = Instant::now() + Duration::from_secs(60);
    // The last stable offsets once every transaction ended (markers are written within
    // milliseconds of the end).
    let ends = loop {
        let hw: Vec<i64> = (0..PARTITIONS)
            .map(|p| {
                let c = Consumer::new(
                    ClientConfig::from_pairs([
                        ("bootstrap.servers", bootstrap),
                        ("isolation.level", "read_uncommitted"),
                    ])
                    .expect("config"),
                )
                .expect("consumer");
                let e = c.end_offsets([(TOPIC, p)], CALL).expect("high watermark");
                let _ = c.close();
                e.values().copied().next().unwrap_or(0)
            })
            .collect();
        let lso = consumer
            .end_offsets(parts.iter().copied(), CALL)
            .expect("LSO");
        let lso: Vec<i64> = (0..PARTITIONS)
            .map(|p| {
                lso.iter()
                    .find(|(tp, _)| tp.partition == p)
                    .map_or(0, |(_, o)| *o)
            })
            .collect();
        if lso == hw {
            break lso;
        }
        assert!(
            Instant::now() < deadline,
            "open transactions never ended: LSO {lso:?}, HW {hw:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut values = Vec::new();
    loop {
        let at: Vec<i64> = (0..PARTITIONS)
            .map(|p| consumer.position(TOPIC, p).expect("position").unwrap_or(0))
            .collect();
        if at.iter().zip(&ends).all(|(a, e)| a >= e) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "reading back took too long: at {at:?} of {ends:?}"
        );
        for r in consumer.poll(Duration::from_millis(50)).expect("poll") {
            let v = r.value.expect("value");
            values.push(String::from_utf8(v.to_vec()).expect("utf8"));
        }
    }
    let _ = consumer.close();
    values
}

struct Blocking(kafka_blocking::Producer);

impl Txn for Blocking {
    fn begin(&mut self) -> Result<(), String> {
        self.0.begin_transaction().map_err(|e| e.to_string())
    }
    fn send(&mut self, key: &str, value: &str) -> Result<(), String> {
        let record = kafka_blocking::Record::new(TOPIC, value.to_string()).key(key.to_string());
        self.0.send(record).map(drop).map_err(|e| e.to_string())
    }
    fn commit(&mut self) -> Result<(), String> {
        self.0.commit_transaction(CALL).map_err(|e| e.to_string())
    }
    fn abort(&mut self) -> Result<(), String> {
        self.0.abort_transaction(CALL).map_err(|e| e.to_string())
    }
}

#[test]
fn blocking_transactions_survive_coordinator_faults() {
    run_txns("blocking", |config| {
        let p = kafka_blocking::Producer::new(config).expect("producer");
        p.init_transactions(CALL).expect("init_transactions");
        Box::new(Blocking(p))
    });
}

struct Tokio(Arc<tokio::runtime::Runtime>, kafka_tokio::Producer);

impl Txn for Tokio {
    fn begin(&mut self) -> Result<(), String> {
        self.0
            .block_on(self.1.begin_transaction())
            .map_err(|e| e.to_string())
    }
    fn send(&mut self, key: &str, value: &str) -> Result<(), String> {
        let record = kafka_tokio::Record::new(TOPIC, value.to_string()).key(key.to_string());
        self.0
            .block_on(self.1.send(record))
            .map(drop)
            .map_err(|e| e.to_string())
    }
    fn commit(&mut self) -> Result<(), String> {
        self.0
            .block_on(self.1.commit_transaction(CALL))
            .map_err(|e| e.to_string())
    }
    fn abort(&mut self) -> Result<(), String> {
        self.0
            .block_on(self.1.abort_transaction(CALL))
            .map_err(|e| e.to_string())
    }
}

#[test]
fn tokio_transactions_survive_coordinator_faults() {
    let rt = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime"),
    );
    run_txns("tokio", |config| {
        let p = rt
            .block_on(async { kafka_tokio::Producer::new(config) })
            .expect("producer");
        rt.block_on(p.init_transactions(CALL))
            .expect("init_transactions");
        Box::new(Tokio(rt.clone(), p))
    });
}

struct AsyncStd(kafka_async_std::Producer);

impl Txn for AsyncStd {
    fn begin(&mut self) -> Result<(), String> {
        async_std::task::block_on(self.0.begin_transaction()).map_err(|e| e.to_string())
    }
    fn send(&mut self, key: &str, value: &str) -> Result<(), String> {
        let record = kafka_async_std::Record::new(TOPIC, value.to_string()).key(key.to_string());
        async_std::task::block_on(self.0.send(record))
            .map(drop)
            .map_err(|e| e.to_string())
    }
    fn commit(&mut self) -> Result<(), String> {
        async_std::task::block_on(self.0.commit_transaction(CALL)).map_err(|e| e.to_string())
    }
    fn abort(&mut self) -> Result<(), String> {
        async_std::task::block_on(self.0.abort_transaction(CALL)).map_err(|e| e.to_string())
    }
}

#[test]
fn async_std_transactions_survive_coordinator_faults() {
    run_txns("async-std", |config| {
        let p = kafka_async_std::Producer::new(config).expect("producer");
        async_std::task::block_on(p.init_transactions(CALL)).expect("init_transactions");
        Box::new(AsyncStd(p))
    });
}

mod mio_txn {
    use super::*;
    use kafka_core::client::OpId;
    use kafka_core::producer::{Producer, ProducerRecord, SendError};
    use kafka_mio::mio::{Events, Poll};
    use kafka_mio::Driver;

    pub(super) struct Mio {
        poll: Poll,
        events: Events,
        driver: Driver,
        id: OpId<Producer>,
    }

    impl Mio {
        pub(super) fn new(config: ClientConfig) -> Mio {
            let poll = Poll::new().expect("poll");
            let mut driver = Driver::new(config, poll.registry(), 0..64).expect("driver");
            let id = driver.start_producer().expect("producer");
            let mut m = Mio {
                poll,
                events: Events::with_capacity(256),
                driver,
                id,
            };
            m.driver
                .producer(id)
                .init_transactions()
                .expect("init_transactions");
            m.finish().expect("init_transactions");
            m
        }

        fn turn(&mut self) {
            let max = Duration::from_millis(20);
            let wait = self.driver.timeout().map_or(max, |t| t.min(max));
            self.poll.poll(&mut self.events, Some(wait)).expect("poll");
            for event in self.events.iter() {
                if self.driver.owns(event.token()) {
                    self.driver.handle_event(self.poll.registry(), event);
                }
            }
            self.driver.handle_timeout(self.poll.registry());
            self.driver.poll(self.poll.registry());
            while self.driver.poll_event().is_some() {}
            while self.driver.producer(self.id).take_report().is_some() {}
        }

        /// Turns until the running transactional call's result comes.
        fn finish(&mut self) -> Result<(), String> {
            let start = Instant::now();
            loop {
                if let Some((_, r)) = self.driver.producer(self.id).take_transaction_result() {
                    return r.map_err(|e| e.to_string());
                }
                if start.elapsed() > CALL {
                    return Err("no result within the call's timeout".into());
                }
                self.turn();
            }
        }
    }

    impl Txn for Mio {
        fn begin(&mut self) -> Result<(), String> {
            self.driver
                .producer(self.id)
                .begin_transaction()
                .map_err(|e| e.to_string())
        }
        fn send(&mut self, key: &str, value: &str) -> Result<(), String> {
            loop {
                let record = ProducerRecord::new(TOPIC, value.as_bytes()).key(key.as_bytes());
                match self.driver.producer(self.id).send(&record) {
                    Ok(_) => return Ok(()),
                    Err(SendError::WouldBlock(_)) => self.turn(),
                    Err(e) => return Err(e.to_string()),
                }
            }
        }
        fn commit(&mut self) -> Result<(), String> {
            self.driver
                .producer(self.id)
                .commit_transaction()
                .map_err(|e| e.to_string())?;
            self.finish()
        }
        fn abort(&mut self) -> Result<(), String> {
            self.driver
                .producer(self.id)
                .abort_transaction()
                .map_err(|e| e.to_string())?;
            self.finish()
        }
    }
}

#[test]
fn mio_transactions_survive_coordinator_faults() {
    run_txns("mio", |config| Box::new(mio_txn::Mio::new(config)));
}
