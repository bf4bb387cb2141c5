//! Errors of the share consumer: why it cannot go on, and why an acknowledgement did not
//! take effect.

use crate::protocol::KafkaCode;

/// Why a share consumer call or acknowledgement failed. Local misuse, the broker's
/// refusals and transport failures are separate variants.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShareError {
    /// `group.id` is not set.
    #[error("group.id is not set")]
    NoGroupId,
    /// `acknowledge` named a record this consumer did not hand out, or one already
    /// acknowledged (local misuse; nothing was sent).
    #[error("{topic}-{partition}@{offset} is not a record awaiting acknowledgement")]
    NotAcquired {
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// Offset.
        offset: i64,
    },
    /// A poll in `explicit` mode while records handed out before are not all
    /// acknowledged (Java throws `IllegalStateException`). Nothing was handed out or
    /// lost: acknowledge them, then poll again.
    #[error("{count} records handed out are not acknowledged yet (explicit mode)")]
    Unacknowledged {
        /// How many records await an acknowledgement.
        count: usize,
    },
    /// A renewal ([`AcknowledgeType::Renew`](super::AcknowledgeType::Renew)) for a
    /// partition whose leader does not support it (ShareAcknowledge v2, KIP-1222, Kafka
    /// 4.2 and newer). Nothing was sent: the record is still acquired by this member and
    /// is handed out again, to be accepted, released or rejected before its lock expires.
    #[error("broker {node} cannot renew acquisition locks (needs ShareAcknowledge v2, KIP-1222)")]
    RenewUnsupported {
        /// The partition's leader.
        node: i32,
    },
    /// `acknowledge` was called in `implicit` acknowledgement mode.
    #[error("acknowledge needs share.acknowledgement.mode=explicit")]
    ImplicitMode,
    /// The broker refused the acknowledgement: the records are no longer acquired by this
    /// member (INVALID_RECORD_STATE: the acquisition lock expired and they went back to
    /// the group, or they were acknowledged already). They may be delivered again.
    #[error("{topic}-{partition}: records no longer acquired (INVALID_RECORD_STATE)")]
    InvalidRecordState {
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
    },
    /// The share session the acknowledgement needed was gone (SHARE_SESSION_NOT_FOUND,
    /// INVALID_SHARE_SESSION_EPOCH) or its connection failed; the session is reopened and
    /// the records are redelivered once their acquisition locks expire.
    #[error("share session lost: {0}")]
    SessionLost(KafkaCode),
    /// The member was fenced (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID); it rejoins.
    #[error("member fenced: {0}")]
    Fenced(KafkaCode),
    /// The broker answered with another error code.
    #[error("{api}: {code}")]
    Refused {
        /// The request refused.
        api: &'static str,
        /// Its error code.
        code: KafkaCode,
    },
    /// The request could not be sent or answered.
    #[error("transport: {0}")]
    Transport(String),
    /// The consumer closed before the acknowledgement could be sent.
    #[error("the share consumer closed")]
    Closed,
}

impl ShareError {
    /// The error for a per-partition acknowledgement code.
    pub(crate) fn from_ack_code(
        api: &'static str,
        topic: &str,
        partition: i32,
        code: KafkaCode,
    ) -> Self {
        match code {
            KafkaCode::INVALID_RECORD_STATE => ShareError::InvalidRecordState {
                topic: topic.to_string(),
                partition,
            },
            KafkaCode::SHARE_SESSION_NOT_FOUND | KafkaCode::INVALID_SHARE_SESSION_EPOCH => {
                ShareError::SessionLost(code)
            }
            KafkaCode::FENCED_MEMBER_EPOCH | KafkaCode::UNKNOWN_MEMBER_ID => {
                ShareError::Fenced(code)
            }
            _ => ShareError::Refused { api, code },
        }
    }
}
