//! Connection errors: remote misbehaviour and connection failures (fatal and sticky for
//! the connection), and per-request outcomes.

use crate::protocol::{ApiKey, DecodeError, EncodeError, VersionRange};

/// Why a connection failed. Once failed, a connection stays failed: every queued and
/// in-flight request fails with the same error, and the connection must be closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnError {
    /// The peer sent a negative frame size.
    #[error("negative frame size {0}")]
    NegativeFrameSize(i32),
    /// The peer announced a frame above the configured maximum (`receive.message.max.bytes`).
    /// A plaintext client talking to a TLS port sees this.
    #[error("frame of {size} bytes exceeds the maximum of {max} (is this a TLS port?)")]
    FrameTooLarge {
        /// Announced size.
        size: usize,
        /// Configured maximum.
        max: usize,
    },
    /// A response carried a correlation id other than the oldest in-flight request's.
    #[error("correlation id mismatch: expected {expected}, received {received}")]
    CorrelationMismatch {
        /// The id of the oldest in-flight request.
        expected: i32,
        /// The id received.
        received: i32,
    },
    /// A frame arrived while no request was in flight.
    #[error("unsolicited frame from the broker")]
    UnexpectedFrame,
    /// A response could not be decoded.
    #[error("could not decode {api:?} v{version} response: {source}")]
    Decode {
        /// The API.
        api: ApiKey,
        /// The version.
        version: i16,
        /// What was wrong.
        source: DecodeError,
    },
    /// The broker rejected the credentials. Not retriable: fix the configuration.
    #[error("authentication failed ({mechanism}): {message}")]
    AuthenticationFailed {
        /// The SASL mechanism.
        mechanism: String,
        /// The broker's message.
        message: String,
    },
    /// The broker does not enable the configured SASL mechanism.
    #[error("SASL mechanism {mechanism} is not enabled on the broker (enabled: {enabled:?})")]
    UnsupportedSaslMechanism {
        /// The configured mechanism.
        mechanism: String,
        /// The broker's enabled mechanisms.
        enabled: Vec<String>,
    },
    /// The SASL exchange failed on our side (bad server message, signature mismatch...).
    #[error("SASL exchange failed: {0}")]
    Sasl(String),
    /// TLS failed (handshake, certificate verification, alert).
    #[error("TLS failed: {0}")]
    Tls(String),
    /// The broker answered ApiVersions with an error.
    #[error("ApiVersions failed with error code {0}")]
    ApiVersions(i16),
    /// A request got no response within `request.timeout.ms`; the connection is dropped
    /// (as the Java client does) because the response may still arrive.
    #[error("{api:?} request {correlation_id} timed out")]
    RequestTimedOut {
        /// The API of the timed-out request.
        api: ApiKey,
        /// Its correlation id.
        correlation_id: i32,
    },
    /// Connection setup (TCP, TLS, negotiation, SASL) took longer than allowed.
    #[error("connection setup timed out")]
    SetupTimedOut,
    /// The adapter reported the socket closed or failed.
    #[error("connection closed: {0}")]
    Closed(String),
    /// Closed after `connections.max.idle.ms` without traffic.
    #[error("connection idle for too long")]
    Idle,
}

impl ConnError {
    /// Whether retrying on a new connection may succeed (authentication failures, for
    /// example, will not).
    pub fn is_retriable(&self) -> bool {
        !matches!(
            self,
            ConnError::AuthenticationFailed { .. }
                | ConnError::UnsupportedSaslMechanism { .. }
                | ConnError::Tls(_)
        )
    }
}

/// Why one request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The connection failed before the response arrived. If the request had been
    /// written, the broker may have processed it.
    #[error("connection failed: {0}")]
    Connection(#[from] ConnError),
    /// The broker cannot take any version of this API that we can send.
    #[error("{api:?}: no common version (ours {ours}, broker {broker:?})")]
    UnsupportedVersion {
        /// The API.
        api: ApiKey,
        /// Versions this client supports.
        ours: VersionRange,
        /// Versions the broker advertises (`None`: not at all).
        broker: Option<VersionRange>,
    },
    /// The request could not be encoded at the negotiated version.
    #[error("could not encode request: {0}")]
    Encode(#[from] EncodeError),
    /// The request could not be routed (unknown broker, no leader, no coordinator yet).
    #[error("no route: {0}")]
    NoRoute(String),
    /// The request was cancelled because the client is shutting down.
    #[error("cancelled")]
    Cancelled,
}
