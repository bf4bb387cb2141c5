//! The mio group consumer, in a caller-owned loop: the shared group suite on the real
//! broker (events and records taken after the consumer's `Event::Notify`; on `Revoked`
//! the loop commits the consumed positions before its next poll).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use kafka_core::client::OpId;
use kafka_core::config::ClientConfig;
use kafka_core::consumer::ConsumerRecord;
use kafka_core::group::{CommitError, CommitId, GroupConsumer, GroupEvent};
use kafka_driver::group::{Offsets, Rebalance};
use kafka_mio::mio::{Events, Poll};
use kafka_mio::Driver;
use kafka_tests::group_suite as suite;

struct Mio;

struct Member {
    poll: Poll,
    events: Events,
    driver: Driver,
    id: Option<OpId<GroupConsumer>>,
    seen: Vec<Rebalance>,
    /// Commits sent on revocation, and every commit result.
    revocation_commits: Vec<CommitId>,
    results: HashMap<CommitId, Result<(), CommitError>>,
}

impl suite::Adapter for Mio {
    type Member = Member;
    fn member(&mut self, config: ClientConfig) -> Member {
        let poll = Poll::new().expect("poll");
        let driver = Driver::new(config, poll.registry(), 0..64).expect("driver");
        Member {
            poll,
            events: Events::with_capacity(256),
            driver,
            id: None,
            seen: Vec::new(),
            revocation_commits: Vec::new(),
            results: HashMap::new(),
        }
    }
}

impl Member {
    fn id(&self) -> OpId<GroupConsumer> {
        self.id.expect("subscribed")
    }

    /// One turn of the caller's loop (at most `max`).
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
        // Every event is read through take_event / poll after the turn.
        while self.driver.poll_event().is_some() {}
    }

    /// Takes the consumer's events: rebalances (a revocation commits what was handed
    /// out, before the next poll gives the partitions up) and commit results.
    fn take_events(&mut self) {
        let id = self.id();
        while let Some(e) = self.driver.group_consumer(id).take_event() {
            match e {
                GroupEvent::Assigned(p) => self.seen.push(Rebalance::Assigned(p)),
                GroupEvent::Revoked(p) => {
                    let c = self.driver.group_consumer(id).commit_consumed();
                    self.revocation_commits.extend(c);
                    self.seen.push(Rebalance::Revoked(p));
                }
                GroupEvent::Lost(p) => self.seen.push(Rebalance::Lost(p)),
                GroupEvent::Committed { id, result } => {
                    self.results.insert(id, result);
                }
                GroupEvent::Failed(e) => panic!("member failed: {e}"),
                _ => {}
            }
        }
        for c in &self.revocation_commits {
            if let Some(r) = self.results.get(c) {
                r.clone().expect("commit on revocation");
            }
        }
    }
}

impl suite::Member for Member {
    fn subscribe(&mut self, topic: &str) {
        self.id = Some(self.driver.start_group_consumer([topic]).expect("start"));
    }
    fn poll(&mut self, timeout: Duration) -> Vec<ConsumerRecord> {
        let until = Instant::now() + timeout;
        let mut out = Vec::new();
        loop {
            self.take_events();
            let id = self.id();
            let mut view = self.driver.group_consumer(id);
            if let Some(e) = view.take_error() {
                panic!("consume error: {e}");
            }
            if view.poll(&mut out) > 0 {
                self.driver.poll(self.poll.registry());
                self.take_events();
                return out;
            }
            let now = Instant::now();
            if now >= until {
                return out;
            }
            self.turn(until - now);
        }
    }
    fn events(&mut self) -> Vec<Rebalance> {
        std::mem::take(&mut self.seen)
    }
    fn commit_sync(&mut self, offsets: Offsets) -> Result<(), String> {
        let id = self.id();
        let mut view = self.driver.group_consumer(id);
        let commit = match offsets {
            Offsets::Consumed => view.commit_consumed(),
            Offsets::These(o) => view.commit(o),
            _ => unreachable!("no other kind"),
        }
        .expect("running");
        let start = Instant::now();
        loop {
            self.take_events();
            if let Some(r) = self.results.remove(&commit) {
                return r.map_err(|e| e.to_string());
            }
            assert!(start.elapsed() < Duration::from_secs(30), "commit hangs");
            self.turn(Duration::from_millis(20));
        }
    }
    fn pause(&mut self, partitions: &[(String, i32)]) {
        let id = self.id();
        let parts = partitions.iter().map(|(t, p)| (t.as_str(), *p));
        self.driver.group_consumer(id).pause(parts);
    }
    fn resume(&mut self, partitions: &[(String, i32)]) {
        let id = self.id();
        let parts = partitions.iter().map(|(t, p)| (t.as_str(), *p));
        self.driver.group_consumer(id).resume(parts);
    }
    fn close(&mut self) {
        let id = self.id();
        // As the listener adapters do at close: what it gives up, committed first.
        if let Some(GroupEvent::Revoked(p)) = self.driver.group_consumer(id).release_on_close() {
            self.seen.push(Rebalance::Revoked(p));
            self.commit_sync(Offsets::Consumed)
                .expect("commit of the revocation at close");
        }
        self.driver.group_consumer(id).close();
        let start = Instant::now();
        while self.driver.take_output(id).is_none() {
            assert!(start.elapsed() < Duration::from_secs(30), "close hangs");
            self.turn(Duration::from_millis(20));
        }
        self.driver.shutdown(self.poll.registry());
    }
}

#[test]
fn real_broker_two_members_rebalance_commit_and_hand_over() {
    let Some(bootstrap) = kafka_tests::broker_or_skip("group_mio real broker") else {
        return;
    };
    suite::run(&mut Mio, &bootstrap, "mio");
}
