//! [`Cause`]: the last reason a call was retried, carried by a timeout so that "timed
//! out" says why.

use crate::conn::{ConnError, RequestError};
use crate::protocol::KafkaCode;

/// Why a call was still retrying: the last failure the client saw for it (or, for a
/// call waiting on metadata or a coordinator, the last connection failure since it
/// started). Carried by `AdminError::Timeout`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cause {
    /// A connection failed: refused, reset, TLS, SASL, a protocol violation...
    Connection(ConnError),
    /// A request failed without its connection failing (no route yet, ...).
    Request(RequestError),
    /// The broker answered with a retriable error code.
    Kafka {
        /// The code.
        code: KafkaCode,
        /// The broker's message, if it sent one.
        message: Option<String>,
    },
}

impl Cause {
    /// The cause for a retriable error code (with the broker's message, if any).
    pub fn code(code: i16, message: Option<&str>) -> Cause {
        Cause::Kafka {
            code: KafkaCode(code),
            message: message.filter(|m| !m.is_empty()).map(str::to_owned),
        }
    }

    /// Whether this only says no route was known yet (a weaker cause than any failure).
    pub(crate) fn is_no_route(&self) -> bool {
        matches!(self, Cause::Request(RequestError::NoRoute(_)))
    }
}

impl From<RequestError> for Cause {
    fn from(e: RequestError) -> Self {
        match e {
            RequestError::Connection(c) => Cause::Connection(c),
            other => Cause::Request(other),
        }
    }
}

impl From<&RequestError> for Cause {
    fn from(e: &RequestError) -> Self {
        Cause::from(e.clone())
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cause::Connection(e) => write!(f, "{e}"),
            Cause::Request(e) => write!(f, "{e}"),
            Cause::Kafka {
                code,
                message: Some(m),
            } => write!(f, "{} ({}): {m}", code.name(), code.0),
            Cause::Kafka { code, .. } => write!(f, "{code}"),
        }
    }
}
