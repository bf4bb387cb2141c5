//! The blocking adapter's transactions: the shared transaction suite on the real broker
//! (commit and abort seen by `read_committed`; a consume-transform-produce pipeline
//! whose offsets commit with its transactions).

use std::time::Duration;

use kafka_blocking::{
    Delivery, Error, GroupConsumer, GroupMetadata, Producer, Record, TxnPipeline,
};
use kafka_core::config::ClientConfig;
use kafka_core::consumer::ConsumerRecord;
use kafka_core::producer::{ProducerMetrics, TxnOffset};
use kafka_tests::txn_suite::{self as suite, PATIENCE};

struct Blocking;

/// The group consumer (a local type for the suite's trait).
struct Member(GroupConsumer);

struct TxnProducer {
    p: Producer,
    sent: Vec<Delivery>,
}

impl suite::Adapter for Blocking {
    type Producer = TxnProducer;
    type Member = Member;
    fn producer(&mut self, config: ClientConfig) -> TxnProducer {
        let p = Producer::new(config).expect("producer");
        p.init_transactions(PATIENCE).expect("init_transactions");
        TxnProducer {
            p,
            sent: Vec::new(),
        }
    }
    fn member(&mut self, config: ClientConfig, topic: &str) -> Member {
        let c = GroupConsumer::new(config).expect("group consumer");
        c.subscribe([topic]).expect("subscribe");
        Member(c)
    }
}

impl suite::TxnProducer for TxnProducer {
    fn begin(&mut self) {
        self.p.begin_transaction().expect("begin_transaction");
    }
    fn send(&mut self, topic: &str, key: &str, value: &str) {
        let record = Record::new(topic, value.to_string()).key(key.to_string());
        self.sent.push(self.p.send(record).expect("send"));
    }
    fn outcomes(&mut self) -> Vec<Result<(), String>> {
        self.sent
            .drain(..)
            .map(|d| match d.wait_timeout(PATIENCE) {
                Ok(outcome) => outcome.map(|_| ()).map_err(|e| e.to_string()),
                Err(_) => panic!("no outcome within {PATIENCE:?}"),
            })
            .collect()
    }
    fn send_offsets(&mut self, offsets: Vec<TxnOffset>, group: &GroupMetadata) {
        self.p
            .send_offsets_to_transaction(offsets, group, PATIENCE)
            .expect("send_offsets_to_transaction");
    }
    fn commit(&mut self) -> Result<(), String> {
        self.p
            .commit_transaction(PATIENCE)
            .map_err(|e| e.to_string())
    }
    fn abort(&mut self) -> Result<(), String> {
        self.p
            .abort_transaction(PATIENCE)
            .map_err(|e| e.to_string())
    }
    fn close(&mut self) -> ProducerMetrics {
        self.p.close(PATIENCE).expect("close")
    }
}

impl suite::TxnMember for Member {
    fn poll(&mut self, timeout: Duration) -> Vec<ConsumerRecord> {
        self.0.poll(timeout).expect("poll")
    }
    fn transaction_offsets(&mut self) -> (GroupMetadata, Vec<TxnOffset>) {
        self.0.transaction_offsets().expect("transaction_offsets")
    }
    fn close(&mut self) {
        self.0.close().expect("close");
    }
}

#[test]
fn real_broker_committed_once_aborted_never() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("txn_blocking commit and abort") else {
        return;
    };
    suite::commit_and_abort(&mut Blocking, &bootstrap, "blocking");
}

#[test]
fn real_broker_consume_transform_produce_commits_offsets_with_the_output() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("txn_blocking consume-transform-produce")
    else {
        return;
    };
    suite::consume_transform_produce(&mut Blocking, &bootstrap, "blocking");
}

/// Waits until the producer's counters say `committed` transactions committed.
fn until_committed(p: &Producer, committed: u64) {
    let start = std::time::Instant::now();
    while p.metrics().expect("metrics").transactions_committed < committed {
        assert!(start.elapsed() < PATIENCE, "the commit never ended");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn real_broker_a_call_repeated_after_its_timeout_gets_its_result() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("txn_blocking repeated call") else {
        return;
    };
    let topic = kafka_tests::producer_suite::unique_topic("txn-retry-blocking");
    kafka_tests::producer_suite::create_topic_with(&bootstrap, &topic, suite::PARTITIONS);
    let config = suite::producer_config(&bootstrap, &format!("{topic}-tx"));
    let p = Producer::new(config).expect("producer");
    let first = p.init_transactions(Duration::ZERO);
    assert!(matches!(first, Err(Error::Timeout(_))), "{first:?}");
    // Done by now or not: the repeated call gets init's result either way.
    std::thread::sleep(Duration::from_millis(500));
    p.init_transactions(PATIENCE).expect("init, repeated");

    p.begin_transaction().expect("begin");
    let d = p.send(Record::new(topic.as_str(), "a")).expect("send");
    let first = p.commit_transaction(Duration::ZERO);
    assert!(matches!(first, Err(Error::Timeout(_))), "{first:?}");
    until_committed(&p, 1);
    p.commit_transaction(PATIENCE)
        .expect("the commit that ended after the caller's timeout");
    d.wait().expect("delivered");

    // A result nobody took answers only the same call next: not a later commit.
    // The transaction holds a record: an empty one ends without the coordinator, so
    // its commit could finish inside a zero timeout.
    p.begin_transaction().expect("begin");
    let x = p.send(Record::new(topic.as_str(), "x")).expect("send");
    let first = p.commit_transaction(Duration::ZERO);
    assert!(matches!(first, Err(Error::Timeout(_))), "{first:?}");
    until_committed(&p, 2);
    x.wait().expect("delivered");
    p.begin_transaction()
        .expect("begin after the unclaimed commit");
    let d = p.send(Record::new(topic.as_str(), "b")).expect("send");
    p.commit_transaction(PATIENCE).expect("commit b");
    d.wait().expect("delivered");
    assert_eq!(p.metrics().expect("metrics").transactions_committed, 3);
    p.begin_transaction()
        .expect("b's commit really ended its transaction");
    p.abort_transaction(PATIENCE).expect("abort the empty one");
    p.close(PATIENCE).expect("close");

    let mut seen = suite::read_values(&bootstrap, &topic, "read_committed", 3);
    seen.sort();
    assert_eq!(seen, ["a", "b", "x"]);
}

#[test]
fn real_broker_txn_pipeline_moves_every_record_once() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("txn_blocking TxnPipeline") else {
        return;
    };
    suite::txn_pipeline(
        &bootstrap,
        "blocking",
        |consumer, producer, input, output| {
            let pipeline = TxnPipeline::new(consumer, producer, [input]).expect("pipeline");
            let mut rounds = suite::Rounds::default();
            while rounds.more() {
                let round = pipeline.run_once(Duration::from_millis(200), suite::to_output(output));
                rounds.add(round.expect("a round"));
            }
            pipeline.close().expect("close");
            rounds.rounds()
        },
    );
}

#[test]
fn real_broker_a_commit_takes_the_records_staged_before_it() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("txn_blocking staged records") else {
        return;
    };
    let topic = kafka_tests::producer_suite::unique_topic("txn-staged-blocking");
    kafka_tests::producer_suite::create_topic_with(&bootstrap, &topic, suite::PARTITIONS);
    // A linger far beyond the test: once the first record opened a batch, the driver
    // plans its next take for then, and the later sends only stage.
    let config = kafka_tests::producer_suite::config(
        &bootstrap,
        &[
            ("transactional.id", &format!("{topic}-tx")),
            ("transaction.timeout.ms", "60000"),
            ("linger.ms", "60000"),
        ],
    );
    let p = Producer::new(config).expect("producer");
    p.init_transactions(PATIENCE).expect("init");
    p.begin_transaction().expect("begin");
    let sent: Vec<Delivery> = (0..20)
        .map(|i| {
            let record = Record::new(topic.as_str(), format!("v{i:02}")).partition(i % 3);
            let d = p.send(record).expect("send");
            std::thread::sleep(Duration::from_millis(5));
            d
        })
        .collect();
    let started = std::time::Instant::now();
    p.commit_transaction(PATIENCE).expect("commit");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the commit waited for linger"
    );
    for d in sent {
        let outcome = d
            .wait_timeout(Duration::from_secs(1))
            .expect("reported by the commit");
        outcome.expect("delivered");
    }
    p.close(PATIENCE).expect("close");
    let mut seen = suite::read_values(&bootstrap, &topic, "read_committed", 20);
    seen.sort();
    let want: Vec<String> = (0..20).map(|i| format!("v{i:02}")).collect();
    assert_eq!(seen, want);
}
