//! Client configuration: a typed builder, and Java-named string keys with clear errors.
//!
//! Two ways in, one validation:
//!
//! ```
//! use std::time::Duration;
//! use kafka_core::config::{ClientConfig, SecurityProtocol};
//!
//! // Typed.
//! let typed = ClientConfig::builder()
//!     .bootstrap_servers("broker1:9092,[::1]:9093")
//!     .request_timeout(Duration::from_secs(10))
//!     .security_protocol(SecurityProtocol::SaslSsl)
//!     .sasl_plain("alice", "s3cret")
//!     .build()?;
//!
//! // From string pairs, with the Java client's key names.
//! let pairs = ClientConfig::from_pairs([
//!     ("bootstrap.servers", "broker1:9092,[::1]:9093"),
//!     ("request.timeout.ms", "10000"),
//!     ("security.protocol", "SASL_SSL"),
//!     ("sasl.mechanism", "PLAIN"),
//!     ("sasl.username", "alice"),
//!     ("sasl.password", "s3cret"),
//! ])?;
//! assert_eq!(typed.common(), pairs.common());
//! assert!(!format!("{pairs:?}").contains("s3cret"));
//! # Ok::<(), kafka_core::config::ConfigError>(())
//! ```
//!
//! A string value is parsed when it is [`set`](ClientConfigBuilder::set), so a bad value
//! fails at once; typed values and cross-key rules are checked by
//! [`build`](ClientConfigBuilder::build). Either way the error is a [`ConfigError`], and
//! the values of secret keys are never shown in it. `Debug` of the builder and of the
//! config never shows passwords, private keys or tokens.
//!
//! The core reads no files and resolves no names: paths (`ssl.*.location`) and DNS
//! policy (`client.dns.lookup`) are stored here for the adapter to act on.
//!
//! Layout: one file per section (`common`, `security`, `ssl`), each owning its settings
//! struct, its typed setters on [`ClientConfigBuilder`], its string-key table and its
//! `build` checks. Transaction settings are a future section: a
//! section adds a field to the builder and to [`ClientConfig`], and its key table to
//! `SECTIONS`. Until then their keys are reported as unknown.

mod address;
mod common;
mod consumer;
mod error;
mod group;
mod parse;
mod producer;
mod security;
mod ssl;

#[cfg(test)]
mod tests;

pub use address::{BrokerAddress, ClientDnsLookup};
pub use common::CommonConfig;
pub use consumer::{ConsumerConfig, IsolationLevel, OffsetReset};
pub use error::ConfigError;
pub use group::{CustomAssignors, GroupConfig, GroupProtocol, ShareAcknowledgementMode};
pub use producer::{Acks, ProducerConfig};
pub use security::{OAuthToken, SaslConfig, SecurityConfig, SecurityProtocol, TokenProvider};
pub use ssl::{EndpointIdentification, SslConfig};

/// A validated client configuration: the settings every client role shares.
///
/// Built by [`ClientConfig::builder`] or [`ClientConfig::from_pairs`]; read through the
/// section getters. `Debug` redacts secrets.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    common: CommonConfig,
    security: SecurityConfig,
    producer: ProducerConfig,
    consumer: ConsumerConfig,
    group: GroupConfig,
}

impl ClientConfig {
    /// A builder with every setting at its default and no bootstrap servers.
    pub fn builder() -> ClientConfigBuilder {
        ClientConfigBuilder::default()
    }

    /// Builds a config from `(key, value)` string pairs with the Java client's key names
    /// (a later pair for the same key wins, as in a properties file).
    pub fn from_pairs<I, K, V>(pairs: I) -> Result<ClientConfig, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut builder = ClientConfig::builder();
        for (key, value) in pairs {
            builder.set(key, value)?;
        }
        builder.build()
    }

    /// Replaces the `ssl.*.location` files with their contents (`ssl.*.pem`), read with
    /// `read` — the adapter's file access, since the core opens no files. A file that
    /// cannot be read or is not UTF-8 is a [`ConfigError`] naming the key; so is a CA
    /// file holding a private key. An encrypted key file is decrypted with
    /// `ssl.key.password` (see [`SslConfig::key_password`]).
    pub fn with_ssl_files_loaded(
        mut self,
        mut read: impl FnMut(&std::path::Path) -> std::io::Result<Vec<u8>>,
    ) -> Result<ClientConfig, ConfigError> {
        let ssl = &mut self.security.ssl;
        let mut load = |key: &str, path: Option<std::path::PathBuf>| -> Result<_, ConfigError> {
            let Some(path) = path else {
                return Ok(None);
            };
            let shown = path.display().to_string();
            let bytes = read(&path).map_err(|e| {
                ConfigError::invalid(key, &shown, false, format!("cannot read: {e}"))
            })?;
            String::from_utf8(bytes)
                .map(Some)
                .map_err(|_| ConfigError::invalid(key, &shown, false, "not UTF-8 PEM text".into()))
        };
        let ca_path = ssl.ca_location.clone();
        if let Some(pem) = load("ssl.ca.location", ssl.ca_location.take())? {
            ssl::ca_without_key(&pem).map_err(|why| {
                let shown = ca_path.as_deref().map(|p| p.display().to_string());
                ConfigError::invalid("ssl.ca.location", &shown.unwrap_or_default(), false, why)
            })?;
            ssl.ca_pem = Some(pem);
        }
        if let Some(pem) = load("ssl.certificate.location", ssl.certificate_location.take())? {
            ssl.certificate_pem = Some(pem);
        }
        if let Some(pem) = load("ssl.key.location", ssl.key_location.take())? {
            let key = crate::secret::Secret::new(pem);
            let plain = ssl::decrypt_key(&key, ssl.key_password.as_ref(), "ssl.key.location")?;
            ssl.key_pem = Some(plain.unwrap_or(key));
        }
        Ok(self)
    }

    /// Connection and client-wide settings.
    pub fn common(&self) -> &CommonConfig {
        &self.common
    }

    /// Security protocol, SASL and TLS settings.
    pub fn security(&self) -> &SecurityConfig {
        &self.security
    }

    /// Producer settings (batching, acks, idempotence, buffer budget, compression).
    pub fn producer(&self) -> &ProducerConfig {
        &self.producer
    }

    /// Consumer settings (fetch sizes, fetch buffer budget, offset reset, isolation).
    pub fn consumer(&self) -> &ConsumerConfig {
        &self.consumer
    }

    /// Consumer group settings (group id, protocol, timeouts, assignors, auto-commit).
    pub fn group(&self) -> &GroupConfig {
        &self.group
    }

    /// The bootstrap brokers (`bootstrap.servers`), never empty.
    pub fn bootstrap_servers(&self) -> &[BrokerAddress] {
        &self.common.bootstrap_servers
    }

    /// Every string key this version understands, in table order.
    pub fn keys() -> impl Iterator<Item = &'static KeyInfo> {
        SECTIONS.iter().flat_map(|section| section.iter())
    }
}

/// Builds a [`ClientConfig`]: typed setters (grouped by section) and [`set`](Self::set)
/// for string keys. `Debug` redacts secrets.
#[derive(Debug, Clone, Default)]
pub struct ClientConfigBuilder {
    /// `bootstrap.servers` as given; parsed by `build` (typed setter) or also at `set`.
    bootstrap: Option<String>,
    /// Common settings; `bootstrap_servers` is filled in by `build`.
    common: CommonConfig,
    security: SecurityConfig,
    producer: ProducerConfig,
    consumer: ConsumerConfig,
    group: GroupConfig,
    /// Misuse of a typed setter, reported by `build` (setters do not fail).
    misuse: Option<ConfigError>,
}

impl ClientConfigBuilder {
    /// Sets one setting from its Java key name and string value.
    ///
    /// Unknown keys fail with [`ConfigError::UnknownKey`] (with a suggestion for likely
    /// typos); unparsable values with [`ConfigError::InvalidValue`] (redacted for secret
    /// keys). The builder is unchanged on error.
    pub fn set(
        &mut self,
        key: impl AsRef<str>,
        value: impl AsRef<str>,
    ) -> Result<&mut Self, ConfigError> {
        let (key, value) = (key.as_ref(), value.as_ref());
        let info = ClientConfig::keys()
            .find(|k| k.name == key)
            .ok_or_else(|| ConfigError::UnknownKey {
                key: key.to_owned(),
                suggestion: parse::suggest(key, ClientConfig::keys().map(|k| k.name))
                    .map(str::to_owned),
            })?;
        (info.apply)(self, value)
            .map_err(|reason| ConfigError::invalid(key, value, info.secret, reason))?;
        Ok(self)
    }

    /// Validates every setting and the rules across them, and returns the config.
    ///
    /// Checks, in order: typed-setter misuse, `bootstrap.servers` present and
    /// well-formed, ranges of typed values, then security (SASL credentials for SASL
    /// protocols, TLS source conflicts).
    pub fn build(&self) -> Result<ClientConfig, ConfigError> {
        if let Some(err) = &self.misuse {
            return Err(err.clone());
        }
        let raw = self
            .bootstrap
            .as_deref()
            .ok_or_else(|| ConfigError::missing(common::BOOTSTRAP_SERVERS))?;
        let servers = address::broker_list(raw)
            .map_err(|why| ConfigError::invalid(common::BOOTSTRAP_SERVERS, raw, false, why))?;
        let mut common = self.common.clone();
        common.bootstrap_servers = servers;
        common.validate()?;
        self.security.validate()?;
        let mut security = self.security.clone();
        security.ssl.apply_key_password()?;
        self.producer.validate(&common)?;
        self.consumer.validate()?;
        self.group.validate()?;
        Ok(ClientConfig {
            common,
            security,
            producer: self.producer.clone(),
            consumer: self.consumer.clone(),
            group: self.group.clone(),
        })
    }
}

/// One string configuration key: its name, default, documentation and parser.
pub struct KeyInfo {
    name: &'static str,
    default: Option<&'static str>,
    doc: &'static str,
    secret: bool,
    apply: fn(&mut ClientConfigBuilder, &str) -> Result<(), String>,
}

impl KeyInfo {
    /// The key, as the Java client (or librdkafka, for keys Java lacks) spells it.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The default as a string value, or `None` when the key is unset by default.
    pub fn default(&self) -> Option<&'static str> {
        self.default
    }

    /// One-line description.
    pub fn doc(&self) -> &'static str {
        self.doc
    }

    /// Whether the value is secret (redacted in errors, `Debug` and logs).
    pub fn is_secret(&self) -> bool {
        self.secret
    }
}

impl std::fmt::Debug for KeyInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyInfo")
            .field("name", &self.name)
            .field("default", &self.default)
            .field("secret", &self.secret)
            .finish_non_exhaustive()
    }
}

/// Every section's key table.
const SECTIONS: &[&[KeyInfo]] = &[
    common::KEYS,
    security::KEYS,
    ssl::KEYS,
    producer::KEYS,
    consumer::KEYS,
    group::KEYS,
];
