//! Small value types used by the generated messages.

use std::fmt;

use bytes::Bytes;

/// A Kafka UUID (topic ids, directory ids, ...): 16 bytes, all-zero meaning "none".
///
/// Its text form, as Kafka prints it, is URL-safe base64 without padding (22 characters).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Uuid([u8; 16]);

impl Uuid {
    /// The all-zero UUID, Kafka's "no id".
    pub const ZERO: Uuid = Uuid([0; 16]);

    /// Builds a UUID from its 16 bytes (most significant first).
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Uuid(bytes)
    }

    /// The 16 bytes, most significant first.
    pub const fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// Parses Kafka's text form (URL-safe base64, no padding, 22 characters).
    pub fn parse(text: &str) -> Option<Uuid> {
        let raw = base64_decode(text, URL_SAFE)?;
        Some(Uuid(raw.try_into().ok()?))
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&base64_encode(&self.0, URL_SAFE, false))
    }
}

impl fmt::Debug for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Uuid({self})")
    }
}

/// A tagged field this crate does not know, kept so that re-encoding preserves it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RawTaggedField {
    /// The tag number.
    pub tag: u32,
    /// The value bytes, as received.
    pub data: Bytes,
}

/// An inclusive range of message versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VersionRange {
    /// Lowest version.
    pub min: i16,
    /// Highest version.
    pub max: i16,
}

impl VersionRange {
    /// Builds a range; `min <= max` is expected.
    pub const fn new(min: i16, max: i16) -> Self {
        VersionRange { min, max }
    }

    /// Whether `version` lies in the range.
    pub const fn contains(&self, version: i16) -> bool {
        self.min <= version && version <= self.max
    }

    /// The overlap of two ranges, if any.
    pub fn intersect(&self, other: VersionRange) -> Option<VersionRange> {
        let min = self.min.max(other.min);
        let max = self.max.min(other.max);
        (min <= max).then_some(VersionRange { min, max })
    }
}

impl fmt::Display for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..={}", self.min, self.max)
    }
}

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64 with the given alphabet (`pad` adds `=`); used for UUID text and Kafka JSON bytes.
pub(crate) fn base64_encode(input: &[u8], alphabet: &[u8; 64], pad: bool) -> String {
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | u32::from(b) << (16 - 8 * i));
        let chars = chunk.len() + 1;
        for i in 0..4 {
            if i < chars {
                out.push(alphabet[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

fn base64_decode(text: &str, alphabet: &[u8; 64]) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let v = alphabet.iter().position(|&a| a == c)? as u32;
        acc = acc << 6 | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// Standard base64 with padding (Kafka's JSON for bytes; SCRAM messages).
pub(crate) fn base64_standard(input: &[u8]) -> String {
    base64_encode(input, STANDARD, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_text_round_trips() {
        let u = Uuid::from_bytes([0xfb, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xff]);
        let text = u.to_string();
        assert_eq!(text.len(), 22);
        assert_eq!(Uuid::parse(&text), Some(u));
        assert_eq!(Uuid::ZERO.to_string(), "AAAAAAAAAAAAAAAAAAAAAA");
    }

    #[test]
    fn base64_matches_known_values() {
        assert_eq!(base64_encode(b"foobar", STANDARD, true), "Zm9vYmFy");
        assert_eq!(base64_encode(b"fooba", STANDARD, true), "Zm9vYmE=");
        assert_eq!(base64_encode(b"foob", STANDARD, true), "Zm9vYg==");
        assert_eq!(base64_encode(b"\xfb\xff", URL_SAFE, false), "-_8");
    }
}
