//! Real broker: consumer groups (classic protocol). Each member is the core's
//! `GroupConsumer` on its own blocking client, driven from its own thread through
//! `with_core` (the adapters' group surfaces are not written yet).
//!
//! - three members share a 12-partition topic through joins, a member closing and a
//!   member killed (its client dropped without leaving): every record is consumed
//!   (at-least-once, duplicates only of a killed member's uncommitted tail), and at no
//!   moment two live members own the same partition — for each classic assignor and for
//!   the KIP-848 protocol (the rig sets its broker-side session timeout to 6 s);
//! - a member killed and restarted resumes from the committed offset;
//! - a static member restarted inside the session timeout gets its partitions back
//!   without a rebalance.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_blocking::{BlockingClient, Producer, Record};
use kafka_core::client::OpId;
use kafka_core::cluster::Route;
use kafka_core::config::ClientConfig;
use kafka_core::group::{GroupConsumer, GroupEvent};
use kafka_core::protocol::messages::create_topics::request::CreatableTopic;
use kafka_core::protocol::messages::create_topics::CreateTopicsRequest;
use kafka_tests::broker_or_skip;

const PARTITIONS: i32 = 12;

fn unique(prefix: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    )
}

/// A fresh 12-partition topic holding `n` records with values "0".."n-1".
fn topic_with_records(addr: &str, n: u64) -> String {
    let topic = unique("group");
    let config = ClientConfig::from_pairs([("bootstrap.servers", addr), ("linger.ms", "5")])
        .expect("config");
    let client = BlockingClient::new(config.clone()).expect("client");
    let create = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: topic.clone(),
            num_partitions: PARTITIONS,
            replication_factor: 1,
            ..Default::default()
        }],
        timeout_ms: 30_000,
        ..Default::default()
    };
    let resp = client.call(Route::Controller, create).expect("create");
    assert_eq!(resp.topics[0].error_code, 0, "{:?}", resp.topics[0]);
    let producer = Producer::new(config).expect("producer");
    let mut deliveries = Vec::new();
    for i in 0..n {
        let r = Record::new(topic.as_str(), i.to_string()).key(i.to_string());
        deliveries.push(producer.send(r).expect("send"));
    }
    for d in deliveries {
        d.wait().expect("delivered");
    }
    topic
}

/// What one member saw, shared with the test thread.
#[derive(Default)]
struct Seen {
    /// (partition, offset, value) handed out.
    records: Vec<(i32, i64, u64)>,
    owned: BTreeSet<i32>,
    events: Vec<GroupEvent>,
    generation: i32,
}

struct Member {
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
    /// Close (commit and leave) on stop, or vanish (kill).
    close: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Member {
    fn start(addr: &str, topic: &str, extra: &[(&str, &str)], group: &str) -> Member {
        let mut pairs = vec![
            ("bootstrap.servers", addr),
            ("group.id", group),
            ("auto.offset.reset", "earliest"),
            ("session.timeout.ms", "6000"),
            ("heartbeat.interval.ms", "500"),
            ("auto.commit.interval.ms", "500"),
            ("max.poll.records", "50"),
        ];
        pairs.extend_from_slice(extra);
        let config = ClientConfig::from_pairs(pairs).expect("config");
        let seen = Arc::new(Mutex::new(Seen::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let close = Arc::new(AtomicBool::new(true));
        let (s, st, cl, topic) = (seen.clone(), stop.clone(), close.clone(), topic.to_string());
        let thread = std::thread::spawn(move || member_loop(config, &topic, s, st, cl));
        Member {
            seen,
            stop,
            close,
            thread: Some(thread),
        }
    }

    fn owned(&self) -> BTreeSet<i32> {
        self.seen.lock().unwrap().owned.clone()
    }

    fn stop(&mut self, close: bool) {
        self.close.store(close, Ordering::SeqCst);
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join().expect("member thread");
        }
    }
}

fn member_loop(
    config: ClientConfig,
    topic: &str,
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
    close: Arc<AtomicBool>,
) {
    let client = BlockingClient::new(config.clone()).expect("client");
    let gc = GroupConsumer::new(&config).expect("group consumer");
    let topic = topic.to_string();
    let id: OpId<GroupConsumer> = client
        .with_core(move |c| {
            let id = c.start_op(Instant::now(), gc);
            c.command(Instant::now(), id, |g, cx| {
                g.subscribe(cx, [topic.as_str()])
            });
            id
        })
        .expect("start");
    while !stop.load(Ordering::SeqCst) {
        let (records, events, generation) = client
            .with_core(move |c| {
                let mut out = Vec::new();
                let mut events = Vec::new();
                let generation = c
                    .command(Instant::now(), id, |g, cx| {
                        while let Some(e) = g.take_event() {
                            events.push(e);
                        }
                        g.poll(cx, &mut out);
                        while let Some(e) = g.take_event() {
                            events.push(e);
                        }
                        g.generation().1
                    })
                    .unwrap_or(-1);
                let records: Vec<(i32, i64, u64)> = out
                    .iter()
                    .map(|r| {
                        let v = std::str::from_utf8(r.value.as_deref().unwrap()).unwrap();
                        (r.partition, r.offset, v.parse().unwrap())
                    })
                    .collect();
                (records, events, generation)
            })
            .expect("poll");
        let idle = records.is_empty() && events.is_empty();
        {
            let mut s = seen.lock().unwrap();
            for e in &events {
                match e {
                    GroupEvent::Assigned(ps) => s.owned.extend(ps.iter().map(|(_, p)| *p)),
                    GroupEvent::Revoked(ps) | GroupEvent::Lost(ps) => {
                        for (_, p) in ps {
                            s.owned.remove(p);
                        }
                    }
                    GroupEvent::Failed(e) => panic!("member failed: {e}"),
                    _ => {}
                }
            }
            s.records.extend(records);
            s.events.extend(events);
            s.generation = generation;
        }
        if idle {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    if close.load(Ordering::SeqCst) {
        client
            .with_core(move |c| c.command(Instant::now(), id, |g, cx| g.close(cx)))
            .expect("close");
        let start = Instant::now();
        while client
            .with_core(move |c| c.command(Instant::now(), id, |_, _| ()).is_some())
            .expect("alive")
        {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "close took over 30 s"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        seen.lock().unwrap().owned.clear();
    }
    // Otherwise the client is dropped mid-membership: a killed process.
}

/// Waits until `cond`, checking after every wait that no partition has two owners.
fn wait_for(members: &[&Member], limit: Duration, what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    loop {
        let mut owner: BTreeMap<i32, usize> = BTreeMap::new();
        for (i, m) in members.iter().enumerate() {
            for p in m.owned() {
                if let Some(j) = owner.insert(p, i) {
                    panic!("partition {p} owned by members {j} and {i} at once");
                }
            }
        }
        if cond() {
            return;
        }
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn values(members: &[&Member]) -> Vec<u64> {
    members
        .iter()
        .flat_map(|m| {
            m.seen
                .lock()
                .unwrap()
                .records
                .iter()
                .map(|r| r.2)
                .collect::<Vec<_>>()
        })
        .collect()
}

fn three_members_share_the_topic(strategy: &str) {
    let Some(addr) = broker_or_skip(&format!("broker_group {strategy}")) else {
        return;
    };
    let n = 30_000;
    let topic = topic_with_records(&addr, n);
    let group = unique(&format!("g-{strategy}"));
    // "consumer" is the KIP-848 protocol (server-side assignment); the others are the
    // classic protocol's assignors.
    let extra = if strategy == "consumer" {
        [("group.protocol", "consumer")]
    } else {
        [("partition.assignment.strategy", strategy)]
    };
    let mut a = Member::start(&addr, &topic, &extra, &group);
    wait_for(&[&a], Duration::from_secs(30), "a owns all", || {
        a.owned().len() == 12
    });
    let mut b = Member::start(&addr, &topic, &extra, &group);
    let mut c = Member::start(&addr, &topic, &extra, &group);
    wait_for(
        &[&a, &b, &c],
        Duration::from_secs(60),
        "three-way split",
        || a.owned().len() == 4 && b.owned().len() == 4 && c.owned().len() == 4,
    );
    // b leaves properly (commit and LeaveGroup), c is killed (no commit of its tail).
    b.stop(true);
    c.stop(false);
    wait_for(
        &[&a],
        Duration::from_secs(60),
        "a takes everything back",
        || a.owned().len() == 12,
    );
    wait_for(
        &[&a],
        Duration::from_secs(60),
        "every record consumed",
        || {
            values(&[&a, &b, &c])
                .into_iter()
                .collect::<BTreeSet<u64>>()
                .len() as u64
                == n
        },
    );
    let all = values(&[&a, &b, &c]);
    let distinct: BTreeSet<u64> = all.iter().copied().collect();
    assert_eq!(distinct.len() as u64, n, "{strategy}: no record lost");
    let dups = all.len() as u64 - n;
    let c_count = c.seen.lock().unwrap().records.len() as u64;
    assert!(
        dups <= c_count,
        "{strategy}: {dups} duplicates, more than the killed member's {c_count} records"
    );
    a.stop(true);
}

#[test]
fn three_members_share_a_topic_with_range() {
    three_members_share_the_topic("range");
}

#[test]
fn three_members_share_a_topic_with_roundrobin() {
    three_members_share_the_topic("roundrobin");
}

#[test]
fn three_members_share_a_topic_with_sticky() {
    three_members_share_the_topic("sticky");
}

#[test]
fn three_members_share_a_topic_with_cooperative_sticky() {
    three_members_share_the_topic("cooperative-sticky");
}

#[test]
fn three_members_share_a_topic_with_kip848() {
    three_members_share_the_topic("consumer");
}

#[test]
fn a_restarted_member_resumes_from_the_committed_offset() {
    let Some(addr) = broker_or_skip("broker_group restart") else {
        return;
    };
    let n = 5_000;
    let topic = topic_with_records(&addr, n);
    let group = unique("g-restart");
    let mut a = Member::start(&addr, &topic, &[], &group);
    wait_for(
        &[&a],
        Duration::from_secs(60),
        "first run reads all",
        || a.seen.lock().unwrap().records.len() as u64 >= n,
    );
    // Let an auto-commit of the final positions happen, then kill it.
    std::thread::sleep(Duration::from_secs(2));
    a.stop(false);
    let mut b = Member::start(&addr, &topic, &[], &group);
    // The killed member's session (6 s) has to expire before b's join completes.
    wait_for(&[&b], Duration::from_secs(60), "b joins", || {
        b.owned().len() == 12
    });
    std::thread::sleep(Duration::from_secs(3));
    let again = b.seen.lock().unwrap().records.len();
    assert_eq!(
        again, 0,
        "a restarted member re-read {again} committed records"
    );
    b.stop(true);
}

#[test]
fn a_static_member_restarted_within_the_session_timeout_causes_no_rebalance() {
    let Some(addr) = broker_or_skip("broker_group static") else {
        return;
    };
    let topic = topic_with_records(&addr, 1_000);
    let group = unique("g-static");
    let extra_a = [("group.instance.id", "a"), ("session.timeout.ms", "20000")];
    let extra_b = [("group.instance.id", "b"), ("session.timeout.ms", "20000")];
    let mut a = Member::start(&addr, &topic, &extra_a, &group);
    let mut b = Member::start(&addr, &topic, &extra_b, &group);
    wait_for(&[&a, &b], Duration::from_secs(60), "split", || {
        a.owned().len() == 6 && b.owned().len() == 6
    });
    let generation = a.seen.lock().unwrap().generation;
    let kept = b.owned();
    // Static members do not leave on close: the coordinator keeps b's place.
    b.stop(true);
    let mut b2 = Member::start(&addr, &topic, &extra_b, &group);
    wait_for(&[&a, &b2], Duration::from_secs(30), "b back", || {
        b2.owned().len() == 6
    });
    assert_eq!(b2.owned(), kept, "the same partitions");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        a.seen.lock().unwrap().generation,
        generation,
        "no new generation"
    );
    a.stop(true);
    b2.stop(true);
}
