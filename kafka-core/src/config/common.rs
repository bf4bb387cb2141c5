//! Common client and connection settings: bootstrap, identity, timeouts, backoff,
//! in-flight and frame limits.

use std::time::Duration;

use super::address::{self, BrokerAddress, ClientDnsLookup};
use super::parse;
use super::{ClientConfigBuilder, ConfigError, KeyInfo};

pub(super) const BOOTSTRAP_SERVERS: &str = "bootstrap.servers";

/// Smallest accepted `receive.message.max.bytes` (librdkafka's lower bound).
const MIN_RECEIVE_MESSAGE_MAX_BYTES: u32 = 1000;

/// Settings shared by every client role. Read it from [`ClientConfig::common`].
///
/// [`ClientConfig::common`]: super::ClientConfig::common
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommonConfig {
    /// `bootstrap.servers`: brokers to fetch the first metadata from. Never empty.
    pub bootstrap_servers: Vec<BrokerAddress>,
    /// `client.id`: sent in every request header and used in broker logs and quotas.
    pub client_id: String,
    /// `client.rack`: the client's rack, for fetching from the closest replica.
    pub client_rack: Option<String>,
    /// Client software name, sent in ApiVersions v3+ (typed builder only).
    pub client_software_name: String,
    /// Client software version, sent in ApiVersions v3+ (typed builder only).
    pub client_software_version: String,
    /// `request.timeout.ms`: how long to wait for a response before failing the request.
    pub request_timeout: Duration,
    /// `default.api.timeout.ms`: the default time limit of a whole operation (an admin
    /// call with its retries), when the call does not set its own.
    pub default_api_timeout: Duration,
    /// `metadata.max.age.ms`: refresh metadata at least this often.
    pub metadata_max_age: Duration,
    /// `metadata.max.idle.ms`: a topic nothing routed to for this long leaves metadata.
    pub metadata_max_idle: Duration,
    /// `reconnect.backoff.ms`: first wait before reconnecting to a broker.
    pub reconnect_backoff: Duration,
    /// `reconnect.backoff.max.ms`: cap of the exponential reconnect backoff.
    pub reconnect_backoff_max: Duration,
    /// `retry.backoff.ms`: first wait before retrying a failed request.
    pub retry_backoff: Duration,
    /// `retry.backoff.max.ms`: cap of the exponential retry backoff.
    pub retry_backoff_max: Duration,
    /// `retries`: how many times a retriable failure is retried.
    pub retries: u32,
    /// `connections.max.idle.ms`: close connections idle for longer than this.
    pub connections_max_idle: Duration,
    /// `socket.connection.setup.timeout.ms`: the limit on establishing a connection (TCP
    /// connect per resolved address, then TLS, negotiation and SASL) at the first attempt
    /// to a node and after a connection to it got ready.
    pub socket_connection_setup_timeout: Duration,
    /// `socket.connection.setup.timeout.max.ms`: cap of the limit, which doubles per
    /// consecutive attempt to a node that failed before getting ready (±20% jitter, as
    /// Java's `ClusterConnectionStates`; the core hands each attempt's value to the
    /// adapter in `IoCommand::Connect`).
    pub socket_connection_setup_timeout_max: Duration,
    /// `max.in.flight.requests.per.connection`: unanswered requests per connection.
    pub max_in_flight_requests_per_connection: u32,
    /// `receive.message.max.bytes`: our frame cap. A response frame whose length prefix
    /// exceeds it closes the connection before anything is allocated.
    pub receive_message_max_bytes: u32,
    /// `client.dns.lookup`: how the adapter resolves broker host names.
    pub client_dns_lookup: ClientDnsLookup,
}

impl Default for CommonConfig {
    /// The Java client's defaults (librdkafka's for `receive.message.max.bytes`).
    fn default() -> Self {
        Self {
            bootstrap_servers: Vec::new(),
            client_id: "kafka-rs".into(),
            client_rack: None,
            client_software_name: "kafka-rs".into(),
            client_software_version: env!("CARGO_PKG_VERSION").into(),
            request_timeout: Duration::from_millis(30_000),
            default_api_timeout: Duration::from_millis(60_000),
            metadata_max_age: Duration::from_millis(300_000),
            metadata_max_idle: Duration::from_millis(300_000),
            reconnect_backoff: Duration::from_millis(50),
            reconnect_backoff_max: Duration::from_millis(1_000),
            retry_backoff: Duration::from_millis(100),
            retry_backoff_max: Duration::from_millis(1_000),
            retries: i32::MAX.unsigned_abs(),
            connections_max_idle: Duration::from_millis(540_000),
            socket_connection_setup_timeout: Duration::from_millis(10_000),
            socket_connection_setup_timeout_max: Duration::from_millis(30_000),
            max_in_flight_requests_per_connection: 5,
            receive_message_max_bytes: 100 * 1024 * 1024,
            client_dns_lookup: ClientDnsLookup::UseAllDnsIps,
        }
    }
}

impl CommonConfig {
    /// Range checks for values the typed setters let through.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, value: &dyn ToString, why: String| {
            ConfigError::invalid(key, &value.to_string(), false, why)
        };
        let mut texts = vec![("client.id", &self.client_id)];
        if let Some(rack) = &self.client_rack {
            texts.push(("client.rack", rack));
        }
        for (key, value) in texts {
            parse::text(value).map_err(|why| bad(key, value, why))?;
        }
        // Kafka's pattern for ApiVersions v3 software name/version; brokers reject others.
        for (key, value) in [
            ("client_software (name)", &self.client_software_name),
            ("client_software (version)", &self.client_software_version),
        ] {
            if !software_token_ok(value) {
                let why = "expected letters, digits, `-` and `.`, starting and ending with a \
                           letter or digit";
                return Err(bad(key, value, why.into()));
            }
        }
        let ms = self.request_timeout.as_millis();
        if ms > i32::MAX.unsigned_abs().into() {
            return Err(bad("request.timeout.ms", &ms, "must fit a Java int".into()));
        }
        if self.max_in_flight_requests_per_connection == 0 {
            let why = "must be at least 1".into();
            return Err(bad("max.in.flight.requests.per.connection", &0, why));
        }
        let max = self.receive_message_max_bytes;
        if max < MIN_RECEIVE_MESSAGE_MAX_BYTES || max > i32::MAX.unsigned_abs() {
            let why =
                format!("out of range (expected {MIN_RECEIVE_MESSAGE_MAX_BYTES}..=2147483647)");
            return Err(bad("receive.message.max.bytes", &max, why));
        }
        Ok(())
    }
}

fn software_token_ok(s: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    edge(s.chars().next())
        && edge(s.chars().last())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
}

/// Typed setters for the common settings.
impl ClientConfigBuilder {
    /// `bootstrap.servers`: comma-separated `host:port` list (IPv6 as `[::1]:9092`).
    /// Parsed by [`build`](Self::build).
    pub fn bootstrap_servers(&mut self, servers: impl Into<String>) -> &mut Self {
        self.bootstrap = Some(servers.into());
        self
    }

    /// `client.id` (default `kafka-rs`).
    pub fn client_id(&mut self, id: impl Into<String>) -> &mut Self {
        self.common.client_id = id.into();
        self
    }

    /// `client.rack` (default unset).
    pub fn client_rack(&mut self, rack: impl Into<String>) -> &mut Self {
        self.common.client_rack = Some(rack.into());
        self
    }

    /// Client software name and version for ApiVersions (defaults `kafka-rs` and this
    /// crate's version). Letters, digits, `-` and `.` only, as brokers require.
    pub fn client_software(
        &mut self,
        name: impl Into<String>,
        version: impl Into<String>,
    ) -> &mut Self {
        self.common.client_software_name = name.into();
        self.common.client_software_version = version.into();
        self
    }

    /// `request.timeout.ms` (default 30 s; at most `i32::MAX` ms).
    pub fn request_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.common.request_timeout = timeout;
        self
    }

    /// `default.api.timeout.ms` (default 60 s): time limit of an operation with its retries.
    pub fn default_api_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.common.default_api_timeout = timeout;
        self
    }

    /// `metadata.max.age.ms` (default 5 min).
    pub fn metadata_max_age(&mut self, age: Duration) -> &mut Self {
        self.common.metadata_max_age = age;
        self
    }

    /// `metadata.max.idle.ms` (default 5 min).
    pub fn metadata_max_idle(&mut self, idle: Duration) -> &mut Self {
        self.common.metadata_max_idle = idle;
        self
    }

    /// `reconnect.backoff.ms` and `reconnect.backoff.max.ms` (defaults 50 ms and 1 s).
    pub fn reconnect_backoff(&mut self, initial: Duration, max: Duration) -> &mut Self {
        self.common.reconnect_backoff = initial;
        self.common.reconnect_backoff_max = max;
        self
    }

    /// `retry.backoff.ms` and `retry.backoff.max.ms` (defaults 100 ms and 1 s).
    pub fn retry_backoff(&mut self, initial: Duration, max: Duration) -> &mut Self {
        self.common.retry_backoff = initial;
        self.common.retry_backoff_max = max;
        self
    }

    /// `retries` (default `i32::MAX`, i.e. bounded by the operation's timeout).
    pub fn retries(&mut self, retries: u32) -> &mut Self {
        self.common.retries = retries;
        self
    }

    /// `connections.max.idle.ms` (default 9 min).
    pub fn connections_max_idle(&mut self, idle: Duration) -> &mut Self {
        self.common.connections_max_idle = idle;
        self
    }

    /// `socket.connection.setup.timeout.ms` and `socket.connection.setup.timeout.max.ms`
    /// (defaults 10 s and 30 s): the first attempt's limit, doubled per consecutive failed
    /// attempt to a node up to `max`, ±20% jitter.
    pub fn socket_connection_setup_timeout(
        &mut self,
        initial: Duration,
        max: Duration,
    ) -> &mut Self {
        self.common.socket_connection_setup_timeout = initial;
        self.common.socket_connection_setup_timeout_max = max;
        self
    }

    /// `max.in.flight.requests.per.connection` (default 5; at least 1).
    pub fn max_in_flight_requests_per_connection(&mut self, n: u32) -> &mut Self {
        self.common.max_in_flight_requests_per_connection = n;
        self
    }

    /// `receive.message.max.bytes`: the frame cap (default 100 MiB; 1000..=`i32::MAX`).
    pub fn receive_message_max_bytes(&mut self, bytes: u32) -> &mut Self {
        self.common.receive_message_max_bytes = bytes;
        self
    }

    /// `client.dns.lookup` (default [`ClientDnsLookup::UseAllDnsIps`]).
    pub fn client_dns_lookup(&mut self, lookup: ClientDnsLookup) -> &mut Self {
        self.common.client_dns_lookup = lookup;
        self
    }
}

/// Declares a `*.ms` key stored as a `Duration` field of [`super::CommonConfig`].
macro_rules! ms_key {
    ($name:literal, $default:literal, $parser:ident, $field:ident, $doc:literal) => {
        KeyInfo {
            name: $name,
            default: Some($default),
            doc: $doc,
            secret: false,
            apply: |b, v| {
                b.common.$field = parse::$parser(v)?;
                Ok(())
            },
        }
    };
}

/// String keys of the common section.
pub(super) const KEYS: &[KeyInfo] = &[
    KeyInfo {
        name: BOOTSTRAP_SERVERS,
        default: None,
        doc: "Required. Comma-separated host:port list of brokers to bootstrap from.",
        secret: false,
        apply: |b, v| {
            address::broker_list(v)?;
            b.bootstrap = Some(v.to_owned());
            Ok(())
        },
    },
    KeyInfo {
        name: "client.id",
        default: Some("kafka-rs"),
        doc: "Client id sent in every request header.",
        secret: false,
        apply: |b, v| {
            b.common.client_id = parse::text(v)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "client.rack",
        default: None,
        doc: "Rack of the client, for fetching from the closest replica; empty = unset.",
        secret: false,
        apply: |b, v| {
            b.common.client_rack = parse::opt_text(v)?;
            Ok(())
        },
    },
    ms_key!(
        "request.timeout.ms",
        "30000",
        millis_int,
        request_timeout,
        "Response timeout per request."
    ),
    ms_key!(
        "default.api.timeout.ms",
        "60000",
        millis_int,
        default_api_timeout,
        "Default time limit of an operation with its retries."
    ),
    ms_key!(
        "metadata.max.age.ms",
        "300000",
        millis_long,
        metadata_max_age,
        "Maximum metadata age before a refresh."
    ),
    ms_key!(
        "metadata.max.idle.ms",
        "300000",
        millis_long,
        metadata_max_idle,
        "Topics unused this long are dropped from metadata."
    ),
    ms_key!(
        "reconnect.backoff.ms",
        "50",
        millis_long,
        reconnect_backoff,
        "First reconnect backoff."
    ),
    ms_key!(
        "reconnect.backoff.max.ms",
        "1000",
        millis_long,
        reconnect_backoff_max,
        "Maximum reconnect backoff."
    ),
    ms_key!(
        "retry.backoff.ms",
        "100",
        millis_long,
        retry_backoff,
        "First retry backoff."
    ),
    ms_key!(
        "retry.backoff.max.ms",
        "1000",
        millis_long,
        retry_backoff_max,
        "Maximum retry backoff."
    ),
    KeyInfo {
        name: "retries",
        default: Some("2147483647"),
        doc: "Retries of retriable failures (bounded by the operation's timeout).",
        secret: false,
        apply: |b, v| {
            b.common.retries = parse::uint(v, 0, i32::MAX.unsigned_abs())?;
            Ok(())
        },
    },
    ms_key!(
        "connections.max.idle.ms",
        "540000",
        millis_long,
        connections_max_idle,
        "Close connections idle this long."
    ),
    ms_key!(
        "socket.connection.setup.timeout.ms",
        "10000",
        millis_long,
        socket_connection_setup_timeout,
        "Connection setup timeout of a first attempt (doubles per failed attempt)."
    ),
    ms_key!(
        "socket.connection.setup.timeout.max.ms",
        "30000",
        millis_long,
        socket_connection_setup_timeout_max,
        "Cap of the connection setup timeout, which doubles per consecutive failed attempt."
    ),
    KeyInfo {
        name: "max.in.flight.requests.per.connection",
        default: Some("5"),
        doc: "Maximum unanswered requests per connection.",
        secret: false,
        apply: |b, v| {
            b.common.max_in_flight_requests_per_connection =
                parse::uint(v, 1, i32::MAX.unsigned_abs())?;
            Ok(())
        },
    },
    KeyInfo {
        name: "receive.message.max.bytes",
        default: Some("104857600"),
        doc: "Frame cap: larger response frames close the connection (librdkafka's name).",
        secret: false,
        apply: |b, v| {
            b.common.receive_message_max_bytes =
                parse::uint(v, MIN_RECEIVE_MESSAGE_MAX_BYTES, i32::MAX.unsigned_abs())?;
            Ok(())
        },
    },
    KeyInfo {
        name: "client.dns.lookup",
        default: Some("use_all_dns_ips"),
        doc: "use_all_dns_ips or resolve_canonical_bootstrap_servers_only (for the adapter).",
        secret: false,
        apply: |b, v| {
            b.common.client_dns_lookup = v.parse()?;
            Ok(())
        },
    },
];
