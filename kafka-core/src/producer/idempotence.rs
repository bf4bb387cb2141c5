//! The idempotent producer's id and epoch: InitProducerId at start, and the epoch bump
//! of KIP-360 when a partition's sequence can no longer continue (a batch with a
//! sequence failed or expired, the broker lost the producer's state). A bump waits until
//! nothing is in flight, so no batch is ever in a request under an epoch older than the
//! one it would be retried with.

use std::time::Instant;

use crate::client::{OpContext, RequestId};
use crate::cluster::Route;
use crate::conn::RequestError;
use crate::protocol::messages::init_producer_id::InitProducerIdRequest;
use crate::protocol::KafkaCode;

use super::txn::Class;

/// Where the producer id stands.
#[derive(Debug)]
enum PidState {
    /// The producer is not idempotent.
    Disabled,
    /// Transactional, waiting for `init_transactions`.
    Idle,
    /// An id is needed: the first one, or a bump of `from`, not before `not_before`.
    Needed {
        from: Option<(i64, i16)>,
        not_before: Option<Instant>,
    },
    /// InitProducerId is in flight.
    Requesting {
        id: RequestId<InitProducerIdRequest>,
        from: Option<(i64, i16)>,
    },
    /// Batches may be sent under this id and epoch.
    Ready { pid: i64, epoch: i16 },
    /// The broker refused the producer for good (the code is reported by `step`).
    Fatal,
}

/// What [`Idempotence::step`] changed.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Nothing new.
    Idle,
    /// A new id or epoch is in place: every partition's sequence restarts at 0.
    NewEpoch,
    /// The producer cannot continue.
    Fatal(KafkaCode),
}

/// The producer id state machine.
#[derive(Debug)]
pub(super) struct Idempotence {
    state: PidState,
    /// `transactional.id` and `transaction.timeout.ms` of a transactional producer:
    /// InitProducerId goes to its coordinator, and only when asked for.
    txn: Option<(String, i32)>,
    /// A bump is wanted; it starts once nothing is in flight.
    bump_wanted: bool,
    attempts: u32,
    /// Epoch bumps and id renewals done (metrics).
    pub(super) bumps: u64,
}

impl Idempotence {
    pub(super) fn new(enabled: bool) -> Self {
        let state = if enabled {
            PidState::Needed {
                from: None,
                not_before: None,
            }
        } else {
            PidState::Disabled
        };
        Idempotence {
            state,
            txn: None,
            bump_wanted: false,
            attempts: 0,
            bumps: 0,
        }
    }

    /// A transactional producer's id state: nothing happens until [`init`](Self::init).
    pub(super) fn transactional(id: String, timeout_ms: i32) -> Self {
        Idempotence {
            state: PidState::Idle,
            txn: Some((id, timeout_ms)),
            ..Idempotence::new(true)
        }
    }

    /// Asks for InitProducerId now: the first id (fencing older instances of the
    /// transactional id), or a bump of the current one.
    pub(super) fn init(&mut self) {
        let from = match self.state {
            PidState::Ready { pid, epoch } => Some((pid, epoch)),
            PidState::Needed { from, .. } | PidState::Requesting { from, .. } => from,
            _ => None,
        };
        if !matches!(self.state, PidState::Requesting { .. } | PidState::Fatal) {
            self.state = PidState::Needed {
                from,
                not_before: None,
            };
        }
    }

    /// Takes the id and epoch a coordinator handed out in EndTxn (transactions v2 bump
    /// the epoch on every transaction); sequences restart.
    pub(super) fn adopt(&mut self, pid: i64, epoch: i16) {
        if !matches!(self.state, PidState::Fatal) {
            self.state = PidState::Ready { pid, epoch };
            self.bump_wanted = false;
        }
    }

    /// Whether an epoch bump is wanted (a sequence cannot continue).
    pub(super) fn bump_wanted(&self) -> bool {
        self.bump_wanted
    }

    /// The current id and epoch, even while a bump is wanted.
    pub(super) fn ready_id(&self) -> Option<(i64, i16)> {
        match self.state {
            PidState::Ready { pid, epoch } => Some((pid, epoch)),
            _ => None,
        }
    }

    pub(super) fn enabled(&self) -> bool {
        !matches!(self.state, PidState::Disabled)
    }

    /// The id and epoch new batches are sent under; `None` while one is being
    /// obtained or a bump waits (nothing may be sent then). `Some((-1, -1))` when not
    /// idempotent.
    pub(super) fn current(&self) -> Option<(i64, i16)> {
        match self.state {
            PidState::Disabled => Some((-1, -1)),
            PidState::Ready { pid, epoch } if !self.bump_wanted => Some((pid, epoch)),
            _ => None,
        }
    }

    /// Asks for an epoch bump (KIP-360); it happens once nothing is in flight.
    pub(super) fn want_bump(&mut self) {
        if self.enabled() && !self.bump_wanted {
            crate::trace::info!("producer epoch bump requested");
            self.bump_wanted = true;
        }
    }

    /// The deadline the machine must wake at for a retry of InitProducerId.
    pub(super) fn deadline(&self) -> Option<Instant> {
        match self.state {
            PidState::Needed { not_before, .. } => not_before,
            _ => None,
        }
    }

    /// Advances: starts a bump when nothing is in flight, sends InitProducerId when
    /// due, and takes its answer.
    pub(super) fn step(&mut self, cx: &mut OpContext<'_>, in_flight: usize) -> Step {
        if let PidState::Ready { pid, epoch } = self.state {
            // A transactional producer bumps only when its transaction manager says so
            // (after an abort).
            if self.bump_wanted && in_flight == 0 && self.txn.is_none() {
                self.state = PidState::Needed {
                    from: Some((pid, epoch)),
                    not_before: None,
                };
            }
        }
        if let PidState::Needed { from, not_before } = self.state {
            if not_before.is_some_and(|t| t > cx.now()) {
                return Step::Idle;
            }
            let (producer_id, producer_epoch) = from.unwrap_or((-1, -1));
            let (transactional_id, transaction_timeout_ms, route) = match &self.txn {
                Some((id, timeout)) => (
                    Some(id.clone()),
                    *timeout,
                    Route::TxnCoordinator(id.clone()),
                ),
                None => (None, i32::MAX, Route::Any),
            };
            let request = InitProducerIdRequest {
                transactional_id,
                transaction_timeout_ms,
                producer_id,
                producer_epoch,
                ..Default::default()
            };
            let id = cx.send(route, request);
            self.state = PidState::Requesting { id, from };
        }
        let PidState::Requesting { id, from } = self.state else {
            return Step::Idle;
        };
        let Some(answer) = cx.take_response(id) else {
            return Step::Idle;
        };
        let retry = |this: &mut Self, cx: &mut OpContext<'_>, from| {
            this.attempts += 1;
            let not_before = Some(cx.now() + cx.retry_backoff(this.attempts));
            this.state = PidState::Needed { from, not_before };
            Step::Idle
        };
        match answer {
            Ok(resp) => {
                let code = KafkaCode(resp.error_code);
                if code == KafkaCode::NONE {
                    if from.is_some() {
                        self.bumps += 1;
                        crate::trace::info!(
                            producer_id = resp.producer_id,
                            epoch = resp.producer_epoch,
                            "producer epoch bumped"
                        );
                    }
                    self.state = PidState::Ready {
                        pid: resp.producer_id,
                        epoch: resp.producer_epoch,
                    };
                    self.bump_wanted = false;
                    self.attempts = 0;
                    Step::NewEpoch
                } else if let Some((txn_id, _)) = &self.txn {
                    // Transactional: fencing is final (a newer instance owns the id).
                    match super::txn::class(code) {
                        Class::Retry => retry(self, cx, from),
                        Class::Refind => {
                            let txn_id = txn_id.clone();
                            cx.invalidate_coordinator(&txn_id);
                            retry(self, cx, from)
                        }
                        _ => {
                            crate::trace::error!(%code, "InitProducerId refused: producer is fatal");
                            self.state = PidState::Fatal;
                            Step::Fatal(code)
                        }
                    }
                } else if from.is_some()
                    && (code == KafkaCode::INVALID_PRODUCER_EPOCH
                        || code == KafkaCode::PRODUCER_FENCED)
                {
                    // The old id cannot be bumped: start over with a fresh one.
                    retry(self, cx, None)
                } else if code.is_retriable() {
                    retry(self, cx, from)
                } else {
                    crate::trace::error!(%code, "InitProducerId refused: producer is fatal");
                    self.state = PidState::Fatal;
                    Step::Fatal(code)
                }
            }
            Err(RequestError::Connection(_)) | Err(RequestError::NoRoute(_)) => {
                retry(self, cx, from)
            }
            #[cfg_attr(not(feature = "tracing"), allow(unused_variables))] // only logged
            Err(e) => {
                crate::trace::error!(error = %e, "InitProducerId failed: producer is fatal");
                let code = KafkaCode::UNSUPPORTED_VERSION;
                self.state = PidState::Fatal;
                Step::Fatal(code)
            }
        }
    }
}

/// Kafka's sequence arithmetic: sequences wrap from `i32::MAX` to 0.
pub(super) fn add_sequence(seq: i32, records: u32) -> i32 {
    let r = i64::from(records);
    ((i64::from(seq) + r) % (i64::from(i32::MAX) + 1)) as i32
}

#[cfg(test)]
mod tests {
    use super::add_sequence;

    #[test]
    fn sequences_wrap_like_kafka() {
        assert_eq!(add_sequence(0, 5), 5);
        assert_eq!(add_sequence(i32::MAX, 1), 0);
        assert_eq!(add_sequence(i32::MAX - 2, 5), 2);
    }
}
