//! The mio share consumer (KIP-932) on the real broker, in a caller-owned loop: three
//! members, each its own `Driver` on one shared `Poll` (disjoint token ranges), split a
//! topic's records, each record handed to exactly one member and accepted (their commits
//! succeed; a fresh member afterwards gets nothing); explicit acknowledgement: a released
//! record comes back with delivery count 2, a rejected one never. Helpers (topic,
//! `share.auto.offset.reset=earliest`) as in `share_blocking`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use kafka_core::client::{Event, OpId};
use kafka_core::config::ClientConfig;
use kafka_mio::mio::{Events, Poll};
use kafka_mio::{
    AckResults, AcknowledgeType, Driver, ShareCommitId, ShareConsumer, ShareEvent, ShareRecord,
};
use share_common::{earliest, topic_with_records, unique, value};

mod share_common;

/// One member: its driver and share consumer, and the commit results it saw.
struct Member {
    driver: Driver,
    id: OpId<ShareConsumer>,
    committed: BTreeMap<ShareCommitId, AckResults>,
    /// Its `Event::Notify` came since its last poll: records or events may wait.
    notified: bool,
}

/// The caller's loop: one `Poll` for every member's sockets.
struct Loop {
    poll: Poll,
    events: Events,
    members: Vec<Member>,
}

impl Loop {
    fn new() -> Loop {
        Loop {
            poll: Poll::new().expect("poll"),
            events: Events::with_capacity(256),
            members: Vec::new(),
        }
    }

    /// Adds a member subscribed to `topic`, with tokens of its own; returns its index.
    fn join(&mut self, addr: &str, group: &str, topic: &str, extra: &[(&str, &str)]) -> usize {
        let mut pairs = vec![
            ("bootstrap.servers", addr),
            ("group.id", group),
            ("fetch.max.wait.ms", "200"),
        ];
        pairs.extend_from_slice(extra);
        let config = ClientConfig::from_pairs(pairs).expect("config");
        let m = self.members.len();
        let tokens = m * 64..(m + 1) * 64;
        let mut driver = Driver::new(config, self.poll.registry(), tokens).expect("driver");
        let id = driver.start_share_consumer([topic]).expect("start");
        self.members.push(Member {
            driver,
            id,
            committed: BTreeMap::new(),
            notified: true,
        });
        m
    }

    /// One turn of the loop (waits at most `max`), then every member's events.
    fn turn(&mut self, max: Duration) {
        let wait = self
            .members
            .iter()
            .filter_map(|m| m.driver.timeout())
            .fold(max, Duration::min);
        self.poll.poll(&mut self.events, Some(wait)).expect("poll");
        for event in self.events.iter() {
            if let Some(m) = self
                .members
                .iter_mut()
                .find(|m| m.driver.owns(event.token()))
            {
                m.driver.handle_event(self.poll.registry(), event);
            }
        }
        for m in &mut self.members {
            m.driver.handle_timeout(self.poll.registry());
            m.driver.poll(self.poll.registry());
            let id = m.id;
            while let Some(event) = m.driver.poll_event() {
                m.notified |= matches!(event, Event::Notify(op) if id == op);
            }
            for e in m.driver.share_consumer(id).take_events() {
                match e {
                    ShareEvent::Committed { id, results } => {
                        m.committed.insert(id, results);
                    }
                    ShareEvent::Failed(e) => panic!("member failed: {e}"),
                    ShareEvent::AcknowledgeFailed(r) => panic!("acknowledgement failed: {r:?}"),
                    _ => {}
                }
            }
        }
    }

    /// The records member `m` can take now: polled only after its `Event::Notify`, so
    /// the loop sleeps in `Poll::poll` while nothing came (its requests go out at the
    /// next turn).
    fn take(&mut self, m: usize) -> Vec<ShareRecord> {
        let member = &mut self.members[m];
        let mut out = Vec::new();
        if std::mem::take(&mut member.notified) {
            member
                .driver
                .share_consumer(member.id)
                .poll(&mut out)
                .expect("poll");
        }
        out
    }

    /// Polls member `m` for up to `timeout`, turning the loop while it has nothing.
    fn poll_for(&mut self, m: usize, timeout: Duration) -> Vec<ShareRecord> {
        let until = Instant::now() + timeout;
        loop {
            let got = self.take(m);
            let now = Instant::now();
            if !got.is_empty() || now >= until {
                self.turn(Duration::ZERO);
                return got;
            }
            self.turn(until - now);
        }
    }

    fn acknowledge(&mut self, m: usize, record: &ShareRecord, kind: AcknowledgeType) {
        let member = &mut self.members[m];
        let id = member.id;
        member
            .driver
            .share_consumer(id)
            .acknowledge(record, kind)
            .expect("acknowledge");
    }

    /// Commits member `m`'s acknowledgements and turns the loop until the results come.
    fn commit(&mut self, m: usize) -> AckResults {
        let member = &mut self.members[m];
        let id = member.id;
        let commit = member.driver.share_consumer(id).commit().expect("running");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(r) = self.members[m].committed.remove(&commit) {
                return r;
            }
            assert!(Instant::now() < deadline, "commit hangs");
            self.turn(Duration::from_millis(50));
        }
    }

    /// Closes every member and turns the loop until each machine finished.
    fn close_all(&mut self) {
        for m in &mut self.members {
            let id = m.id;
            m.driver.share_consumer(id).close();
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut done = vec![false; self.members.len()];
        while done.iter().any(|d| !d) {
            assert!(Instant::now() < deadline, "close hangs");
            self.turn(Duration::from_millis(50));
            for (m, d) in self.members.iter_mut().zip(&mut done) {
                *d |= m.driver.take_output(m.id).is_some();
            }
        }
        for m in &mut self.members {
            m.driver.shutdown(self.poll.registry());
        }
        self.members.clear();
    }
}

#[test]
fn three_members_in_one_loop_split_records_each_to_one_member_and_accepted() {
    let Some(addr) = kafka_tests::broker_or_skip("share_mio real broker") else {
        return;
    };
    const N: usize = 150;
    let group = unique("share-m");
    earliest(&addr, &group);
    let topic = topic_with_records(&addr, 3, N as u64);
    let mut lp = Loop::new();
    for _ in 0..3 {
        lp.join(&addr, &group, &topic, &[("max.poll.records", "20")]);
    }
    // (member, partition, offset, value, delivery count) of every record handed out.
    let mut seen: Vec<(usize, i32, i64, u64, i16)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    while seen.len() < N {
        assert!(Instant::now() < deadline, "only {} records", seen.len());
        for m in 0..3 {
            for r in lp.take(m) {
                seen.push((m, r.partition, r.offset, value(&r), r.delivery_count));
            }
        }
        lp.turn(Duration::from_millis(100));
    }
    let values: BTreeSet<u64> = seen.iter().map(|s| s.3).collect();
    assert_eq!(values.len(), N, "every record delivered");
    assert_eq!(seen.len(), N, "no record delivered twice");
    assert!(seen.iter().all(|s| s.4 == 1), "first deliveries only");
    let members: BTreeSet<usize> = seen.iter().map(|s| s.0).collect();
    eprintln!("members that got records: {members:?}");
    // Implicit mode: a commit accepts what was handed out; every partition succeeds.
    let mut accepted = BTreeSet::new();
    for m in 0..3 {
        let results = lp.commit(m);
        assert!(results.values().all(Result::is_ok), "{results:?}");
        accepted.extend(results.into_keys().map(|(_, p)| p));
    }
    let partitions: BTreeSet<i32> = seen.iter().map(|s| s.1).collect();
    assert_eq!(
        accepted, partitions,
        "a result for every partition consumed"
    );
    lp.close_all();

    // Everything was accepted: a new member of the group gets nothing.
    let late = lp.join(&addr, &group, &topic, &[]);
    let until = Instant::now() + Duration::from_secs(6);
    while Instant::now() < until {
        let got = lp.poll_for(late, Duration::from_millis(500));
        assert!(
            got.is_empty(),
            "redelivered after acceptance: {:?}",
            got.iter().map(|r| r.offset).collect::<Vec<_>>()
        );
    }
    lp.close_all();
}

#[test]
fn explicit_release_is_redelivered_with_count_two_and_reject_never() {
    let Some(addr) = kafka_tests::broker_or_skip("share_mio real broker") else {
        return;
    };
    let group = unique("share-mx");
    earliest(&addr, &group);
    let topic = topic_with_records(&addr, 1, 3);
    let mut lp = Loop::new();
    let c = lp.join(
        &addr,
        &group,
        &topic,
        &[("share.acknowledgement.mode", "explicit")],
    );
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while got.len() < 3 {
        assert!(Instant::now() < deadline, "only {} records", got.len());
        got.extend(lp.poll_for(c, Duration::from_millis(500)));
    }
    let offsets: Vec<i64> = got.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, vec![0, 1, 2]);
    assert!(got.iter().all(|r| r.delivery_count == 1));
    // The broker's default acquisition lock (the rig keeps Kafka's 30 s).
    let id = lp.members[c].id;
    let lock = lp.members[c]
        .driver
        .share_consumer(id)
        .acquisition_lock_timeout();
    assert_eq!(lock, Some(Duration::from_secs(30)));
    lp.acknowledge(c, &got[0], AcknowledgeType::Accept);
    lp.acknowledge(c, &got[1], AcknowledgeType::Release);
    lp.acknowledge(c, &got[2], AcknowledgeType::Reject);
    let id = lp.members[c].id;
    let twice = lp.members[c]
        .driver
        .share_consumer(id)
        .acknowledge(&got[2], AcknowledgeType::Accept);
    assert!(twice.is_err(), "acknowledged twice");
    let results = lp.commit(c);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results.values().all(Result::is_ok), "{results:?}");

    let mut again = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while again.is_empty() {
        assert!(
            Instant::now() < deadline,
            "the released record did not come back"
        );
        again = lp.poll_for(c, Duration::from_millis(500));
    }
    let offsets: Vec<i64> = again.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, vec![1], "only the released record");
    assert_eq!(again[0].delivery_count, 2);
    lp.acknowledge(c, &again[0], AcknowledgeType::Accept);
    let results = lp.commit(c);
    assert!(results.values().all(Result::is_ok), "{results:?}");
    // The rejected record never comes back.
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        let got = lp.poll_for(c, Duration::from_millis(500));
        let offsets: Vec<i64> = got.iter().map(|r| r.offset).collect();
        assert!(offsets.is_empty(), "{offsets:?}");
    }
    lp.close_all();
}
