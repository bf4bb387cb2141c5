//! The tokio group consumer: the shared group suite on the real broker (the listener
//! commits with `commit_async` on revocation; its handles are awaited and checked).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_core::config::ClientConfig;
use kafka_core::consumer::ConsumerRecord;
use kafka_tests::group_suite as suite;
use kafka_tokio::{CommitHandle, Error, GroupConsumer, Offsets, Rebalance};
use tokio::runtime::Runtime;

struct Tokio(Arc<Runtime>);

struct Member {
    rt: Arc<Runtime>,
    c: GroupConsumer,
    events: Arc<Mutex<Vec<Rebalance>>>,
    commits: Arc<Mutex<Vec<CommitHandle>>>,
}

impl suite::Adapter for Tokio {
    type Member = Member;
    fn member(&mut self, config: ClientConfig) -> Member {
        let c = self
            .0
            .block_on(async { GroupConsumer::new(config) })
            .expect("group consumer");
        Member {
            rt: self.0.clone(),
            c,
            events: Arc::default(),
            commits: Arc::default(),
        }
    }
}

impl suite::Member for Member {
    fn subscribe(&mut self, topic: &str) {
        let (events, commits) = (self.events.clone(), self.commits.clone());
        self.c
            .subscribe_with([topic], move |c: &GroupConsumer, e: &Rebalance| {
                events.lock().unwrap().push(e.clone());
                if let Rebalance::Revoked(_) = e {
                    commits
                        .lock()
                        .unwrap()
                        .push(c.commit_async(Offsets::Consumed));
                }
            })
            .expect("subscribe");
    }
    fn poll(&mut self, timeout: Duration) -> Vec<ConsumerRecord> {
        let got = self.rt.block_on(self.c.poll(timeout)).expect("poll");
        let handles = std::mem::take(&mut *self.commits.lock().unwrap());
        for h in handles {
            self.rt
                .block_on(h)
                .expect("commit from the revocation listener");
        }
        got
    }
    fn events(&mut self) -> Vec<Rebalance> {
        std::mem::take(&mut *self.events.lock().unwrap())
    }
    fn commit_sync(&mut self, offsets: Offsets) -> Result<(), String> {
        self.rt
            .block_on(self.c.commit_sync(offsets, Duration::from_secs(30)))
            .map_err(|e| e.to_string())
    }
    fn pause(&mut self, partitions: &[(String, i32)]) {
        let parts = partitions.iter().map(|(t, p)| (t, *p));
        self.c.pause(parts).expect("pause");
    }
    fn resume(&mut self, partitions: &[(String, i32)]) {
        let parts = partitions.iter().map(|(t, p)| (t, *p));
        self.c.resume(parts).expect("resume");
    }
    fn close(&mut self) {
        self.rt.block_on(self.c.close()).expect("close");
        let after = self.rt.block_on(self.c.recv());
        assert!(matches!(after, Err(Error::Closed)), "{after:?}");
    }
}

#[test]
fn real_broker_two_members_rebalance_commit_and_hand_over() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("group_tokio real broker") else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    suite::run(&mut Tokio(Arc::new(rt)), &bootstrap, "tokio");
}

/// The next item of a `Stream` (no `StreamExt` needed).
async fn next<S: futures_lite::Stream + Unpin>(s: &mut S) -> Option<S::Item> {
    std::future::poll_fn(|cx| std::pin::Pin::new(&mut *s).poll_next(cx)).await
}

#[test]
fn real_broker_stream_yields_the_group_records() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("group_tokio stream") else {
        return;
    };
    let fixture = kafka_tests::consumer_suite::prepare(&bootstrap, "group-tokio-stream", 2_000);
    let rt = Runtime::new().expect("runtime");
    rt.block_on(async {
        let config = suite::config(&bootstrap, &format!("{}-g", fixture.topic));
        let consumer = GroupConsumer::new(config).expect("consumer");
        consumer
            .subscribe([fixture.topic.as_str()])
            .expect("subscribe");
        let mut stream = consumer.clone();
        let mut offsets = [0i64; suite::PARTITIONS as usize];
        for _ in 0..2_000 {
            let r = tokio::time::timeout(Duration::from_secs(60), next(&mut stream))
                .await
                .expect("a record within 60 s")
                .expect("a record")
                .expect("no error");
            assert_eq!(r.offset, offsets[r.partition as usize]);
            offsets[r.partition as usize] += 1;
        }
        consumer
            .commit_sync(Offsets::Consumed, Duration::from_secs(30))
            .await
            .expect("commit");
        consumer.close().await.expect("close");
        assert!(
            next(&mut stream).await.is_none(),
            "the stream ends once closed"
        );
    });
}
