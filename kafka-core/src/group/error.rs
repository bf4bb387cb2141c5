//! Errors of the group consumer: why it cannot be a member, and why a commit failed.

use crate::protocol::KafkaCode;

/// Why the group consumer cannot go on (reported as an event; the member stops).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GroupError {
    /// `group.id` is not set.
    #[error("group.id is not set")]
    NoGroupId,
    /// The configuration asks for something this version does not do.
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
    /// `partition.assignment.strategy` names an assignor we do not have.
    #[error("unknown assignor {0}")]
    UnknownAssignor(String),
    /// The coordinator refused the member for good (authorization, inconsistent
    /// protocol, fenced static member, group full, bad session timeout).
    #[error("{api}: {code}")]
    Refused {
        /// The request refused.
        api: &'static str,
        /// Its error code.
        code: KafkaCode,
    },
    /// A pattern subscription's regex is invalid: refused at subscribe time (classic,
    /// compiled here) or by the coordinator (KIP-848, INVALID_REGULAR_EXPRESSION).
    #[error("invalid topic pattern {pattern:?}: {reason}")]
    InvalidPattern {
        /// The pattern as given.
        pattern: String,
        /// Why it is invalid.
        reason: String,
    },
    /// The leader's assignor failed.
    #[error("assignment failed: {0}")]
    Assign(String),
}

/// Why a commit did not happen. A commit is never dropped silently: each one ends with
/// `Ok` or one of these.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommitError {
    /// The member is not in a generation (rejoining, or left): nothing was committed.
    #[error("not a member of a generation; commit not sent")]
    NotMember,
    /// The coordinator refused the commit for the member's generation (a rebalance
    /// happened: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) or a
    /// rebalance is in progress (REBALANCE_IN_PROGRESS). Java's `CommitFailedException`.
    #[error("commit refused for this generation: {0}")]
    Rebalanced(KafkaCode),
    /// A partition's commit failed with this code (after retries where retriable).
    #[error("{topic}-{partition}: {code}")]
    Partition {
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// The error code.
        code: KafkaCode,
    },
    /// The commit could not be sent or answered before its deadline.
    #[error("commit timed out or its connection failed: {0}")]
    Transport(String),
    /// The consumer closed before the commit finished.
    #[error("the consumer closed")]
    Closed,
    /// The member lost its membership (fenced, expired or failed) before the commit
    /// was answered: it is not sent again under a membership that is gone. An attempt
    /// already sent may have been applied.
    #[error("the member lost its membership before the commit was answered")]
    MembershipLost,
}
