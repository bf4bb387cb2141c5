//! The tokio consumer: the shared consumer suite on the real broker (`poll` batches and
//! `recv`), and what a consumer does with no broker at all.

use std::time::{Duration, Instant};

use kafka_core::consumer::{ConsumerRecord, OffsetAndTimestamp};
use kafka_tests::consumer_suite::{self as suite, RECORDS};
use kafka_tokio::{Consumer, Error};
use tokio::runtime::Runtime;

/// How long an offset lookup may take.
const LOOKUP: Duration = Duration::from_secs(60);

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

struct Tokio {
    rt: Runtime,
    consumer: Consumer,
}

impl suite::Adapter for Tokio {
    fn assign(&mut self, partitions: &[(String, i32)]) {
        let parts = partitions.iter().map(|(t, p)| (t, *p));
        self.consumer.assign(parts).expect("assign");
    }
    fn seek(&mut self, topic: &str, partition: i32, offset: i64) {
        self.consumer.seek(topic, partition, offset).expect("seek");
    }
    fn seek_with_epoch(&mut self, topic: &str, partition: i32, offset: i64, epoch: i32) {
        self.consumer
            .seek_with_epoch(topic, partition, offset, Some(epoch))
            .expect("seek_with_epoch");
    }
    fn validations(&mut self) -> u64 {
        self.rt
            .block_on(self.consumer.metrics())
            .expect("metrics")
            .validations
    }
    fn seek_to_beginning(&mut self, partitions: &[(String, i32)]) {
        let parts = partitions.iter().map(|(t, p)| (t, *p));
        self.consumer
            .seek_to_beginning(parts)
            .expect("seek_to_beginning");
    }
    fn pause(&mut self, partitions: &[(String, i32)]) {
        let parts = partitions.iter().map(|(t, p)| (t, *p));
        self.consumer.pause(parts).expect("pause");
    }
    fn resume(&mut self, partitions: &[(String, i32)]) {
        let parts = partitions.iter().map(|(t, p)| (t, *p));
        self.consumer.resume(parts).expect("resume");
    }
    fn position(&mut self, topic: &str, partition: i32) -> Option<i64> {
        self.rt
            .block_on(self.consumer.position(topic, partition))
            .expect("position")
    }
    fn poll(&mut self, timeout: Duration) -> Vec<ConsumerRecord> {
        self.rt.block_on(self.consumer.poll(timeout)).expect("poll")
    }
    fn beginning_offsets(&mut self, partitions: &[(String, i32)]) -> suite::Lookup<i64> {
        let parts = partitions.iter().map(|(t, p)| (t, *p));
        let call = self.consumer.beginning_offsets(parts, LOOKUP);
        self.rt.block_on(call).expect("beginning_offsets")
    }
    fn end_offsets(&mut self, partitions: &[(String, i32)]) -> suite::Lookup<i64> {
        let parts = partitions.iter().map(|(t, p)| (t, *p));
        let call = self.consumer.end_offsets(parts, LOOKUP);
        self.rt.block_on(call).expect("end_offsets")
    }
    fn offsets_for_times(
        &mut self,
        times: &[((String, i32), i64)],
    ) -> suite::Lookup<Option<OffsetAndTimestamp>> {
        let times = times.iter().map(|((t, p), at)| ((t, *p), *at));
        let call = self.consumer.offsets_for_times(times, LOOKUP);
        self.rt.block_on(call).expect("offsets_for_times")
    }
    fn close(&mut self) {
        self.rt.block_on(self.consumer.close()).expect("close");
        let after = self.rt.block_on(self.consumer.recv());
        assert!(matches!(after, Err(Error::Closed)), "{after:?}");
    }
}

#[test]
fn simulated_cluster_on_loopback_every_record_once_under_faults() {
    suite::under_sim_faults("tokio", |c| {
        let rt = runtime();
        let consumer = rt.block_on(async { Consumer::new(c) }).expect("consumer");
        Tokio { rt, consumer }
    });
}

#[test]
fn real_broker_every_record_once_in_order_with_seek_pause_resume() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("consumer_tokio real broker") else {
        return;
    };
    let fixture = suite::prepare(&bootstrap, "tokio", RECORDS);
    let rt = runtime();
    let consumer = rt
        .block_on(async { Consumer::new(suite::config(&bootstrap, &[])) })
        .expect("consumer");
    let mut adapter = Tokio { rt, consumer };
    suite::run(&mut adapter, &fixture);
}

#[test]
fn real_broker_recv_hands_out_every_record_one_by_one() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("consumer_tokio recv") else {
        return;
    };
    let fixture = suite::prepare(&bootstrap, "tokio-recv", 5_000);
    let rt = runtime();
    rt.block_on(async {
        let consumer = Consumer::new(suite::config(&bootstrap, &[])).expect("consumer");
        consumer.assign(fixture.partitions()).expect("assign");
        let mut next = [0i64; suite::PARTITIONS as usize];
        for _ in 0..5_000 {
            let r = tokio::time::timeout(Duration::from_secs(30), consumer.recv())
                .await
                .expect("a record within 30 s")
                .expect("recv");
            assert_eq!(r.offset, next[r.partition as usize]);
            next[r.partition as usize] += 1;
        }
        let m = consumer.metrics().await.expect("metrics");
        assert!(m.fetches > 0 && m.records >= 5_000, "{m:?}");
        consumer.close().await.expect("close");
    });
}

#[test]
fn without_a_broker_poll_times_out_empty_and_close_ends_it() {
    let rt = runtime();
    rt.block_on(async {
        let consumer = Consumer::new(suite::config("127.0.0.1:1", &[])).expect("consumer");
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
        assert_eq!(consumer.position("t", 0).await.expect("position"), None);
        // A recv waiting when the consumer closes ends with Closed, not a hang.
        let waiting = tokio::spawn({
            let consumer = consumer.clone();
            async move { consumer.recv().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        consumer.close().await.expect("close");
        let ended = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("recv ends")
            .expect("task");
        assert!(matches!(ended, Err(Error::Closed)), "{ended:?}");
    });
}

/// The next item of a `Stream` (no `StreamExt` needed).
async fn next<S: futures_lite::Stream + Unpin>(s: &mut S) -> Option<S::Item> {
    std::future::poll_fn(|cx| std::pin::Pin::new(&mut *s).poll_next(cx)).await
}

#[test]
fn real_broker_stream_yields_every_record_until_closed() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("consumer_tokio stream") else {
        return;
    };
    let fixture = suite::prepare(&bootstrap, "tokio-stream", 5_000);
    let rt = runtime();
    rt.block_on(async {
        let consumer = Consumer::new(suite::config(&bootstrap, &[])).expect("consumer");
        consumer.assign(fixture.partitions()).expect("assign");
        let mut stream = consumer.clone();
        let mut offsets = [0i64; suite::PARTITIONS as usize];
        for _ in 0..5_000 {
            let r = tokio::time::timeout(Duration::from_secs(30), next(&mut stream))
                .await
                .expect("a record within 30 s")
                .expect("a record")
                .expect("no error");
            assert_eq!(r.offset, offsets[r.partition as usize]);
            offsets[r.partition as usize] += 1;
        }
        consumer.close().await.expect("close");
        assert!(
            next(&mut stream).await.is_none(),
            "the stream ends once closed"
        );
    });
}
