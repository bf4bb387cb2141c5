//! The tokio adapter's transactions: the shared transaction suite on the real broker
//! (commit and abort seen by `read_committed`; a consume-transform-produce pipeline
//! whose offsets commit with its transactions), blocking on a multi-thread runtime.

use std::sync::Arc;
use std::time::Duration;

use kafka_core::config::ClientConfig;
use kafka_core::consumer::ConsumerRecord;
use kafka_core::group::GroupMetadata;
use kafka_core::producer::{ProducerMetrics, TxnOffset};
use kafka_tests::txn_suite::{self as suite, PATIENCE};
use kafka_tokio::{DeliveryFuture, Error, GroupConsumer, Producer, Record, TxnPipeline};
use tokio::runtime::Runtime;

struct Tokio(Arc<Runtime>);

struct TxnProducer {
    rt: Arc<Runtime>,
    p: Producer,
    sent: Vec<DeliveryFuture>,
}

struct Member {
    rt: Arc<Runtime>,
    c: GroupConsumer,
}

impl suite::Adapter for Tokio {
    type Producer = TxnProducer;
    type Member = Member;
    fn producer(&mut self, config: ClientConfig) -> TxnProducer {
        let p = self
            .0
            .block_on(async {
                let p = Producer::new(config)?;
                p.init_transactions(PATIENCE).await?;
                Ok::<_, kafka_tokio::Error>(p)
            })
            .expect("producer and init_transactions");
        TxnProducer {
            rt: self.0.clone(),
            p,
            sent: Vec::new(),
        }
    }
    fn member(&mut self, config: ClientConfig, topic: &str) -> Member {
        let c = self
            .0
            .block_on(async { GroupConsumer::new(config) })
            .expect("group consumer");
        c.subscribe([topic]).expect("subscribe");
        Member {
            rt: self.0.clone(),
            c,
        }
    }
}

impl suite::TxnProducer for TxnProducer {
    fn begin(&mut self) {
        self.rt
            .block_on(self.p.begin_transaction())
            .expect("begin_transaction");
    }
    fn send(&mut self, topic: &str, key: &str, value: &str) {
        let record = Record::new(topic, value.to_string()).key(key.to_string());
        let d = self.rt.block_on(self.p.send(record)).expect("send");
        self.sent.push(d);
    }
    fn outcomes(&mut self) -> Vec<Result<(), String>> {
        let sent = std::mem::take(&mut self.sent);
        self.rt.block_on(async {
            let mut out = Vec::with_capacity(sent.len());
            for d in sent {
                let o = tokio::time::timeout(PATIENCE, d)
                    .await
                    .expect("an outcome in time");
                out.push(o.map(|_| ()).map_err(|e| e.to_string()));
            }
            out
        })
    }
    fn send_offsets(&mut self, offsets: Vec<TxnOffset>, group: &GroupMetadata) {
        self.rt
            .block_on(self.p.send_offsets_to_transaction(offsets, group, PATIENCE))
            .expect("send_offsets_to_transaction");
    }
    fn commit(&mut self) -> Result<(), String> {
        self.rt
            .block_on(self.p.commit_transaction(PATIENCE))
            .map_err(|e| e.to_string())
    }
    fn abort(&mut self) -> Result<(), String> {
        self.rt
            .block_on(self.p.abort_transaction(PATIENCE))
            .map_err(|e| e.to_string())
    }
    fn close(&mut self) -> ProducerMetrics {
        self.rt.block_on(self.p.close(PATIENCE)).expect("close")
    }
}

impl suite::TxnMember for Member {
    fn poll(&mut self, timeout: Duration) -> Vec<ConsumerRecord> {
        self.rt.block_on(self.c.poll(timeout)).expect("poll")
    }
    fn transaction_offsets(&mut self) -> (GroupMetadata, Vec<TxnOffset>) {
        self.rt
            .block_on(self.c.transaction_offsets())
            .expect("transaction_offsets")
    }
    fn close(&mut self) {
        self.rt.block_on(self.c.close()).expect("close");
    }
}

fn runtime() -> Tokio {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    Tokio(Arc::new(rt))
}

#[test]
fn real_broker_committed_once_aborted_never() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("txn_tokio commit and abort") else {
        return;
    };
    suite::commit_and_abort(&mut runtime(), &bootstrap, "tokio");
}

#[test]
fn real_broker_consume_transform_produce_commits_offsets_with_the_output() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("txn_tokio consume-transform-produce") else {
        return;
    };
    suite::consume_transform_produce(&mut runtime(), &bootstrap, "tokio");
}

#[test]
fn real_broker_a_call_repeated_after_its_timeout_gets_its_result() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("txn_tokio repeated call") else {
        return;
    };
    let topic = kafka_tests::producer_suite::unique_topic("txn-retry-tokio");
    kafka_tests::producer_suite::create_topic_with(&bootstrap, &topic, suite::PARTITIONS);
    let config = suite::producer_config(&bootstrap, &format!("{topic}-tx"));
    let Tokio(rt) = runtime();
    rt.block_on(async {
        let p = Producer::new(config).expect("producer");
        let first = p.init_transactions(Duration::ZERO).await;
        assert!(matches!(first, Err(Error::Timeout(_))), "{first:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
        p.init_transactions(PATIENCE).await.expect("init, repeated");

        p.begin_transaction().await.expect("begin");
        let d = p
            .send(Record::new(topic.as_str(), "a"))
            .await
            .expect("send");
        let first = p.commit_transaction(Duration::ZERO).await;
        assert!(matches!(first, Err(Error::Timeout(_))), "{first:?}");
        let start = std::time::Instant::now();
        while p.metrics().await.expect("metrics").transactions_committed < 1 {
            assert!(start.elapsed() < PATIENCE, "the commit never ended");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        p.commit_transaction(PATIENCE)
            .await
            .expect("the commit that ended after the caller's timeout");
        d.await.expect("delivered");
        p.begin_transaction()
            .await
            .expect("the commit ended the transaction");
        p.abort_transaction(PATIENCE).await.expect("abort");
        p.close(PATIENCE).await.expect("close");
    });
    let seen = suite::read_values(&bootstrap, &topic, "read_committed", 1);
    assert_eq!(seen, ["a"]);
}

#[test]
fn real_broker_txn_pipeline_moves_every_record_once() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("txn_tokio TxnPipeline") else {
        return;
    };
    let Tokio(rt) = runtime();
    suite::txn_pipeline(&bootstrap, "tokio", |consumer, producer, input, output| {
        rt.block_on(async {
            let pipeline = TxnPipeline::new(consumer, producer, [input])
                .await
                .expect("pipeline");
            let mut rounds = suite::Rounds::default();
            while rounds.more() {
                let round = pipeline.run_once(Duration::from_millis(200), suite::to_output(output));
                rounds.add(round.await.expect("a round"));
            }
            pipeline.close().await.expect("close");
            rounds.rounds()
        })
    });
}

#[test]
fn a_pipeline_refuses_settings_that_break_exactly_once() {
    let Tokio(rt) = runtime();
    let member = |isolation: &str, auto_commit: &str| {
        ClientConfig::from_pairs([
            ("bootstrap.servers", "127.0.0.1:1"),
            ("group.id", "g"),
            ("isolation.level", isolation),
            ("enable.auto.commit", auto_commit),
        ])
        .expect("config")
    };
    let producer = |txn_id: Option<&str>| {
        let mut pairs = vec![("bootstrap.servers", "127.0.0.1:1")];
        pairs.extend(txn_id.map(|t| ("transactional.id", t)));
        ClientConfig::from_pairs(pairs).expect("config")
    };
    for (consumer, producer, key) in [
        (
            member("read_uncommitted", "false"),
            producer(Some("t")),
            "isolation.level",
        ),
        (
            member("read_committed", "true"),
            producer(Some("t")),
            "enable.auto.commit",
        ),
        (
            member("read_committed", "false"),
            producer(None),
            "transactional.id",
        ),
    ] {
        let got = rt.block_on(TxnPipeline::new(consumer, producer, ["in"]));
        match got {
            Err(Error::Config(e)) => assert!(e.to_string().contains(key), "{key}: {e}"),
            other => panic!("{key}: {other:?}"),
        }
    }
}
