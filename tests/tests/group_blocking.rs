//! The blocking group consumer: the shared group suite on the real broker (two members,
//! a rebalance with a commit in the revocation listener, commit_sync checked against
//! the broker, close hands over at once), and what it does with no broker at all.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_blocking::{Error, GroupConsumer, Offsets, Rebalance};
use kafka_core::config::ClientConfig;
use kafka_core::consumer::ConsumerRecord;
use kafka_tests::group_suite as suite;

struct Blocking;

struct Member {
    c: GroupConsumer,
    events: Arc<Mutex<Vec<Rebalance>>>,
}

impl suite::Adapter for Blocking {
    type Member = Member;
    fn member(&mut self, config: ClientConfig) -> Member {
        Member {
            c: GroupConsumer::new(config).expect("group consumer"),
            events: Arc::default(),
        }
    }
}

impl suite::Member for Member {
    fn subscribe(&mut self, topic: &str) {
        let events = self.events.clone();
        self.c
            .subscribe_with([topic], move |c: &GroupConsumer, e: &Rebalance| {
                events.lock().unwrap().push(e.clone());
                if let Rebalance::Revoked(_) = e {
                    c.commit_sync(Offsets::Consumed, Duration::from_secs(30))
                        .expect("commit in the revocation listener");
                }
            })
            .expect("subscribe");
    }
    fn poll(&mut self, timeout: Duration) -> Vec<ConsumerRecord> {
        self.c.poll(timeout).expect("poll")
    }
    fn events(&mut self) -> Vec<Rebalance> {
        std::mem::take(&mut *self.events.lock().unwrap())
    }
    fn commit_sync(&mut self, offsets: Offsets) -> Result<(), String> {
        self.c
            .commit_sync(offsets, Duration::from_secs(30))
            .map_err(|e| e.to_string())
    }
    fn pause(&mut self, partitions: &[(String, i32)]) {
        self.c
            .pause(partitions.iter().map(|(t, p)| (t, *p)))
            .expect("pause");
    }
    fn resume(&mut self, partitions: &[(String, i32)]) {
        self.c
            .resume(partitions.iter().map(|(t, p)| (t, *p)))
            .expect("resume");
    }
    fn close(&mut self) {
        self.c.close().expect("close");
        assert!(matches!(self.c.poll(Duration::ZERO), Err(Error::Closed)));
    }
}

#[test]
fn real_broker_two_members_rebalance_commit_and_hand_over() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("group_blocking real broker") else {
        return;
    };
    suite::run(&mut Blocking, &bootstrap, "blocking");
}

#[test]
fn without_a_broker_polls_stay_empty_commits_fail_and_drop_does_not_hang() {
    let config = suite::config("127.0.0.1:1", "g-nobroker");
    let c = GroupConsumer::new(config.clone()).expect("consumer");
    c.subscribe(["t"]).expect("subscribe");
    let got = c.poll(Duration::from_millis(200)).expect("poll");
    assert!(got.is_empty());
    // Not a member: the commit ends at once with NotMember, never silently.
    let r = c.commit_sync(Offsets::Consumed, Duration::from_secs(5));
    assert!(
        matches!(
            r,
            Err(Error::Commit(kafka_blocking::CommitError::NotMember))
        ),
        "{r:?}"
    );
    let start = Instant::now();
    drop(c);
    assert!(start.elapsed() < Duration::from_secs(1), "drop blocked");
    let c = GroupConsumer::new(config).expect("consumer");
    c.subscribe(["t"]).expect("subscribe");
    c.close().expect("close");
    assert!(matches!(c.poll(Duration::ZERO), Err(Error::Closed)));
    assert!(c
        .commit_sync(Offsets::Consumed, Duration::from_secs(1))
        .is_err());
}
