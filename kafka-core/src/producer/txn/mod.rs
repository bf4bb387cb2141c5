//! The transaction manager of a producer with a `transactional.id`: the state table
//! (`state`), the error classes (`error`), offsets sent into a transaction (`offsets`),
//! and here the dialogue with the transaction coordinator: partitions added before
//! their first batch is sent (transactions v1), EndTxn to commit or abort, and the
//! epoch bump after an abort that left a sequence hole.
//!
//! Transactions v2 (KIP-890) are used when the cluster finalized `transaction.version`
//! 2 or more (checked at `init_transactions` and at each `begin_transaction`): Produce
//! (v12+) adds partitions and TxnOffsetCommit (v5) adds the group implicitly, and every
//! EndTxn hands out a new epoch. On v1 clusters Produce stays at v11, TxnOffsetCommit at
//! v4 and EndTxn at v4.
//!
//! An EndTxn whose outcome is unknown (lost answer, timeout, coordinator moved) is sent
//! again with the same decision until the coordinator answers: a commit never turns into
//! an abort on the same epoch.

mod error;
mod offsets;
mod state;

use std::collections::BTreeSet;
use std::time::Instant;

pub use error::TxnError;
pub(super) use error::{class, Class};
pub use offsets::TxnOffset;
pub use state::{allowed, mermaid, Transition, TxnState, TRANSITIONS};

use offsets::OffsetsSend;

use super::accumulator::Accumulator;
use super::delivery::ProduceError;
use super::idempotence::{Idempotence, Step};
use crate::client::{OpContext, RequestId, RequestOptions};
use crate::cluster::Route;
use crate::conn::RequestError;
use crate::group::GroupMetadata;
use crate::protocol::messages::add_partitions_to_txn::request::AddPartitionsToTxnTopic;
use crate::protocol::messages::add_partitions_to_txn::AddPartitionsToTxnRequest;
use crate::protocol::messages::end_txn::EndTxnRequest;
use crate::protocol::KafkaCode;

/// The highest Produce version a transactions-v1 producer may use.
pub(super) const V1_PRODUCE_MAX: i16 = 11;
/// EndTxn v5 bumps the epoch (transactions v2 only).
const V1_END_TXN_MAX: i16 = 4;
/// AddPartitionsToTxn v4+ is for brokers.
const ADD_PARTITIONS_MAX: i16 = 3;

/// An application call that runs until a coordinator answers; its result is taken
/// with [`Producer::take_transaction_result`](super::Producer::take_transaction_result).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnOp {
    /// `init_transactions`.
    Init,
    /// `send_offsets_to_transaction`.
    SendOffsets,
    /// `commit_transaction`.
    Commit,
    /// `abort_transaction`.
    Abort,
}

impl TxnOp {
    fn name(self) -> &'static str {
        match self {
            TxnOp::Init => "init_transactions",
            TxnOp::SendOffsets => "send_offsets_to_transaction",
            TxnOp::Commit => "commit_transaction",
            TxnOp::Abort => "abort_transaction",
        }
    }
}

/// EndTxn: not needed yet, due (not before an instant), or in flight.
#[derive(Debug)]
enum End {
    Idle,
    Due(Option<Instant>),
    InFlight(RequestId<EndTxnRequest>),
}

/// The transaction manager. See the module docs.
#[derive(Debug)]
pub(super) struct Transactions {
    id: String,
    state: TxnState,
    /// Transactions v2 for the open transaction.
    v2: bool,
    /// Part indexes in the open transaction (v1: AddPartitionsToTxn answered; v2: a
    /// record was appended). The sender's gate.
    added: Vec<bool>,
    /// Parts with records but not yet added (v1).
    to_add: BTreeSet<usize>,
    adding: Option<(RequestId<AddPartitionsToTxnRequest>, Vec<usize>)>,
    add_due: Option<Instant>,
    add_attempts: u32,
    /// Something (a partition or offsets) is in the transaction: EndTxn is needed.
    started: bool,
    offsets: Option<OffsetsSend>,
    end: End,
    end_attempts: u32,
    /// The call under way.
    pending: Option<TxnOp>,
    /// The result of the last call, until taken.
    result: Option<(TxnOp, Result<(), TxnError>)>,
    /// The call under way was started by `close`, not the application: its result is
    /// not handed out (nobody waits for it; Java's close aborts the same way).
    unasked: bool,
    /// The abortable or fatal error in effect.
    error: Option<TxnError>,
    /// The abort must end in an epoch bump (a sequence hole, v1).
    bump_after_abort: bool,
    /// EndTxn handed out a new epoch: sequences restart (taken by the producer).
    epoch_changed: bool,
    /// Transactions ended: (committed, aborted).
    pub(super) ended: (u64, u64),
    /// A transaction was begun (the protocol version is known).
    begun: bool,
}

impl Transactions {
    pub(super) fn new(id: String) -> Self {
        Transactions {
            id,
            state: TxnState::Uninitialized,
            v2: false,
            added: Vec::new(),
            to_add: BTreeSet::new(),
            adding: None,
            add_due: None,
            add_attempts: 0,
            started: false,
            offsets: None,
            end: End::Idle,
            end_attempts: 0,
            pending: None,
            result: None,
            unasked: false,
            error: None,
            bump_after_abort: false,
            epoch_changed: false,
            ended: (0, 0),
            begun: false,
        }
    }

    /// The protocol of the last transaction begun (0 before the first).
    pub(super) fn version(&self) -> i16 {
        match (self.begun, self.v2) {
            (false, _) => 0,
            (true, true) => 2,
            (true, false) => 1,
        }
    }

    /// Whether EndTxn handed out a new epoch since the last call (sequences restart).
    pub(super) fn take_epoch_changed(&mut self) -> bool {
        std::mem::take(&mut self.epoch_changed)
    }

    pub(super) fn state(&self) -> TxnState {
        self.state
    }

    /// No call is under way.
    pub(super) fn idle(&self) -> bool {
        self.pending.is_none()
    }

    /// Whether the open transaction uses transactions v2.
    pub(super) fn v2(&self) -> bool {
        self.v2
    }

    /// Moves along the table; a move it forbids is a bug, refused and logged.
    fn go(&mut self, to: TxnState) -> bool {
        if !allowed(self.state, to) {
            crate::trace::error!(from = %self.state, %to, "transaction state move refused by the table");
            debug_assert!(false, "{} -> {to} is not in TRANSITIONS", self.state);
            return false;
        }
        crate::trace::debug!(from = %self.state, %to, "transaction state");
        self.state = to;
        true
    }

    /// Whether `op` may start now; `Ok(true)`: it is already under way (calling again
    /// waits for the same result, as Java's retried calls do).
    fn admit(&self, op: TxnOp, states: &[TxnState]) -> Result<bool, TxnError> {
        if let Some(e) = self.error.as_ref().filter(|e| e.is_fatal()) {
            return Err(e.clone());
        }
        match self.pending {
            Some(p) if p == op => return Ok(true),
            Some(_) => {
                return Err(TxnError::InvalidState {
                    op: op.name(),
                    state: self.state,
                })
            }
            None => {}
        }
        if !states.contains(&self.state) {
            if let (Some(e), TxnOp::Commit | TxnOp::SendOffsets) = (&self.error, op) {
                return Err(e.clone());
            }
            return Err(TxnError::InvalidState {
                op: op.name(),
                state: self.state,
            });
        }
        Ok(false)
    }

    /// `init_transactions`: InitProducerId fences older instances and completes what
    /// they left open.
    pub(super) fn init(&mut self, idem: &mut Idempotence) -> Result<(), TxnError> {
        if self.admit(TxnOp::Init, &[TxnState::Uninitialized])? {
            return Ok(());
        }
        self.go(TxnState::Initializing);
        self.pending = Some(TxnOp::Init);
        idem.init();
        Ok(())
    }

    /// `begin_transaction`: local, answered at once.
    pub(super) fn begin(&mut self, cx: &OpContext<'_>) -> Result<(), TxnError> {
        if let Some(e) = self.error.as_ref().filter(|e| e.is_fatal()) {
            return Err(e.clone());
        }
        if self.pending.is_some() || self.state != TxnState::Ready {
            return Err(TxnError::InvalidState {
                op: "begin_transaction",
                state: self.state,
            });
        }
        self.refresh_version(cx);
        self.begun = true;
        self.go(TxnState::InTransaction);
        self.added.iter_mut().for_each(|a| *a = false);
        self.started = false;
        self.error = None;
        Ok(())
    }

    fn refresh_version(&mut self, cx: &OpContext<'_>) {
        let v2 = cx
            .finalized_feature("transaction.version")
            .is_some_and(|v| v >= 2);
        if v2 != self.v2 {
            crate::trace::info!(v2, "transaction protocol version chosen");
        }
        self.v2 = v2;
    }

    /// Refuses a record outside a transaction.
    pub(super) fn check_send(&self) -> Result<(), TxnError> {
        match (&self.error, self.state) {
            (_, TxnState::InTransaction) => Ok(()),
            (Some(e), _) => Err(e.clone()),
            (None, state) => Err(TxnError::InvalidState { op: "send", state }),
        }
    }

    /// A record went into part `part`'s batch.
    pub(super) fn appended(&mut self, part: usize) {
        if self.added.len() <= part {
            self.added.resize(part + 1, false);
        }
        if self.added[part] {
            return;
        }
        if self.v2 {
            self.added[part] = true;
            self.started = true;
        } else {
            self.to_add.insert(part);
        }
    }

    /// The sender's gate: the parts it may send (none outside a transaction).
    pub(super) fn gate(&self) -> &[bool] {
        match self.state {
            TxnState::InTransaction | TxnState::Committing | TxnState::Aborting => &self.added,
            _ => &[],
        }
    }

    /// `send_offsets_to_transaction`: the consumed positions commit with the
    /// transaction (KIP-447: with the member's generation, so a zombie cannot).
    pub(super) fn send_offsets(
        &mut self,
        offsets: Vec<TxnOffset>,
        group: GroupMetadata,
    ) -> Result<(), TxnError> {
        if self.admit(TxnOp::SendOffsets, &[TxnState::InTransaction])? {
            return Ok(());
        }
        self.pending = Some(TxnOp::SendOffsets);
        self.offsets = Some(OffsetsSend::new(offsets, group, self.v2));
        Ok(())
    }

    /// `commit_transaction`: flushes, then EndTxn(commit).
    pub(super) fn commit(&mut self, acc: &mut Accumulator) -> Result<(), TxnError> {
        if self.admit(TxnOp::Commit, &[TxnState::InTransaction])? {
            return Ok(());
        }
        self.go(TxnState::Committing);
        self.pending = Some(TxnOp::Commit);
        acc.seal_all();
        Ok(())
    }

    /// `abort_transaction`: unsent records are dropped (reported
    /// [`ProduceError::Aborted`]), then EndTxn(abort).
    pub(super) fn abort(
        &mut self,
        acc: &mut Accumulator,
        idem: &mut Idempotence,
    ) -> Result<(), TxnError> {
        let from = [TxnState::InTransaction, TxnState::AbortableError];
        if self.admit(TxnOp::Abort, &from)? {
            // An abort begun by `close`: the application now waits for its result.
            self.unasked = false;
            return Ok(());
        }
        self.go(TxnState::Aborting);
        self.pending = Some(TxnOp::Abort);
        self.to_add.clear();
        self.offsets = None;
        if drop_unsent(acc) || idem.bump_wanted() {
            self.bump_after_abort = true;
        }
        Ok(())
    }

    /// While aborting: a batch that was in flight when the abort began and came back
    /// for a retry is dropped, not sent again — no batch outlives its transaction (it
    /// would otherwise wait behind a closed gate and be sent in a later transaction).
    pub(super) fn drop_returned(&mut self, acc: &mut Accumulator) {
        if self.state == TxnState::Aborting && drop_unsent(acc) {
            self.bump_after_abort = true;
        }
    }

    /// The result of the last call, once it has one.
    pub(super) fn take_result(&mut self) -> Option<(TxnOp, Result<(), TxnError>)> {
        self.result.take()
    }

    /// `close` with a transaction open: aborts it without an application call waiting
    /// for the result.
    pub(super) fn abort_on_close(&mut self, acc: &mut Accumulator, idem: &mut Idempotence) {
        // `abort` refuses (changing nothing) outside a transaction or after a fatal error.
        if self.pending.is_none() && self.abort(acc, idem).is_ok() {
            self.unasked = true;
        }
    }

    fn finish(&mut self, cx: &mut OpContext<'_>, result: Result<(), TxnError>) {
        if let Some(op) = self.pending.take() {
            if !std::mem::take(&mut self.unasked) {
                self.result = Some((op, result));
            }
            cx.notify();
        }
    }

    /// The transaction cannot commit any more.
    fn abortable(&mut self, cx: &mut OpContext<'_>, error: TxnError) {
        if matches!(self.state, TxnState::InTransaction | TxnState::Committing) {
            crate::trace::warn!(%error, "transaction must be aborted");
            self.go(TxnState::AbortableError);
            self.error = Some(error.clone());
            self.to_add.clear();
            self.offsets = None;
            if matches!(self.pending, Some(TxnOp::Commit | TxnOp::SendOffsets)) {
                self.finish(cx, Err(error));
            }
        }
    }

    /// The producer is finished; returns the code to fail it with.
    pub(super) fn fatal(&mut self, cx: &mut OpContext<'_>, error: TxnError) {
        if self.state == TxnState::FatalError {
            return;
        }
        crate::trace::error!(%error, "transactional producer is fatal");
        self.go(TxnState::FatalError);
        self.error = Some(error.clone());
        self.finish(cx, Err(error));
    }

    /// Whether the producer must be failed with `code` (the manager turned fatal).
    pub(super) fn fatal_code(&self) -> Option<KafkaCode> {
        match (&self.error, self.state) {
            (Some(e), TxnState::FatalError) => Some(e.code().unwrap_or(KafkaCode(-1))),
            _ => None,
        }
    }

    /// What the id machine just did.
    pub(super) fn on_id_step(&mut self, cx: &mut OpContext<'_>, step: &Step) {
        match step {
            Step::NewEpoch if self.state == TxnState::Initializing => {
                self.refresh_version(cx);
                self.go(TxnState::Ready);
                self.bump_after_abort = false;
                self.finish(cx, Ok(()));
            }
            Step::Fatal(code) => {
                self.fatal(cx, TxnError::fatal(Some(*code), "InitProducerId refused"))
            }
            _ => {}
        }
    }

    /// A record of the open transaction was refused at `send`.
    pub(super) fn send_failed(&mut self, cx: &mut OpContext<'_>, error: &super::SendError) {
        let code = match error {
            super::SendError::Topic { code, .. } => Some(*code),
            _ => None,
        };
        self.abortable(
            cx,
            TxnError::abortable(code, format!("a record was refused: {error}")),
        );
    }

    /// A batch of the open transaction failed.
    pub(super) fn batch_failed(&mut self, cx: &mut OpContext<'_>, error: &ProduceError) {
        let code = match error {
            ProduceError::Broker { code, .. } | ProduceError::Fatal { code } => Some(*code),
            _ => None,
        };
        self.abortable(
            cx,
            TxnError::abortable(code, format!("a record failed: {error}")),
        );
    }

    /// Advances: adds partitions, sends offsets, ends the transaction.
    pub(super) fn step(
        &mut self,
        cx: &mut OpContext<'_>,
        acc: &Accumulator,
        idem: &mut Idempotence,
        in_flight: usize,
    ) -> Option<Instant> {
        let mut wake = None;
        let pid = idem.ready_id();
        if let Some(pid) = pid {
            wake = earliest(wake, self.add_partitions(cx, acc, pid));
            let mut progress = None;
            if let Some(o) = &mut self.offsets {
                loop {
                    match o.step(cx, &self.id, pid) {
                        offsets::Progress::Added => self.started = true,
                        other => {
                            progress = Some(other);
                            break;
                        }
                    }
                }
            }
            match progress {
                Some(offsets::Progress::Waiting(at)) => wake = earliest(wake, at),
                Some(offsets::Progress::Done) => {
                    self.offsets = None;
                    self.started = true;
                    self.finish(cx, Ok(()));
                }
                Some(offsets::Progress::Failed(e)) if e.is_fatal() => self.fatal(cx, e),
                Some(offsets::Progress::Failed(e)) => self.abortable(cx, e),
                Some(offsets::Progress::Added) | None => {}
            }
        }
        let settled = self.adding.is_none() && self.offsets.is_none();
        match self.state {
            TxnState::Committing
                if settled && self.to_add.is_empty() && acc.outstanding.is_empty() =>
            {
                wake = earliest(wake, self.end_txn(cx, idem, true));
            }
            TxnState::Aborting if settled && in_flight == 0 => {
                wake = earliest(wake, self.end_txn(cx, idem, false));
            }
            _ => {}
        }
        wake
    }

    /// Sends AddPartitionsToTxn for the parts waiting (v1), takes its answer.
    fn add_partitions(
        &mut self,
        cx: &mut OpContext<'_>,
        acc: &Accumulator,
        (pid, epoch): (i64, i16),
    ) -> Option<Instant> {
        if let Some((id, _)) = &self.adding {
            let answer = cx.take_response(*id)?;
            let (_, parts) = self.adding.take().expect("in flight");
            let mut retry = Vec::new();
            let mut failure: Option<(Class, KafkaCode)> = None;
            match answer {
                Ok(resp) => {
                    for t in &resp.results_by_topic_v3_and_below {
                        for r in &t.results_by_partition {
                            let Some(&part) = parts.iter().find(|&&p| {
                                *acc.parts[p].topic == *t.name
                                    && acc.parts[p].partition == r.partition_index
                            }) else {
                                continue;
                            };
                            let code = KafkaCode(r.partition_error_code);
                            match class(code) {
                                Class::Ok => {
                                    self.added[part] = true;
                                    self.started = true;
                                }
                                _ if code == KafkaCode::OPERATION_NOT_ATTEMPTED => retry.push(part),
                                Class::Retry => retry.push(part),
                                Class::Refind => {
                                    cx.invalidate_coordinator(&self.id);
                                    retry.push(part);
                                }
                                c => {
                                    if failure.is_none_or(|(f, _)| f != Class::Fatal) {
                                        failure = Some((c, code));
                                    }
                                }
                            }
                        }
                    }
                    // A part the answer left out is asked for again.
                    for &p in &parts {
                        if !self.added[p] && !retry.contains(&p) {
                            retry.push(p);
                        }
                    }
                }
                Err(_) => retry = parts,
            }
            match failure {
                Some((Class::Fatal, code)) => {
                    self.fatal(
                        cx,
                        TxnError::fatal(Some(code), "AddPartitionsToTxn refused"),
                    );
                    return None;
                }
                Some((_, code)) => {
                    let e = TxnError::abortable(Some(code), "AddPartitionsToTxn refused");
                    self.abortable(cx, e);
                    return None;
                }
                None => {}
            }
            if !retry.is_empty() {
                self.to_add.extend(retry);
                self.add_attempts += 1;
                self.add_due = Some(cx.now() + cx.retry_backoff(self.add_attempts));
            } else {
                self.add_attempts = 0;
            }
        }
        if self.to_add.is_empty() || self.adding.is_some() {
            return None;
        }
        if let Some(at) = self.add_due.filter(|&at| at > cx.now()) {
            return Some(at);
        }
        let parts: Vec<usize> = std::mem::take(&mut self.to_add).into_iter().collect();
        let mut topics: Vec<AddPartitionsToTxnTopic> = Vec::new();
        for &p in &parts {
            let part = &acc.parts[p];
            match topics.iter_mut().find(|t| *t.name == *part.topic) {
                Some(t) => t.partitions.push(part.partition),
                None => topics.push(AddPartitionsToTxnTopic {
                    name: part.topic.to_string(),
                    partitions: vec![part.partition],
                    ..Default::default()
                }),
            }
        }
        let request = AddPartitionsToTxnRequest {
            v3_and_below_transactional_id: self.id.clone(),
            v3_and_below_producer_id: pid,
            v3_and_below_producer_epoch: epoch,
            v3_and_below_topics: topics,
            ..Default::default()
        };
        let opts = RequestOptions::default().max_version(ADD_PARTITIONS_MAX);
        let id = cx.send_with(Route::TxnCoordinator(self.id.clone()), request, opts);
        self.adding = Some((id, parts));
        None
    }

    /// Sends EndTxn when due and takes its answer.
    fn end_txn(
        &mut self,
        cx: &mut OpContext<'_>,
        idem: &mut Idempotence,
        commit: bool,
    ) -> Option<Instant> {
        if !self.started {
            // Nothing reached the coordinator: nothing to end.
            self.ended(cx, idem, commit, None);
            return None;
        }
        let (pid, epoch) = idem.ready_id()?;
        if let End::InFlight(id) = self.end {
            let answer = cx.take_response(id)?;
            match answer {
                Ok(resp) => match class(KafkaCode(resp.error_code)) {
                    Class::Ok => {
                        let fresh = (resp.producer_id >= 0 && resp.producer_epoch >= 0)
                            .then_some((resp.producer_id, resp.producer_epoch));
                        self.ended(cx, idem, commit, fresh.filter(|_| self.v2));
                        return None;
                    }
                    Class::Retry => self.end_retry(cx, KafkaCode(resp.error_code).to_string()),
                    Class::Refind => {
                        cx.invalidate_coordinator(&self.id);
                        self.end_retry(cx, KafkaCode(resp.error_code).to_string());
                    }
                    Class::Abortable if commit => {
                        let code = KafkaCode(resp.error_code);
                        self.end = End::Idle;
                        self.abortable(cx, TxnError::abortable(Some(code), "EndTxn refused"));
                        return None;
                    }
                    _ => {
                        let code = KafkaCode(resp.error_code);
                        self.end = End::Idle;
                        self.fatal(cx, TxnError::fatal(Some(code), "EndTxn refused"));
                        return None;
                    }
                },
                // The outcome is unknown: ask again with the same decision.
                Err(e) => {
                    let why = match &e {
                        RequestError::Connection(c) => c.to_string(),
                        other => other.to_string(),
                    };
                    self.end_retry(cx, why);
                }
            }
        }
        if let End::Idle = self.end {
            self.end = End::Due(None);
        }
        if let End::Due(at) = self.end {
            if let Some(at) = at.filter(|&at| at > cx.now()) {
                return Some(at);
            }
            let request = EndTxnRequest {
                transactional_id: self.id.clone(),
                producer_id: pid,
                producer_epoch: epoch,
                committed: commit,
                ..Default::default()
            };
            let mut opts = RequestOptions::default();
            if !self.v2 {
                opts = opts.max_version(V1_END_TXN_MAX);
            }
            let id = cx.send_with(Route::TxnCoordinator(self.id.clone()), request, opts);
            self.end = End::InFlight(id);
        }
        None
    }

    #[cfg_attr(not(feature = "tracing"), allow(unused_variables))] // only logged
    fn end_retry(&mut self, cx: &mut OpContext<'_>, why: String) {
        self.end_attempts += 1;
        crate::trace::info!(attempt = self.end_attempts, %why, "EndTxn outcome unknown: retrying");
        self.end = End::Due(Some(cx.now() + cx.retry_backoff(self.end_attempts)));
    }

    /// The coordinator ended the transaction (or there was nothing to end).
    fn ended(
        &mut self,
        cx: &mut OpContext<'_>,
        idem: &mut Idempotence,
        commit: bool,
        fresh: Option<(i64, i16)>,
    ) {
        self.end = End::Idle;
        self.end_attempts = 0;
        self.started = false;
        if commit {
            self.ended.0 += 1;
        } else {
            self.ended.1 += 1;
        }
        self.added.iter_mut().for_each(|a| *a = false);
        if let Some((pid, epoch)) = fresh {
            idem.adopt(pid, epoch);
            self.bump_after_abort = false;
            self.epoch_changed = true;
        }
        if !commit && self.bump_after_abort && !self.v2 {
            // The abort left a sequence hole: bump the epoch before the next
            // transaction (KIP-360); the abort's result waits for it.
            self.go(TxnState::Initializing);
            idem.init();
            return;
        }
        self.go(TxnState::Ready);
        self.error = None;
        self.finish(cx, Ok(()));
    }
}

/// Reports every batch not in flight aborted (possibly delivered if an earlier attempt
/// may have been written); whether one had a sequence (a hole to bump past).
fn drop_unsent(acc: &mut Accumulator) -> bool {
    let mut hole = false;
    acc.fail_all(|b| {
        hole |= b.seq.is_some();
        b.failure(ProduceError::Aborted)
    });
    // Batches dropped here are not failures of the transaction.
    acc.first_failure = None;
    hole
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
