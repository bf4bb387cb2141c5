//! The blocking consumer: the shared consumer suite on the real broker, and what a
//! consumer does with no broker at all.

use std::time::{Duration, Instant};

use kafka_blocking::{Consumer, Error};
use kafka_core::consumer::ConsumerRecord;
use kafka_tests::consumer_suite::{self as suite, RECORDS};

struct Blocking(Consumer);

impl suite::Adapter for Blocking {
    fn assign(&mut self, partitions: &[(String, i32)]) {
        self.0
            .assign(partitions.iter().map(|(t, p)| (t, *p)))
            .expect("assign");
    }
    fn seek(&mut self, topic: &str, partition: i32, offset: i64) {
        self.0.seek(topic, partition, offset).expect("seek");
    }
    fn seek_to_beginning(&mut self, partitions: &[(String, i32)]) {
        self.0
            .seek_to_beginning(partitions.iter().map(|(t, p)| (t, *p)))
            .expect("seek_to_beginning");
    }
    fn pause(&mut self, partitions: &[(String, i32)]) {
        self.0
            .pause(partitions.iter().map(|(t, p)| (t, *p)))
            .expect("pause");
    }
    fn resume(&mut self, partitions: &[(String, i32)]) {
        self.0
            .resume(partitions.iter().map(|(t, p)| (t, *p)))
            .expect("resume");
    }
    fn position(&mut self, topic: &str, partition: i32) -> Option<i64> {
        self.0.position(topic, partition).expect("position")
    }
    fn poll(&mut self, timeout: Duration) -> Vec<ConsumerRecord> {
        self.0.poll(timeout).expect("poll")
    }
    fn close(&mut self) {
        self.0.close().expect("close");
        assert!(matches!(self.0.poll(Duration::ZERO), Err(Error::Closed)));
    }
}

#[test]
fn real_broker_every_record_once_in_order_with_seek_pause_resume() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("consumer_blocking real broker") else {
        return;
    };
    let fixture = suite::prepare(&bootstrap, "blocking", RECORDS);
    let consumer = Consumer::new(suite::config(&bootstrap, &[])).expect("consumer");
    suite::run(&mut Blocking(consumer), &fixture);
}

#[test]
fn without_a_broker_poll_times_out_empty_and_close_ends_it() {
    // A port nothing listens on: connections fail and are retried, polls stay empty.
    let consumer = Consumer::new(suite::config("127.0.0.1:1", &[])).expect("consumer");
    consumer.assign([("t", 0)]).expect("assign");
    let start = Instant::now();
    let got = consumer.poll(Duration::from_millis(300)).expect("poll");
    assert!(got.is_empty());
    assert!(start.elapsed() >= Duration::from_millis(300));
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(consumer.position("t", 0).expect("position"), None);
    consumer.close().expect("close");
    assert!(matches!(consumer.poll(Duration::ZERO), Err(Error::Closed)));
    assert!(matches!(consumer.seek("t", 0, 1), Err(Error::Closed)));
}
