//! The mio adapter's transactions, each client in a caller-owned loop of its own: the
//! shared transaction suite on the real broker (commit and abort seen by
//! `read_committed`; a consume-transform-produce pipeline whose offsets commit with its
//! transactions). Transactional calls only start; the loop turns until the producer's
//! `take_transaction_result` has the call's result.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use kafka_core::client::OpId;
use kafka_core::config::ClientConfig;
use kafka_core::consumer::ConsumerRecord;
use kafka_core::group::{GroupConsumer, GroupEvent, GroupMetadata};
use kafka_core::producer::{
    Appended, Producer, ProducerMetrics, ProducerRecord, SendError, TxnError, TxnOffset, TxnOp,
    TxnState,
};
use kafka_mio::mio::{Events, Poll};
use kafka_mio::Driver;
use kafka_tests::txn_suite::{self as suite, PATIENCE};

/// A caller's loop around one driver.
struct Loop {
    poll: Poll,
    events: Events,
    driver: Driver,
}

impl Loop {
    fn new(config: ClientConfig) -> Loop {
        let poll = Poll::new().expect("poll");
        let driver = Driver::new(config, poll.registry(), 0..64).expect("driver");
        Loop {
            poll,
            events: Events::with_capacity(256),
            driver,
        }
    }

    /// One turn (at most `max`); the core's events are read through the views after it.
    fn turn(&mut self, max: Duration) {
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
    }
}

struct TxnProducer {
    lp: Loop,
    id: OpId<Producer>,
    /// Records sent since the last `outcomes`.
    sent: Vec<Appended>,
    /// Outcomes by (batch, index), from the reports.
    reported: HashMap<(u64, u32), Result<(), String>>,
}

impl TxnProducer {
    /// Turns the loop until the transactional call `op` (started with `start`) has its
    /// result.
    fn call(
        &mut self,
        op: TxnOp,
        start: impl FnOnce(&mut kafka_mio::ProducerView<'_>) -> Result<(), TxnError>,
    ) -> Result<(), TxnError> {
        start(&mut self.lp.driver.producer(self.id))?;
        let begun = Instant::now();
        loop {
            self.take_reports();
            if let Some((done, result)) = self.lp.driver.producer(self.id).take_transaction_result()
            {
                assert_eq!(done, op, "the result of the call under way");
                return result;
            }
            assert!(begun.elapsed() < PATIENCE, "{op:?} has no result");
            self.lp.turn(Duration::from_millis(50));
        }
    }

    fn take_reports(&mut self) {
        while let Some(r) = self.lp.driver.producer(self.id).take_report() {
            let outcome = r.outcome.as_ref().map(|_| ()).map_err(|e| e.to_string());
            for i in r.indexes() {
                self.reported.insert((r.batch.0, i), outcome.clone());
            }
        }
    }
}

struct Member {
    lp: Loop,
    id: OpId<GroupConsumer>,
}

struct Mio;

impl suite::Adapter for Mio {
    type Producer = TxnProducer;
    type Member = Member;
    fn producer(&mut self, config: ClientConfig) -> TxnProducer {
        let mut lp = Loop::new(config);
        let id = lp.driver.start_producer().expect("producer");
        let mut p = TxnProducer {
            lp,
            id,
            sent: Vec::new(),
            reported: HashMap::new(),
        };
        assert_eq!(
            p.lp.driver.producer(id).transaction_state(),
            Some(TxnState::Uninitialized)
        );
        p.call(TxnOp::Init, |v| v.init_transactions())
            .expect("init_transactions");
        assert_eq!(
            p.lp.driver.producer(id).transaction_state(),
            Some(TxnState::Ready)
        );
        p
    }
    fn member(&mut self, config: ClientConfig, topic: &str) -> Member {
        let mut lp = Loop::new(config);
        let id = lp.driver.start_group_consumer([topic]).expect("group");
        Member { lp, id }
    }
}

impl suite::TxnProducer for TxnProducer {
    fn begin(&mut self) {
        let mut view = self.lp.driver.producer(self.id);
        view.begin_transaction().expect("begin_transaction");
        assert_eq!(view.transaction_state(), Some(TxnState::InTransaction));
        // A second begin is refused, typed.
        let again = view.begin_transaction();
        assert!(
            matches!(again, Err(TxnError::InvalidState { .. })),
            "{again:?}"
        );
    }
    fn send(&mut self, topic: &str, key: &str, value: &str) {
        let record = ProducerRecord::new(topic, value.as_bytes()).key(key.as_bytes());
        let start = Instant::now();
        loop {
            match self.lp.driver.producer(self.id).send(&record) {
                Ok(a) => return self.sent.push(a),
                Err(SendError::WouldBlock(_)) => {
                    assert!(start.elapsed() < PATIENCE, "send blocks");
                    self.lp.turn(Duration::from_millis(20));
                    self.take_reports();
                }
                Err(e) => panic!("send: {e}"),
            }
        }
    }
    fn outcomes(&mut self) -> Vec<Result<(), String>> {
        let start = Instant::now();
        loop {
            self.take_reports();
            let all = self
                .sent
                .iter()
                .all(|a| self.reported.contains_key(&(a.batch.0, a.index)));
            if all {
                break;
            }
            assert!(start.elapsed() < PATIENCE, "records unreported");
            self.lp.turn(Duration::from_millis(50));
        }
        self.sent
            .drain(..)
            .map(|a| {
                self.reported
                    .remove(&(a.batch.0, a.index))
                    .expect("reported")
            })
            .collect()
    }
    fn send_offsets(&mut self, offsets: Vec<TxnOffset>, group: &GroupMetadata) {
        self.call(TxnOp::SendOffsets, |v| {
            v.send_offsets_to_transaction(offsets, group)
        })
        .expect("send_offsets_to_transaction");
    }
    fn commit(&mut self) -> Result<(), String> {
        let r = self.call(TxnOp::Commit, |v| v.commit_transaction());
        r.map_err(|e| e.to_string())
    }
    fn abort(&mut self) -> Result<(), String> {
        let r = self.call(TxnOp::Abort, |v| v.abort_transaction());
        r.map_err(|e| e.to_string())
    }
    fn close(&mut self) -> ProducerMetrics {
        self.lp.driver.producer(self.id).close();
        let start = Instant::now();
        loop {
            self.take_reports();
            if let Some(m) = self.lp.driver.take_output(self.id) {
                let after = self.lp.driver.producer(self.id).commit_transaction();
                assert_eq!(after, Err(TxnError::Closed), "a call after close");
                self.lp.driver.shutdown(self.lp.poll.registry());
                return m;
            }
            assert!(start.elapsed() < PATIENCE, "close hangs");
            self.lp.turn(Duration::from_millis(50));
        }
    }
}

impl Member {
    fn take_events(&mut self) {
        while let Some(e) = self.lp.driver.group_consumer(self.id).take_event() {
            if let GroupEvent::Failed(e) = e {
                panic!("member failed: {e}");
            }
        }
    }
}

impl suite::TxnMember for Member {
    fn poll(&mut self, timeout: Duration) -> Vec<ConsumerRecord> {
        let until = Instant::now() + timeout;
        let mut out = Vec::new();
        loop {
            self.take_events();
            let mut view = self.lp.driver.group_consumer(self.id);
            if let Some(e) = view.take_error() {
                panic!("consume error: {e}");
            }
            if view.poll(&mut out) > 0 {
                return out;
            }
            let now = Instant::now();
            if now >= until {
                return out;
            }
            self.lp.turn(until - now);
        }
    }
    fn transaction_offsets(&mut self) -> (GroupMetadata, Vec<TxnOffset>) {
        let mut view = self.lp.driver.group_consumer(self.id);
        let (meta, offsets) = view.transaction_offsets().expect("running");
        assert_eq!(view.group_metadata().as_ref(), Some(&meta));
        (meta, offsets)
    }
    fn close(&mut self) {
        self.lp.driver.group_consumer(self.id).close();
        let start = Instant::now();
        while self.lp.driver.take_output(self.id).is_none() {
            assert!(start.elapsed() < PATIENCE, "close hangs");
            self.take_events();
            self.lp.turn(Duration::from_millis(20));
        }
        assert!(self
            .lp
            .driver
            .group_consumer(self.id)
            .transaction_offsets()
            .is_none());
        self.lp.driver.shutdown(self.lp.poll.registry());
    }
}

#[test]
fn real_broker_committed_once_aborted_never() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("txn_mio commit and abort") else {
        return;
    };
    suite::commit_and_abort(&mut Mio, &bootstrap, "mio");
}

#[test]
fn real_broker_consume_transform_produce_commits_offsets_with_the_output() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("txn_mio consume-transform-produce") else {
        return;
    };
    suite::consume_transform_produce(&mut Mio, &bootstrap, "mio");
}
