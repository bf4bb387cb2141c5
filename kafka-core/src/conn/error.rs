//! Connection errors: remote misbehaviour and connection failures (fatal and sticky for
//! the connection), and per-request outcomes. Every layer is typed: the socket
//! ([`SocketError`], as the adapter reports it), TLS ([`TlsFailure`]), SASL
//! ([`SaslError`]), the Kafka framing and protocol ([`ConnError`]'s own variants).

use crate::conn::sasl::SaslError;
use crate::protocol::{ApiKey, DecodeError, EncodeError, VersionRange};

/// Why a socket failed or closed, as the adapter saw it (no secrets, no payload).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SocketError {
    /// The host name did not resolve (the resolver's words).
    Resolve(String),
    /// Nothing listens on the port: the connection was refused.
    Refused,
    /// Connecting took longer than the attempt's setup timeout (`IoCommand::Connect`:
    /// `socket.connection.setup.timeout.ms`, grown per failure up to the `.max.ms`).
    ConnectTimedOut,
    /// The peer closed the connection (end of stream).
    ClosedByPeer,
    /// The peer reset the connection.
    Reset,
    /// Any other I/O failure (the operating system's words).
    Io(String),
}

impl SocketError {
    /// The failure as a sentence about the connection to `addr` (`host:port`).
    fn describe(&self, addr: &str, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SocketError::Resolve(why) => write!(f, "could not resolve {addr}: {why}"),
            SocketError::Refused => write!(f, "connection to {addr} refused"),
            SocketError::ConnectTimedOut => write!(f, "connecting to {addr} timed out"),
            SocketError::ClosedByPeer => write!(f, "{addr} closed the connection"),
            SocketError::Reset => write!(f, "connection to {addr} reset by the peer"),
            SocketError::Io(why) => write!(f, "connection to {addr} failed: {why}"),
        }
    }
}

impl std::fmt::Display for SocketError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SocketError::Resolve(why) => write!(f, "could not resolve the host: {why}"),
            SocketError::Refused => f.write_str("connection refused"),
            SocketError::ConnectTimedOut => f.write_str("connect timed out"),
            SocketError::ClosedByPeer => f.write_str("closed by the peer"),
            SocketError::Reset => f.write_str("connection reset by the peer"),
            SocketError::Io(why) => f.write_str(why),
        }
    }
}

impl From<&str> for SocketError {
    /// An untyped cause (tests, simulations): [`SocketError::Io`].
    fn from(why: &str) -> Self {
        SocketError::Io(why.to_string())
    }
}

impl From<String> for SocketError {
    fn from(why: String) -> Self {
        SocketError::Io(why)
    }
}

/// Why TLS failed on a connection. The texts are rustls' descriptions of the failure,
/// never certificate or key material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsFailure {
    /// The server's certificate was rejected (unknown issuer, wrong name, expired...).
    #[error("server certificate rejected: {0}")]
    Certificate(String),
    /// The peer sent a fatal alert (e.g. `CertificateRequired`: the broker wants a
    /// client certificate).
    #[error("the broker sent TLS alert {0}")]
    Alert(String),
    /// The peer's bytes are not TLS (a plaintext listener?).
    #[error("the broker does not speak TLS here: {0}")]
    NotTls(String),
    /// The host name cannot be used as a TLS server name.
    #[error("invalid TLS server name {0:?}")]
    ServerName(String),
    /// Any other handshake or session failure.
    #[error("{0}")]
    Other(String),
}

#[cfg(feature = "tls")]
impl From<super::tls::TlsError> for TlsFailure {
    fn from(e: super::tls::TlsError) -> Self {
        use super::tls::TlsError as E;
        match e {
            E::Certificate(why) => TlsFailure::Certificate(why),
            E::AlertReceived(alert) => TlsFailure::Alert(format!("{alert:?}")),
            E::Malformed(why) => TlsFailure::NotTls(why),
            E::InvalidServerName(name) => TlsFailure::ServerName(name),
            other => TlsFailure::Other(other.to_string()),
        }
    }
}

/// Why a connection failed. Once failed, a connection stays failed: every queued and
/// in-flight request fails with the same error, and the connection must be closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnError {
    /// The peer sent a negative frame size.
    #[error("negative frame size {0}")]
    NegativeFrameSize(i32),
    /// The peer announced a frame above the configured maximum (`receive.message.max.bytes`).
    #[error("frame of {size} bytes exceeds the maximum of {max}")]
    FrameTooLarge {
        /// Announced size.
        size: usize,
        /// Configured maximum.
        max: usize,
    },
    /// A plaintext connection got a TLS record (an alert or a handshake) where a frame
    /// size should be: the port is a TLS listener (set `security.protocol`).
    #[error("the broker answered with TLS (record type {record_type}): is this a TLS port?")]
    TlsOnPlaintext {
        /// The TLS record type byte (21: alert, 22: handshake).
        record_type: u8,
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
    /// The SASL exchange failed (a bad server message, a signature mismatch, credentials
    /// the mechanism cannot carry...).
    #[error("SASL exchange failed: {0}")]
    Sasl(SaslError),
    /// The broker cannot take any version of an API the connection setup needs
    /// (SaslHandshake, SaslAuthenticate).
    #[error("{api:?}: no version in common with the broker")]
    SetupUnsupported {
        /// The API.
        api: ApiKey,
    },
    /// A request the connection sends for itself could not be encoded.
    #[error("could not encode {api:?}: {source}")]
    SetupEncode {
        /// The API.
        api: ApiKey,
        /// Why.
        source: EncodeError,
    },
    /// TLS failed (handshake, certificate verification, alert).
    #[error("TLS failed: {0}")]
    Tls(TlsFailure),
    /// The broker ended the TLS session (`close_notify`): nothing more will arrive on
    /// this connection, so what waits for an answer fails now, not at its timeout.
    /// Retriable, like a closed socket (a broker shutting down cleanly does this).
    #[error("the broker closed the TLS session (close_notify)")]
    TlsClosedByPeer,
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
    /// The socket failed to connect, or failed or closed later (as the adapter
    /// reported it): "connection to 127.0.0.1:9 refused".
    #[error("{}", DescribeSocket(addr, error))]
    Socket {
        /// `host:port`.
        addr: String,
        /// What happened.
        error: SocketError,
    },
    /// Closed after `connections.max.idle.ms` without traffic.
    #[error("connection idle for too long")]
    Idle,
}

struct DescribeSocket<'a>(&'a str, &'a SocketError);

impl std::fmt::Display for DescribeSocket<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.1.describe(self.0, f)
    }
}

impl ConnError {
    /// Whether retrying on a new connection may succeed. Authentication, SASL and TLS
    /// failures will not (Java treats them as fatal too): they end a call at once.
    pub fn is_retriable(&self) -> bool {
        !matches!(
            self,
            ConnError::AuthenticationFailed { .. }
                | ConnError::UnsupportedSaslMechanism { .. }
                | ConnError::Sasl(_)
                | ConnError::SetupUnsupported { .. }
                | ConnError::SetupEncode { .. }
                | ConnError::Tls(_)
        )
    }

    /// Whether the broker broke the Kafka protocol (a frame size, correlation id or
    /// body no Kafka broker sends). A bootstrap list whose every address does this
    /// several times in a row ends the calls waiting on it (see `DESIGN.md`).
    pub fn is_protocol_violation(&self) -> bool {
        matches!(
            self,
            ConnError::NegativeFrameSize(_)
                | ConnError::FrameTooLarge { .. }
                | ConnError::TlsOnPlaintext { .. }
                | ConnError::CorrelationMismatch { .. }
                | ConnError::UnexpectedFrame
                | ConnError::Decode { .. }
                | ConnError::ApiVersions(_)
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
    /// Every bootstrap address broke the Kafka protocol several times in a row with no
    /// connection getting ready (`client::BOOTSTRAP_VIOLATIONS`): the calls waiting for
    /// them end with the last violation instead of retrying until their deadline.
    #[error("every bootstrap server broke the Kafka protocol repeatedly; the last: {0}")]
    BootstrapBroken(ConnError),
    /// Every attempt of this request broke the Kafka protocol, several times in a row
    /// (`client::REQUEST_VIOLATIONS`, for requests that asked to end so): the last
    /// violation, instead of retrying until the deadline.
    #[error("the broker broke the Kafka protocol on every attempt; the last: {0}")]
    RepeatedViolation(ConnError),
    /// The request was cancelled because the client is shutting down.
    #[error("cancelled")]
    Cancelled,
}
