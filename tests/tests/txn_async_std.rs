//! The async-std adapter's transactions: the shared transaction suite on the real
//! broker (commit and abort seen by `read_committed`; a consume-transform-produce
//! pipeline whose offsets commit with its transactions), on async-std's executor.

use std::time::Duration;

use async_std::task::block_on;
use kafka_async_std::{DeliveryFuture, GroupConsumer, Producer, Record, TxnPipeline};
use kafka_core::config::ClientConfig;
use kafka_core::consumer::ConsumerRecord;
use kafka_core::group::GroupMetadata;
use kafka_core::producer::{ProducerMetrics, TxnOffset};
use kafka_tests::txn_suite::{self as suite, PATIENCE};

struct AsyncStd;

/// The group consumer (a local type for the suite's trait).
struct Member(GroupConsumer);

struct TxnProducer {
    p: Producer,
    sent: Vec<DeliveryFuture>,
}

impl suite::Adapter for AsyncStd {
    type Producer = TxnProducer;
    type Member = Member;
    fn producer(&mut self, config: ClientConfig) -> TxnProducer {
        let p = Producer::new(config).expect("producer");
        block_on(p.init_transactions(PATIENCE)).expect("init_transactions");
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
        block_on(self.p.begin_transaction()).expect("begin_transaction");
    }
    fn send(&mut self, topic: &str, key: &str, value: &str) {
        let record = Record::new(topic, value.to_string()).key(key.to_string());
        self.sent.push(block_on(self.p.send(record)).expect("send"));
    }
    fn outcomes(&mut self) -> Vec<Result<(), String>> {
        let sent = std::mem::take(&mut self.sent);
        block_on(async {
            let mut out = Vec::with_capacity(sent.len());
            for d in sent {
                let o = async_std::future::timeout(PATIENCE, d)
                    .await
                    .expect("an outcome in time");
                out.push(o.map(|_| ()).map_err(|e| e.to_string()));
            }
            out
        })
    }
    fn send_offsets(&mut self, offsets: Vec<TxnOffset>, group: &GroupMetadata) {
        block_on(self.p.send_offsets_to_transaction(offsets, group, PATIENCE))
            .expect("send_offsets_to_transaction");
    }
    fn commit(&mut self) -> Result<(), String> {
        block_on(self.p.commit_transaction(PATIENCE)).map_err(|e| e.to_string())
    }
    fn abort(&mut self) -> Result<(), String> {
        block_on(self.p.abort_transaction(PATIENCE)).map_err(|e| e.to_string())
    }
    fn close(&mut self) -> ProducerMetrics {
        block_on(self.p.close(PATIENCE)).expect("close")
    }
}

impl suite::TxnMember for Member {
    fn poll(&mut self, timeout: Duration) -> Vec<ConsumerRecord> {
        block_on(self.0.poll(timeout)).expect("poll")
    }
    fn transaction_offsets(&mut self) -> (GroupMetadata, Vec<TxnOffset>) {
        block_on(self.0.transaction_offsets()).expect("transaction_offsets")
    }
    fn close(&mut self) {
        block_on(self.0.close()).expect("close");
    }
}

#[test]
fn real_broker_committed_once_aborted_never() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("txn_async_std commit and abort") else {
        return;
    };
    suite::commit_and_abort(&mut AsyncStd, &bootstrap, "async-std");
}

#[test]
fn real_broker_consume_transform_produce_commits_offsets_with_the_output() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("txn_async_std consume-transform-produce")
    else {
        return;
    };
    suite::consume_transform_produce(&mut AsyncStd, &bootstrap, "async-std");
}

#[test]
fn real_broker_txn_pipeline_moves_every_record_once() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("txn_async_std TxnPipeline") else {
        return;
    };
    suite::txn_pipeline(
        &bootstrap,
        "async-std",
        |consumer, producer, input, output| {
            block_on(async {
                let pipeline = TxnPipeline::new(consumer, producer, [input])
                    .await
                    .expect("pipeline");
                let mut rounds = suite::Rounds::default();
                while rounds.more() {
                    let round =
                        pipeline.run_once(Duration::from_millis(200), suite::to_output(output));
                    rounds.add(round.await.expect("a round"));
                }
                pipeline.close().await.expect("close");
                rounds.rounds()
            })
        },
    );
}
