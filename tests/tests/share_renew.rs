//! Acquisition-lock renewal (KIP-1222, `AcknowledgeType::Renew`) with the blocking share
//! consumer on the real broker. The group's `share.record.lock.duration.ms` is 2 s (the
//! rig allows 1 s and up): a member that renews the record it holds keeps it well past
//! that while a second member of the group polls and never gets it, then accepts it;
//! a member that does not renew loses it to the second member (delivery count 2).
//!
//! Kafka 4.3 advertises ShareFetch and ShareAcknowledge v2 with `share.version` 1 (the
//! newest it supports), and `share.renew.acknowledge.enable` defaults to true: nothing
//! in the rig needs enabling.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kafka_blocking::{AcknowledgeType, ShareConsumer, ShareEvent};
use kafka_core::config::ClientConfig;
use kafka_core::share::ShareRecord;
use share_common::{group_configs, topic_with_records, unique};

mod share_common;

const LOCK: Duration = Duration::from_millis(2000);

fn consumer(addr: &str, group: &str, explicit: bool) -> ShareConsumer {
    let mode = if explicit { "explicit" } else { "implicit" };
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", addr),
        ("group.id", group),
        ("fetch.max.wait.ms", "200"),
        ("max.poll.records", "1"),
        ("share.acknowledgement.mode", mode),
    ])
    .expect("config");
    ShareConsumer::new(config).expect("share consumer")
}

/// A group with a 2 s acquisition lock, starting at the earliest offset, and a topic of
/// one record.
fn setup(addr: &str, prefix: &str) -> (String, String) {
    let group = unique(prefix);
    group_configs(
        addr,
        &group,
        &[
            ("share.auto.offset.reset", "earliest"),
            ("share.record.lock.duration.ms", "2000"),
        ],
    );
    (group, topic_with_records(addr, 1, 1))
}

/// Polls until one record comes (at most `limit`).
fn one_record(c: &ShareConsumer, limit: Duration) -> ShareRecord {
    let deadline = Instant::now() + limit;
    loop {
        assert!(Instant::now() < deadline, "no record within {limit:?}");
        let mut got = c.poll(Duration::from_millis(200)).expect("poll");
        if let Some(r) = got.pop() {
            assert!(got.is_empty());
            return r;
        }
    }
}

/// The second member: polls (implicit mode) until told to stop, keeping what it gets;
/// `assigned` is set once it has its assignment.
struct Second {
    stop: Arc<AtomicBool>,
    assigned: Arc<Mutex<Option<Instant>>>,
    got: Arc<Mutex<Vec<(i64, i16)>>>,
    thread: JoinHandle<()>,
}

impl Second {
    fn start(addr: &str, group: &str, topic: &str) -> Second {
        let stop = Arc::new(AtomicBool::new(false));
        let assigned: Arc<Mutex<Option<Instant>>> = Arc::default();
        let got: Arc<Mutex<Vec<(i64, i16)>>> = Arc::default();
        let c = consumer(addr, group, false);
        c.subscribe([topic]).expect("subscribe");
        let thread = {
            let (stop, assigned, got) = (stop.clone(), assigned.clone(), got.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    for r in c.poll(Duration::from_millis(200)).expect("second poll") {
                        got.lock().unwrap().push((r.offset, r.delivery_count));
                    }
                    let mut a = assigned.lock().unwrap();
                    if a.is_none() && !c.assignment().expect("assignment").is_empty() {
                        *a = Some(Instant::now());
                    }
                }
                c.close().expect("second close");
            })
        };
        Second {
            stop,
            assigned,
            got,
            thread,
        }
    }

    fn assigned_at(&self) -> Option<Instant> {
        *self.assigned.lock().unwrap()
    }

    fn got(&self) -> Vec<(i64, i16)> {
        self.got.lock().unwrap().clone()
    }

    fn stop(self) -> Vec<(i64, i16)> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().expect("second member");
        self.got.lock().unwrap().clone()
    }
}

#[test]
fn renewing_keeps_the_record_from_a_second_member_past_the_lock_duration() {
    let Some(addr) = kafka_tests::broker_or_skip("share_renew real broker") else {
        return;
    };
    let (group, topic) = setup(&addr, "share-renew");
    let first = consumer(&addr, &group, true);
    first.subscribe([topic.as_str()]).expect("subscribe");
    let r = one_record(&first, Duration::from_secs(60));
    let acquired = Instant::now();
    assert_eq!((r.offset, r.delivery_count), (0, 1));
    assert_eq!(first.acquisition_lock_timeout().expect("lock"), Some(LOCK));

    let second = Second::start(&addr, &group, &topic);
    // Renew every 700 ms (a third of the lock) until the record was held 6 s (three
    // lock durations) and the second member was assigned the partition for 4 s of it.
    let mut renewals = 0;
    loop {
        let now = Instant::now();
        let long_enough = now >= acquired + 3 * LOCK
            && second.assigned_at().is_some_and(|at| now >= at + 2 * LOCK);
        if long_enough {
            break;
        }
        assert!(
            now < acquired + Duration::from_secs(60),
            "the second member was never assigned the partition"
        );
        std::thread::sleep(Duration::from_millis(700));
        first
            .acknowledge(&r, AcknowledgeType::Renew)
            .expect("renew");
        renewals += 1;
        // Renewed: the next poll returns the record again, as it was.
        let again = one_record(&first, LOCK);
        assert_eq!((again.offset, again.delivery_count), (0, 1));
        assert_eq!(again.value, r.value);
        assert!(
            second.got().is_empty(),
            "taken while renewed: {:?}",
            second.got()
        );
    }
    eprintln!("held {:?} with {renewals} renewals", acquired.elapsed());
    // Every renewal completed successfully, reported like any acknowledgement.
    let completed: usize = first
        .take_events()
        .iter()
        .filter_map(|e| match e {
            ShareEvent::Acknowledged(c) => Some(c),
            _ => None,
        })
        .flatten()
        .map(|c| {
            assert_eq!(c.result, Ok(()), "{c:?}");
            c.count() as usize
        })
        .sum();
    assert_eq!(completed, renewals);
    // Finally accepted: the commit succeeds and nobody gets the record.
    first
        .acknowledge(&r, AcknowledgeType::Accept)
        .expect("accept");
    let results = first.commit_sync(Duration::from_secs(30)).expect("commit");
    assert!(
        !results.is_empty() && results.values().all(Result::is_ok),
        "{results:?}"
    );
    std::thread::sleep(2 * LOCK);
    assert_eq!(second.stop(), vec![], "the second member never got it");
    first.close().expect("close");
}

#[test]
fn without_renewing_the_record_goes_to_the_second_member_after_the_lock_duration() {
    let Some(addr) = kafka_tests::broker_or_skip("share_renew real broker") else {
        return;
    };
    let (group, topic) = setup(&addr, "share-norenew");
    let first = consumer(&addr, &group, true);
    first.subscribe([topic.as_str()]).expect("subscribe");
    let r = one_record(&first, Duration::from_secs(60));
    let acquired = Instant::now();
    assert_eq!((r.offset, r.delivery_count), (0, 1));
    let second = Second::start(&addr, &group, &topic);
    let deadline = acquired + Duration::from_secs(60);
    while second.got().is_empty() {
        assert!(Instant::now() < deadline, "never redelivered");
        std::thread::sleep(Duration::from_millis(100));
    }
    let held = acquired.elapsed();
    assert!(
        held >= LOCK - Duration::from_millis(300),
        "taken after {held:?}"
    );
    assert_eq!(second.got(), vec![(0, 2)], "redelivered, second delivery");
    // The first member's late acceptance still goes out; Kafka 4.3.1 answered it without
    // an error in this test's runs (the record had been taken, and accepted, by the
    // second member), so its outcome is only printed.
    first
        .acknowledge(&r, AcknowledgeType::Accept)
        .expect("accept");
    let results = first.commit_sync(Duration::from_secs(30)).expect("commit");
    eprintln!("late acceptance: {results:?}");
    assert_eq!(
        second.stop(),
        vec![(0, 2)],
        "delivered once more, not again"
    );
    first.close().expect("close");
}
