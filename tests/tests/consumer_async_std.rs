//! The async-io consumer: the shared consumer suite on the real broker with async-std,
//! the `Stream` impl with smol, and what a consumer does with no broker at all.

use std::time::{Duration, Instant};

use futures_lite::StreamExt;
use kafka_async_std::{Consumer, Error};
use kafka_core::consumer::{ConsumerRecord, OffsetAndTimestamp};
use kafka_tests::consumer_suite::{self as suite, RECORDS};

/// How long an offset lookup may take.
const LOOKUP: Duration = Duration::from_secs(60);

struct AsyncStd(Consumer);

impl suite::Adapter for AsyncStd {
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
        async_std::task::block_on(self.0.metrics())
            .expect("metrics")
            .validations
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
        async_std::task::block_on(self.0.position(topic, partition)).expect("position")
    }
    fn poll(&mut self, timeout: Duration) -> Vec<ConsumerRecord> {
        async_std::task::block_on(self.0.poll(timeout)).expect("poll")
    }
    fn beginning_offsets(&mut self, partitions: &[(String, i32)]) -> suite::Lookup<i64> {
        let parts = partitions.iter().map(|(t, p)| (t, *p));
        async_std::task::block_on(self.0.beginning_offsets(parts, LOOKUP))
            .expect("beginning_offsets")
    }
    fn end_offsets(&mut self, partitions: &[(String, i32)]) -> suite::Lookup<i64> {
        let parts = partitions.iter().map(|(t, p)| (t, *p));
        async_std::task::block_on(self.0.end_offsets(parts, LOOKUP)).expect("end_offsets")
    }
    fn offsets_for_times(
        &mut self,
        times: &[((String, i32), i64)],
    ) -> suite::Lookup<Option<OffsetAndTimestamp>> {
        let times = times.iter().map(|((t, p), at)| ((t, *p), *at));
        async_std::task::block_on(self.0.offsets_for_times(times, LOOKUP))
            .expect("offsets_for_times")
    }
    fn close(&mut self) {
        async_std::task::block_on(self.0.close()).expect("close");
        let after = async_std::task::block_on(self.0.recv());
        assert!(matches!(after, Err(Error::Closed)), "{after:?}");
    }
}

#[test]
fn simulated_cluster_on_loopback_every_record_once_under_faults() {
    suite::under_sim_faults("async-std", |c| {
        AsyncStd(Consumer::new(c).expect("consumer"))
    });
}

#[test]
fn real_broker_every_record_once_in_order_with_seek_pause_resume() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("consumer_async_std real broker") else {
        return;
    };
    let fixture = suite::prepare(&bootstrap, "async-std", RECORDS);
    let consumer = Consumer::new(suite::config(&bootstrap, &[])).expect("consumer");
    suite::run(&mut AsyncStd(consumer), &fixture);
}

#[test]
fn real_broker_smol_stream_yields_every_record_until_closed() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("consumer_async_std smol stream") else {
        return;
    };
    let fixture = suite::prepare(&bootstrap, "smol", 5_000);
    smol::block_on(async {
        let config = suite::config(&bootstrap, &[]);
        let consumer =
            Consumer::with_spawner(config, |task| smol::spawn(task).detach()).expect("consumer");
        consumer.assign(fixture.partitions()).expect("assign");
        let mut stream = consumer.clone();
        let mut next = [0i64; suite::PARTITIONS as usize];
        for _ in 0..5_000 {
            let r = stream.next().await.expect("a record").expect("no error");
            assert_eq!(r.offset, next[r.partition as usize]);
            next[r.partition as usize] += 1;
        }
        consumer.close().await.expect("close");
        assert!(stream.next().await.is_none(), "the stream ends once closed");
    });
}

#[test]
fn without_a_broker_poll_times_out_empty_and_close_ends_it() {
    smol::block_on(async {
        let config = suite::config("127.0.0.1:1", &[]);
        let consumer =
            Consumer::with_spawner(config, |task| smol::spawn(task).detach()).expect("consumer");
        consumer.assign([("t", 0)]).expect("assign");
        let start = Instant::now();
        let got = consumer
            .poll(Duration::from_millis(300))
            .await
            .expect("poll");
        assert!(got.is_empty());
        assert!(start.elapsed() >= Duration::from_millis(300));
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        consumer.close().await.expect("close");
        assert!(matches!(consumer.recv().await, Err(Error::Closed)));
    });
}
