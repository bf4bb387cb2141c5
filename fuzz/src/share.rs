//! `machine_share`: the share consumer ([`ShareConsumer`], KIP-932) inside the client,
//! in implicit or explicit acknowledgement mode. The application subscribes, polls,
//! acknowledges (accept, release, reject, renew; records it was handed and ones it was
//! not), commits and closes among the network actions of [`crate::net`]; ShareGroup
//! heartbeats, ShareFetch and ShareAcknowledge answers come from
//! [`crate::answers_share`].
//!
//! Checked after every step: a completed acknowledgement lists only records the
//! application was handed, never more often than it was handed them (a renewal's own
//! completion counted); acknowledging a
//! record never handed out is refused; an explicit-mode poll with records awaiting an
//! acknowledgement is refused and hands nothing out; each commit is reported once, and
//! every commit by the time the machine finishes; a closed consumer finishes by its
//! close deadline (`request.timeout.ms`). At the end the consumer closes against a
//! silent cluster and must finish by that deadline.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use kafka_core::client::{Event, OpId};
use kafka_core::group::TopicPartition;
use kafka_core::share::{
    AckCompletion, AcknowledgeType, ShareCommitId, ShareConsumer, ShareError, ShareEvent,
    ShareRecord,
};

use crate::input::{Input, STEP};
use crate::net::{net_op, Net};

/// The application's opcodes (after the network's).
pub mod app_op {
    use super::net_op;
    /// Subscribe to topics (none: leave).
    pub const SUBSCRIBE: u8 = net_op::COUNT;
    /// Poll records.
    pub const POLL: u8 = net_op::COUNT + 1;
    /// Acknowledge a record (explicit mode).
    pub const ACK: u8 = net_op::COUNT + 2;
    /// Commit.
    pub const COMMIT: u8 = net_op::COUNT + 3;
    /// Close.
    pub const CLOSE: u8 = net_op::COUNT + 4;
    /// How many opcodes there are in all.
    pub const COUNT: u8 = net_op::COUNT + 5;
}

const MAX_STEPS: usize = 3000;
/// `request.timeout.ms` of [`crate::net::BASE_SETTINGS`]: the close bound.
const CLOSE_TIMEOUT: Duration = Duration::from_millis(1000);

/// How deep an input got (a seed's depth).
#[derive(Debug, Default, Clone, Copy)]
pub struct Depth {
    /// Assignments reported with partitions.
    pub assigned: usize,
    /// Records handed out.
    pub polled: usize,
    /// Acknowledgements completed successfully (records).
    pub acknowledged: usize,
}

struct World {
    net: Net,
    op: OpId<ShareConsumer>,
    explicit: bool,
    /// How many completions each record may have: one per handing out, one more per
    /// renewal the consumer took.
    handed: BTreeMap<(TopicPartition, i64), u32>,
    /// How often each record's acknowledgement completed.
    completed: BTreeMap<(TopicPartition, i64), u32>,
    /// Records of the last polls, to acknowledge.
    recent: Vec<(TopicPartition, i64)>,
    commits: BTreeSet<ShareCommitId>,
    reported: BTreeSet<ShareCommitId>,
    closed_at: Option<Instant>,
    finished: bool,
    depth: Depth,
}

/// Runs one input.
pub fn run(data: &[u8]) -> Depth {
    let mut whole = Input::new(data);
    let mut input = whole.chunk(STEP);
    let explicit = !input.u8().is_multiple_of(2);
    let extra = vec![
        ("group.id", "sg".to_string()),
        (
            "share.acknowledgement.mode",
            if explicit { "explicit" } else { "implicit" }.to_string(),
        ),
        ("max.poll.records", (1 + input.below(10)).to_string()),
        ("fetch.max.wait.ms", "100".to_string()),
    ];
    let (mut net, config) = Net::new(&extra);
    let consumer = ShareConsumer::new(&config).expect("share consumer");
    let op = net.client.start_op(net.now, consumer);
    let mut w = World {
        net,
        op,
        explicit,
        handed: BTreeMap::new(),
        completed: BTreeMap::new(),
        recent: Vec::new(),
        commits: BTreeSet::new(),
        reported: BTreeSet::new(),
        closed_at: None,
        finished: false,
        depth: Depth::default(),
    };
    w.net.drain(&mut input);
    w.settle();
    let mut steps = 0;
    while !whole.is_empty() && steps < MAX_STEPS && !w.finished {
        let mut input = whole.chunk(STEP);
        let code = input.u8() % app_op::COUNT;
        w.net.trace(&format!("action {code}"));
        w.act(code, &mut input);
        w.net.drain(&mut input);
        w.settle();
        steps += 1;
    }
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
        "a closed share consumer never finished with a silent cluster: {:?}",
        w.net.client
    );
    let open: Vec<_> = w.commits.difference(&w.reported).collect();
    assert!(open.is_empty(), "commits {open:?} never reported");
    w.depth
}

impl World {
    fn act(&mut self, code: u8, input: &mut Input) {
        let now = self.net.now;
        let op = self.op;
        match code {
            app_op::SUBSCRIBE => {
                let names: Vec<&str> = ["t", "u", "missing"]
                    .into_iter()
                    .filter(|_| !input.one_in(2))
                    .collect();
                self.net
                    .client
                    .command(now, op, |c, cx| c.subscribe(cx, names));
            }
            app_op::POLL => self.poll(),
            app_op::ACK => self.acknowledge(input),
            app_op::COMMIT => {
                if let Some(id) = self.net.client.command(now, op, |c, cx| c.commit(cx)) {
                    assert!(self.commits.insert(id), "commit id {id:?} given twice");
                }
            }
            app_op::CLOSE => self.close(),
            _ => self.net.step(code, input),
        }
    }

    fn close(&mut self) {
        let now = self.net.now;
        if self
            .net
            .client
            .command(now, self.op, |c, cx| c.close(cx))
            .is_some()
            && self.closed_at.is_none()
        {
            self.closed_at = Some(now);
        }
    }

    /// Acknowledges a record of the last polls (or one never handed out, which must be
    /// refused).
    fn acknowledge(&mut self, input: &mut Input) {
        let kind = [
            AcknowledgeType::Accept,
            AcknowledgeType::Release,
            AcknowledgeType::Reject,
            AcknowledgeType::Renew,
        ][input.below(4)];
        let stranger = input.one_in(8) || self.recent.is_empty();
        let (tp, offset) = if stranger {
            let offset = input.offset();
            (("t".into(), input.below(4) as i32), offset)
        } else {
            self.recent[input.below(self.recent.len())].clone()
        };
        let never = !self.handed.contains_key(&(tp.clone(), offset));
        let now = self.net.now;
        let result = self.net.client.command(now, self.op, |c, _| {
            c.acknowledge(&tp.0, tp.1, offset, kind)
        });
        if let Some(r) = result {
            if r.is_ok() && kind == AcknowledgeType::Renew {
                // A renewal completes on its own, before the record's final
                // acknowledgement: one more completion is owed for it.
                *self.handed.entry((tp.clone(), offset)).or_default() += 1;
            }
            if never || !self.explicit {
                assert!(
                    r.is_err(),
                    "acknowledging {tp:?} at {offset} was taken (never handed out: {never}, explicit {})",
                    self.explicit
                );
            }
        }
    }

    fn poll(&mut self) {
        let now = self.net.now;
        let explicit = self.explicit;
        let got = self.net.client.command(now, self.op, |c, cx| {
            let waiting = c.unacknowledged();
            let mut out: Vec<ShareRecord> = Vec::new();
            let r = c.poll(cx, &mut out);
            if explicit && waiting > 0 {
                assert!(
                    matches!(r, Err(ShareError::Unacknowledged { .. })) && out.is_empty(),
                    "an explicit poll with {waiting} records unacknowledged gave {r:?}, {} records",
                    out.len()
                );
            }
            if let Ok(n) = &r {
                assert_eq!(*n, out.len(), "poll's count and its records differ");
            }
            out.iter()
                .map(|r| ((r.topic.clone(), r.partition), r.offset))
                .collect::<Vec<(TopicPartition, i64)>>()
        });
        let Some(got) = got else { return };
        if !got.is_empty() {
            self.recent = got.clone();
        }
        for key in got {
            *self.handed.entry(key).or_default() += 1;
            self.depth.polled += 1;
        }
    }

    fn settle(&mut self) {
        let now = self.net.now;
        let events: Vec<ShareEvent> = self
            .net
            .client
            .command(now, self.op, |c, _| {
                std::iter::from_fn(|| c.take_event()).collect()
            })
            .unwrap_or_default();
        self.net.drain(&mut Input::new(&[]));
        for e in events {
            self.on_event(e);
        }
        for e in std::mem::take(&mut self.net.events) {
            if let Event::OperationDone(r) = e {
                if self.op == r {
                    assert!(self.closed_at.is_some(), "finished without a close");
                    assert!(!self.finished, "finished twice");
                    self.finished = true;
                    let out = self
                        .net
                        .client
                        .take_op_output(self.op)
                        .expect("a finished share consumer's output");
                    for e in out {
                        self.on_event(e);
                    }
                }
            }
        }
        if let Some(at) = self.closed_at {
            assert!(
                self.finished || self.net.now < at + CLOSE_TIMEOUT,
                "a share consumer closed at {:?} is still running at {:?}: {:?}",
                at - self.net.origin,
                self.net.now - self.net.origin,
                self.net.client
            );
        }
    }

    fn on_event(&mut self, e: ShareEvent) {
        self.net.trace(&format!("share event {e:?}"));
        match e {
            ShareEvent::Assigned(ps) => {
                if !ps.is_empty() {
                    self.depth.assigned += 1;
                }
            }
            ShareEvent::Committed { id, .. } => {
                assert!(self.commits.contains(&id), "a commit {id:?} never made");
                assert!(self.reported.insert(id), "commit {id:?} reported twice");
            }
            ShareEvent::Acknowledged(done) => {
                for c in done {
                    self.completion(c);
                }
            }
            ShareEvent::AcknowledgeFailed(_) | ShareEvent::Fenced(_) | ShareEvent::Failed(_) => {}
            other => panic!("an unknown share event {other:?}"),
        }
    }

    /// A completion lists records handed out, each no more often than handed.
    fn completion(&mut self, c: AckCompletion) {
        let ok = c.result.is_ok();
        for offset in c.iter_offsets().take(100_000) {
            let key = (c.partition.clone(), offset);
            let handed = self.handed.get(&key).copied().unwrap_or(0);
            let n = self.completed.entry(key).or_default();
            *n += 1;
            assert!(
                *n <= handed,
                "{:?} at {offset}: acknowledgement completed {n} times, handed out {handed} ({:?})",
                c.partition,
                c.result
            );
            if ok {
                self.depth.acknowledged += 1;
            }
        }
    }
}
