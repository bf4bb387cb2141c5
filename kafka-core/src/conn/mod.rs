//! Broker connections: framing, correlation, version negotiation, SASL, TLS, timeouts.
//!
//! [`Connection`] is the state machine for one broker connection; the client's router
//! owns one per broker and lane.

pub mod auth;
pub mod connection;
pub mod error;
mod frame;
pub mod request;
pub mod sasl;
#[cfg(feature = "tls")]
pub mod tls;
pub mod versions;

pub use auth::{Auth, CredentialSource};
pub use connection::{Completion, ConnState, Connection, Shape, Token};
pub use error::{ConnError, RequestError, SocketError, TlsFailure};
pub use request::{ConnConfig, OutboundRequest};
pub use versions::ApiVersionTable;
#[cfg(test)]
mod tests;
