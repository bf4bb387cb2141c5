//! SASL client mechanisms as byte-level state machines.
//!
//! Each mechanism turns server challenges into client responses and nothing else: the
//! connection layer carries the bytes in SaslAuthenticate requests (`auth_bytes`) after
//! a SaslHandshake v1, and owns timeouts and Kafka error codes.
//!
//! Driving order, the same for every mechanism:
//! 1. [`SaslClient::initial_response`] once: send its bytes in the first
//!    SaslAuthenticate request.
//! 2. For every SaslAuthenticate response without an error code, pass its `auth_bytes`
//!    to [`SaslClient::handle_challenge`]: [`Step::Respond`] means send another
//!    SaslAuthenticate request with those bytes, [`Step::Done`] means authenticated.
//! 3. A response with an error code ends the exchange there; for OAUTHBEARER,
//!    [`SaslClient::server_error`] then holds the server's JSON error, if it sent one.
//!
//! Any error is sticky: the client moves to a failed state and every later call fails.
//! The core has no randomness of its own, so the SCRAM client nonce is an input.

pub(crate) mod crypto;
mod oauth;
mod plain;
mod scram;

use std::fmt;
use std::str::FromStr;

use crate::secret::Secret;

pub use oauth::OAuthBearerClient;
pub use plain::PlainClient;
pub use scram::ScramClient;

/// A SASL mechanism Kafka supports, named as in SaslHandshake and `sasl.mechanism`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mechanism {
    /// `PLAIN` (RFC 4616): username and password in the clear, one step.
    Plain,
    /// `SCRAM-SHA-256` (RFC 5802, RFC 7677).
    ScramSha256,
    /// `SCRAM-SHA-512` (RFC 5802 with SHA-512).
    ScramSha512,
    /// `OAUTHBEARER` (RFC 7628) with a bearer token obtained by the caller.
    OAuthBearer,
}

impl Mechanism {
    /// Every mechanism, in a fixed order.
    pub const ALL: [Mechanism; 4] = [
        Mechanism::Plain,
        Mechanism::ScramSha256,
        Mechanism::ScramSha512,
        Mechanism::OAuthBearer,
    ];

    /// Kafka's name for the mechanism, as sent in SaslHandshake.
    pub const fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::ScramSha256 => "SCRAM-SHA-256",
            Mechanism::ScramSha512 => "SCRAM-SHA-512",
            Mechanism::OAuthBearer => "OAUTHBEARER",
        }
    }

    /// Whether this is one of the SCRAM mechanisms.
    pub const fn is_scram(self) -> bool {
        matches!(self, Mechanism::ScramSha256 | Mechanism::ScramSha512)
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mechanism {
    type Err = SaslError;

    /// Parses Kafka's exact (upper-case) mechanism name.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mechanism::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| SaslError::UnknownMechanism { name: s.to_owned() })
    }
}

/// What the client authenticates with. `Debug` never shows the password or token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaslCredentials {
    /// Username and password, for PLAIN and the SCRAM mechanisms.
    UsernamePassword {
        /// The user name (SCRAM escapes `=` and `,` itself).
        username: String,
        /// The password.
        password: Secret,
    },
    /// A bearer token and optional SASL extensions, for OAUTHBEARER.
    OAuthBearer {
        /// The compact token (for example a JWT).
        token: Secret,
        /// SASL extensions (`key=value`, KIP-342), sent in this order. Keys are ASCII
        /// letters and must not be `auth`.
        extensions: Vec<(String, String)>,
    },
}

/// What to do after a server challenge.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send these bytes in the next SaslAuthenticate request.
    Respond(Vec<u8>),
    /// The exchange finished successfully; the connection is authenticated.
    Done,
}

/// A SASL client exchange for one of the supported mechanisms.
#[derive(Debug)]
pub enum SaslClient {
    /// PLAIN.
    Plain(PlainClient),
    /// SCRAM-SHA-256 or SCRAM-SHA-512.
    Scram(ScramClient),
    /// OAUTHBEARER.
    OAuthBearer(OAuthBearerClient),
}

impl SaslClient {
    /// Starts an exchange for `mechanism` with `credentials`. `client_nonce` is used by
    /// SCRAM only (printable ASCII without `,`, at least 16 characters of caller
    /// randomness recommended) and ignored by the other mechanisms.
    pub fn new(
        mechanism: Mechanism,
        credentials: SaslCredentials,
        client_nonce: String,
    ) -> Result<Self, SaslError> {
        match (mechanism, credentials) {
            (Mechanism::Plain, SaslCredentials::UsernamePassword { username, password }) => {
                PlainClient::new(username, password).map(SaslClient::Plain)
            }
            (m, SaslCredentials::UsernamePassword { username, password }) if m.is_scram() => {
                ScramClient::new(m, username, password, client_nonce).map(SaslClient::Scram)
            }
            (Mechanism::OAuthBearer, SaslCredentials::OAuthBearer { token, extensions }) => {
                OAuthBearerClient::new(token, extensions).map(SaslClient::OAuthBearer)
            }
            (mechanism, _) => Err(SaslError::CredentialsMismatch { mechanism }),
        }
    }

    /// The mechanism this client runs.
    pub fn mechanism(&self) -> Mechanism {
        match self {
            SaslClient::Plain(_) => Mechanism::Plain,
            SaslClient::Scram(c) => c.mechanism(),
            SaslClient::OAuthBearer(_) => Mechanism::OAuthBearer,
        }
    }

    /// The client's first message; call exactly once, before any challenge.
    pub fn initial_response(&mut self) -> Result<Vec<u8>, SaslError> {
        match self {
            SaslClient::Plain(c) => c.initial_response(),
            SaslClient::Scram(c) => c.initial_response(),
            SaslClient::OAuthBearer(c) => c.initial_response(),
        }
    }

    /// Takes the server's `auth_bytes` and says what to send next, if anything.
    pub fn handle_challenge(&mut self, server_bytes: &[u8]) -> Result<Step, SaslError> {
        match self {
            SaslClient::Plain(c) => c.handle_challenge(server_bytes),
            SaslClient::Scram(c) => c.handle_challenge(server_bytes),
            SaslClient::OAuthBearer(c) => c.handle_challenge(server_bytes),
        }
    }

    /// Whether the exchange finished successfully.
    pub fn is_complete(&self) -> bool {
        match self {
            SaslClient::Plain(c) => c.is_complete(),
            SaslClient::Scram(c) => c.is_complete(),
            SaslClient::OAuthBearer(c) => c.is_complete(),
        }
    }

    /// The error text the server sent inside the exchange (OAUTHBEARER's JSON error),
    /// kept so it can be reported when the broker then fails the authentication.
    pub fn server_error(&self) -> Option<&str> {
        match self {
            SaslClient::OAuthBearer(c) => c.server_error(),
            SaslClient::Plain(_) | SaslClient::Scram(_) => None,
        }
    }
}

/// Why a SASL exchange failed or could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SaslError {
    /// Local misuse: the mechanism name is not one Kafka supports.
    #[error("unknown SASL mechanism {name:?}")]
    UnknownMechanism {
        /// The name given.
        name: String,
    },
    /// Local misuse: the credentials do not fit the mechanism (a token for SCRAM, ...).
    #[error("credentials do not fit SASL mechanism {mechanism}")]
    CredentialsMismatch {
        /// The mechanism asked for.
        mechanism: Mechanism,
    },
    /// Local misuse: a username, password, token or extension the mechanism cannot
    /// carry (a NUL byte in PLAIN, a reserved extension key, ...).
    #[error("invalid SASL credentials: {reason}")]
    InvalidCredentials {
        /// What is wrong.
        reason: &'static str,
    },
    /// Local misuse: the SCRAM client nonce is empty or has characters outside
    /// printable ASCII or a `,`.
    #[error("invalid SCRAM client nonce")]
    InvalidNonce,
    /// Local misuse: a method was called in a state that does not accept it (a second
    /// initial response, a challenge before the initial response or after the end).
    #[error("SASL {call} called out of order")]
    OutOfOrder {
        /// The method called.
        call: &'static str,
    },
    /// The exchange already failed; errors are sticky.
    #[error("SASL exchange already failed")]
    Failed,
    /// Remote misbehaviour: the server's message is not valid UTF-8.
    #[error("SASL server message is not valid UTF-8")]
    InvalidUtf8,
    /// Remote misbehaviour: the server's message is malformed.
    #[error("bad SASL server message: {reason}")]
    BadServerMessage {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Remote misbehaviour: the SCRAM server nonce does not extend the client nonce.
    #[error("SCRAM server nonce does not start with the client nonce")]
    NonceMismatch,
    /// Remote misbehaviour: the SCRAM iteration count is below Kafka's minimum or above
    /// the configured maximum.
    #[error("SCRAM iteration count {iterations} outside {min}..={max}")]
    IterationCountOutOfRange {
        /// The count the server asked for (saturated at `u64::MAX`).
        iterations: u64,
        /// The smallest accepted count.
        min: u32,
        /// The largest accepted count.
        max: u32,
    },
    /// Remote misbehaviour: the server demands a SCRAM extension (`m=`) we do not know.
    #[error("SCRAM server demands an unsupported mandatory extension")]
    UnsupportedMandatoryExtension,
    /// Remote misbehaviour: the SCRAM server signature is wrong, so the server does not
    /// know the password (possible impersonation).
    #[error("SCRAM server signature mismatch")]
    ServerSignatureMismatch,
    /// The server rejected the exchange with its own error text (SCRAM `e=`, the
    /// OAUTHBEARER JSON error). Shown escaped: the text is untrusted.
    #[error("SASL server error: {message:?}")]
    ServerError {
        /// The server's text.
        message: String,
    },
    /// The HMAC implementation rejected a key; not expected with HMAC-SHA-2.
    #[error("SCRAM HMAC key rejected")]
    Crypto,
}

/// Decodes a server message as UTF-8.
fn utf8(bytes: &[u8]) -> Result<&str, SaslError> {
    std::str::from_utf8(bytes).map_err(|_| SaslError::InvalidUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mechanism_names_round_trip() {
        for m in Mechanism::ALL {
            assert_eq!(m.name().parse::<Mechanism>(), Ok(m));
            assert_eq!(m.to_string(), m.name());
        }
        assert_eq!(
            "scram-sha-256".parse::<Mechanism>(),
            Err(SaslError::UnknownMechanism {
                name: "scram-sha-256".into()
            })
        );
        assert_eq!(Mechanism::ScramSha512.name(), "SCRAM-SHA-512");
        assert_eq!(Mechanism::OAuthBearer.name(), "OAUTHBEARER");
    }

    #[test]
    fn credentials_debug_is_redacted() {
        let up = SaslCredentials::UsernamePassword {
            username: "alice".into(),
            password: Secret::new("pencil-secret"),
        };
        let tok = SaslCredentials::OAuthBearer {
            token: Secret::new("eyJ.token-secret"),
            extensions: vec![],
        };
        for text in [format!("{up:?}"), format!("{tok:#?}")] {
            assert!(!text.contains("secret"), "{text}");
        }
        let client = SaslClient::new(Mechanism::Plain, up, String::new());
        assert!(!format!("{client:?}").contains("secret"));
    }

    #[test]
    fn credentials_must_fit_mechanism() {
        let tok = SaslCredentials::OAuthBearer {
            token: Secret::new("t"),
            extensions: vec![],
        };
        let err = SaslClient::new(Mechanism::ScramSha256, tok, "nonce".into());
        assert_eq!(
            err.err(),
            Some(SaslError::CredentialsMismatch {
                mechanism: Mechanism::ScramSha256
            })
        );
    }

    #[test]
    fn dispatch_runs_plain() {
        let creds = SaslCredentials::UsernamePassword {
            username: "u".into(),
            password: "p".into(),
        };
        let mut c = SaslClient::new(Mechanism::Plain, creds, String::new()).unwrap();
        assert_eq!(c.mechanism(), Mechanism::Plain);
        assert_eq!(c.initial_response().unwrap(), b"\0u\0p");
        assert!(!c.is_complete());
        assert_eq!(c.handle_challenge(b"").unwrap(), Step::Done);
        assert!(c.is_complete());
        assert_eq!(c.server_error(), None);
    }
}
