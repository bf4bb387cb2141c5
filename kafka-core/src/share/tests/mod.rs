//! Share consumer scenarios on a virtual clock: one client against a scripted broker
//! (`broker.rs`) that is the share coordinator and the leader of every partition,
//! answering the encoded requests the core writes.

mod acks;
pub(super) mod broker;
mod renew;
mod scenarios;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::{
    AckCompletion, AckResults, AcknowledgeType, ShareConsumer, ShareError, ShareEvent, ShareRecord,
};
use crate::client::{Client, ConnId, Event, IoCommand, OpContext, OpId};
use crate::config::ClientConfig;
use crate::test_support::{origin, parse_requests};
use broker::Broker;

pub(super) const TOPIC: &str = "t";

/// One share consumer process.
pub(super) struct Node {
    pub(super) client: Client,
    pub(super) id: OpId<ShareConsumer>,
    open: BTreeSet<ConnId>,
    pub(super) records: Vec<ShareRecord>,
    /// Events taken, then the machine's output when it finished.
    pub(super) events: Vec<ShareEvent>,
    /// Polls refused (explicit mode with records unacknowledged).
    pub(super) refused: Vec<ShareError>,
    /// The application polls on every step.
    pub(super) polling: bool,
    /// A stalled process: nothing is read, sent or timed out until it is thawed.
    pub(super) frozen: bool,
    pub(super) done: bool,
}

pub(super) struct World {
    pub(super) now: Instant,
    pub(super) nodes: Vec<Node>,
    pub(super) broker: Broker,
}

impl World {
    pub(super) fn new(partitions: i32, records_per_partition: i64) -> Self {
        World {
            now: origin(),
            nodes: Vec::new(),
            broker: Broker::new(partitions, records_per_partition),
        }
    }

    pub(super) fn config(extra: &[(&str, &str)]) -> ClientConfig {
        let mut pairs = vec![
            ("bootstrap.servers", "b1:9092"),
            ("client.id", "c"),
            ("group.id", "g"),
            ("fetch.max.wait.ms", "100"),
            ("max.poll.records", "5"),
        ];
        pairs.extend_from_slice(extra);
        ClientConfig::from_pairs(pairs).unwrap()
    }

    /// Starts a share consumer subscribed to `TOPIC`; returns its index.
    pub(super) fn add(&mut self, extra: &[(&str, &str)]) -> usize {
        let config = Self::config(extra);
        let seed = [self.nodes.len() as u8 + 1; 32];
        let mut client = Client::new(config.clone(), seed).unwrap();
        let id = client.start_op(self.now, ShareConsumer::new(&config).unwrap());
        client
            .command(self.now, id, |s, cx| s.subscribe(cx, [TOPIC]))
            .unwrap();
        self.nodes.push(Node {
            client,
            id,
            open: BTreeSet::new(),
            records: Vec::new(),
            events: Vec::new(),
            refused: Vec::new(),
            polling: true,
            frozen: false,
            done: false,
        });
        self.nodes.len() - 1
    }

    /// A command on node `i`'s machine.
    pub(super) fn command<T>(
        &mut self,
        i: usize,
        f: impl FnOnce(&mut ShareConsumer, &mut OpContext<'_>) -> T,
    ) -> T {
        let n = &mut self.nodes[i];
        n.client.command(self.now, n.id, f).expect("running")
    }

    pub(super) fn run(&mut self, d: Duration) {
        let end = self.now + d;
        while self.now < end {
            self.step();
        }
    }

    pub(super) fn run_until(&mut self, limit: Duration, mut cond: impl FnMut(&World) -> bool) {
        let end = self.now + limit;
        while !cond(self) {
            assert!(self.now < end, "condition not met within {limit:?}");
            self.step();
        }
    }

    fn step(&mut self) {
        self.broker.tick(self.now);
        self.serve();
        for n in &mut self.nodes {
            if n.done || n.frozen {
                continue;
            }
            if n.polling {
                let mut got = Vec::new();
                let mut evs = Vec::new();
                let polled = n.client.command(self.now, n.id, |s, cx| {
                    let r = s.poll(cx, &mut got);
                    while let Some(e) = s.take_event() {
                        evs.push(e);
                    }
                    r
                });
                if let Some(Err(e)) = polled {
                    n.refused.push(e);
                }
                n.records.extend(got);
                n.events.extend(evs);
            } else {
                let mut evs = Vec::new();
                let _ = n.client.command(self.now, n.id, |s, _| {
                    while let Some(e) = s.take_event() {
                        evs.push(e);
                    }
                });
                n.events.extend(evs);
            }
            while let Some(e) = n.client.poll_event() {
                if let Event::OperationDone(op) = e {
                    if n.id == op {
                        n.done = true;
                        let last = n.client.take_op_output(n.id).unwrap_or_default();
                        n.events.extend(last);
                    }
                }
            }
        }
        self.now += Duration::from_millis(1);
        for n in self.nodes.iter_mut().filter(|n| !n.frozen) {
            n.client.handle_timeout(self.now);
        }
    }

    fn serve(&mut self) {
        for _ in 0..4 {
            let mut any = false;
            for n in self.nodes.iter_mut().filter(|n| !n.frozen) {
                while let Some(cmd) = n.client.poll_io() {
                    match cmd {
                        IoCommand::Connect { conn, .. } => {
                            n.open.insert(conn);
                            n.client.handle_connected(self.now, conn);
                        }
                        IoCommand::Close { conn } => {
                            n.open.remove(&conn);
                        }
                    }
                }
                let conns: Vec<ConnId> = n.open.iter().copied().collect();
                for conn in conns {
                    let mut out = Vec::new();
                    n.client.poll_transmit(self.now, conn, &mut out);
                    for seen in parse_requests(out) {
                        any = true;
                        let frame = self.broker.answer(&seen);
                        n.client.handle_received(self.now, conn, &frame);
                    }
                }
            }
            if !any {
                break;
            }
        }
    }
}

/// Starts a share consumer in explicit acknowledgement mode; returns its index.
pub(super) fn explicit(w: &mut World) -> usize {
    w.add(&[("share.acknowledgement.mode", "explicit")])
}

/// Acknowledges these offsets of partition 0 on node `i`.
pub(super) fn ack(w: &mut World, i: usize, offsets: &[i64], kind: AcknowledgeType) {
    let offsets = offsets.to_vec();
    w.command(i, move |s, _| {
        for o in offsets {
            s.acknowledge(TOPIC, 0, o, kind).unwrap();
        }
    });
}

/// Every completion reported to node `i` so far.
pub(super) fn completions(w: &World, i: usize) -> Vec<AckCompletion> {
    w.nodes[i]
        .events
        .iter()
        .filter_map(|e| match e {
            ShareEvent::Acknowledged(c) => Some(c.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

/// Commits on node `i` and runs until its results come.
pub(super) fn commit(w: &mut World, i: usize) -> AckResults {
    let id = w.command(i, |s, cx| s.commit(cx));
    let mut results = None;
    w.run_until(Duration::from_secs(5), |w| {
        results = w.nodes[i].events.iter().find_map(|e| match e {
            ShareEvent::Committed { id: c, results } if *c == id => Some(results.clone()),
            _ => None,
        });
        results.is_some()
    });
    results.expect("commit results")
}
