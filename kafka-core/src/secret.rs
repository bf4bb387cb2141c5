//! A redacting string type for passwords, tokens and private keys.
//!
//! [`Secret`] never shows its value through `Debug` or `Display`, so a secret held in a
//! config, a credential or a state machine cannot leak through `{:?}` logging. The only
//! way to read it is [`Secret::expose`], which makes every read easy to find. On drop the
//! buffer is overwritten with zeros (best effort: copies made by earlier reallocations
//! or by callers of `expose` are out of reach).

use std::fmt;

/// A secret string (password, token, key) that is redacted in `Debug` and `Display`.
///
/// Equality compares in time that depends only on the lengths, not on where the first
/// differing byte is.
#[derive(Clone, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// Reads the secret. This is the only accessor: keep its uses few and obvious.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the secret is the empty string.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        ct_eq(self.0.as_bytes(), other.0.as_bytes())
    }
}

impl Eq for Secret {}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value)
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        let mut bytes = std::mem::take(&mut self.0).into_bytes();
        // Zero the whole allocation, spare capacity included; `black_box` keeps the
        // optimiser from dropping the writes to a buffer that is about to be freed.
        let capacity = bytes.capacity();
        bytes.resize(capacity, 0);
        bytes.fill(0);
        std::hint::black_box(&mut bytes);
    }
}

/// Compares two byte strings in time that depends only on their lengths.
pub(crate) fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_redact() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?}"), "Secret(***)");
        assert_eq!(format!("{s}"), "***");
        assert!(!format!("{s:#?} {s:>20}").contains("hunter2"));
        assert_eq!(s.expose(), "hunter2");
    }

    #[test]
    fn equality_and_conversions() {
        assert_eq!(Secret::from("abc"), Secret::from(String::from("abc")));
        assert_ne!(Secret::from("abc"), Secret::from("abd"));
        assert_ne!(Secret::from("abc"), Secret::from("abcd"));
        assert!(Secret::default().is_empty());
        let cloned = Secret::new("x").clone();
        assert_eq!(cloned.expose(), "x");
    }

    #[test]
    fn constant_time_compare() {
        assert!(ct_eq(b"", b""));
        assert!(ct_eq(b"same", b"same"));
        assert!(!ct_eq(b"same", b"sane"));
        assert!(!ct_eq(b"short", b"shorter"));
    }
}
