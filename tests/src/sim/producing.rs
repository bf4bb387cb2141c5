//! A producer in a simulated world whose every send and outcome goes into the
//! [`History`]: records accepted by `send` are logged with the partition chosen, and
//! each delivery report becomes one outcome per record (acknowledged with its offset,
//! failed — definitely not written — or indeterminate).

use std::collections::{BTreeMap, HashMap};

use kafka_core::client::OpId;
use kafka_core::config::ClientConfig;
use kafka_core::producer::{ProduceError, Producer, ProducerRecord, SendError};

use super::history::{History, Outcome, SendId};
use super::world::World;

/// Producer settings for scenarios: small batches, a 300 ms request timeout, fast
/// retries and reconnects, a delivery timeout far beyond any scenario's faults.
pub const SCENARIO_SETTINGS: &[(&str, &str)] = &[
    ("linger.ms", "2"),
    ("batch.size", "1500"),
    ("request.timeout.ms", "300"),
    ("delivery.timeout.ms", "120000"),
    ("retry.backoff.ms", "5"),
    ("retry.backoff.max.ms", "50"),
    ("reconnect.backoff.ms", "5"),
    ("reconnect.backoff.max.ms", "50"),
    ("metadata.max.age.ms", "500"),
];

/// One producer machine of one client in the world.
pub struct ProduceRun {
    /// The client index.
    pub client: usize,
    /// The producer machine.
    pub producer: OpId<Producer>,
    label: String,
    pending: HashMap<(u64, u32), SendId>,
    /// Records accepted by `send`.
    pub accepted: usize,
    /// Records with an outcome.
    pub resolved: usize,
    /// Records acknowledged.
    pub acked: usize,
    /// Why records failed or ended indeterminate: the error's text and how many.
    pub errors: BTreeMap<String, usize>,
    /// When each pending record was accepted.
    sent_at: HashMap<(u64, u32), std::time::Instant>,
    /// The longest a record waited from `send` to its report being taken.
    pub longest_wait: std::time::Duration,
    /// Every record reported: `(partition, sent at, waited, acknowledged)`.
    pub waits: Vec<(i32, std::time::Instant, std::time::Duration, bool)>,
}

impl ProduceRun {
    /// Starts a producer on a new client made from `pairs`; `label` names it in the
    /// history.
    pub fn start(world: &mut World, label: &str, pairs: &[(&str, &str)]) -> ProduceRun {
        let mut all = vec![("bootstrap.servers", "b1:9092"), ("client.id", label)];
        all.extend_from_slice(pairs);
        let config = ClientConfig::from_pairs(all).expect("producer config");
        let producer = Producer::new(&config).expect("producer settings");
        let client = world.add_client_with(config);
        let now = world.now();
        let producer = world.clients[client].start_op(now, producer);
        ProduceRun {
            client,
            producer,
            label: label.to_string(),
            pending: HashMap::new(),
            accepted: 0,
            resolved: 0,
            acked: 0,
            errors: BTreeMap::new(),
            sent_at: HashMap::new(),
            longest_wait: std::time::Duration::ZERO,
            waits: Vec::new(),
        }
    }

    /// Offers one record; `false` when the producer cannot take it now (no metadata
    /// yet, or `buffer.memory` full: try again later). Other refusals panic: scenarios
    /// only send what fits.
    pub fn send(
        &mut self,
        world: &mut World,
        history: &mut History,
        topic: &str,
        partition: Option<i32>,
        value: &[u8],
    ) -> bool {
        match self.offer(world, history, topic, partition, value) {
            Ok(taken) => taken,
            Err(e) => panic!("seed {}: send refused: {e}", world.seed),
        }
    }

    /// Offers one record: `Ok(false)` when the producer cannot take it now, `Err` when it
    /// refuses it for good (the record is then not in the history).
    pub fn offer(
        &mut self,
        world: &mut World,
        history: &mut History,
        topic: &str,
        partition: Option<i32>,
        value: &[u8],
    ) -> Result<bool, SendError> {
        let mut rec = ProducerRecord::new(topic, value);
        if let Some(p) = partition {
            rec = rec.partition(p);
        }
        let now = world.now();
        let out = world.clients[self.client]
            .command(now, self.producer, |p, cx| p.send(cx, &rec))
            .expect("the producer runs");
        match out {
            Ok(a) => {
                let id = history.send(&self.label, topic, a.partition, value, None);
                self.pending.insert((a.batch.0, a.index), id);
                self.sent_at.insert((a.batch.0, a.index), now);
                self.accepted += 1;
                Ok(true)
            }
            Err(SendError::WouldBlock(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Moves every delivery report into the history.
    pub fn take_reports(&mut self, world: &mut World, history: &mut History) {
        let now = world.now();
        let mut reports = Vec::new();
        world.clients[self.client].command(now, self.producer, |p, _| {
            while let Some(r) = p.take_report() {
                reports.push(r);
            }
        });
        for r in reports {
            for index in r.indexes() {
                let Some(id) = self.pending.remove(&(r.batch.0, index)) else {
                    panic!(
                        "seed {}: a report for a record not pending (batch {} index {index})",
                        world.seed, r.batch.0
                    );
                };
                if let Some(at) = self.sent_at.remove(&(r.batch.0, index)) {
                    self.longest_wait = self.longest_wait.max(now - at);
                    self.waits
                        .push((r.partition, at, now - at, r.outcome.is_ok()));
                }
                let outcome = match &r.outcome {
                    Ok(d) => {
                        self.acked += 1;
                        Outcome::Acked {
                            offset: d.offset(index),
                        }
                    }
                    Err(
                        ProduceError::TimedOut {
                            possibly_delivered: true,
                            ..
                        }
                        | ProduceError::Closed {
                            possibly_delivered: true,
                        }
                        | ProduceError::Unresolved,
                    ) => Outcome::Indeterminate,
                    Err(_) => Outcome::Failed,
                };
                if let Err(e) = &r.outcome {
                    *self.errors.entry(e.to_string()).or_default() += 1;
                }
                history.outcome(id, outcome);
                self.resolved += 1;
            }
        }
    }

    /// Records accepted and not yet resolved.
    pub fn outstanding(&self) -> usize {
        self.pending.len()
    }

    /// Records that never got an outcome (`(batch, index)`), for failure messages.
    pub fn unresolved(&self) -> Vec<(u64, u32)> {
        let mut v: Vec<_> = self.pending.keys().copied().collect();
        v.sort_unstable();
        v
    }
}

impl ProduceRun {
    /// Sends `records` records with unique values (`<prefix>-r<i>`) to `topic` — even ones
    /// to explicit partitions in turn, odd ones partitioned by the producer — pausing 0–2
    /// ms of virtual time between records, waiting whenever the producer cannot take one;
    /// `between` runs after every record (consumers poll there).
    pub fn send_all(
        &mut self,
        world: &mut World,
        history: &mut History,
        topic: &str,
        records: usize,
        prefix: &str,
        mut between: impl FnMut(&mut World, &mut History),
    ) {
        let partitions = world.cluster.topics[topic].partitions.len();
        for i in 0..records {
            let value = format!("{prefix}-r{i:05}");
            let partition = (i % 2 == 0).then_some((i / 2 % partitions) as i32);
            let mut tries = 0;
            while !self.send(world, history, topic, partition, value.as_bytes()) {
                tries += 1;
                assert!(
                    tries < 100_000,
                    "seed {}: send blocked for good",
                    world.seed
                );
                world.run_for(std::time::Duration::from_millis(1));
                self.take_reports(world, history);
                between(world, history);
            }
            let pause = world.rng().below(3);
            if pause > 0 {
                world.run_for(std::time::Duration::from_millis(pause));
            }
            self.take_reports(world, history);
            between(world, history);
        }
    }

    /// Runs until every record has its outcome (at most `limit`); whether they all did.
    pub fn settle(
        &mut self,
        world: &mut World,
        history: &mut History,
        limit: std::time::Duration,
        mut between: impl FnMut(&mut World, &mut History),
    ) -> bool {
        world.run_until(limit, |w| {
            self.take_reports(w, history);
            between(w, history);
            self.outstanding() == 0
        })
    }
}
