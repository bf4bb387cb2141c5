//! A transactional producer in a simulated world whose every send, delivery report and
//! transaction outcome goes into the [`History`]: records are logged with the
//! transaction they belong to (numbered from the run's base), each delivery report
//! becomes one outcome per record, and each transaction's end its [`TxnOutcome`]:
//! committed when the commit was answered, aborted when the abort was (or when the
//! producer was fenced and the scenario knows no commit of it can have been applied:
//! the coordinator then aborted it), unknown otherwise.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use kafka_core::client::OpId;
use kafka_core::config::ClientConfig;
use kafka_core::group::GroupMetadata;
use kafka_core::producer::{Producer, ProducerRecord, SendError, TxnError, TxnOp, TxnState};

use super::history::{History, Outcome, SendId, TxnOutcome};
use super::world::World;

/// Transactional producer settings for scenarios: those of
/// [`SCENARIO_SETTINGS`](super::producing::SCENARIO_SETTINGS) and a short transaction
/// timeout (a fenced producer's leftovers are aborted soon).
pub const TXN_SETTINGS: &[(&str, &str)] = &[
    ("linger.ms", "2"),
    ("batch.size", "1500"),
    ("request.timeout.ms", "300"),
    ("delivery.timeout.ms", "120000"),
    ("retry.backoff.ms", "5"),
    ("retry.backoff.max.ms", "50"),
    ("reconnect.backoff.ms", "5"),
    ("reconnect.backoff.max.ms", "50"),
    ("metadata.max.age.ms", "500"),
    ("transaction.timeout.ms", "3000"),
];

/// Something that runs while a transactional call waits (consumers poll there).
pub type Between<'a> = &'a mut dyn FnMut(&mut World, &mut History);

/// One transactional producer machine of one client in the world.
pub struct TxnRun {
    /// The client index.
    pub client: usize,
    /// The producer machine.
    pub producer: OpId<Producer>,
    label: String,
    pending: HashMap<(u64, u32), SendId>,
    /// The history's number of the open transaction.
    pub open: Option<u64>,
    next_txn: u64,
    /// Whether a fatal error means the open transaction was aborted (no EndTxn(commit)
    /// of it can have been applied without its answer reaching the producer).
    pub fenced_means_aborted: bool,
    /// Transactions committed and aborted, as the producer was told.
    pub committed: u64,
    /// See `committed`.
    pub aborted: u64,
    /// The fatal error, once the producer has one.
    pub fatal: Option<TxnError>,
    /// Abortable errors met, by text.
    pub abortable: BTreeMap<String, usize>,
    /// Why records failed or ended indeterminate: the error's text and how many.
    pub errors: BTreeMap<String, usize>,
}

impl TxnRun {
    /// Starts a producer with `transactional.id` `txn_id` on a new client made from
    /// `pairs`; `label` names it in the history, its transactions are numbered from
    /// `txn_base`. Does not call `init_transactions` (see [`TxnRun::init`]).
    pub fn start(
        world: &mut World,
        label: &str,
        txn_id: &str,
        txn_base: u64,
        pairs: &[(&str, &str)],
    ) -> TxnRun {
        let mut all = vec![
            ("bootstrap.servers", "b1:9092"),
            ("client.id", label),
            ("transactional.id", txn_id),
        ];
        all.extend_from_slice(pairs);
        let config = ClientConfig::from_pairs(all).expect("producer config");
        let producer = Producer::new(&config).expect("producer settings");
        let client = world.add_client_with(config);
        let now = world.now();
        let producer = world.clients[client].start_op(now, producer);
        TxnRun {
            client,
            producer,
            label: label.to_string(),
            pending: HashMap::new(),
            open: None,
            next_txn: txn_base,
            fenced_means_aborted: true,
            committed: 0,
            aborted: 0,
            fatal: None,
            abortable: BTreeMap::new(),
            errors: BTreeMap::new(),
        }
    }

    fn with<T>(
        &self,
        world: &mut World,
        f: impl FnOnce(&mut Producer, &mut kafka_core::client::OpContext<'_>) -> T,
    ) -> T {
        let now = world.now();
        world.clients[self.client]
            .command(now, self.producer, f)
            .expect("the producer runs")
    }

    /// The producer's transaction state.
    pub fn state(&self, world: &mut World) -> TxnState {
        self.with(world, |p, _| p.transaction_state())
            .expect("transactional")
    }

    /// Moves every delivery report into the history.
    pub fn take_reports(&mut self, world: &mut World, history: &mut History) {
        let mut reports = Vec::new();
        self.with(world, |p, _| {
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
                let outcome = match &r.outcome {
                    Ok(d) => Outcome::Acked {
                        offset: d.offset(index),
                    },
                    Err(e) if e.possibly_delivered() => Outcome::Indeterminate,
                    Err(_) => Outcome::Failed,
                };
                if let Err(e) = &r.outcome {
                    *self.errors.entry(e.to_string()).or_default() += 1;
                }
                history.outcome(id, outcome);
            }
        }
    }

    /// Records sent and not yet reported.
    pub fn outstanding(&self) -> usize {
        self.pending.len()
    }

    /// Runs until the call under way has its result (at most `limit` of virtual time),
    /// taking reports and running `between` meanwhile.
    fn wait(
        &mut self,
        world: &mut World,
        history: &mut History,
        limit: Duration,
        between: Between<'_>,
    ) -> (TxnOp, Result<(), TxnError>) {
        let mut result = None;
        let done = world.run_until(limit, |w| {
            self.take_reports(w, history);
            between(w, history);
            result = self.with(w, |p, _| p.take_transaction_result());
            result.is_some()
        });
        if !done {
            let state = self.state(world);
            panic!(
                "seed {}: {}: a transactional call had no result in {limit:?} (state {state:?})",
                world.seed, self.label
            );
        }
        let result = result.expect("done");
        if let Err(e) = &result.1 {
            if e.is_fatal() {
                self.fatal.get_or_insert_with(|| e.clone());
            } else {
                *self.abortable.entry(e.to_string()).or_default() += 1;
            }
        }
        result
    }

    /// `init_transactions`, waited for.
    pub fn init(
        &mut self,
        world: &mut World,
        history: &mut History,
        between: Between<'_>,
    ) -> Result<(), TxnError> {
        self.with(world, |p, _| p.init_transactions())?;
        self.wait(world, history, Duration::from_secs(120), between)
            .1
    }

    /// `begin_transaction`; the transaction gets the next number.
    pub fn begin(&mut self, world: &mut World) -> Result<(), TxnError> {
        self.with(world, |p, cx| p.begin_transaction(cx))?;
        self.open = Some(self.next_txn);
        self.next_txn += 1;
        Ok(())
    }

    /// Offers one record to the open transaction: `Ok(false)` when the producer cannot
    /// take it now (try again later); `Err` when it refuses it for good (an abortable or
    /// fatal error of the transaction).
    pub fn send(
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
        match self.with(world, |p, cx| p.send(cx, &rec)) {
            Ok(a) => {
                let id = history.send(&self.label, topic, a.partition, value, self.open);
                self.pending.insert((a.batch.0, a.index), id);
                Ok(true)
            }
            Err(SendError::WouldBlock(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// `send_offsets_to_transaction` for `group` (no member: an assign-mode consumer),
    /// waited for.
    pub fn send_offsets(
        &mut self,
        world: &mut World,
        history: &mut History,
        group: &str,
        offsets: Vec<((String, i32), i64)>,
        between: Between<'_>,
    ) -> Result<(), TxnError> {
        let meta = GroupMetadata {
            group_id: group.to_string(),
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
        };
        let offsets: Vec<_> = offsets
            .into_iter()
            .map(|((t, p), o)| ((std::sync::Arc::<str>::from(t), p), o))
            .collect();
        self.with(world, |p, _| {
            p.send_offsets_to_transaction(
                offsets.iter().map(|((t, p), o)| ((t.clone(), *p), *o)),
                &meta,
            )
        })?;
        self.wait(world, history, Duration::from_secs(120), between)
            .1
    }

    /// Ends the open transaction: commit (`commit`) or abort, waited for; an abortable
    /// error on commit is followed by an abort. The history learns the outcome.
    /// Returns the error of the first call that failed.
    pub fn end(
        &mut self,
        world: &mut World,
        history: &mut History,
        commit: bool,
        between: Between<'_>,
    ) -> Result<(), TxnError> {
        let txn = self.open.take().expect("a transaction is open");
        let mut first_error = None;
        if commit {
            let r = match self.with(world, |p, _| p.commit_transaction()) {
                Ok(()) => {
                    self.wait(world, history, Duration::from_secs(300), between)
                        .1
                }
                Err(e) => Err(e),
            };
            match r {
                Ok(()) => {
                    self.committed += 1;
                    history.txn_outcome(txn, TxnOutcome::Committed);
                    return Ok(());
                }
                Err(e) if e.is_fatal() => return Err(self.fenced(history, txn, e)),
                Err(e) => first_error = Some(e),
            }
        }
        let r = match self.with(world, |p, _| p.abort_transaction()) {
            Ok(()) => {
                self.wait(world, history, Duration::from_secs(300), between)
                    .1
            }
            Err(e) => Err(e),
        };
        match r {
            Ok(()) => {
                self.aborted += 1;
                history.txn_outcome(txn, TxnOutcome::Aborted);
                first_error.map_or(Ok(()), Err)
            }
            Err(e) if e.is_fatal() => Err(self.fenced(history, txn, e)),
            Err(e) => panic!(
                "seed {}: {}: abort_transaction failed without being fatal: {e}",
                world.seed, self.label
            ),
        }
    }

    fn fenced(&mut self, history: &mut History, txn: u64, e: TxnError) -> TxnError {
        self.fatal.get_or_insert_with(|| e.clone());
        let outcome = if self.fenced_means_aborted {
            TxnOutcome::Aborted
        } else {
            TxnOutcome::Unknown
        };
        history.txn_outcome(txn, outcome);
        e
    }

    /// Records the open transaction as ended by the coordinator (the producer is
    /// fatal and will not end it).
    pub fn abandon(&mut self, history: &mut History) {
        if let Some(txn) = self.open.take() {
            let outcome = if self.fenced_means_aborted {
                TxnOutcome::Aborted
            } else {
                TxnOutcome::Unknown
            };
            history.txn_outcome(txn, outcome);
        }
    }

    /// Runs until every record has its outcome (at most `limit`); whether they all did.
    pub fn settle(
        &mut self,
        world: &mut World,
        history: &mut History,
        limit: Duration,
        between: Between<'_>,
    ) -> bool {
        world.run_until(limit, |w| {
            self.take_reports(w, history);
            between(w, history);
            self.outstanding() == 0
        })
    }

    /// Whether the error that ended the producer was a fence (PRODUCER_FENCED or
    /// INVALID_PRODUCER_EPOCH from a coordinator).
    pub fn fenced_by_code(&self) -> bool {
        use kafka_core::protocol::KafkaCode;
        self.fatal
            .as_ref()
            .and_then(TxnError::code)
            .is_some_and(|c| {
                c == KafkaCode::PRODUCER_FENCED || c == KafkaCode::INVALID_PRODUCER_EPOCH
            })
    }
}
