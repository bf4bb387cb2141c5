//! [`ConfigError`]: what can be wrong with a configuration (local misuse, never remote).

/// A configuration key, value or combination was rejected.
///
/// Values of secret keys (passwords, private keys) never appear in an error: they are
/// replaced by `***`. Nor does any value that looks like PEM text, whatever the key:
/// it is shown as its size and block labels (`<812 bytes of PEM: CERTIFICATE, PRIVATE
/// KEY>`), so a private key pasted into a certificate setting is not echoed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The key is not a known configuration key (or belongs to a part of the client that
    /// does not exist yet). Keys are case-sensitive, as in the Java client.
    #[error("unknown config key `{key}`{}", did_you_mean(suggestion.as_deref()))]
    UnknownKey {
        /// The key as given.
        key: String,
        /// The closest known key, when it is within edit distance 2 (a likely typo).
        suggestion: Option<String>,
    },
    /// The value could not be parsed or is out of range for the key.
    #[error("invalid value `{value}` for `{key}`: {reason}")]
    InvalidValue {
        /// The key (or, for settings only the typed builder offers, the setter's name).
        key: String,
        /// The value as given; `***` for secret keys; a summary for PEM text.
        value: String,
        /// Why the value was rejected.
        reason: String,
    },
    /// A required setting was not given. For settings only the typed builder offers,
    /// `key` names the builder method.
    #[error("missing required setting `{key}`")]
    Missing {
        /// The key (or builder method) that must be set.
        key: String,
    },
    /// Settings that are each valid but cannot be used together.
    #[error("conflicting settings: {reason}")]
    Conflict {
        /// Which settings conflict and why.
        reason: String,
    },
}

impl ConfigError {
    /// An [`ConfigError::InvalidValue`], with the value redacted when `secret`.
    pub(crate) fn invalid(key: &str, value: &str, secret: bool, reason: String) -> Self {
        ConfigError::InvalidValue {
            key: key.to_owned(),
            value: if secret {
                "***".into()
            } else if super::parse::looks_like_pem(value) {
                super::parse::pem_summary(value)
            } else {
                value.to_owned()
            },
            reason,
        }
    }

    /// A [`ConfigError::Missing`] for `key`.
    pub(crate) fn missing(key: &str) -> Self {
        ConfigError::Missing {
            key: key.to_owned(),
        }
    }

    /// A [`ConfigError::Conflict`].
    pub(crate) fn conflict(reason: impl Into<String>) -> Self {
        ConfigError::Conflict {
            reason: reason.into(),
        }
    }
}

fn did_you_mean(suggestion: Option<&str>) -> String {
    suggestion.map_or_else(String::new, |s| format!(" (did you mean `{s}`?)"))
}
