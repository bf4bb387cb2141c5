//! Security settings: `security.protocol`, SASL mechanism and credentials, and the
//! OAUTHBEARER token provider. TLS settings live in `ssl.rs`.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use super::parse;
use super::ssl::SslConfig;
use super::{ClientConfigBuilder, ConfigError, KeyInfo};
use crate::conn::sasl::Mechanism;
use crate::secret::Secret;

/// Security protocol, SASL and TLS settings. Read it from [`ClientConfig::security`].
///
/// As in the Java client, settings the protocol does not use (TLS settings with
/// `PLAINTEXT`, SASL settings with `SSL`) are accepted and ignored.
///
/// [`ClientConfig::security`]: super::ClientConfig::security
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SecurityConfig {
    /// `security.protocol`.
    pub protocol: SecurityProtocol,
    /// SASL settings, used when [`SecurityProtocol::uses_sasl`].
    pub sasl: SaslConfig,
    /// TLS settings, used when [`SecurityProtocol::uses_tls`].
    pub ssl: SslConfig,
}

impl SecurityConfig {
    /// SASL credentials for SASL protocols, then the TLS checks.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.protocol.uses_sasl() {
            self.sasl.validate()?;
        }
        self.ssl.validate()
    }
}

/// `security.protocol`: how bytes reach the broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SecurityProtocol {
    /// `PLAINTEXT` (default): no TLS, no authentication.
    #[default]
    Plaintext,
    /// `SSL`: TLS, optionally with a client certificate.
    Ssl,
    /// `SASL_PLAINTEXT`: SASL authentication over plain TCP.
    SaslPlaintext,
    /// `SASL_SSL`: SASL authentication inside TLS.
    SaslSsl,
}

impl SecurityProtocol {
    /// Kafka's name for the protocol.
    pub const fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// Whether the connection runs TLS.
    pub const fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    /// Whether the connection authenticates with SASL.
    pub const fn uses_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SecurityProtocol {
    type Err = String;

    /// Parses Kafka's name, case-insensitively (as the Java client does).
    fn from_str(s: &str) -> Result<Self, String> {
        [
            SecurityProtocol::Plaintext,
            SecurityProtocol::Ssl,
            SecurityProtocol::SaslPlaintext,
            SecurityProtocol::SaslSsl,
        ]
        .into_iter()
        .find(|p| p.name().eq_ignore_ascii_case(s.trim()))
        .ok_or_else(|| "expected PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL".into())
    }
}

/// SASL settings. `Debug` shows neither the password nor any token.
#[derive(Clone)]
#[non_exhaustive]
pub struct SaslConfig {
    /// `sasl.mechanism` (default `PLAIN`, as in the Java client).
    pub mechanism: Mechanism,
    /// `sasl.username`, for PLAIN and SCRAM.
    pub username: Option<String>,
    /// `sasl.password`, for PLAIN and SCRAM.
    pub password: Option<Secret>,
    /// Source of OAUTHBEARER tokens (typed builder only:
    /// [`ClientConfigBuilder::sasl_oauthbearer`]).
    pub token_provider: Option<Arc<dyn TokenProvider>>,
}

impl Default for SaslConfig {
    /// `PLAIN` with no credentials.
    fn default() -> Self {
        Self {
            mechanism: Mechanism::Plain,
            username: None,
            password: None,
            token_provider: None,
        }
    }
}

impl SaslConfig {
    /// The mechanism's credentials must be present (and well-formed, for typed values).
    fn validate(&self) -> Result<(), ConfigError> {
        if self.mechanism == Mechanism::OAuthBearer {
            if self.token_provider.is_none() {
                return Err(ConfigError::missing("sasl_oauthbearer (token provider)"));
            }
            return Ok(());
        }
        let username = self.username.as_deref().filter(|u| !u.is_empty());
        let username = username.ok_or_else(|| ConfigError::missing(USERNAME))?;
        parse::text(username)
            .map_err(|why| ConfigError::invalid(USERNAME, username, false, why))?;
        let password = self.password.as_ref().filter(|p| !p.is_empty());
        let password = password.ok_or_else(|| ConfigError::missing(PASSWORD))?;
        parse::password(password.expose())
            .map_err(|why| ConfigError::invalid(PASSWORD, "", true, why))?;
        Ok(())
    }
}

impl fmt::Debug for SaslConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SaslConfig")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .field("password", &self.password)
            .field(
                "token_provider",
                &self.token_provider.as_ref().map(|_| "TokenProvider"),
            )
            .finish()
    }
}

/// Supplies OAUTHBEARER tokens (for example from an OIDC token endpoint).
///
/// The client calls it from whatever drives the core whenever a connection
/// authenticates or re-authenticates, so it should return a cached token quickly and
/// refresh in the background; the core itself never waits on it.
pub trait TokenProvider: Send + Sync {
    /// The current token, or a reason why none is available (reported as an
    /// authentication failure).
    fn token(&self) -> Result<OAuthToken, String>;
}

/// An OAUTHBEARER token. `Debug` does not show the token value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthToken {
    /// The compact token (for example a JWT).
    pub value: Secret,
    /// When the token expires, in milliseconds since the Unix epoch (the Java client's
    /// `OAuthBearerToken.lifetimeMs`); re-authentication is scheduled before it.
    pub lifetime_ms: i64,
    /// The principal the token names.
    pub principal: String,
    /// SASL extensions (KIP-342) sent with the token, in this order.
    pub extensions: Vec<(String, String)>,
}

const USERNAME: &str = "sasl.username";
const PASSWORD: &str = "sasl.password";

/// Typed setters for the security protocol and SASL.
impl ClientConfigBuilder {
    /// `security.protocol` (default [`SecurityProtocol::Plaintext`]).
    pub fn security_protocol(&mut self, protocol: SecurityProtocol) -> &mut Self {
        self.security.protocol = protocol;
        self
    }

    /// `sasl.mechanism` alone; prefer the `sasl_*` setters, which also set credentials.
    pub fn sasl_mechanism(&mut self, mechanism: Mechanism) -> &mut Self {
        self.security.sasl.mechanism = mechanism;
        self
    }

    /// SASL/PLAIN with this username and password.
    pub fn sasl_plain(
        &mut self,
        username: impl Into<String>,
        password: impl Into<String>,
    ) -> &mut Self {
        self.sasl_user_pass(Mechanism::Plain, username.into(), password.into())
    }

    /// SASL/SCRAM (`mechanism` must be a SCRAM one, otherwise `build` reports a
    /// [`ConfigError::Conflict`]) with this username and password.
    pub fn sasl_scram(
        &mut self,
        mechanism: Mechanism,
        username: impl Into<String>,
        password: impl Into<String>,
    ) -> &mut Self {
        self.sasl_user_pass(mechanism, username.into(), password.into());
        if !mechanism.is_scram() {
            self.misuse = Some(ConfigError::conflict(format!(
                "sasl_scram() needs SCRAM-SHA-256 or SCRAM-SHA-512, got {mechanism}"
            )));
        }
        self
    }

    /// SASL/OAUTHBEARER with tokens from `provider`.
    pub fn sasl_oauthbearer(&mut self, provider: Arc<dyn TokenProvider>) -> &mut Self {
        self.misuse = None;
        self.security.sasl.mechanism = Mechanism::OAuthBearer;
        self.security.sasl.token_provider = Some(provider);
        self
    }

    fn sasl_user_pass(
        &mut self,
        mechanism: Mechanism,
        username: String,
        password: String,
    ) -> &mut Self {
        self.misuse = None;
        let sasl = &mut self.security.sasl;
        sasl.mechanism = mechanism;
        sasl.username = Some(username);
        sasl.password = Some(Secret::new(password));
        self
    }
}

/// String keys of the security section (TLS keys are in `ssl.rs`).
pub(super) const KEYS: &[KeyInfo] = &[
    KeyInfo {
        name: "security.protocol",
        default: Some("PLAINTEXT"),
        doc: "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (case-insensitive).",
        secret: false,
        apply: |b, v| {
            b.security.protocol = v.parse()?;
            Ok(())
        },
    },
    KeyInfo {
        name: "sasl.mechanism",
        default: Some("PLAIN"),
        doc: "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER.",
        secret: false,
        apply: |b, v| {
            b.security.sasl.mechanism = v.trim().parse().map_err(|_| {
                "expected PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER".to_owned()
            })?;
            Ok(())
        },
    },
    KeyInfo {
        name: USERNAME,
        default: None,
        doc: "SASL username for PLAIN and SCRAM.",
        secret: false,
        apply: |b, v| {
            b.security.sasl.username = Some(parse::text(v)?);
            Ok(())
        },
    },
    KeyInfo {
        name: PASSWORD,
        default: None,
        doc: "SASL password for PLAIN and SCRAM (secret).",
        secret: true,
        apply: |b, v| {
            b.security.sasl.password = Some(Secret::new(parse::password(v)?));
            Ok(())
        },
    },
];
