//! `machine_group`: the consumer-group member ([`GroupConsumer`]) inside the client,
//! classic (each assignor, static membership optional) or KIP-848
//! (`group.protocol=consumer`). The application subscribes (topics or a pattern),
//! polls, commits (its positions or offsets it picks), seeks, pauses, resumes,
//! unsubscribes and closes among the network actions of [`crate::net`]; the
//! coordinator's answers come from [`crate::answers_group`].
//!
//! Checked after every step: a partition is never reported `Assigned` again before a
//! `Revoked`/`Lost` of it; only assigned partitions are revoked, and only assigned or
//! revoked ones lost (once); a poll hands
//! out records only of partitions the application owns, at or above their positions,
//! in increasing offsets; each commit is reported once, an explicit one within its
//! bound; the buffered bytes stay within `queued.max.messages.kbytes` plus one answer;
//! one Fetch in flight per connection; a closed member finishes by its close deadline
//! (`2 × max(request.timeout.ms, 30 s)`). At the end the member closes against a silent
//! cluster and must finish by that deadline.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use kafka_core::client::{Event, OpId};
use kafka_core::config::GroupProtocol;
use kafka_core::consumer::ConsumerRecord;
use kafka_core::group::{CommitId, GroupConsumer, GroupEvent, TopicPartition, TopicPattern};
use kafka_core::protocol::ApiKey;

use crate::input::{Input, STEP};
use crate::net::{net_op, Net, ATTEMPT_BOUND};

/// The application's opcodes (after the network's).
pub mod app_op {
    use super::net_op;
    /// Subscribe to topics or a pattern.
    pub const SUBSCRIBE: u8 = net_op::COUNT;
    /// Poll records.
    pub const POLL: u8 = net_op::COUNT + 1;
    /// Commit consumed positions or chosen offsets.
    pub const COMMIT: u8 = net_op::COUNT + 2;
    /// Seek, seek to beginning/end, rewind, pause or resume a partition.
    pub const MOVE: u8 = net_op::COUNT + 3;
    /// Unsubscribe.
    pub const UNSUBSCRIBE: u8 = net_op::COUNT + 4;
    /// Close.
    pub const CLOSE: u8 = net_op::COUNT + 5;
    /// How many opcodes there are in all.
    pub const COUNT: u8 = net_op::COUNT + 6;
}

const MAX_STEPS: usize = 3000;
/// One answer's bytes beyond the budget (the harness's answers are far smaller).
const ANSWER_SLACK: usize = 64 * 1024;
const PARTITIONS: [(&str, i32); 5] = [("t", 0), ("t", 1), ("t", 2), ("u", 0), ("t", 7)];
/// `2 × max(request.timeout.ms, 30 s)`: the member's commit timeout and close bound.
const COMMIT_TIMEOUT: Duration = Duration::from_secs(60);

/// The latest an explicit commit may end after it was made: its own timeout, waiting
/// for the commit before it (bounded the same way; commits go one at a time), and a
/// last attempt's router bound (three attempts, each a coordinator lookup and a send).
fn commit_bound() -> Duration {
    COMMIT_TIMEOUT + ATTEMPT_BOUND * 8
}

/// How deep an input got (a seed's depth).
#[derive(Debug, Default, Clone, Copy)]
pub struct Depth {
    /// Partitions reported `Assigned`.
    pub assigned: usize,
    /// Records handed out.
    pub polled: usize,
    /// Commits that succeeded.
    pub committed: usize,
}

struct World {
    net: Net,
    op: OpId<GroupConsumer>,
    /// What the application owns by the events: assigned, not revoked or lost.
    owned: BTreeSet<TopicPartition>,
    /// Partitions reported `Revoked` and not assigned again since.
    revoked: BTreeSet<TopicPartition>,
    /// Explicit commits not reported yet, with their deadline.
    open_commits: BTreeMap<CommitId, Instant>,
    /// Every commit reported.
    reported: BTreeSet<CommitId>,
    closed_at: Option<Instant>,
    finished: bool,
    budget: usize,
    depth: Depth,
}

/// Runs one input.
pub fn run(data: &[u8]) -> Depth {
    let mut whole = Input::new(data);
    let mut input = whole.chunk(STEP);
    let (extra, kbytes, protocol) = settings(&mut input);
    let (mut net, config) = Net::new(&extra);
    let member = GroupConsumer::new(&config).expect("group consumer");
    let op = net.client.start_op(net.now, member);
    let mut w = World {
        net,
        op,
        owned: BTreeSet::new(),
        revoked: BTreeSet::new(),
        open_commits: BTreeMap::new(),
        reported: BTreeSet::new(),
        closed_at: None,
        finished: false,
        budget: kbytes * 1024,
        depth: Depth::default(),
    };
    w.net.drain(&mut input);
    w.settle();
    let mut steps = 0;
    while !whole.is_empty() && steps < MAX_STEPS && !w.finished {
        let mut input = whole.chunk(STEP);
        let code = input.u8() % app_op::COUNT;
        w.net.trace(&format!("action {code}"));
        w.act(code, &mut input, protocol);
        w.net.drain(&mut input);
        w.settle();
        steps += 1;
    }
    // The end: a close against a silent cluster finishes by its deadline.
    if !w.finished && w.closed_at.is_none() {
        w.close();
        w.net.drain(&mut Input::new(&[]));
        w.settle();
    }
    w.net.go_silent();
    for _ in 0..10_000 {
        if w.finished || !w.net.jump() {
            break;
        }
        w.settle();
    }
    assert!(
        w.finished,
        "a closed member never finished with a silent cluster: {:?}",
        w.net.client
    );
    w.depth
}

/// The settings chunk: protocol, assignor, static membership, auto-commit, budgets,
/// timeouts.
fn settings(input: &mut Input) -> (Vec<(&'static str, String)>, usize, GroupProtocol) {
    let kbytes = 1 + input.below(32);
    let protocol = if input.u8().is_multiple_of(2) {
        GroupProtocol::Classic
    } else {
        GroupProtocol::Consumer
    };
    let assignor = [
        "range",
        "roundrobin",
        "sticky",
        "cooperative-sticky",
        "range,cooperative-sticky",
    ][input.below(5)];
    let heartbeat = 100 + 100 * input.below(8);
    let mut extra = vec![
        ("queued.max.messages.kbytes", kbytes.to_string()),
        ("group.id", "g".to_string()),
        (
            "group.protocol",
            match protocol {
                GroupProtocol::Classic => "classic",
                GroupProtocol::Consumer => "consumer",
            }
            .to_string(),
        ),
        ("partition.assignment.strategy", assignor.to_string()),
        ("heartbeat.interval.ms", heartbeat.to_string()),
        (
            "session.timeout.ms",
            (3000 + 1000 * input.below(4)).to_string(),
        ),
        (
            "max.poll.interval.ms",
            (2000 + 1000 * input.below(8)).to_string(),
        ),
        (
            "enable.auto.commit",
            (input.u8().is_multiple_of(2)).to_string(),
        ),
        (
            "auto.commit.interval.ms",
            (200 + 200 * input.below(8)).to_string(),
        ),
        ("max.poll.records", (1 + input.below(10)).to_string()),
        ("fetch.max.wait.ms", "100".to_string()),
        (
            "auto.offset.reset",
            ["earliest", "latest", "none"][input.below(3)].to_string(),
        ),
        (
            "isolation.level",
            ["read_uncommitted", "read_committed"][input.below(2)].to_string(),
        ),
    ];
    if input.one_in(2) {
        extra.push(("group.instance.id", "i-fuzz".to_string()));
    }
    (extra, kbytes, protocol)
}

impl World {
    fn act(&mut self, code: u8, input: &mut Input, protocol: GroupProtocol) {
        let now = self.net.now;
        let op = self.op;
        match code {
            app_op::SUBSCRIBE => {
                let which = input.u8();
                if which % 4 == 3 {
                    let source = ["t|u", "[tu]", ".*", "t", "(", "x.*"][input.below(6)];
                    let Ok(pattern) = TopicPattern::new(source, protocol) else {
                        return;
                    };
                    self.net
                        .client
                        .command(now, op, |c, cx| c.subscribe_pattern(cx, pattern));
                } else {
                    let names: Vec<&str> = ["t", "u", "missing"]
                        .into_iter()
                        .filter(|_| !input.one_in(2))
                        .collect();
                    self.net
                        .client
                        .command(now, op, |c, cx| c.subscribe(cx, names.iter().copied()));
                }
            }
            app_op::POLL => self.poll(),
            app_op::COMMIT => {
                let how = input.u8() % 3;
                let picked: Vec<(TopicPartition, i64)> = PARTITIONS
                    .iter()
                    .filter_map(|&(t, p)| {
                        if input.one_in(2) {
                            return None;
                        }
                        Some(((t.into(), p), input.offset()))
                    })
                    .collect();
                let owned = self.owned.clone();
                let id = self.net.client.command(now, op, |c, cx| match how {
                    0 => c.commit_consumed(cx),
                    1 => {
                        let mine = picked.into_iter().filter(|(tp, _)| owned.contains(tp));
                        c.commit(cx, mine)
                    }
                    _ => c.commit(cx, picked),
                });
                if let Some(id) = id {
                    if !self.reported.contains(&id) {
                        self.open_commits.insert(id, now + commit_bound());
                    }
                }
            }
            app_op::MOVE => {
                let (t, p) = PARTITIONS[input.below(PARTITIONS.len())];
                let which = input.u8() % 6;
                let offset = input.offset();
                self.net.client.command(now, op, |c, _| match which {
                    0 => c.seek(t, p, offset),
                    1 => c.seek_to_beginning([(t, p)]),
                    2 => c.seek_to_end([(t, p)]),
                    3 => c.pause([(t, p)]),
                    4 => c.resume([(t, p)]),
                    _ => c.rewind(t, p, offset),
                });
            }
            app_op::UNSUBSCRIBE => {
                self.net.client.command(now, op, |c, cx| c.unsubscribe(cx));
            }
            app_op::CLOSE => self.close(),
            _ => self.net.step(code, input),
        }
    }

    fn close(&mut self) {
        // What the application gives up at close is what it owns by the events, and
        // nothing once closing.
        self.settle();
        let now = self.net.now;
        let got = self.net.client.command(now, self.op, |c, cx| {
            let released = c.release_on_close();
            c.close(cx);
            (released, c.release_on_close())
        });
        if let Some((released, after)) = got {
            let gives_up: BTreeSet<TopicPartition> = match &released {
                Some(GroupEvent::Revoked(ps) | GroupEvent::Lost(ps)) => {
                    ps.iter().cloned().collect()
                }
                None => BTreeSet::new(),
                Some(other) => panic!("released at close: {other:?}"),
            };
            // Exactly what the events gave: every partition heard Assigned and not yet
            // Revoked or Lost.
            if self.closed_at.is_none() {
                assert_eq!(
                    gives_up, self.owned,
                    "released at close (left), the events gave (right)"
                );
                self.closed_at = Some(now);
            }
            assert!(after.is_none(), "released again once closing: {after:?}");
        }
    }

    /// Takes the member's events and the client's, then checks the invariants.
    fn settle(&mut self) {
        let now = self.net.now;
        let events: Vec<GroupEvent> = self
            .net
            .client
            .command(now, self.op, |c, _| {
                std::iter::from_fn(|| c.take_event()).collect()
            })
            .unwrap_or_default();
        // Taking events may have sent or finished something.
        self.net.drain(&mut Input::new(&[]));
        for e in events {
            self.on_event(e);
        }
        for e in std::mem::take(&mut self.net.events) {
            if let Event::OperationDone(r) = e {
                if self.op == r {
                    assert!(
                        self.closed_at.is_some(),
                        "the member finished without a close"
                    );
                    assert!(!self.finished, "the member finished twice");
                    self.finished = true;
                    let out = self.net.client.take_op_output(self.op);
                    assert!(out.is_some(), "a finished member has no output");
                }
            }
        }
        self.check();
    }

    fn on_event(&mut self, e: GroupEvent) {
        self.net.trace(&format!("group event {e:?}"));
        match e {
            GroupEvent::Assigned(ps) => {
                for tp in ps {
                    assert!(
                        self.owned.insert(tp.clone()),
                        "{tp:?} assigned twice without a revoke or loss in between"
                    );
                    self.revoked.remove(&tp);
                    self.depth.assigned += 1;
                }
            }
            GroupEvent::Revoked(ps) => {
                for tp in ps {
                    assert!(
                        self.owned.remove(&tp),
                        "{tp:?} revoked but not assigned (owned {:?})",
                        self.owned
                    );
                    self.revoked.insert(tp);
                }
            }
            GroupEvent::Lost(ps) => {
                // A partition being revoked may be lost too (the revocation became a
                // loss), once.
                for tp in ps {
                    assert!(
                        self.owned.remove(&tp) || self.revoked.remove(&tp),
                        "{tp:?} lost but neither assigned nor being revoked (owned {:?})",
                        self.owned
                    );
                }
            }
            GroupEvent::Committed { id, result } => {
                assert!(self.reported.insert(id), "commit {id:?} reported twice");
                self.open_commits.remove(&id);
                if result.is_ok() {
                    self.depth.committed += 1;
                }
            }
            GroupEvent::Failed(_) => {}
            other => panic!("an unknown group event {other:?}"),
        }
    }

    fn check(&mut self) {
        let now = self.net.now;
        if let Some(m) = self.net.client.command(now, self.op, |c, _| c.metrics()) {
            assert!(
                m.buffered_bytes <= self.budget + ANSWER_SLACK,
                "{} bytes buffered, budget {}",
                m.buffered_bytes,
                self.budget
            );
        }
        for n in self.net.in_flight_of(ApiKey::Fetch) {
            assert!(n <= 1, "{n} Fetch requests in flight on one connection");
        }
        // A throttle a broker asked for delays the requests behind it.
        let throttled = self.net.throttled_until + commit_bound();
        for (id, due) in &self.open_commits {
            assert!(
                self.finished || now <= *due.max(&throttled),
                "commit {id:?} still running past its bound ({:?} after it)",
                now - *due
            );
        }
        if let Some(at) = self.closed_at {
            assert!(
                self.finished || now < at + COMMIT_TIMEOUT,
                "a member closed at {:?} is still running at {:?}: {:?}",
                at - self.net.origin,
                now - self.net.origin,
                self.net.client
            );
        }
    }

    /// Polls once: records only of owned partitions, at or above the position before,
    /// increasing, the position after past the last one.
    fn poll(&mut self) {
        let now = self.net.now;
        let owned = self.owned.clone();
        let n = self
            .net
            .client
            .command(now, self.op, |c, cx| {
                let before: BTreeMap<TopicPartition, Option<i64>> = PARTITIONS
                    .iter()
                    .map(|&(t, p)| ((t.into(), p), c.position(t, p)))
                    .collect();
                let mut out: Vec<ConsumerRecord> = Vec::new();
                c.poll(cx, &mut out);
                let mut last: BTreeMap<TopicPartition, i64> = BTreeMap::new();
                for r in &out {
                    let key: TopicPartition = (r.topic.to_string().into(), r.partition);
                    assert!(
                        owned.contains(&key),
                        "a record of {key:?} handed out, owned {owned:?}"
                    );
                    let position = before.get(&key).copied().flatten();
                    assert!(
                        position.is_some_and(|pos| r.offset >= pos),
                        "record at {} of {key:?} handed out with position {position:?}",
                        r.offset
                    );
                    if let Some(prev) = last.insert(key.clone(), r.offset) {
                        assert!(r.offset > prev, "{key:?}: offset {} after {prev}", r.offset);
                    }
                }
                for ((t, p), off) in last {
                    let pos = c.position(&t, p);
                    assert!(
                        pos.is_some_and(|pos| pos > off),
                        "{t}-{p}: position {pos:?} after handing out offset {off}"
                    );
                }
                out.len()
            })
            .unwrap_or(0);
        self.depth.polled += n;
    }
}
