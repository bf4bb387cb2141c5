//! Transaction errors as the API names them, and how each broker answer is classed:
//! retried inside, abortable (abort, then go on), or fatal (the producer is finished).

use super::state::TxnState;
use crate::protocol::KafkaCode;

/// Why a transactional call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TxnError {
    /// The producer has no `transactional.id`.
    #[error("the producer is not transactional (no transactional.id)")]
    NotTransactional,
    /// The producer is closed (an adapter's call after close).
    #[error("the producer is closed")]
    Closed,
    /// The call is not allowed in the current state (e.g. `commit` before `begin`, or
    /// a second operation while one is still under way).
    #[error("cannot {op} in state {state}")]
    InvalidState {
        /// The call refused.
        op: &'static str,
        /// The state the producer is in.
        state: TxnState,
    },
    /// The open transaction cannot be committed: call `abort_transaction`, then the
    /// producer may begin a new one.
    #[error("transaction must be aborted: {reason}")]
    Abortable {
        /// The broker's code, when a broker refused something.
        code: Option<KafkaCode>,
        /// What failed.
        reason: String,
    },
    /// The producer cannot go on (fenced by a newer instance, not authorized, or an
    /// outcome it could not learn): drop it and create a new one.
    #[error("transactional producer failed fatally: {reason}")]
    Fatal {
        /// The broker's code, when a broker refused something.
        code: Option<KafkaCode>,
        /// What failed.
        reason: String,
    },
}

impl TxnError {
    pub(super) fn abortable(code: Option<KafkaCode>, reason: impl Into<String>) -> Self {
        TxnError::Abortable {
            code,
            reason: reason.into(),
        }
    }

    pub(super) fn fatal(code: Option<KafkaCode>, reason: impl Into<String>) -> Self {
        TxnError::Fatal {
            code,
            reason: reason.into(),
        }
    }

    /// Whether the producer is finished.
    pub fn is_fatal(&self) -> bool {
        matches!(self, TxnError::Fatal { .. })
    }

    /// Whether aborting the transaction lets the producer go on.
    pub fn is_abortable(&self) -> bool {
        matches!(self, TxnError::Abortable { .. })
    }

    /// The broker's code behind the error, if any.
    pub fn code(&self) -> Option<KafkaCode> {
        match self {
            TxnError::Abortable { code, .. } | TxnError::Fatal { code, .. } => *code,
            _ => None,
        }
    }
}

/// What to do with a coordinator's answer code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::producer) enum Class {
    Ok,
    /// Retry after the backoff (CONCURRENT_TRANSACTIONS, loading, unknown partition).
    Retry,
    /// The coordinator moved: forget it, look it up again, retry.
    Refind,
    Abortable,
    Fatal,
}

/// The class of an error code from the transaction coordinator (InitProducerId,
/// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn) or the group coordinator
/// (TxnOffsetCommit), as Java's transaction manager treats them.
pub(in crate::producer) fn class(code: KafkaCode) -> Class {
    match code {
        KafkaCode::NONE => Class::Ok,
        KafkaCode::NOT_COORDINATOR | KafkaCode::COORDINATOR_NOT_AVAILABLE => Class::Refind,
        KafkaCode::CONCURRENT_TRANSACTIONS
        | KafkaCode::COORDINATOR_LOAD_IN_PROGRESS
        | KafkaCode::UNKNOWN_TOPIC_OR_PARTITION
        | KafkaCode::REQUEST_TIMED_OUT
        | KafkaCode::NOT_ENOUGH_REPLICAS
        | KafkaCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND => Class::Retry,
        // Fenced by a newer instance, refused for good, or a state the coordinator
        // and this producer disagree on.
        KafkaCode::PRODUCER_FENCED
        | KafkaCode::INVALID_PRODUCER_EPOCH
        | KafkaCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        | KafkaCode::CLUSTER_AUTHORIZATION_FAILED
        | KafkaCode::INVALID_TXN_STATE
        | KafkaCode::INVALID_TRANSACTION_TIMEOUT
        | KafkaCode::UNSUPPORTED_VERSION
        | KafkaCode::UNSUPPORTED_FOR_MESSAGE_FORMAT
        | KafkaCode::TRANSACTION_COORDINATOR_FENCED => Class::Fatal,
        KafkaCode::TRANSACTION_ABORTABLE
        | KafkaCode::UNKNOWN_PRODUCER_ID
        | KafkaCode::INVALID_PRODUCER_ID_MAPPING
        | KafkaCode::TOPIC_AUTHORIZATION_FAILED
        | KafkaCode::GROUP_AUTHORIZATION_FAILED
        | KafkaCode::UNKNOWN_MEMBER_ID
        | KafkaCode::ILLEGAL_GENERATION
        | KafkaCode::FENCED_INSTANCE_ID
        | KafkaCode::REBALANCE_IN_PROGRESS
        | KafkaCode::INVALID_COMMIT_OFFSET_SIZE
        | KafkaCode::OFFSET_METADATA_TOO_LARGE => Class::Abortable,
        c if c.is_retriable() => Class::Retry,
        _ => Class::Fatal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_fall_into_the_classes_java_uses() {
        assert_eq!(class(KafkaCode::CONCURRENT_TRANSACTIONS), Class::Retry);
        assert_eq!(class(KafkaCode::NOT_COORDINATOR), Class::Refind);
        assert_eq!(class(KafkaCode::PRODUCER_FENCED), Class::Fatal);
        assert_eq!(class(KafkaCode::INVALID_PRODUCER_EPOCH), Class::Fatal);
        assert_eq!(class(KafkaCode::TRANSACTION_ABORTABLE), Class::Abortable);
        assert_eq!(class(KafkaCode::ILLEGAL_GENERATION), Class::Abortable);
        assert_eq!(class(KafkaCode::FENCED_INSTANCE_ID), Class::Abortable);
        assert_eq!(class(KafkaCode(-1)), Class::Fatal, "UNKNOWN_SERVER_ERROR");
    }
}
