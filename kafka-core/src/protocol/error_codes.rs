//! Kafka error codes: every code a 4.3.1 broker can return, with its name, whether a
//! retry can succeed, and a short description.
//!
//! The table mirrors the `Errors` enum in Apache Kafka 4.3
//! (`clients/src/main/java/org/apache/kafka/common/protocol/Errors.java`): codes `-1`
//! through `133`, with no gaps. Codes `134` and above were first assigned after the 4.3
//! line and are not listed. A code is retriable exactly when Kafka's exception class for it
//! extends `org.apache.kafka.common.errors.RetriableException` (directly or through
//! `RefreshRetriableException` / `InvalidMetadataException`). Retriable does not mean
//! "resend unchanged": many of these codes (stale metadata, wrong coordinator) call for a
//! metadata or coordinator refresh before the retry.
//!
//! ```
//! use kafka_core::protocol::KafkaCode;
//!
//! let code = KafkaCode::from(6);
//! assert_eq!(code, KafkaCode::NOT_LEADER_OR_FOLLOWER);
//! assert_eq!(code.name(), "NOT_LEADER_OR_FOLLOWER");
//! assert!(code.is_retriable());
//! assert!(!KafkaCode::from(30000).is_retriable());
//! ```

use std::fmt;

/// A Kafka error code as carried in responses (`error_code` fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KafkaCode(pub i16);

/// Facts about one error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorInfo {
    /// The wire value.
    pub code: i16,
    /// Kafka's constant name, e.g. `NOT_LEADER_OR_FOLLOWER`.
    pub name: &'static str,
    /// Whether the operation may succeed if retried (Kafka's `RetriableException`).
    pub retriable: bool,
    /// What the error means, in a few words.
    pub description: &'static str,
}

/// Every known code, sorted by code.
pub const ERRORS: &[ErrorInfo] = &[
    ErrorInfo {
        code: -1,
        name: "UNKNOWN_SERVER_ERROR",
        retriable: false,
        description: "The broker hit an unexpected internal error while handling the request.",
    },
    ErrorInfo {
        code: 0,
        name: "NONE",
        retriable: false,
        description: "Success; no error occurred.",
    },
    ErrorInfo {
        code: 1,
        name: "OFFSET_OUT_OF_RANGE",
        retriable: false,
        description:
            "The requested offset lies outside the range the broker keeps for the partition.",
    },
    ErrorInfo {
        code: 2,
        name: "CORRUPT_MESSAGE",
        retriable: true,
        description: "A record failed its CRC or size check, or is otherwise malformed.",
    },
    ErrorInfo {
        code: 3,
        name: "UNKNOWN_TOPIC_OR_PARTITION",
        retriable: true,
        description: "The topic or partition is unknown to this broker.",
    },
    ErrorInfo {
        code: 4,
        name: "INVALID_FETCH_SIZE",
        retriable: false,
        description: "The fetch size in the request is not valid.",
    },
    ErrorInfo {
        code: 5,
        name: "LEADER_NOT_AVAILABLE",
        retriable: true,
        description: "The partition has no leader right now, typically during an election.",
    },
    ErrorInfo {
        code: 6,
        name: "NOT_LEADER_OR_FOLLOWER",
        retriable: true,
        description: "The broker is not the leader, or not a replica, for the partition.",
    },
    ErrorInfo {
        code: 7,
        name: "REQUEST_TIMED_OUT",
        retriable: true,
        description: "The request did not complete within its timeout.",
    },
    ErrorInfo {
        code: 8,
        name: "BROKER_NOT_AVAILABLE",
        retriable: false,
        description: "The broker named in the request is not available.",
    },
    ErrorInfo {
        code: 9,
        name: "REPLICA_NOT_AVAILABLE",
        retriable: true,
        description: "A replica of the partition is not available on the broker.",
    },
    ErrorInfo {
        code: 10,
        name: "MESSAGE_TOO_LARGE",
        retriable: false,
        description: "A record exceeds the largest size the broker accepts.",
    },
    ErrorInfo {
        code: 11,
        name: "STALE_CONTROLLER_EPOCH",
        retriable: false,
        description: "The request carried an outdated controller epoch; the controller has moved.",
    },
    ErrorInfo {
        code: 12,
        name: "OFFSET_METADATA_TOO_LARGE",
        retriable: false,
        description: "The metadata attached to an offset commit is too large.",
    },
    ErrorInfo {
        code: 13,
        name: "NETWORK_EXCEPTION",
        retriable: true,
        description: "The connection was closed before a response arrived.",
    },
    ErrorInfo {
        code: 14,
        name: "COORDINATOR_LOAD_IN_PROGRESS",
        retriable: true,
        description: "The coordinator is still loading its state and cannot serve requests yet.",
    },
    ErrorInfo {
        code: 15,
        name: "COORDINATOR_NOT_AVAILABLE",
        retriable: true,
        description: "The group or transaction coordinator is not available.",
    },
    ErrorInfo {
        code: 16,
        name: "NOT_COORDINATOR",
        retriable: true,
        description: "The broker is not the coordinator for this group or transactional ID.",
    },
    ErrorInfo {
        code: 17,
        name: "INVALID_TOPIC_EXCEPTION",
        retriable: false,
        description: "The topic name is invalid or the operation is not allowed on that topic.",
    },
    ErrorInfo {
        code: 18,
        name: "RECORD_LIST_TOO_LARGE",
        retriable: false,
        description: "A record batch is larger than the broker's configured segment size.",
    },
    ErrorInfo {
        code: 19,
        name: "NOT_ENOUGH_REPLICAS",
        retriable: true,
        description: "The write was rejected because too few in-sync replicas are available.",
    },
    ErrorInfo {
        code: 20,
        name: "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        retriable: true,
        description: "The write was appended but reached fewer in-sync replicas than required.",
    },
    ErrorInfo {
        code: 21,
        name: "INVALID_REQUIRED_ACKS",
        retriable: false,
        description: "The produce request's acks value is not valid.",
    },
    ErrorInfo {
        code: 22,
        name: "ILLEGAL_GENERATION",
        retriable: false,
        description: "The group generation ID in the request is not current.",
    },
    ErrorInfo {
        code: 23,
        name: "INCONSISTENT_GROUP_PROTOCOL",
        retriable: false,
        description: "The member's protocol type or protocols do not match the group's.",
    },
    ErrorInfo {
        code: 24,
        name: "INVALID_GROUP_ID",
        retriable: false,
        description: "The group ID is empty or otherwise unusable.",
    },
    ErrorInfo {
        code: 25,
        name: "UNKNOWN_MEMBER_ID",
        retriable: false,
        description: "The coordinator does not know this member ID.",
    },
    ErrorInfo {
        code: 26,
        name: "INVALID_SESSION_TIMEOUT",
        retriable: false,
        description: "The session timeout is outside the range the broker allows.",
    },
    ErrorInfo {
        code: 27,
        name: "REBALANCE_IN_PROGRESS",
        retriable: false,
        description: "The group is rebalancing and the member must rejoin.",
    },
    ErrorInfo {
        code: 28,
        name: "INVALID_COMMIT_OFFSET_SIZE",
        retriable: false,
        description: "The offset commit data has an invalid size.",
    },
    ErrorInfo {
        code: 29,
        name: "TOPIC_AUTHORIZATION_FAILED",
        retriable: false,
        description: "The client is not authorized to access the topic.",
    },
    ErrorInfo {
        code: 30,
        name: "GROUP_AUTHORIZATION_FAILED",
        retriable: false,
        description: "The client is not authorized to access the group.",
    },
    ErrorInfo {
        code: 31,
        name: "CLUSTER_AUTHORIZATION_FAILED",
        retriable: false,
        description: "The client is not authorized for the cluster-level operation.",
    },
    ErrorInfo {
        code: 32,
        name: "INVALID_TIMESTAMP",
        retriable: false,
        description: "A record timestamp falls outside the accepted range.",
    },
    ErrorInfo {
        code: 33,
        name: "UNSUPPORTED_SASL_MECHANISM",
        retriable: false,
        description: "The requested SASL mechanism is not enabled on the broker.",
    },
    ErrorInfo {
        code: 34,
        name: "ILLEGAL_SASL_STATE",
        retriable: false,
        description: "The SASL exchange received a request that is out of sequence.",
    },
    ErrorInfo {
        code: 35,
        name: "UNSUPPORTED_VERSION",
        retriable: false,
        description: "The broker does not support this API version.",
    },
    ErrorInfo {
        code: 36,
        name: "TOPIC_ALREADY_EXISTS",
        retriable: false,
        description: "The topic to create already exists.",
    },
    ErrorInfo {
        code: 37,
        name: "INVALID_PARTITIONS",
        retriable: false,
        description: "The requested number of partitions is not valid.",
    },
    ErrorInfo {
        code: 38,
        name: "INVALID_REPLICATION_FACTOR",
        retriable: false,
        description: "The replication factor is below one or cannot be met by the cluster.",
    },
    ErrorInfo {
        code: 39,
        name: "INVALID_REPLICA_ASSIGNMENT",
        retriable: false,
        description: "The explicit replica assignment is malformed or impossible.",
    },
    ErrorInfo {
        code: 40,
        name: "INVALID_CONFIG",
        retriable: false,
        description: "The supplied configuration is rejected as invalid.",
    },
    ErrorInfo {
        code: 41,
        name: "NOT_CONTROLLER",
        retriable: true,
        description: "The broker is not the active controller.",
    },
    ErrorInfo {
        code: 42,
        name: "INVALID_REQUEST",
        retriable: false,
        description: "The request is malformed or not compatible with this broker.",
    },
    ErrorInfo {
        code: 43,
        name: "UNSUPPORTED_FOR_MESSAGE_FORMAT",
        retriable: false,
        description: "The broker's message format version does not support the request.",
    },
    ErrorInfo {
        code: 44,
        name: "POLICY_VIOLATION",
        retriable: false,
        description: "The request violates a configured broker policy.",
    },
    ErrorInfo {
        code: 45,
        name: "OUT_OF_ORDER_SEQUENCE_NUMBER",
        retriable: false,
        description: "A produce batch skipped ahead of the expected sequence number.",
    },
    ErrorInfo {
        code: 46,
        name: "DUPLICATE_SEQUENCE_NUMBER",
        retriable: false,
        description: "A produce batch repeats a sequence number already written.",
    },
    ErrorInfo {
        code: 47,
        name: "INVALID_PRODUCER_EPOCH",
        retriable: false,
        description: "The producer's epoch is older than the one the broker holds.",
    },
    ErrorInfo {
        code: 48,
        name: "INVALID_TXN_STATE",
        retriable: false,
        description: "The transaction is not in a state that permits this operation.",
    },
    ErrorInfo {
        code: 49,
        name: "INVALID_PRODUCER_ID_MAPPING",
        retriable: false,
        description: "The producer ID is not the one assigned to this transactional ID.",
    },
    ErrorInfo {
        code: 50,
        name: "INVALID_TRANSACTION_TIMEOUT",
        retriable: false,
        description: "The transaction timeout exceeds the broker's maximum.",
    },
    ErrorInfo {
        code: 51,
        name: "CONCURRENT_TRANSACTIONS",
        retriable: true,
        description: "Another operation on the same transaction is still in progress.",
    },
    ErrorInfo {
        code: 52,
        name: "TRANSACTION_COORDINATOR_FENCED",
        retriable: false,
        description:
            "The transaction coordinator sending markers is no longer current for the producer.",
    },
    ErrorInfo {
        code: 53,
        name: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        retriable: false,
        description: "The client is not authorized for the transactional ID.",
    },
    ErrorInfo {
        code: 54,
        name: "SECURITY_DISABLED",
        retriable: false,
        description: "The broker has security features turned off.",
    },
    ErrorInfo {
        code: 55,
        name: "OPERATION_NOT_ATTEMPTED",
        retriable: false,
        description: "The broker skipped this operation because another in the same batch failed.",
    },
    ErrorInfo {
        code: 56,
        name: "KAFKA_STORAGE_ERROR",
        retriable: true,
        description: "A disk error occurred while the broker accessed a log.",
    },
    ErrorInfo {
        code: 57,
        name: "LOG_DIR_NOT_FOUND",
        retriable: false,
        description: "The requested log directory is not configured on the broker.",
    },
    ErrorInfo {
        code: 58,
        name: "SASL_AUTHENTICATION_FAILED",
        retriable: false,
        description: "Authentication over SASL did not succeed.",
    },
    ErrorInfo {
        code: 59,
        name: "UNKNOWN_PRODUCER_ID",
        retriable: false,
        description:
            "The broker has no state for this producer ID, for example after its records expired.",
    },
    ErrorInfo {
        code: 60,
        name: "REASSIGNMENT_IN_PROGRESS",
        retriable: false,
        description: "The partition is already being reassigned.",
    },
    ErrorInfo {
        code: 61,
        name: "DELEGATION_TOKEN_AUTH_DISABLED",
        retriable: false,
        description: "Delegation token support is disabled.",
    },
    ErrorInfo {
        code: 62,
        name: "DELEGATION_TOKEN_NOT_FOUND",
        retriable: false,
        description: "The broker has no such delegation token.",
    },
    ErrorInfo {
        code: 63,
        name: "DELEGATION_TOKEN_OWNER_MISMATCH",
        retriable: false,
        description: "The principal is not an owner or renewer of the delegation token.",
    },
    ErrorInfo {
        code: 64,
        name: "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
        retriable: false,
        description: "Delegation token requests are not allowed on this kind of connection.",
    },
    ErrorInfo {
        code: 65,
        name: "DELEGATION_TOKEN_AUTHORIZATION_FAILED",
        retriable: false,
        description: "The client is not authorized for the delegation token operation.",
    },
    ErrorInfo {
        code: 66,
        name: "DELEGATION_TOKEN_EXPIRED",
        retriable: false,
        description: "The delegation token is past its expiry time.",
    },
    ErrorInfo {
        code: 67,
        name: "INVALID_PRINCIPAL_TYPE",
        retriable: false,
        description: "The broker does not accept this kind of principal.",
    },
    ErrorInfo {
        code: 68,
        name: "NON_EMPTY_GROUP",
        retriable: false,
        description: "The group still has members.",
    },
    ErrorInfo {
        code: 69,
        name: "GROUP_ID_NOT_FOUND",
        retriable: false,
        description: "No group with this ID exists.",
    },
    ErrorInfo {
        code: 70,
        name: "FETCH_SESSION_ID_NOT_FOUND",
        retriable: true,
        description: "The fetch session ID is not known to the broker.",
    },
    ErrorInfo {
        code: 71,
        name: "INVALID_FETCH_SESSION_EPOCH",
        retriable: true,
        description: "The fetch session epoch does not match the broker's.",
    },
    ErrorInfo {
        code: 72,
        name: "LISTENER_NOT_FOUND",
        retriable: true,
        description:
            "The partition leader has no listener matching the one the metadata request used.",
    },
    ErrorInfo {
        code: 73,
        name: "TOPIC_DELETION_DISABLED",
        retriable: false,
        description: "The cluster does not allow topics to be deleted.",
    },
    ErrorInfo {
        code: 74,
        name: "FENCED_LEADER_EPOCH",
        retriable: true,
        description: "The request's leader epoch is behind the broker's current epoch.",
    },
    ErrorInfo {
        code: 75,
        name: "UNKNOWN_LEADER_EPOCH",
        retriable: true,
        description: "The request's leader epoch is ahead of what the broker knows.",
    },
    ErrorInfo {
        code: 76,
        name: "UNSUPPORTED_COMPRESSION_TYPE",
        retriable: false,
        description:
            "The partition uses a compression codec the client's request version cannot handle.",
    },
    ErrorInfo {
        code: 77,
        name: "STALE_BROKER_EPOCH",
        retriable: false,
        description: "The request carried a broker epoch that is no longer current.",
    },
    ErrorInfo {
        code: 78,
        name: "OFFSET_NOT_AVAILABLE",
        retriable: true,
        description:
            "The new leader's high watermark has not caught up, so offsets are not yet available.",
    },
    ErrorInfo {
        code: 79,
        name: "MEMBER_ID_REQUIRED",
        retriable: false,
        description: "The member must obtain a member ID before joining the group.",
    },
    ErrorInfo {
        code: 80,
        name: "PREFERRED_LEADER_NOT_AVAILABLE",
        retriable: true,
        description: "The preferred replica cannot become leader right now.",
    },
    ErrorInfo {
        code: 81,
        name: "GROUP_MAX_SIZE_REACHED",
        retriable: false,
        description: "The group has reached its maximum number of members.",
    },
    ErrorInfo {
        code: 82,
        name: "FENCED_INSTANCE_ID",
        retriable: false,
        description: "Another member with the same group instance ID has fenced this one.",
    },
    ErrorInfo {
        code: 83,
        name: "ELIGIBLE_LEADERS_NOT_AVAILABLE",
        retriable: true,
        description: "No eligible leader is available for the partition.",
    },
    ErrorInfo {
        code: 84,
        name: "ELECTION_NOT_NEEDED",
        retriable: true,
        description: "The partition does not need a leader election.",
    },
    ErrorInfo {
        code: 85,
        name: "NO_REASSIGNMENT_IN_PROGRESS",
        retriable: false,
        description: "There is no ongoing partition reassignment to act on.",
    },
    ErrorInfo {
        code: 86,
        name: "GROUP_SUBSCRIBED_TO_TOPIC",
        retriable: false,
        description: "Offsets cannot be deleted while the group is subscribed to the topic.",
    },
    ErrorInfo {
        code: 87,
        name: "INVALID_RECORD",
        retriable: false,
        description: "The broker rejected a record that failed validation.",
    },
    ErrorInfo {
        code: 88,
        name: "UNSTABLE_OFFSET_COMMIT",
        retriable: true,
        description: "Pending transactional offsets must be resolved first.",
    },
    ErrorInfo {
        code: 89,
        name: "THROTTLING_QUOTA_EXCEEDED",
        retriable: true,
        description: "A throttling quota, such as the topic mutation rate, was exceeded.",
    },
    ErrorInfo {
        code: 90,
        name: "PRODUCER_FENCED",
        retriable: false,
        description: "A newer producer with the same transactional ID has fenced this one.",
    },
    ErrorInfo {
        code: 91,
        name: "RESOURCE_NOT_FOUND",
        retriable: false,
        description: "A resource named in the request is missing.",
    },
    ErrorInfo {
        code: 92,
        name: "DUPLICATE_RESOURCE",
        retriable: false,
        description: "A resource is named more than once in the request.",
    },
    ErrorInfo {
        code: 93,
        name: "UNACCEPTABLE_CREDENTIAL",
        retriable: false,
        description: "The requested credential does not meet the acceptance criteria.",
    },
    ErrorInfo {
        code: 94,
        name: "INCONSISTENT_VOTER_SET",
        retriable: false,
        description:
            "A voter-only request came from, or went to, a replica outside the expected voter set.",
    },
    ErrorInfo {
        code: 95,
        name: "INVALID_UPDATE_VERSION",
        retriable: false,
        description: "The requested update version is rejected.",
    },
    ErrorInfo {
        code: 96,
        name: "FEATURE_UPDATE_FAILED",
        retriable: false,
        description: "Finalized features could not be updated because of a server error.",
    },
    ErrorInfo {
        code: 97,
        name: "PRINCIPAL_DESERIALIZATION_FAILURE",
        retriable: false,
        description: "The principal of a forwarded request could not be deserialized.",
    },
    ErrorInfo {
        code: 98,
        name: "SNAPSHOT_NOT_FOUND",
        retriable: false,
        description: "No snapshot exists with the requested ID.",
    },
    ErrorInfo {
        code: 99,
        name: "POSITION_OUT_OF_RANGE",
        retriable: false,
        description: "The requested position is outside the snapshot.",
    },
    ErrorInfo {
        code: 100,
        name: "UNKNOWN_TOPIC_ID",
        retriable: true,
        description: "No topic with this topic ID is known to the broker.",
    },
    ErrorInfo {
        code: 101,
        name: "DUPLICATE_BROKER_REGISTRATION",
        retriable: false,
        description: "Another broker has already registered with this ID.",
    },
    ErrorInfo {
        code: 102,
        name: "BROKER_ID_NOT_REGISTERED",
        retriable: false,
        description: "No broker is registered under this ID.",
    },
    ErrorInfo {
        code: 103,
        name: "INCONSISTENT_TOPIC_ID",
        retriable: true,
        description: "The topic ID in the request does not match the log's topic ID.",
    },
    ErrorInfo {
        code: 104,
        name: "INCONSISTENT_CLUSTER_ID",
        retriable: false,
        description: "The request comes from a different cluster than this server belongs to.",
    },
    ErrorInfo {
        code: 105,
        name: "TRANSACTIONAL_ID_NOT_FOUND",
        retriable: false,
        description: "No transaction state exists for the transactional ID.",
    },
    ErrorInfo {
        code: 106,
        name: "FETCH_SESSION_TOPIC_ID_ERROR",
        retriable: true,
        description: "The fetch session mixed or changed topic IDs in an inconsistent way.",
    },
    ErrorInfo {
        code: 107,
        name: "INELIGIBLE_REPLICA",
        retriable: false,
        description: "The proposed ISR includes a replica that is not eligible.",
    },
    ErrorInfo {
        code: 108,
        name: "NEW_LEADER_ELECTED",
        retriable: false,
        description: "The partition state was updated, but a new leader has been elected.",
    },
    ErrorInfo {
        code: 109,
        name: "OFFSET_MOVED_TO_TIERED_STORAGE",
        retriable: false,
        description: "The requested offset is now only in tiered storage.",
    },
    ErrorInfo {
        code: 110,
        name: "FENCED_MEMBER_EPOCH",
        retriable: false,
        description: "The member epoch is fenced; the member must drop its partitions and rejoin.",
    },
    ErrorInfo {
        code: 111,
        name: "UNRELEASED_INSTANCE_ID",
        retriable: false,
        description: "Another member still holds this instance ID and must leave first.",
    },
    ErrorInfo {
        code: 112,
        name: "UNSUPPORTED_ASSIGNOR",
        retriable: false,
        description: "The group does not support the requested assignor or its versions.",
    },
    ErrorInfo {
        code: 113,
        name: "STALE_MEMBER_EPOCH",
        retriable: false,
        description:
            "The member epoch is stale; retry after learning the current epoch from a heartbeat.",
    },
    ErrorInfo {
        code: 114,
        name: "MISMATCHED_ENDPOINT_TYPE",
        retriable: false,
        description: "The request reached a broker or controller endpoint of the wrong kind.",
    },
    ErrorInfo {
        code: 115,
        name: "UNSUPPORTED_ENDPOINT_TYPE",
        retriable: false,
        description: "The endpoint type in the request is not supported.",
    },
    ErrorInfo {
        code: 116,
        name: "UNKNOWN_CONTROLLER_ID",
        retriable: false,
        description: "No controller with this ID is known.",
    },
    ErrorInfo {
        code: 117,
        name: "UNKNOWN_SUBSCRIPTION_ID",
        retriable: false,
        description: "The telemetry subscription ID is unknown or outdated.",
    },
    ErrorInfo {
        code: 118,
        name: "TELEMETRY_TOO_LARGE",
        retriable: false,
        description: "The pushed telemetry exceeds the broker's size limit.",
    },
    ErrorInfo {
        code: 119,
        name: "INVALID_REGISTRATION",
        retriable: false,
        description: "The controller rejected the broker's registration as invalid.",
    },
    ErrorInfo {
        code: 120,
        name: "TRANSACTION_ABORTABLE",
        retriable: false,
        description:
            "The transaction hit an error; aborting it lets the transactional ID continue.",
    },
    ErrorInfo {
        code: 121,
        name: "INVALID_RECORD_STATE",
        retriable: false,
        description: "The record is not in a state that allows the acknowledgement.",
    },
    ErrorInfo {
        code: 122,
        name: "SHARE_SESSION_NOT_FOUND",
        retriable: true,
        description: "The broker has no share session matching the request.",
    },
    ErrorInfo {
        code: 123,
        name: "INVALID_SHARE_SESSION_EPOCH",
        retriable: true,
        description: "The share session epoch does not match the broker's.",
    },
    ErrorInfo {
        code: 124,
        name: "FENCED_STATE_EPOCH",
        retriable: false,
        description: "The share coordinator rejected the request because its state epoch is stale.",
    },
    ErrorInfo {
        code: 125,
        name: "INVALID_VOTER_KEY",
        retriable: false,
        description:
            "The receiving replica's identity does not match the voter key in the request.",
    },
    ErrorInfo {
        code: 126,
        name: "DUPLICATE_VOTER",
        retriable: false,
        description: "The replica being added is already a voter.",
    },
    ErrorInfo {
        code: 127,
        name: "VOTER_NOT_FOUND",
        retriable: false,
        description: "The replica being removed is not a voter.",
    },
    ErrorInfo {
        code: 128,
        name: "INVALID_REGULAR_EXPRESSION",
        retriable: false,
        description: "A regular expression in the request is malformed.",
    },
    ErrorInfo {
        code: 129,
        name: "REBOOTSTRAP_REQUIRED",
        retriable: false,
        description: "The client must re-run bootstrap to get fresh cluster metadata.",
    },
    ErrorInfo {
        code: 130,
        name: "STREAMS_INVALID_TOPOLOGY",
        retriable: false,
        description: "The Streams group topology in the request is malformed or inconsistent.",
    },
    ErrorInfo {
        code: 131,
        name: "STREAMS_INVALID_TOPOLOGY_EPOCH",
        retriable: false,
        description: "The Streams topology epoch in the request is not acceptable to the group.",
    },
    ErrorInfo {
        code: 132,
        name: "STREAMS_TOPOLOGY_FENCED",
        retriable: false,
        description: "A newer Streams topology epoch has fenced the request's topology.",
    },
    ErrorInfo {
        code: 133,
        name: "SHARE_SESSION_LIMIT_REACHED",
        retriable: true,
        description: "The broker already hosts the maximum number of share sessions.",
    },
];

impl KafkaCode {
    /// The broker hit an unexpected internal error while handling the request.
    pub const UNKNOWN_SERVER_ERROR: KafkaCode = KafkaCode(-1);
    /// No error.
    pub const NONE: KafkaCode = KafkaCode(0);
    /// The requested offset lies outside the range the broker keeps for the partition.
    pub const OFFSET_OUT_OF_RANGE: KafkaCode = KafkaCode(1);
    /// A record failed its CRC or size check, or is otherwise malformed.
    pub const CORRUPT_MESSAGE: KafkaCode = KafkaCode(2);
    /// The topic or partition is unknown to this broker.
    pub const UNKNOWN_TOPIC_OR_PARTITION: KafkaCode = KafkaCode(3);
    /// The fetch size in the request is not valid.
    pub const INVALID_FETCH_SIZE: KafkaCode = KafkaCode(4);
    /// The partition has no leader right now, typically during an election.
    pub const LEADER_NOT_AVAILABLE: KafkaCode = KafkaCode(5);
    /// The broker is not the leader, or not a replica, for the partition.
    pub const NOT_LEADER_OR_FOLLOWER: KafkaCode = KafkaCode(6);
    /// The request did not complete within its timeout.
    pub const REQUEST_TIMED_OUT: KafkaCode = KafkaCode(7);
    /// The broker named in the request is not available.
    pub const BROKER_NOT_AVAILABLE: KafkaCode = KafkaCode(8);
    /// A replica of the partition is not available on the broker.
    pub const REPLICA_NOT_AVAILABLE: KafkaCode = KafkaCode(9);
    /// A record exceeds the largest size the broker accepts.
    pub const MESSAGE_TOO_LARGE: KafkaCode = KafkaCode(10);
    /// The request carried an outdated controller epoch; the controller has moved.
    pub const STALE_CONTROLLER_EPOCH: KafkaCode = KafkaCode(11);
    /// The metadata attached to an offset commit is too large.
    pub const OFFSET_METADATA_TOO_LARGE: KafkaCode = KafkaCode(12);
    /// The connection was closed before a response arrived.
    pub const NETWORK_EXCEPTION: KafkaCode = KafkaCode(13);
    /// The coordinator is still loading its state and cannot serve requests yet.
    pub const COORDINATOR_LOAD_IN_PROGRESS: KafkaCode = KafkaCode(14);
    /// The group or transaction coordinator is not available.
    pub const COORDINATOR_NOT_AVAILABLE: KafkaCode = KafkaCode(15);
    /// The broker is not the coordinator for this group or transactional ID.
    pub const NOT_COORDINATOR: KafkaCode = KafkaCode(16);
    /// The topic name is invalid or the operation is not allowed on that topic.
    pub const INVALID_TOPIC_EXCEPTION: KafkaCode = KafkaCode(17);
    /// A record batch is larger than the broker's configured segment size.
    pub const RECORD_LIST_TOO_LARGE: KafkaCode = KafkaCode(18);
    /// The write was rejected because too few in-sync replicas are available.
    pub const NOT_ENOUGH_REPLICAS: KafkaCode = KafkaCode(19);
    /// The write was appended but reached fewer in-sync replicas than required.
    pub const NOT_ENOUGH_REPLICAS_AFTER_APPEND: KafkaCode = KafkaCode(20);
    /// The produce request's acks value is not valid.
    pub const INVALID_REQUIRED_ACKS: KafkaCode = KafkaCode(21);
    /// The group generation ID in the request is not current.
    pub const ILLEGAL_GENERATION: KafkaCode = KafkaCode(22);
    /// The member's protocol type or protocols do not match the group's.
    pub const INCONSISTENT_GROUP_PROTOCOL: KafkaCode = KafkaCode(23);
    /// The group ID is empty or otherwise unusable.
    pub const INVALID_GROUP_ID: KafkaCode = KafkaCode(24);
    /// The coordinator does not know this member ID.
    pub const UNKNOWN_MEMBER_ID: KafkaCode = KafkaCode(25);
    /// The session timeout is outside the range the broker allows.
    pub const INVALID_SESSION_TIMEOUT: KafkaCode = KafkaCode(26);
    /// The group is rebalancing and the member must rejoin.
    pub const REBALANCE_IN_PROGRESS: KafkaCode = KafkaCode(27);
    /// The offset commit data has an invalid size.
    pub const INVALID_COMMIT_OFFSET_SIZE: KafkaCode = KafkaCode(28);
    /// The client is not authorized to access the topic.
    pub const TOPIC_AUTHORIZATION_FAILED: KafkaCode = KafkaCode(29);
    /// The client is not authorized to access the group.
    pub const GROUP_AUTHORIZATION_FAILED: KafkaCode = KafkaCode(30);
    /// The client is not authorized for the cluster-level operation.
    pub const CLUSTER_AUTHORIZATION_FAILED: KafkaCode = KafkaCode(31);
    /// A record timestamp falls outside the accepted range.
    pub const INVALID_TIMESTAMP: KafkaCode = KafkaCode(32);
    /// The requested SASL mechanism is not enabled on the broker.
    pub const UNSUPPORTED_SASL_MECHANISM: KafkaCode = KafkaCode(33);
    /// The SASL exchange received a request that is out of sequence.
    pub const ILLEGAL_SASL_STATE: KafkaCode = KafkaCode(34);
    /// The broker does not support this API version.
    pub const UNSUPPORTED_VERSION: KafkaCode = KafkaCode(35);
    /// The topic to create already exists.
    pub const TOPIC_ALREADY_EXISTS: KafkaCode = KafkaCode(36);
    /// The requested number of partitions is not valid.
    pub const INVALID_PARTITIONS: KafkaCode = KafkaCode(37);
    /// The replication factor is below one or cannot be met by the cluster.
    pub const INVALID_REPLICATION_FACTOR: KafkaCode = KafkaCode(38);
    /// The explicit replica assignment is malformed or impossible.
    pub const INVALID_REPLICA_ASSIGNMENT: KafkaCode = KafkaCode(39);
    /// The supplied configuration is rejected as invalid.
    pub const INVALID_CONFIG: KafkaCode = KafkaCode(40);
    /// The broker is not the active controller.
    pub const NOT_CONTROLLER: KafkaCode = KafkaCode(41);
    /// The request is malformed or not compatible with this broker.
    pub const INVALID_REQUEST: KafkaCode = KafkaCode(42);
    /// The broker's message format version does not support the request.
    pub const UNSUPPORTED_FOR_MESSAGE_FORMAT: KafkaCode = KafkaCode(43);
    /// The request violates a configured broker policy.
    pub const POLICY_VIOLATION: KafkaCode = KafkaCode(44);
    /// A produce batch skipped ahead of the expected sequence number.
    pub const OUT_OF_ORDER_SEQUENCE_NUMBER: KafkaCode = KafkaCode(45);
    /// A produce batch repeats a sequence number already written.
    pub const DUPLICATE_SEQUENCE_NUMBER: KafkaCode = KafkaCode(46);
    /// The producer's epoch is older than the one the broker holds.
    pub const INVALID_PRODUCER_EPOCH: KafkaCode = KafkaCode(47);
    /// The transaction is not in a state that permits this operation.
    pub const INVALID_TXN_STATE: KafkaCode = KafkaCode(48);
    /// The producer ID is not the one assigned to this transactional ID.
    pub const INVALID_PRODUCER_ID_MAPPING: KafkaCode = KafkaCode(49);
    /// The transaction timeout exceeds the broker's maximum.
    pub const INVALID_TRANSACTION_TIMEOUT: KafkaCode = KafkaCode(50);
    /// Another operation on the same transaction is still in progress.
    pub const CONCURRENT_TRANSACTIONS: KafkaCode = KafkaCode(51);
    /// The transaction coordinator sending markers is no longer current for the producer.
    pub const TRANSACTION_COORDINATOR_FENCED: KafkaCode = KafkaCode(52);
    /// The client is not authorized for the transactional ID.
    pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: KafkaCode = KafkaCode(53);
    /// The broker has security features turned off.
    pub const SECURITY_DISABLED: KafkaCode = KafkaCode(54);
    /// The broker skipped this operation because another in the same batch failed.
    pub const OPERATION_NOT_ATTEMPTED: KafkaCode = KafkaCode(55);
    /// A disk error occurred while the broker accessed a log.
    pub const KAFKA_STORAGE_ERROR: KafkaCode = KafkaCode(56);
    /// The requested log directory is not configured on the broker.
    pub const LOG_DIR_NOT_FOUND: KafkaCode = KafkaCode(57);
    /// Authentication over SASL did not succeed.
    pub const SASL_AUTHENTICATION_FAILED: KafkaCode = KafkaCode(58);
    /// The broker has no state for this producer ID, for example after its records expired.
    pub const UNKNOWN_PRODUCER_ID: KafkaCode = KafkaCode(59);
    /// The partition is already being reassigned.
    pub const REASSIGNMENT_IN_PROGRESS: KafkaCode = KafkaCode(60);
    /// Delegation token support is disabled.
    pub const DELEGATION_TOKEN_AUTH_DISABLED: KafkaCode = KafkaCode(61);
    /// The broker has no such delegation token.
    pub const DELEGATION_TOKEN_NOT_FOUND: KafkaCode = KafkaCode(62);
    /// The principal is not an owner or renewer of the delegation token.
    pub const DELEGATION_TOKEN_OWNER_MISMATCH: KafkaCode = KafkaCode(63);
    /// Delegation token requests are not allowed on this kind of connection.
    pub const DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: KafkaCode = KafkaCode(64);
    /// The client is not authorized for the delegation token operation.
    pub const DELEGATION_TOKEN_AUTHORIZATION_FAILED: KafkaCode = KafkaCode(65);
    /// The delegation token is past its expiry time.
    pub const DELEGATION_TOKEN_EXPIRED: KafkaCode = KafkaCode(66);
    /// The broker does not accept this kind of principal.
    pub const INVALID_PRINCIPAL_TYPE: KafkaCode = KafkaCode(67);
    /// The group still has members.
    pub const NON_EMPTY_GROUP: KafkaCode = KafkaCode(68);
    /// No group with this ID exists.
    pub const GROUP_ID_NOT_FOUND: KafkaCode = KafkaCode(69);
    /// The fetch session ID is not known to the broker.
    pub const FETCH_SESSION_ID_NOT_FOUND: KafkaCode = KafkaCode(70);
    /// The fetch session epoch does not match the broker's.
    pub const INVALID_FETCH_SESSION_EPOCH: KafkaCode = KafkaCode(71);
    /// The partition leader has no listener matching the one the metadata request used.
    pub const LISTENER_NOT_FOUND: KafkaCode = KafkaCode(72);
    /// The cluster does not allow topics to be deleted.
    pub const TOPIC_DELETION_DISABLED: KafkaCode = KafkaCode(73);
    /// The request's leader epoch is behind the broker's current epoch.
    pub const FENCED_LEADER_EPOCH: KafkaCode = KafkaCode(74);
    /// The request's leader epoch is ahead of what the broker knows.
    pub const UNKNOWN_LEADER_EPOCH: KafkaCode = KafkaCode(75);
    /// The partition uses a compression codec the client's request version cannot handle.
    pub const UNSUPPORTED_COMPRESSION_TYPE: KafkaCode = KafkaCode(76);
    /// The request carried a broker epoch that is no longer current.
    pub const STALE_BROKER_EPOCH: KafkaCode = KafkaCode(77);
    /// The new leader's high watermark has not caught up, so offsets are not yet available.
    pub const OFFSET_NOT_AVAILABLE: KafkaCode = KafkaCode(78);
    /// The member must obtain a member ID before joining the group.
    pub const MEMBER_ID_REQUIRED: KafkaCode = KafkaCode(79);
    /// The preferred replica cannot become leader right now.
    pub const PREFERRED_LEADER_NOT_AVAILABLE: KafkaCode = KafkaCode(80);
    /// The group has reached its maximum number of members.
    pub const GROUP_MAX_SIZE_REACHED: KafkaCode = KafkaCode(81);
    /// Another member with the same group instance ID has fenced this one.
    pub const FENCED_INSTANCE_ID: KafkaCode = KafkaCode(82);
    /// No eligible leader is available for the partition.
    pub const ELIGIBLE_LEADERS_NOT_AVAILABLE: KafkaCode = KafkaCode(83);
    /// The partition does not need a leader election.
    pub const ELECTION_NOT_NEEDED: KafkaCode = KafkaCode(84);
    /// There is no ongoing partition reassignment to act on.
    pub const NO_REASSIGNMENT_IN_PROGRESS: KafkaCode = KafkaCode(85);
    /// Offsets cannot be deleted while the group is subscribed to the topic.
    pub const GROUP_SUBSCRIBED_TO_TOPIC: KafkaCode = KafkaCode(86);
    /// The broker rejected a record that failed validation.
    pub const INVALID_RECORD: KafkaCode = KafkaCode(87);
    /// Pending transactional offsets must be resolved first.
    pub const UNSTABLE_OFFSET_COMMIT: KafkaCode = KafkaCode(88);
    /// A throttling quota, such as the topic mutation rate, was exceeded.
    pub const THROTTLING_QUOTA_EXCEEDED: KafkaCode = KafkaCode(89);
    /// A newer producer with the same transactional ID has fenced this one.
    pub const PRODUCER_FENCED: KafkaCode = KafkaCode(90);
    /// A resource named in the request is missing.
    pub const RESOURCE_NOT_FOUND: KafkaCode = KafkaCode(91);
    /// A resource is named more than once in the request.
    pub const DUPLICATE_RESOURCE: KafkaCode = KafkaCode(92);
    /// The requested credential does not meet the acceptance criteria.
    pub const UNACCEPTABLE_CREDENTIAL: KafkaCode = KafkaCode(93);
    /// A voter-only request came from, or went to, a replica outside the expected voter set.
    pub const INCONSISTENT_VOTER_SET: KafkaCode = KafkaCode(94);
    /// The requested update version is rejected.
    pub const INVALID_UPDATE_VERSION: KafkaCode = KafkaCode(95);
    /// Finalized features could not be updated because of a server error.
    pub const FEATURE_UPDATE_FAILED: KafkaCode = KafkaCode(96);
    /// The principal of a forwarded request could not be deserialized.
    pub const PRINCIPAL_DESERIALIZATION_FAILURE: KafkaCode = KafkaCode(97);
    /// No snapshot exists with the requested ID.
    pub const SNAPSHOT_NOT_FOUND: KafkaCode = KafkaCode(98);
    /// The requested position is outside the snapshot.
    pub const POSITION_OUT_OF_RANGE: KafkaCode = KafkaCode(99);
    /// No topic with this topic ID is known to the broker.
    pub const UNKNOWN_TOPIC_ID: KafkaCode = KafkaCode(100);
    /// Another broker has already registered with this ID.
    pub const DUPLICATE_BROKER_REGISTRATION: KafkaCode = KafkaCode(101);
    /// No broker is registered under this ID.
    pub const BROKER_ID_NOT_REGISTERED: KafkaCode = KafkaCode(102);
    /// The topic ID in the request does not match the log's topic ID.
    pub const INCONSISTENT_TOPIC_ID: KafkaCode = KafkaCode(103);
    /// The request comes from a different cluster than this server belongs to.
    pub const INCONSISTENT_CLUSTER_ID: KafkaCode = KafkaCode(104);
    /// No transaction state exists for the transactional ID.
    pub const TRANSACTIONAL_ID_NOT_FOUND: KafkaCode = KafkaCode(105);
    /// The fetch session mixed or changed topic IDs in an inconsistent way.
    pub const FETCH_SESSION_TOPIC_ID_ERROR: KafkaCode = KafkaCode(106);
    /// The proposed ISR includes a replica that is not eligible.
    pub const INELIGIBLE_REPLICA: KafkaCode = KafkaCode(107);
    /// The partition state was updated, but a new leader has been elected.
    pub const NEW_LEADER_ELECTED: KafkaCode = KafkaCode(108);
    /// The requested offset is now only in tiered storage.
    pub const OFFSET_MOVED_TO_TIERED_STORAGE: KafkaCode = KafkaCode(109);
    /// The member epoch is fenced; the member must drop its partitions and rejoin.
    pub const FENCED_MEMBER_EPOCH: KafkaCode = KafkaCode(110);
    /// Another member still holds this instance ID and must leave first.
    pub const UNRELEASED_INSTANCE_ID: KafkaCode = KafkaCode(111);
    /// The group does not support the requested assignor or its versions.
    pub const UNSUPPORTED_ASSIGNOR: KafkaCode = KafkaCode(112);
    /// The member epoch is stale; retry after learning the current epoch from a heartbeat.
    pub const STALE_MEMBER_EPOCH: KafkaCode = KafkaCode(113);
    /// The request reached a broker or controller endpoint of the wrong kind.
    pub const MISMATCHED_ENDPOINT_TYPE: KafkaCode = KafkaCode(114);
    /// The endpoint type in the request is not supported.
    pub const UNSUPPORTED_ENDPOINT_TYPE: KafkaCode = KafkaCode(115);
    /// No controller with this ID is known.
    pub const UNKNOWN_CONTROLLER_ID: KafkaCode = KafkaCode(116);
    /// The telemetry subscription ID is unknown or outdated.
    pub const UNKNOWN_SUBSCRIPTION_ID: KafkaCode = KafkaCode(117);
    /// The pushed telemetry exceeds the broker's size limit.
    pub const TELEMETRY_TOO_LARGE: KafkaCode = KafkaCode(118);
    /// The controller rejected the broker's registration as invalid.
    pub const INVALID_REGISTRATION: KafkaCode = KafkaCode(119);
    /// The transaction hit an error; aborting it lets the transactional ID continue.
    pub const TRANSACTION_ABORTABLE: KafkaCode = KafkaCode(120);
    /// The record is not in a state that allows the acknowledgement.
    pub const INVALID_RECORD_STATE: KafkaCode = KafkaCode(121);
    /// The broker has no share session matching the request.
    pub const SHARE_SESSION_NOT_FOUND: KafkaCode = KafkaCode(122);
    /// The share session epoch does not match the broker's.
    pub const INVALID_SHARE_SESSION_EPOCH: KafkaCode = KafkaCode(123);
    /// The share coordinator rejected the request because its state epoch is stale.
    pub const FENCED_STATE_EPOCH: KafkaCode = KafkaCode(124);
    /// The receiving replica's identity does not match the voter key in the request.
    pub const INVALID_VOTER_KEY: KafkaCode = KafkaCode(125);
    /// The replica being added is already a voter.
    pub const DUPLICATE_VOTER: KafkaCode = KafkaCode(126);
    /// The replica being removed is not a voter.
    pub const VOTER_NOT_FOUND: KafkaCode = KafkaCode(127);
    /// A regular expression in the request is malformed.
    pub const INVALID_REGULAR_EXPRESSION: KafkaCode = KafkaCode(128);
    /// The client must re-run bootstrap to get fresh cluster metadata.
    pub const REBOOTSTRAP_REQUIRED: KafkaCode = KafkaCode(129);
    /// The Streams group topology in the request is malformed or inconsistent.
    pub const STREAMS_INVALID_TOPOLOGY: KafkaCode = KafkaCode(130);
    /// The Streams topology epoch in the request is not acceptable to the group.
    pub const STREAMS_INVALID_TOPOLOGY_EPOCH: KafkaCode = KafkaCode(131);
    /// A newer Streams topology epoch has fenced the request's topology.
    pub const STREAMS_TOPOLOGY_FENCED: KafkaCode = KafkaCode(132);
    /// The broker already hosts the maximum number of share sessions.
    pub const SHARE_SESSION_LIMIT_REACHED: KafkaCode = KafkaCode(133);

    /// Facts about this code, or `None` for a code this table lacks.
    pub fn info(self) -> Option<&'static ErrorInfo> {
        ERRORS
            .binary_search_by_key(&self.0, |e| e.code)
            .ok()
            .map(|i| &ERRORS[i])
    }

    /// Kafka's name for the code, or `"UNKNOWN"` for a code this table lacks.
    pub fn name(self) -> &'static str {
        self.info().map_or("UNKNOWN", |e| e.name)
    }

    /// Whether a retry may succeed; unknown codes are not retriable.
    pub fn is_retriable(self) -> bool {
        self.info().is_some_and(|e| e.retriable)
    }

    /// Whether this is an error at all (code != 0).
    pub fn is_error(self) -> bool {
        self.0 != 0
    }
}

impl fmt::Display for KafkaCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.info() {
            Some(e) => write!(f, "{} ({}): {}", e.name, e.code, e.description),
            None => write!(
                f,
                "UNKNOWN ({}): error code not known to this client",
                self.0
            ),
        }
    }
}

impl From<i16> for KafkaCode {
    fn from(code: i16) -> Self {
        KafkaCode(code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every associated constant with the name it must carry.
    const NAMED: &[(KafkaCode, &str)] = &[
        (KafkaCode::UNKNOWN_SERVER_ERROR, "UNKNOWN_SERVER_ERROR"),
        (KafkaCode::NONE, "NONE"),
        (KafkaCode::OFFSET_OUT_OF_RANGE, "OFFSET_OUT_OF_RANGE"),
        (KafkaCode::CORRUPT_MESSAGE, "CORRUPT_MESSAGE"),
        (
            KafkaCode::UNKNOWN_TOPIC_OR_PARTITION,
            "UNKNOWN_TOPIC_OR_PARTITION",
        ),
        (KafkaCode::INVALID_FETCH_SIZE, "INVALID_FETCH_SIZE"),
        (KafkaCode::LEADER_NOT_AVAILABLE, "LEADER_NOT_AVAILABLE"),
        (KafkaCode::NOT_LEADER_OR_FOLLOWER, "NOT_LEADER_OR_FOLLOWER"),
        (KafkaCode::REQUEST_TIMED_OUT, "REQUEST_TIMED_OUT"),
        (KafkaCode::BROKER_NOT_AVAILABLE, "BROKER_NOT_AVAILABLE"),
        (KafkaCode::REPLICA_NOT_AVAILABLE, "REPLICA_NOT_AVAILABLE"),
        (KafkaCode::MESSAGE_TOO_LARGE, "MESSAGE_TOO_LARGE"),
        (KafkaCode::STALE_CONTROLLER_EPOCH, "STALE_CONTROLLER_EPOCH"),
        (
            KafkaCode::OFFSET_METADATA_TOO_LARGE,
            "OFFSET_METADATA_TOO_LARGE",
        ),
        (KafkaCode::NETWORK_EXCEPTION, "NETWORK_EXCEPTION"),
        (
            KafkaCode::COORDINATOR_LOAD_IN_PROGRESS,
            "COORDINATOR_LOAD_IN_PROGRESS",
        ),
        (
            KafkaCode::COORDINATOR_NOT_AVAILABLE,
            "COORDINATOR_NOT_AVAILABLE",
        ),
        (KafkaCode::NOT_COORDINATOR, "NOT_COORDINATOR"),
        (
            KafkaCode::INVALID_TOPIC_EXCEPTION,
            "INVALID_TOPIC_EXCEPTION",
        ),
        (KafkaCode::RECORD_LIST_TOO_LARGE, "RECORD_LIST_TOO_LARGE"),
        (KafkaCode::NOT_ENOUGH_REPLICAS, "NOT_ENOUGH_REPLICAS"),
        (
            KafkaCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND,
            "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        ),
        (KafkaCode::INVALID_REQUIRED_ACKS, "INVALID_REQUIRED_ACKS"),
        (KafkaCode::ILLEGAL_GENERATION, "ILLEGAL_GENERATION"),
        (
            KafkaCode::INCONSISTENT_GROUP_PROTOCOL,
            "INCONSISTENT_GROUP_PROTOCOL",
        ),
        (KafkaCode::INVALID_GROUP_ID, "INVALID_GROUP_ID"),
        (KafkaCode::UNKNOWN_MEMBER_ID, "UNKNOWN_MEMBER_ID"),
        (
            KafkaCode::INVALID_SESSION_TIMEOUT,
            "INVALID_SESSION_TIMEOUT",
        ),
        (KafkaCode::REBALANCE_IN_PROGRESS, "REBALANCE_IN_PROGRESS"),
        (
            KafkaCode::INVALID_COMMIT_OFFSET_SIZE,
            "INVALID_COMMIT_OFFSET_SIZE",
        ),
        (
            KafkaCode::TOPIC_AUTHORIZATION_FAILED,
            "TOPIC_AUTHORIZATION_FAILED",
        ),
        (
            KafkaCode::GROUP_AUTHORIZATION_FAILED,
            "GROUP_AUTHORIZATION_FAILED",
        ),
        (
            KafkaCode::CLUSTER_AUTHORIZATION_FAILED,
            "CLUSTER_AUTHORIZATION_FAILED",
        ),
        (KafkaCode::INVALID_TIMESTAMP, "INVALID_TIMESTAMP"),
        (
            KafkaCode::UNSUPPORTED_SASL_MECHANISM,
            "UNSUPPORTED_SASL_MECHANISM",
        ),
        (KafkaCode::ILLEGAL_SASL_STATE, "ILLEGAL_SASL_STATE"),
        (KafkaCode::UNSUPPORTED_VERSION, "UNSUPPORTED_VERSION"),
        (KafkaCode::TOPIC_ALREADY_EXISTS, "TOPIC_ALREADY_EXISTS"),
        (KafkaCode::INVALID_PARTITIONS, "INVALID_PARTITIONS"),
        (
            KafkaCode::INVALID_REPLICATION_FACTOR,
            "INVALID_REPLICATION_FACTOR",
        ),
        (
            KafkaCode::INVALID_REPLICA_ASSIGNMENT,
            "INVALID_REPLICA_ASSIGNMENT",
        ),
        (KafkaCode::INVALID_CONFIG, "INVALID_CONFIG"),
        (KafkaCode::NOT_CONTROLLER, "NOT_CONTROLLER"),
        (KafkaCode::INVALID_REQUEST, "INVALID_REQUEST"),
        (
            KafkaCode::UNSUPPORTED_FOR_MESSAGE_FORMAT,
            "UNSUPPORTED_FOR_MESSAGE_FORMAT",
        ),
        (KafkaCode::POLICY_VIOLATION, "POLICY_VIOLATION"),
        (
            KafkaCode::OUT_OF_ORDER_SEQUENCE_NUMBER,
            "OUT_OF_ORDER_SEQUENCE_NUMBER",
        ),
        (
            KafkaCode::DUPLICATE_SEQUENCE_NUMBER,
            "DUPLICATE_SEQUENCE_NUMBER",
        ),
        (KafkaCode::INVALID_PRODUCER_EPOCH, "INVALID_PRODUCER_EPOCH"),
        (KafkaCode::INVALID_TXN_STATE, "INVALID_TXN_STATE"),
        (
            KafkaCode::INVALID_PRODUCER_ID_MAPPING,
            "INVALID_PRODUCER_ID_MAPPING",
        ),
        (
            KafkaCode::INVALID_TRANSACTION_TIMEOUT,
            "INVALID_TRANSACTION_TIMEOUT",
        ),
        (
            KafkaCode::CONCURRENT_TRANSACTIONS,
            "CONCURRENT_TRANSACTIONS",
        ),
        (
            KafkaCode::TRANSACTION_COORDINATOR_FENCED,
            "TRANSACTION_COORDINATOR_FENCED",
        ),
        (
            KafkaCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        ),
        (KafkaCode::SECURITY_DISABLED, "SECURITY_DISABLED"),
        (
            KafkaCode::OPERATION_NOT_ATTEMPTED,
            "OPERATION_NOT_ATTEMPTED",
        ),
        (KafkaCode::KAFKA_STORAGE_ERROR, "KAFKA_STORAGE_ERROR"),
        (KafkaCode::LOG_DIR_NOT_FOUND, "LOG_DIR_NOT_FOUND"),
        (
            KafkaCode::SASL_AUTHENTICATION_FAILED,
            "SASL_AUTHENTICATION_FAILED",
        ),
        (KafkaCode::UNKNOWN_PRODUCER_ID, "UNKNOWN_PRODUCER_ID"),
        (
            KafkaCode::REASSIGNMENT_IN_PROGRESS,
            "REASSIGNMENT_IN_PROGRESS",
        ),
        (
            KafkaCode::DELEGATION_TOKEN_AUTH_DISABLED,
            "DELEGATION_TOKEN_AUTH_DISABLED",
        ),
        (
            KafkaCode::DELEGATION_TOKEN_NOT_FOUND,
            "DELEGATION_TOKEN_NOT_FOUND",
        ),
        (
            KafkaCode::DELEGATION_TOKEN_OWNER_MISMATCH,
            "DELEGATION_TOKEN_OWNER_MISMATCH",
        ),
        (
            KafkaCode::DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
            "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
        ),
        (
            KafkaCode::DELEGATION_TOKEN_AUTHORIZATION_FAILED,
            "DELEGATION_TOKEN_AUTHORIZATION_FAILED",
        ),
        (
            KafkaCode::DELEGATION_TOKEN_EXPIRED,
            "DELEGATION_TOKEN_EXPIRED",
        ),
        (KafkaCode::INVALID_PRINCIPAL_TYPE, "INVALID_PRINCIPAL_TYPE"),
        (KafkaCode::NON_EMPTY_GROUP, "NON_EMPTY_GROUP"),
        (KafkaCode::GROUP_ID_NOT_FOUND, "GROUP_ID_NOT_FOUND"),
        (
            KafkaCode::FETCH_SESSION_ID_NOT_FOUND,
            "FETCH_SESSION_ID_NOT_FOUND",
        ),
        (
            KafkaCode::INVALID_FETCH_SESSION_EPOCH,
            "INVALID_FETCH_SESSION_EPOCH",
        ),
        (KafkaCode::LISTENER_NOT_FOUND, "LISTENER_NOT_FOUND"),
        (
            KafkaCode::TOPIC_DELETION_DISABLED,
            "TOPIC_DELETION_DISABLED",
        ),
        (KafkaCode::FENCED_LEADER_EPOCH, "FENCED_LEADER_EPOCH"),
        (KafkaCode::UNKNOWN_LEADER_EPOCH, "UNKNOWN_LEADER_EPOCH"),
        (
            KafkaCode::UNSUPPORTED_COMPRESSION_TYPE,
            "UNSUPPORTED_COMPRESSION_TYPE",
        ),
        (KafkaCode::STALE_BROKER_EPOCH, "STALE_BROKER_EPOCH"),
        (KafkaCode::OFFSET_NOT_AVAILABLE, "OFFSET_NOT_AVAILABLE"),
        (KafkaCode::MEMBER_ID_REQUIRED, "MEMBER_ID_REQUIRED"),
        (
            KafkaCode::PREFERRED_LEADER_NOT_AVAILABLE,
            "PREFERRED_LEADER_NOT_AVAILABLE",
        ),
        (KafkaCode::GROUP_MAX_SIZE_REACHED, "GROUP_MAX_SIZE_REACHED"),
        (KafkaCode::FENCED_INSTANCE_ID, "FENCED_INSTANCE_ID"),
        (
            KafkaCode::ELIGIBLE_LEADERS_NOT_AVAILABLE,
            "ELIGIBLE_LEADERS_NOT_AVAILABLE",
        ),
        (KafkaCode::ELECTION_NOT_NEEDED, "ELECTION_NOT_NEEDED"),
        (
            KafkaCode::NO_REASSIGNMENT_IN_PROGRESS,
            "NO_REASSIGNMENT_IN_PROGRESS",
        ),
        (
            KafkaCode::GROUP_SUBSCRIBED_TO_TOPIC,
            "GROUP_SUBSCRIBED_TO_TOPIC",
        ),
        (KafkaCode::INVALID_RECORD, "INVALID_RECORD"),
        (KafkaCode::UNSTABLE_OFFSET_COMMIT, "UNSTABLE_OFFSET_COMMIT"),
        (
            KafkaCode::THROTTLING_QUOTA_EXCEEDED,
            "THROTTLING_QUOTA_EXCEEDED",
        ),
        (KafkaCode::PRODUCER_FENCED, "PRODUCER_FENCED"),
        (KafkaCode::RESOURCE_NOT_FOUND, "RESOURCE_NOT_FOUND"),
        (KafkaCode::DUPLICATE_RESOURCE, "DUPLICATE_RESOURCE"),
        (
            KafkaCode::UNACCEPTABLE_CREDENTIAL,
            "UNACCEPTABLE_CREDENTIAL",
        ),
        (KafkaCode::INCONSISTENT_VOTER_SET, "INCONSISTENT_VOTER_SET"),
        (KafkaCode::INVALID_UPDATE_VERSION, "INVALID_UPDATE_VERSION"),
        (KafkaCode::FEATURE_UPDATE_FAILED, "FEATURE_UPDATE_FAILED"),
        (
            KafkaCode::PRINCIPAL_DESERIALIZATION_FAILURE,
            "PRINCIPAL_DESERIALIZATION_FAILURE",
        ),
        (KafkaCode::SNAPSHOT_NOT_FOUND, "SNAPSHOT_NOT_FOUND"),
        (KafkaCode::POSITION_OUT_OF_RANGE, "POSITION_OUT_OF_RANGE"),
        (KafkaCode::UNKNOWN_TOPIC_ID, "UNKNOWN_TOPIC_ID"),
        (
            KafkaCode::DUPLICATE_BROKER_REGISTRATION,
            "DUPLICATE_BROKER_REGISTRATION",
        ),
        (
            KafkaCode::BROKER_ID_NOT_REGISTERED,
            "BROKER_ID_NOT_REGISTERED",
        ),
        (KafkaCode::INCONSISTENT_TOPIC_ID, "INCONSISTENT_TOPIC_ID"),
        (
            KafkaCode::INCONSISTENT_CLUSTER_ID,
            "INCONSISTENT_CLUSTER_ID",
        ),
        (
            KafkaCode::TRANSACTIONAL_ID_NOT_FOUND,
            "TRANSACTIONAL_ID_NOT_FOUND",
        ),
        (
            KafkaCode::FETCH_SESSION_TOPIC_ID_ERROR,
            "FETCH_SESSION_TOPIC_ID_ERROR",
        ),
        (KafkaCode::INELIGIBLE_REPLICA, "INELIGIBLE_REPLICA"),
        (KafkaCode::NEW_LEADER_ELECTED, "NEW_LEADER_ELECTED"),
        (
            KafkaCode::OFFSET_MOVED_TO_TIERED_STORAGE,
            "OFFSET_MOVED_TO_TIERED_STORAGE",
        ),
        (KafkaCode::FENCED_MEMBER_EPOCH, "FENCED_MEMBER_EPOCH"),
        (KafkaCode::UNRELEASED_INSTANCE_ID, "UNRELEASED_INSTANCE_ID"),
        (KafkaCode::UNSUPPORTED_ASSIGNOR, "UNSUPPORTED_ASSIGNOR"),
        (KafkaCode::STALE_MEMBER_EPOCH, "STALE_MEMBER_EPOCH"),
        (
            KafkaCode::MISMATCHED_ENDPOINT_TYPE,
            "MISMATCHED_ENDPOINT_TYPE",
        ),
        (
            KafkaCode::UNSUPPORTED_ENDPOINT_TYPE,
            "UNSUPPORTED_ENDPOINT_TYPE",
        ),
        (KafkaCode::UNKNOWN_CONTROLLER_ID, "UNKNOWN_CONTROLLER_ID"),
        (
            KafkaCode::UNKNOWN_SUBSCRIPTION_ID,
            "UNKNOWN_SUBSCRIPTION_ID",
        ),
        (KafkaCode::TELEMETRY_TOO_LARGE, "TELEMETRY_TOO_LARGE"),
        (KafkaCode::INVALID_REGISTRATION, "INVALID_REGISTRATION"),
        (KafkaCode::TRANSACTION_ABORTABLE, "TRANSACTION_ABORTABLE"),
        (KafkaCode::INVALID_RECORD_STATE, "INVALID_RECORD_STATE"),
        (
            KafkaCode::SHARE_SESSION_NOT_FOUND,
            "SHARE_SESSION_NOT_FOUND",
        ),
        (
            KafkaCode::INVALID_SHARE_SESSION_EPOCH,
            "INVALID_SHARE_SESSION_EPOCH",
        ),
        (KafkaCode::FENCED_STATE_EPOCH, "FENCED_STATE_EPOCH"),
        (KafkaCode::INVALID_VOTER_KEY, "INVALID_VOTER_KEY"),
        (KafkaCode::DUPLICATE_VOTER, "DUPLICATE_VOTER"),
        (KafkaCode::VOTER_NOT_FOUND, "VOTER_NOT_FOUND"),
        (
            KafkaCode::INVALID_REGULAR_EXPRESSION,
            "INVALID_REGULAR_EXPRESSION",
        ),
        (KafkaCode::REBOOTSTRAP_REQUIRED, "REBOOTSTRAP_REQUIRED"),
        (
            KafkaCode::STREAMS_INVALID_TOPOLOGY,
            "STREAMS_INVALID_TOPOLOGY",
        ),
        (
            KafkaCode::STREAMS_INVALID_TOPOLOGY_EPOCH,
            "STREAMS_INVALID_TOPOLOGY_EPOCH",
        ),
        (
            KafkaCode::STREAMS_TOPOLOGY_FENCED,
            "STREAMS_TOPOLOGY_FENCED",
        ),
        (
            KafkaCode::SHARE_SESSION_LIMIT_REACHED,
            "SHARE_SESSION_LIMIT_REACHED",
        ),
    ];

    #[test]
    fn table_sorted_strictly_without_duplicates() {
        for pair in ERRORS.windows(2) {
            assert!(
                pair[0].code < pair[1].code,
                "{} ({}) is not before {} ({})",
                pair[0].name,
                pair[0].code,
                pair[1].name,
                pair[1].code
            );
        }
        let mut names: Vec<&str> = ERRORS.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ERRORS.len(), "duplicate names");
    }

    #[test]
    fn table_covers_minus_one_to_133_without_gaps() {
        assert_eq!(ERRORS.len(), 135);
        assert_eq!(ERRORS.first().map(|e| e.code), Some(-1));
        assert_eq!(ERRORS.last().map(|e| e.code), Some(133));
        for (i, e) in ERRORS.iter().enumerate() {
            assert_eq!(i64::from(e.code), i as i64 - 1, "gap before {}", e.name);
            assert!(!e.description.is_empty(), "{} has no description", e.name);
        }
    }

    #[test]
    fn retriable_count() {
        assert_eq!(ERRORS.iter().filter(|e| e.retriable).count(), 32);
    }

    #[test]
    fn constants_match_table() {
        assert_eq!(NAMED.len(), ERRORS.len());
        for &(code, name) in NAMED {
            let info = code.info().expect("constant missing from table");
            assert_eq!(info.name, name);
            assert_eq!(info.code, code.0);
        }
    }

    #[test]
    fn known_codes() {
        let c = KafkaCode::from(6);
        assert_eq!(c, KafkaCode::NOT_LEADER_OR_FOLLOWER);
        assert_eq!(c.name(), "NOT_LEADER_OR_FOLLOWER");
        assert!(c.is_retriable());
        assert!(c.is_error());

        let c = KafkaCode::from(3);
        assert_eq!(c.name(), "UNKNOWN_TOPIC_OR_PARTITION");
        assert!(c.is_retriable());

        let c = KafkaCode::from(58);
        assert_eq!(c.name(), "SASL_AUTHENTICATION_FAILED");
        assert!(!c.is_retriable());

        let c = KafkaCode::from(35);
        assert_eq!(c.name(), "UNSUPPORTED_VERSION");
        assert!(!c.is_retriable());

        let c = KafkaCode::from(-1);
        assert_eq!(c.name(), "UNKNOWN_SERVER_ERROR");
        assert!(!c.is_retriable());
        assert!(c.is_error());

        assert_eq!(KafkaCode::from(0), KafkaCode::NONE);
        assert_eq!(KafkaCode::NONE.name(), "NONE");
        assert!(!KafkaCode::NONE.is_error());
        assert!(!KafkaCode::NONE.is_retriable());

        assert!(KafkaCode::SHARE_SESSION_LIMIT_REACHED.is_retriable());
        assert!(KafkaCode::SHARE_SESSION_NOT_FOUND.is_retriable());
        assert!(!KafkaCode::INVALID_RECORD_STATE.is_retriable());
        assert!(!KafkaCode::FENCED_STATE_EPOCH.is_retriable());
        assert!(!KafkaCode::STREAMS_TOPOLOGY_FENCED.is_retriable());
        assert!(!KafkaCode::PRODUCER_FENCED.is_retriable());
        assert!(KafkaCode::CONCURRENT_TRANSACTIONS.is_retriable());
    }

    #[test]
    fn unknown_code() {
        for raw in [30000, 134, -2, i16::MIN, i16::MAX] {
            let c = KafkaCode::from(raw);
            assert_eq!(c.info(), None);
            assert_eq!(c.name(), "UNKNOWN");
            assert!(!c.is_retriable());
            assert!(c.is_error());
        }
    }

    #[test]
    fn display() {
        assert_eq!(
            KafkaCode::NOT_LEADER_OR_FOLLOWER.to_string(),
            format!(
                "NOT_LEADER_OR_FOLLOWER (6): {}",
                KafkaCode::NOT_LEADER_OR_FOLLOWER
                    .info()
                    .unwrap()
                    .description
            )
        );
        assert!(KafkaCode(30000).to_string().starts_with("UNKNOWN (30000)"));
    }
}
