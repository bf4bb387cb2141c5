//! `machine_consumer`: the fetcher ([`Consumer`]) inside the client. The application
//! assigns, seeks, pauses, resumes, forgets, rewinds, polls and closes; Fetch answers
//! carry record batches built from the input (or raw bytes, cut batches, control and
//! transactional batches), session ids, errors, diverging epochs, preferred replicas;
//! ListOffsets and OffsetForLeaderEpoch answers offsets and epochs. Checked after every
//! step: the buffered bytes stay within `queued.max.messages.kbytes` plus one answer;
//! one Fetch in flight per connection; a poll hands out no record below a partition's
//! position, in increasing offsets, and leaves the position past the last one; a close
//! finishes the machine at once.

use std::collections::BTreeMap;

use kafka_core::client::{Event, OpId};
use kafka_core::consumer::{Consumer, ConsumerRecord};
use kafka_core::protocol::ApiKey;

use crate::input::{Input, STEP};
use crate::net::{net_op, Net};

/// The application's opcodes (after the network's).
pub mod app_op {
    use super::net_op;
    /// Assign partitions.
    pub const ASSIGN: u8 = net_op::COUNT;
    /// Seek, pause, resume, forget or rewind a partition.
    pub const MOVE: u8 = net_op::COUNT + 1;
    /// Poll records.
    pub const POLL: u8 = net_op::COUNT + 2;
    /// Close.
    pub const CLOSE: u8 = net_op::COUNT + 3;
    /// How many opcodes there are in all.
    pub const COUNT: u8 = net_op::COUNT + 4;
}

const MAX_STEPS: usize = 3000;
/// One answer's bytes beyond the budget (the harness's answers are far smaller).
const ANSWER_SLACK: usize = 64 * 1024;
const PARTITIONS: [(&str, i32); 5] = [("t", 0), ("t", 1), ("t", 2), ("u", 0), ("t", 7)];

/// Runs one input; returns how many records were polled (a seed's depth).
pub fn run(data: &[u8]) -> usize {
    let mut whole = Input::new(data);
    let mut input = whole.chunk(STEP);
    let kbytes = 1 + input.below(32);
    let extra = vec![
        ("queued.max.messages.kbytes", kbytes.to_string()),
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
    let (mut net, config) = Net::new(&extra);
    let consumer = net.client.start_op(net.now, Consumer::new(&config));
    let mut finished = false;
    let mut closed = false;
    let mut polled = 0;
    net.drain(&mut input);
    let mut steps = 0;
    while !whole.is_empty() && steps < MAX_STEPS && !finished {
        let mut input = whole.chunk(STEP);
        let code = input.u8() % app_op::COUNT;
        net.trace(&format!("action {code}"));
        let now = net.now;
        match code {
            app_op::ASSIGN => {
                let chosen: Vec<(&str, i32)> = PARTITIONS
                    .iter()
                    .copied()
                    .filter(|_| !input.one_in(2))
                    .collect();
                net.client
                    .command(now, consumer, |c, cx| c.assign(cx, chosen.iter().copied()));
            }
            app_op::MOVE => {
                let (t, p) = PARTITIONS[input.below(PARTITIONS.len())];
                let which = input.u8() % 7;
                let offset = input.offset();
                net.client.command(now, consumer, |c, _| match which {
                    0 => c.seek(t, p, offset),
                    1 => c.seek_to_beginning([(t, p)]),
                    2 => c.seek_to_end([(t, p)]),
                    3 => c.pause([(t, p)]),
                    4 => c.resume([(t, p)]),
                    5 => c.forget([(t, p)]),
                    _ => c.rewind(t, p, offset),
                });
            }
            app_op::POLL => polled += poll(&mut net, consumer),
            app_op::CLOSE => {
                closed = true;
                net.client.command(now, consumer, |c, cx| c.close(cx));
            }
            _ => net.step(code, &mut input),
        }
        net.drain(&mut input);
        for e in std::mem::take(&mut net.events) {
            if let Event::OperationDone(r) = e {
                if consumer == r {
                    assert!(closed, "the consumer finished without a close");
                    finished = true;
                }
            }
        }
        assert!(!closed || finished, "a closed consumer did not finish");
        check(&mut net, consumer, kbytes * 1024);
        steps += 1;
    }
    // A silent cluster: the consumer keeps retrying, but never spins (each jump's
    // `fire` checks the next timer is in the future).
    net.go_silent();
    for _ in 0..200 {
        if !net.jump() {
            break;
        }
        check(&mut net, consumer, kbytes * 1024);
        net.events.clear();
    }
    polled
}

fn check(net: &mut Net, consumer: OpId<Consumer>, budget: usize) {
    if let Some(m) = net.client.command(net.now, consumer, |c, _| c.metrics()) {
        assert!(
            m.buffered_bytes <= budget + ANSWER_SLACK,
            "{} bytes buffered, budget {budget}",
            m.buffered_bytes
        );
    }
    for n in net.in_flight_of(ApiKey::Fetch) {
        assert!(n <= 1, "{n} Fetch requests in flight on one connection");
    }
}

/// Polls once: per partition, offsets at or above the position before, increasing,
/// and the position after past the last record.
fn poll(net: &mut Net, consumer: OpId<Consumer>) -> usize {
    let now = net.now;
    net.client
        .command(now, consumer, |c, _| {
            let before: BTreeMap<(String, i32), Option<i64>> = PARTITIONS
                .iter()
                .map(|&(t, p)| ((t.to_string(), p), c.position(t, p)))
                .collect();
            let mut out: Vec<ConsumerRecord> = Vec::new();
            c.poll(&mut out);
            let mut last: BTreeMap<(String, i32), i64> = BTreeMap::new();
            for r in &out {
                let key = (r.topic.to_string(), r.partition);
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
        .unwrap_or(0)
}
