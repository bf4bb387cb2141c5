//! `machine_producer` and `machine_transactions`: the [`Producer`] machine inside the
//! client. The application sends records (explicit partitions, keyed, to an unknown
//! topic, too large), flushes, closes or aborts; with a `transactional.id` it also
//! initializes, begins, sends offsets, commits and aborts; Produce answers carry codes,
//! offsets, leader hints and partitions from the input (see [`crate::answers`]).
//! Checked after every step: every record is reported at most once and, once its
//! `delivery.timeout.ms` and one attempt's bound (plus any throttle) have passed, it has
//! been reported — with a notify, so an adapter waiting for it wakes; `buffer.memory`
//! holds; a flush is done only once every record before it is reported; the machine
//! finishes after a close once everything is reported.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kafka_core::client::{Event, OpId};
use kafka_core::group::GroupMetadata;
use kafka_core::producer::{FlushToken, Producer, ProducerRecord, Report, TxnOffset};

use crate::input::{Input, STEP};
use crate::net::{net_op, Net, ATTEMPT_BOUND};

/// The application's opcodes (after the network's).
pub mod app_op {
    use super::net_op;
    /// Send a record.
    pub const SEND: u8 = net_op::COUNT;
    /// Flush.
    pub const FLUSH: u8 = net_op::COUNT + 1;
    /// Close (or, rarely, abort).
    pub const CLOSE: u8 = net_op::COUNT + 2;
    /// A transactional call (init, begin, send offsets, commit, abort).
    pub const TXN: u8 = net_op::COUNT + 3;
    /// How many opcodes there are in all.
    pub const COUNT: u8 = net_op::COUNT + 4;
}

const MAX_STEPS: usize = 3000;
const DELIVERY_TIMEOUT: Duration = Duration::from_millis(3000);
/// `buffer.memory` may be passed by split pieces' own headers (documented excess).
const BUFFER_SLACK: usize = 4096;

struct Driver {
    producer: OpId<Producer>,
    /// Records sent and not reported, by (batch, index): when they were sent.
    pending: BTreeMap<(u64, u32), Instant>,
    /// Records reported.
    reported: u64,
    /// Records acknowledged.
    acked: u64,
    flushes: Vec<(FlushToken, Vec<(u64, u32)>)>,
    closed: bool,
    finished: bool,
    txn_results: usize,
    txn_calls: usize,
}

/// Runs one input on an idempotent producer; returns the records acknowledged.
pub fn run(data: &[u8]) -> u64 {
    drive(data, false)
}

/// Runs one input on a transactional producer; returns the records acknowledged.
pub fn run_transactional(data: &[u8]) -> u64 {
    drive(data, true)
}

fn drive(data: &[u8], transactional: bool) -> u64 {
    let mut whole = Input::new(data);
    let mut input = whole.chunk(STEP);
    let mut extra = vec![
        ("linger.ms", input.below(20).to_string()),
        ("batch.size", (200 + input.below(2000)).to_string()),
        ("buffer.memory", (4096 + input.below(60_000)).to_string()),
        (
            "max.in.flight.requests.per.connection",
            (1 + input.below(5)).to_string(),
        ),
        (
            "delivery.timeout.ms",
            DELIVERY_TIMEOUT.as_millis().to_string(),
        ),
        ("max.request.size", (1000 + input.below(4000)).to_string()),
    ];
    if input.one_in(4) {
        extra.push(("enable.idempotence", "false".into()));
        extra.push(("acks", ["0", "1"][input.below(2)].into()));
    }
    if transactional {
        extra.retain(|(k, _)| *k != "enable.idempotence" && *k != "acks");
        extra.push(("transactional.id", "tx".into()));
    }
    let (mut net, config) = Net::new(&extra);
    let Ok(producer) = Producer::new(&config) else {
        return 0;
    };
    let producer = net.client.start_op(net.now, producer);
    let mut d = Driver {
        producer,
        pending: BTreeMap::new(),
        reported: 0,
        acked: 0,
        flushes: Vec::new(),
        closed: false,
        finished: false,
        txn_results: 0,
        txn_calls: 0,
    };
    net.drain(&mut input);
    let mut steps = 0;
    while !whole.is_empty() && steps < MAX_STEPS {
        let mut input = whole.chunk(STEP);
        let code = input.u8() % app_op::COUNT;
        net.trace(&format!("action {code}"));
        match code {
            app_op::SEND => d.send(&mut net, &mut input),
            app_op::FLUSH => {
                let now = net.now;
                let before: Vec<(u64, u32)> = d.pending.keys().copied().collect();
                if let Some(t) = net.client.command(now, d.producer, |p, _| p.flush()) {
                    d.flushes.push((t, before));
                }
            }
            app_op::CLOSE => {
                let now = net.now;
                d.closed = true;
                if input.one_in(4) {
                    net.client.command(now, d.producer, |p, cx| p.abort(cx));
                } else {
                    net.client.command(now, d.producer, |p, _| p.close());
                }
            }
            app_op::TXN => d.txn(&mut net, &mut input),
            _ => net.step(code, &mut input),
        }
        net.drain(&mut input);
        d.events(&mut net);
        d.check(&mut net);
        steps += 1;
    }
    net.go_silent();
    let silent_from = net.now;
    for _ in 0..10_000 {
        d.events(&mut net);
        d.check(&mut net);
        // A transactional close aborts first, and EndTxn is retried without end (a
        // commit or abort is never given up on the same epoch): with a silent
        // coordinator only the records are bounded.
        if d.pending.is_empty() && (!d.closed || d.finished || transactional) {
            break;
        }
        if !net.jump() {
            break;
        }
    }
    d.events(&mut net);
    assert!(
        d.pending.is_empty(),
        "{} records never reported after the cluster went silent {:?} ago: {:?}",
        d.pending.len(),
        net.now - silent_from,
        net.client
    );
    // A closed idempotent producer with every record reported finishes (a transactional
    // one may wait for EndTxn without end, see above).
    assert!(
        !d.closed || d.finished || transactional,
        "a closed producer with nothing left to report never finished"
    );
    assert!(
        d.txn_results <= d.txn_calls,
        "more transaction results than calls"
    );
    d.acked
}

impl Driver {
    fn send(&mut self, net: &mut Net, input: &mut Input) {
        let topic = match input.u8() % 8 {
            0 => "u",
            1 => "x",
            _ => "t",
        };
        let len = if input.one_in(16) {
            input.below(6000)
        } else {
            input.below(200)
        };
        let value = vec![input.u8(); len];
        let key = [input.u8()];
        let mut rec = ProducerRecord::new(topic, &value);
        match input.u8() % 4 {
            0 => rec = rec.key(&key),
            1 => rec = rec.partition(input.below(4) as i32),
            _ => {}
        }
        let now = net.now;
        let out = net
            .client
            .command(now, self.producer, |p, cx| p.send(cx, &rec));
        net.trace(&format!("send {topic} {len}: {out:?}"));
        if let Some(Ok(a)) = out {
            assert!(!self.closed, "a closed producer took a record");
            let fresh = self.pending.insert((a.batch.0, a.index), now).is_none();
            assert!(fresh, "record ({}, {}) appended twice", a.batch.0, a.index);
        }
    }

    fn txn(&mut self, net: &mut Net, input: &mut Input) {
        let now = net.now;
        let which = input.u8() % 5;
        let out = net.client.command(now, self.producer, |p, cx| match which {
            0 => p.init_transactions(),
            1 => p.begin_transaction(cx),
            2 => p.send_offsets_to_transaction(
                [TxnOffset {
                    topic: "t".into(),
                    partition: 0,
                    offset: 5,
                    leader_epoch: None,
                }],
                &GroupMetadata {
                    group_id: "g".into(),
                    generation_id: -1,
                    member_id: String::new(),
                    group_instance_id: None,
                },
            ),
            3 => p.commit_transaction(),
            _ => p.abort_transaction(),
        });
        net.trace(&format!("txn {which}: {out:?}"));
        if matches!(out, Some(Ok(()))) && which != 1 {
            self.txn_calls += 1;
        }
    }

    /// Takes reports and results when the producer notifies; notes its end.
    fn events(&mut self, net: &mut Net) {
        loop {
            while let Some(e) = net.events.pop_front() {
                match e {
                    Event::Notify(r) if self.producer == r => self.take(net),
                    Event::OperationDone(r) if self.producer == r => {
                        assert!(self.closed, "the producer finished without a close");
                        self.finished = true;
                        net.client.take_op_output(self.producer);
                    }
                    _ => {}
                }
            }
            // Taking the last reports may finish a closed producer: its OperationDone
            // waits in the client's queue, not yet in `net.events`.
            let mut more = false;
            while let Some(e) = net.client.poll_event() {
                net.events.push_back(e);
                more = true;
            }
            if !more {
                return;
            }
        }
    }

    fn take(&mut self, net: &mut Net) {
        let now = net.now;
        let mut reports: Vec<Report> = Vec::new();
        let mut results = 0;
        net.client.command(now, self.producer, |p, _| {
            while let Some(r) = p.take_report() {
                reports.push(r);
            }
            while p.take_transaction_result().is_some() {
                results += 1;
            }
        });
        self.txn_results += results;
        if results > 0 {
            net.trace(&format!("{results} transaction results"));
        }
        for r in reports {
            for index in r.indexes() {
                assert!(
                    self.pending.remove(&(r.batch.0, index)).is_some(),
                    "a report for record ({}, {index}) not pending (reported twice?): {r:?}",
                    r.batch.0
                );
                self.reported += 1;
                self.acked += u64::from(r.outcome.is_ok());
            }
        }
    }

    fn check(&mut self, net: &mut Net) {
        let now = net.now;
        let Some(m) = net.client.command(now, self.producer, |p, _| {
            let done: Vec<bool> = self.flushes.iter().map(|(t, _)| p.is_flushed(*t)).collect();
            (p.metrics(), done)
        }) else {
            return;
        };
        let (metrics, flushed) = m;
        assert!(
            metrics.buffer_used + metrics.buffer_pooled <= metrics.buffer_limit + BUFFER_SLACK,
            "buffer.memory {} passed: {} charged, {} pooled",
            metrics.buffer_limit,
            metrics.buffer_used,
            metrics.buffer_pooled
        );
        let done: Vec<Vec<(u64, u32)>> = self
            .flushes
            .iter()
            .zip(flushed)
            .filter(|(_, done)| *done)
            .map(|((_, before), _)| before.clone())
            .collect();
        if done.iter().flatten().any(|k| self.pending.contains_key(k)) {
            // Reports may wait in the machine until taken.
            self.take(net);
            let still = done
                .iter()
                .flatten()
                .filter(|k| self.pending.contains_key(k))
                .count();
            assert_eq!(
                still, 0,
                "flushed with {still} records before it unreported"
            );
        }
        self.flushes.retain(|(t, _)| {
            net.client
                .command(now, self.producer, |p, _| !p.is_flushed(*t))
                .unwrap_or(false)
        });
        // A record past its delivery timeout and one attempt (plus throttles) must be
        // reported, and the producer must have said so (a notify).
        let bound = DELIVERY_TIMEOUT + ATTEMPT_BOUND;
        let throttled = net.throttled_until;
        let late = |at: &Instant| now > (*at).max(throttled) + bound;
        if self.pending.values().any(late) {
            let notified_before = self.pending.len();
            self.take(net);
            let overdue = self.pending.values().filter(|at| late(at)).count();
            assert_eq!(
                overdue, 0,
                "{overdue} records past delivery.timeout.ms unreported"
            );
            panic!(
                "{} records reported past their deadline without a notify",
                notified_before - self.pending.len()
            );
        }
    }
}
