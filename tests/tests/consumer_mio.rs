//! The mio consumer, in a caller-owned loop: the shared consumer suite on the real
//! broker (records taken after the consumer's `Event::Notify`).

use std::time::{Duration, Instant};

use kafka_core::client::{Event, OpId};
use kafka_core::consumer::{Consumer, ConsumerRecord, OffsetAndTimestamp};
use kafka_mio::mio::{Events, Poll};
use kafka_mio::Driver;
use kafka_tests::consumer_suite::{self as suite, RECORDS};

struct Mio {
    poll: Poll,
    events: Events,
    driver: Driver,
    id: OpId<Consumer>,
}

impl Mio {
    fn new(bootstrap: &str) -> Self {
        Mio::with_config(suite::config(bootstrap, &[]))
    }

    fn with_config(config: kafka_core::config::ClientConfig) -> Self {
        let poll = Poll::new().expect("poll");
        let mut driver = Driver::new(config, poll.registry(), 0..64).expect("driver");
        let id = driver.start_consumer();
        Mio {
            poll,
            events: Events::with_capacity(256),
            driver,
            id,
        }
    }

    /// One turn of the caller's loop: wait (at most `max`), hand over readiness, drain;
    /// `true` if the consumer notified or finished.
    fn turn(&mut self, max: Duration) -> bool {
        let wait = self.driver.timeout().map_or(max, |t| t.min(max));
        self.poll.poll(&mut self.events, Some(wait)).expect("poll");
        for event in self.events.iter() {
            if self.driver.owns(event.token()) {
                self.driver.handle_event(self.poll.registry(), event);
            }
        }
        self.driver.handle_timeout(self.poll.registry());
        self.driver.poll(self.poll.registry());
        let mut ours = false;
        while let Some(event) = self.driver.poll_event() {
            ours |= matches!(event, Event::Notify(op) | Event::OperationDone(op) if self.id == op);
        }
        ours
    }

    /// Turns the loop until operation `id` ended (a minute at most); its output.
    fn await_op<O: kafka_core::client::Operation>(&mut self, id: OpId<O>) -> O::Output {
        let start = Instant::now();
        loop {
            if let Some(out) = self.driver.take_output(id) {
                return out;
            }
            assert!(start.elapsed() < Duration::from_secs(60), "lookup hangs");
            self.turn(Duration::from_millis(20));
        }
    }

    fn parts(partitions: &[(String, i32)]) -> impl Iterator<Item = (&str, i32)> {
        partitions.iter().map(|(t, p)| (t.as_str(), *p))
    }
}

impl suite::Adapter for Mio {
    fn assign(&mut self, partitions: &[(String, i32)]) {
        self.driver
            .consumer(self.id)
            .assign(Self::parts(partitions));
    }
    fn seek(&mut self, topic: &str, partition: i32, offset: i64) {
        self.driver.consumer(self.id).seek(topic, partition, offset);
    }
    fn seek_with_epoch(&mut self, topic: &str, partition: i32, offset: i64, epoch: i32) {
        self.driver
            .consumer(self.id)
            .seek_with_epoch(topic, partition, offset, Some(epoch));
    }
    fn validations(&mut self) -> u64 {
        self.driver
            .consumer(self.id)
            .metrics()
            .expect("a running consumer")
            .validations
    }
    fn seek_to_beginning(&mut self, partitions: &[(String, i32)]) {
        self.driver
            .consumer(self.id)
            .seek_to_beginning(Self::parts(partitions));
    }
    fn pause(&mut self, partitions: &[(String, i32)]) {
        self.driver.consumer(self.id).pause(Self::parts(partitions));
    }
    fn resume(&mut self, partitions: &[(String, i32)]) {
        self.driver
            .consumer(self.id)
            .resume(Self::parts(partitions));
    }
    fn position(&mut self, topic: &str, partition: i32) -> Option<i64> {
        // Resets are answered through the loop: give it a turn first.
        self.turn(Duration::from_millis(5));
        self.driver.consumer(self.id).position(topic, partition)
    }
    fn poll(&mut self, timeout: Duration) -> Vec<ConsumerRecord> {
        let until = Instant::now() + timeout;
        let mut out = Vec::new();
        loop {
            let mut view = self.driver.consumer(self.id);
            if let Some(e) = view.take_error() {
                panic!("consume error: {e}");
            }
            if view.poll(&mut out) > 0 {
                // The core fetches again after a take: let the loop send it.
                self.driver.poll(self.poll.registry());
                return out;
            }
            let now = Instant::now();
            if now >= until {
                return out;
            }
            self.turn(until - now);
        }
    }
    fn beginning_offsets(&mut self, partitions: &[(String, i32)]) -> suite::Lookup<i64> {
        let id = self.driver.beginning_offsets(Self::parts(partitions));
        self.await_op(id).expect("beginning_offsets")
    }
    fn end_offsets(&mut self, partitions: &[(String, i32)]) -> suite::Lookup<i64> {
        let id = self.driver.end_offsets(Self::parts(partitions));
        self.await_op(id).expect("end_offsets")
    }
    fn offsets_for_times(
        &mut self,
        times: &[((String, i32), i64)],
    ) -> suite::Lookup<Option<OffsetAndTimestamp>> {
        let times = times.iter().map(|((t, p), at)| ((t.as_str(), *p), *at));
        let id = self.driver.offsets_for_times(times);
        self.await_op(id).expect("offsets_for_times")
    }
    fn close(&mut self) {
        self.driver.consumer(self.id).close();
        let start = Instant::now();
        while self.driver.take_output(self.id).is_none() {
            assert!(start.elapsed() < Duration::from_secs(10), "close hangs");
            self.turn(Duration::from_millis(20));
        }
        let mut out = Vec::new();
        assert_eq!(self.driver.consumer(self.id).poll(&mut out), 0);
        self.driver.shutdown(self.poll.registry());
    }
}

#[test]
fn simulated_cluster_on_loopback_every_record_once_under_faults() {
    suite::under_sim_faults("mio", Mio::with_config);
}

#[test]
fn real_broker_every_record_once_in_order_with_seek_pause_resume() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("consumer_mio real broker") else {
        return;
    };
    let fixture = suite::prepare(&bootstrap, "mio", RECORDS);
    suite::run(&mut Mio::new(&bootstrap), &fixture);
}
