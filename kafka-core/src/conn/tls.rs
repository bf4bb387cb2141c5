//! TLS for broker connections: `rustls` as a sans-IO byte pipe (cargo feature `tls`).
//!
//! Each connection runs socket bytes → [`TlsSession`] → Kafka framer and back. The
//! session never touches a socket: the connection state machine feeds it the ciphertext
//! the adapter received and pulls the ciphertext the adapter must send.
//!
//! ```text
//!   adapter socket ──ciphertext──▶ handle_ciphertext ─▶ read_plaintext ──▶ framer
//!   adapter socket ◀─ciphertext─── poll_ciphertext ◀── write_plaintext ◀── framer
//! ```
//!
//! Setup: fill a [`TlsConfig`] (PEM bytes only: the core reads no files, so the adapter
//! loads the CA bundle or the system roots and hands them over as PEM), call
//! [`TlsConfig::build`] once per client and share the resulting [`TlsClientConfig`]
//! (cheap to clone) by all connections; then one [`TlsSession::new`] per connection.
//!
//! Polling order after every `handle_ciphertext`: `read_plaintext` (deliver to the
//! framer), then `poll_ciphertext` (handshake replies, alerts, queued requests). After
//! every `write_plaintext`: `poll_ciphertext`.
//!
//! # Time
//!
//! Certificate validity is checked against a wall-clock time that the caller passes to
//! [`TlsSession::new`] as data ([`UnixTime`]); rustls' own clock is never consulted.
//! Each session gets a private copy of the shared `rustls::ClientConfig` whose
//! `time_provider` returns exactly that instant (the copy shares the session-resumption
//! store and every other `Arc` with the original). The config [`TlsConfig::build`]
//! returns carries a time provider that reports no time at all, so a handshake that
//! somehow bypassed [`TlsSession::new`] fails with `FailedToGetCurrentTime` instead of
//! reading a clock. The time is taken once per session: a handshake lasts seconds, and
//! certificate validity has a granularity of seconds.
//!
//! # Crypto provider
//!
//! `ring` (builds with a plain C compiler, no cmake), TLS 1.3 and TLS 1.2.

mod config;
mod session;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_close;
mod verify;

pub use config::{TlsClientConfig, TlsConfig};
pub use rustls::pki_types::UnixTime;
pub use rustls::AlertDescription;
pub use session::{TlsSession, HANDSHAKE_PLAINTEXT_LIMIT};

/// Errors from building a TLS config or running a TLS session.
///
/// Errors returned by [`TlsSession`] methods that process peer data are sticky: once
/// one is returned, every later call returns it again (any alert rustls queued for the
/// peer can still be pulled with [`TlsSession::poll_ciphertext`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A PEM input could not be parsed, or a certificate in it is unusable.
    #[error("invalid PEM in {what}: {reason}")]
    Pem {
        /// Which input (`ca_pem`, `client_cert_pem`).
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A PEM input that must hold certificates held none.
    #[error("no certificates found in {what}")]
    NoCertificates {
        /// Which input (`ca_pem`, `client_cert_pem`).
        what: &'static str,
    },
    /// The client private key is missing from its PEM, cannot be parsed, is of an
    /// unsupported type or does not match the client certificate. The key itself is
    /// never part of the message.
    #[error("invalid client private key: {0}")]
    PrivateKey(String),
    /// Only one of `client_cert_pem` and `client_key_pem` was given.
    #[error("client certificate and private key must be given together")]
    IncompleteClientAuth,
    /// Certificate verification is on but no CA certificate was given. The core reads no
    /// files: the adapter must supply the CA bundle (or the system roots) as PEM.
    #[error(
        "no CA certificates configured (set ca_pem; the adapter supplies system roots as PEM)"
    )]
    NoTrustAnchors,
    /// The host (or `server_name_override`) is neither a DNS name nor an IP address.
    #[error("invalid TLS server name {0:?}")]
    InvalidServerName(String),
    /// The server's certificate was rejected; the text names the reason (unknown
    /// issuer, not valid for the name, expired, ...).
    #[error("server certificate rejected: {0}")]
    Certificate(String),
    /// The peer sent a fatal alert (for example `CertificateRequired` when the broker
    /// wants a client certificate and none was configured).
    #[error("peer sent fatal TLS alert {0:?}")]
    AlertReceived(AlertDescription),
    /// The peer's bytes are not valid TLS (for example a plaintext Kafka listener).
    #[error("invalid TLS data from peer: {0}")]
    Malformed(String),
    /// Any other rustls error: config construction, handshake protocol violations.
    #[error("TLS error: {0}")]
    Rustls(rustls::Error),
    /// More than [`HANDSHAKE_PLAINTEXT_LIMIT`] bytes of plaintext were written before
    /// the handshake completed. Nothing of the refused write was queued; not sticky.
    #[error("more than {limit} bytes of plaintext queued before the TLS handshake completed")]
    HandshakeBufferFull {
        /// The limit in bytes.
        limit: usize,
    },
    /// Plaintext was written after [`TlsSession::send_close_notify`].
    #[error("TLS session already closed for writing (close_notify sent)")]
    Closed,
}

impl From<rustls::Error> for TlsError {
    fn from(e: rustls::Error) -> Self {
        match e {
            rustls::Error::InvalidCertificate(cert) => Self::Certificate(cert.to_string()),
            rustls::Error::AlertReceived(alert) => Self::AlertReceived(alert),
            rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
                Self::Malformed(e.to_string())
            }
            other => Self::Rustls(other),
        }
    }
}
