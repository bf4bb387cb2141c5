//! The async-io group consumer (async-std): the shared group suite on the real broker (the listener
//! commits with `commit_async` on revocation; its handles are awaited and checked),
//! and the smol `Stream` of records.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_async_std::{CommitHandle, Error, GroupConsumer, Offsets, Rebalance};
use kafka_core::config::ClientConfig;
use kafka_core::consumer::ConsumerRecord;
use kafka_tests::group_suite as suite;

struct AsyncStd;

struct Member {
    c: GroupConsumer,
    events: Arc<Mutex<Vec<Rebalance>>>,
    commits: Arc<Mutex<Vec<CommitHandle>>>,
}

impl suite::Adapter for AsyncStd {
    type Member = Member;
    fn member(&mut self, config: ClientConfig) -> Member {
        let c = GroupConsumer::new(config).expect("group consumer");
        Member {
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
        let got = async_std::task::block_on(self.c.poll(timeout)).expect("poll");
        let handles = std::mem::take(&mut *self.commits.lock().unwrap());
        for h in handles {
            async_std::task::block_on(h).expect("commit from the revocation listener");
        }
        got
    }
    fn events(&mut self) -> Vec<Rebalance> {
        std::mem::take(&mut *self.events.lock().unwrap())
    }
    fn commit_sync(&mut self, offsets: Offsets) -> Result<(), String> {
        async_std::task::block_on(self.c.commit_sync(offsets, Duration::from_secs(30)))
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
        async_std::task::block_on(self.c.close()).expect("close");
        let after = async_std::task::block_on(self.c.recv());
        assert!(matches!(after, Err(Error::Closed)), "{after:?}");
    }
}

#[test]
fn real_broker_two_members_rebalance_commit_and_hand_over() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("group_async_std real broker") else {
        return;
    };
    suite::run(&mut AsyncStd, &bootstrap, "async-std");
}

#[test]
fn real_broker_smol_stream_yields_the_group_records() {
    use futures_lite::StreamExt;
    let Some(bootstrap) = kafka_tests::broker_or_skip("group_async_std smol stream") else {
        return;
    };
    let fixture = kafka_tests::consumer_suite::prepare(&bootstrap, "group-smol", 2_000);
    smol::block_on(async {
        let config = suite::config(&bootstrap, &format!("{}-g", fixture.topic));
        let consumer = GroupConsumer::with_spawner(config, |task| smol::spawn(task).detach())
            .expect("consumer");
        consumer
            .subscribe([fixture.topic.as_str()])
            .expect("subscribe");
        let mut stream = consumer.clone();
        let mut next = [0i64; suite::PARTITIONS as usize];
        for _ in 0..2_000 {
            let r = stream.next().await.expect("a record").expect("no error");
            assert_eq!(r.offset, next[r.partition as usize]);
            next[r.partition as usize] += 1;
        }
        consumer
            .commit_sync(Offsets::Consumed, Duration::from_secs(30))
            .await
            .expect("commit");
        consumer.close().await.expect("close");
        assert!(stream.next().await.is_none(), "the stream ends once closed");
    });
}
