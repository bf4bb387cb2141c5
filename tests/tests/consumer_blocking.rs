//! The blocking consumer: the shared consumer suite on the real broker, and what a
//! consumer does with no broker at all.

use std::time::{Duration, Instant};

use kafka_blocking::{Consumer, Error};
use kafka_core::consumer::{ConsumerRecord, OffsetAndTimestamp};
use kafka_tests::consumer_suite::{self as suite, RECORDS};

/// How long an offset lookup may take.
const LOOKUP: Duration = Duration::from_secs(60);

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
    fn seek_with_epoch(&mut self, topic: &str, partition: i32, offset: i64, epoch: i32) {
        self.0
            .seek_with_epoch(topic, partition, offset, Some(epoch))
            .expect("seek_with_epoch");
    }
    fn validations(&mut self) -> u64 {
        self.0.metrics().expect("metrics").validations
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
    fn beginning_offsets(&mut self, partitions: &[(String, i32)]) -> suite::Lookup<i64> {
        let parts = partitions.iter().map(|(t, p)| (t, *p));
        self.0
            .beginning_offsets(parts, LOOKUP)
            .expect("beginning_offsets")
    }
    fn end_offsets(&mut self, partitions: &[(String, i32)]) -> suite::Lookup<i64> {
        let parts = partitions.iter().map(|(t, p)| (t, *p));
        self.0.end_offsets(parts, LOOKUP).expect("end_offsets")
    }
    fn offsets_for_times(
        &mut self,
        times: &[((String, i32), i64)],
    ) -> suite::Lookup<Option<OffsetAndTimestamp>> {
        let times = times.iter().map(|((t, p), at)| ((t, *p), *at));
        self.0
            .offsets_for_times(times, LOOKUP)
            .expect("offsets_for_times")
    }
    fn close(&mut self) {
        self.0.close().expect("close");
        assert!(matches!(self.0.poll(Duration::ZERO), Err(Error::Closed)));
    }
}

#[test]
fn simulated_cluster_on_loopback_every_record_once_under_faults() {
    suite::under_sim_faults("blocking", |c| {
        Blocking(Consumer::new(c).expect("consumer"))
    });
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

#[test]
fn real_broker_by_duration_starts_at_the_first_recent_record_or_the_log_end() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("consumer_blocking by_duration") else {
        return;
    };
    use kafka_tests::producer_suite as ps;
    let topic = ps::unique_topic("by-duration");
    ps::create_topic_with(&bootstrap, &topic, 1);
    let producer = kafka_blocking::Producer::new(ps::config(&bootstrap, &[])).expect("producer");
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    // Offsets 0-4 two hours old, 5-9 written now.
    for i in 0..10 {
        let mut r = kafka_blocking::Record::new(topic.as_str(), format!("v{i}")).partition(0);
        if i < 5 {
            r = r.timestamp(now_ms - 2 * 3_600_000);
        }
        producer.send(r).expect("send").wait().expect("delivered");
    }
    let hour = Consumer::new(suite::config(
        &bootstrap,
        &[("auto.offset.reset", "by_duration:PT1H")],
    ))
    .expect("consumer");
    hour.assign([(topic.as_str(), 0)]).expect("assign");
    let mut got = Vec::new();
    let start = Instant::now();
    while got.len() < 5 {
        assert!(start.elapsed() < Duration::from_secs(60), "got {got:?}");
        got.extend(hour.poll(Duration::from_millis(200)).expect("poll"));
    }
    let offsets: Vec<i64> = got.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, [5, 6, 7, 8, 9]);
    hour.close().expect("close");

    // Nothing in the last second (once a second has passed): the log end.
    std::thread::sleep(Duration::from_millis(1_500));
    let second = Consumer::new(suite::config(
        &bootstrap,
        &[("auto.offset.reset", "by_duration:PT1S")],
    ))
    .expect("consumer");
    second.assign([(topic.as_str(), 0)]).expect("assign");
    let start = Instant::now();
    while second.position(&topic, 0).expect("position").is_none() {
        assert!(start.elapsed() < Duration::from_secs(60), "never reset");
        assert!(second
            .poll(Duration::from_millis(100))
            .expect("poll")
            .is_empty());
    }
    assert_eq!(second.position(&topic, 0).expect("position"), Some(10));
    let r = kafka_blocking::Record::new(topic.as_str(), "new").partition(0);
    producer.send(r).expect("send").wait().expect("delivered");
    let mut got = Vec::new();
    let start = Instant::now();
    while got.is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the new record never came"
        );
        got = second.poll(Duration::from_millis(200)).expect("poll");
    }
    assert_eq!(got[0].offset, 10);
    second.close().expect("close");
    producer.close(Duration::from_secs(30)).expect("close");
}
