//! Shared by the real-broker group suites: a fresh 12-partition topic with counted
//! records, and a group member — the core's `GroupConsumer` on its own blocking client,
//! driven from its own thread through `with_core` (or another loop given to
//! `Member::spawn`) — whose records, owned partitions and events the test thread reads;
//! waits that check no partition has two owners.

#![allow(dead_code)]

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

pub(crate) const PARTITIONS: i32 = 12;

pub(crate) fn unique(prefix: &str) -> String {
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
pub(crate) fn topic_with_records(addr: &str, n: u64) -> String {
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
pub(crate) struct Seen {
    /// (partition, offset, value) handed out.
    pub(crate) records: Vec<(i32, i64, u64)>,
    pub(crate) owned: BTreeSet<i32>,
    pub(crate) events: Vec<GroupEvent>,
    pub(crate) generation: i32,
    /// Led the last classic generation.
    pub(crate) leader: bool,
}

impl Seen {
    /// Takes in `events`: the owned partitions follow them; a `Failed` one panics.
    pub(crate) fn note(&mut self, events: Vec<GroupEvent>) {
        for e in &events {
            match e {
                GroupEvent::Assigned(ps) => self.owned.extend(ps.iter().map(|(_, p)| *p)),
                GroupEvent::Revoked(ps) | GroupEvent::Lost(ps) => {
                    for (_, p) in ps {
                        self.owned.remove(p);
                    }
                }
                GroupEvent::Failed(e) => panic!("member failed: {e}"),
                _ => {}
            }
        }
        self.events.extend(events);
    }
}

pub(crate) struct Member {
    pub(crate) seen: Arc<Mutex<Seen>>,
    pub(crate) stop: Arc<AtomicBool>,
    /// Close (commit and leave) on stop, or vanish (kill).
    pub(crate) close: Arc<AtomicBool>,
    pub(crate) thread: Option<std::thread::JoinHandle<()>>,
}

/// A member's settings: the suites' session, heartbeat and auto-commit timing plus
/// `extra`.
pub(crate) fn member_config(addr: &str, extra: &[(&str, &str)], group: &str) -> ClientConfig {
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
    ClientConfig::from_pairs(pairs).expect("config")
}

/// A member's loop: `(config, topic, seen, stop, close)`, as [`member_loop`].
pub(crate) type MemberLoop =
    Box<dyn FnOnce(ClientConfig, &str, Arc<Mutex<Seen>>, Arc<AtomicBool>, Arc<AtomicBool>) + Send>;

impl Member {
    pub(crate) fn start(addr: &str, topic: &str, extra: &[(&str, &str)], group: &str) -> Member {
        let config = member_config(addr, extra, group);
        Member::spawn(config, topic, Box::new(member_loop))
    }

    /// A member running `body` on its own thread (another adapter's loop).
    pub(crate) fn spawn(config: ClientConfig, topic: &str, body: MemberLoop) -> Member {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let close = Arc::new(AtomicBool::new(true));
        let (s, st, cl, topic) = (seen.clone(), stop.clone(), close.clone(), topic.to_string());
        let thread = std::thread::spawn(move || body(config, &topic, s, st, cl));
        Member {
            seen,
            stop,
            close,
            thread: Some(thread),
        }
    }

    pub(crate) fn owned(&self) -> BTreeSet<i32> {
        self.seen.lock().unwrap().owned.clone()
    }

    pub(crate) fn stop(&mut self, close: bool) {
        self.close.store(close, Ordering::SeqCst);
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join().expect("member thread");
        }
    }
}

pub(crate) fn member_loop(
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
                        (g.generation().1, g.is_leader())
                    })
                    .unwrap_or((-1, false));
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
            s.note(events);
            s.records.extend(records);
            (s.generation, s.leader) = generation;
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
pub(crate) fn wait_for(members: &[&Member], limit: Duration, what: &str, cond: impl Fn() -> bool) {
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

pub(crate) fn values(members: &[&Member]) -> Vec<u64> {
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
