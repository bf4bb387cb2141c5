//! Type-erased requests: the connection queues requests of any API and picks their
//! version once negotiation is done; the owner decodes the typed response.

use std::time::Duration;

use crate::protocol::{write_request, ApiKey, EncodeError, Request};

/// A request of some API, ready to be encoded at whatever version is negotiated.
pub trait OutboundRequest: Send {
    /// The API key.
    fn api_key(&self) -> ApiKey;
    /// Appends the framed request (size, header, body) to `buf`.
    fn write_frame(
        &self,
        buf: &mut Vec<u8>,
        version: i16,
        correlation_id: i32,
        client_id: Option<&str>,
    ) -> Result<(), EncodeError>;
}

impl<R: Request + Send> OutboundRequest for R {
    fn api_key(&self) -> ApiKey {
        R::API_KEY
    }

    fn write_frame(
        &self,
        buf: &mut Vec<u8>,
        version: i16,
        correlation_id: i32,
        client_id: Option<&str>,
    ) -> Result<(), EncodeError> {
        write_request(buf, version, correlation_id, client_id, self)
    }
}

/// Settings of one broker connection (derived from the client configuration).
#[derive(Debug, Clone)]
pub struct ConnConfig {
    /// `client.id`, sent in every request header.
    pub client_id: Option<String>,
    /// Sent in ApiVersions (KIP-511).
    pub software_name: String,
    /// Sent in ApiVersions (KIP-511).
    pub software_version: String,
    /// `request.timeout.ms`: a request without a response by then fails the connection.
    pub request_timeout: Duration,
    /// `socket.connection.setup.timeout.ms`, applied to TLS, negotiation and SASL too.
    pub setup_timeout: Duration,
    /// `receive.message.max.bytes`: the largest frame accepted.
    pub max_frame: usize,
    /// `max.in.flight.requests.per.connection`.
    pub max_in_flight: usize,
    /// `connections.max.idle.ms`.
    pub idle_timeout: Duration,
}

impl Default for ConnConfig {
    fn default() -> Self {
        ConnConfig {
            client_id: Some("kafka-rs".into()),
            software_name: "kafka-rs".into(),
            software_version: env!("CARGO_PKG_VERSION").into(),
            request_timeout: Duration::from_millis(30_000),
            setup_timeout: Duration::from_millis(10_000),
            max_frame: 100 << 20,
            max_in_flight: 5,
            idle_timeout: Duration::from_millis(540_000),
        }
    }
}
