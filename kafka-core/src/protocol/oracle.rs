//! Support for cross-checking against Apache Kafka's own classes (feature `oracle`):
//! rendering messages as Kafka's JSON converters do, and building seeded sample messages.

use bytes::Bytes;
use serde_json::Value;

use super::types::{base64_standard, RawTaggedField, Uuid};

/// Kafka-JSON rendering and seeded construction, implemented by every generated struct.
pub trait OracleExt: Sized {
    /// Renders `self` at `version` the way Kafka's generated `*JsonConverter.write` does.
    fn to_json(&self, version: i16) -> Value;
    /// Builds a message valid at `version` with pseudo-random field values.
    fn sample(rng: &mut SampleRng, version: i16) -> Self;
}

pub(crate) fn json_f64(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

pub(crate) fn json_bytes(v: &Bytes) -> Value {
    Value::String(base64_standard(v))
}

/// A small deterministic generator (xorshift64*) for sample messages.
#[derive(Debug, Clone)]
pub struct SampleRng {
    state: u64,
    depth: u32,
}

impl SampleRng {
    /// A generator for `seed`; equal seeds give equal samples.
    pub fn new(seed: u64) -> Self {
        SampleRng {
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            depth: 0,
        }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    pub(crate) fn bool(&mut self) -> bool {
        self.below(2) == 1
    }
    pub(crate) fn null(&mut self) -> bool {
        self.below(4) == 0
    }
    pub(crate) fn i8(&mut self) -> i8 {
        self.next_u64() as i8
    }
    pub(crate) fn i16(&mut self) -> i16 {
        self.next_u64() as i16
    }
    pub(crate) fn i32(&mut self) -> i32 {
        match self.below(4) {
            0 => -1,
            1 => self.below(100) as i32,
            _ => self.next_u64() as i32,
        }
    }
    pub(crate) fn i64(&mut self) -> i64 {
        match self.below(4) {
            0 => -1,
            1 => self.below(1000) as i64,
            _ => self.next_u64() as i64,
        }
    }
    pub(crate) fn u16(&mut self) -> u16 {
        self.next_u64() as u16
    }
    #[allow(dead_code)] // For `uint32` fields; no 4.3.1 schema has one.
    pub(crate) fn u32(&mut self) -> u32 {
        self.next_u64() as u32
    }
    pub(crate) fn f64(&mut self) -> f64 {
        (self.next_u64() % 2_000_000) as f64 / 8.0 - 1000.0
    }
    pub(crate) fn uuid(&mut self) -> Uuid {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.next_u64().to_be_bytes());
        b[8..].copy_from_slice(&self.next_u64().to_be_bytes());
        Uuid::from_bytes(b)
    }
    pub(crate) fn string(&mut self) -> String {
        const PARTS: [&str; 8] = ["a", "topic", "é", "日本", "🦀", "-", "_x9", " "];
        let n = match self.below(8) {
            0 => 0,
            7 => 60,
            _ => self.below(8) as usize,
        };
        (0..n)
            .map(|_| PARTS[self.below(PARTS.len() as u64) as usize])
            .collect()
    }
    pub(crate) fn bytes(&mut self) -> Bytes {
        let n = self.below(24) as usize;
        Bytes::from((0..n).map(|_| self.next_u64() as u8).collect::<Vec<u8>>())
    }
    /// An array length, shrinking with nesting so samples stay small.
    pub(crate) fn len(&mut self) -> usize {
        self.depth += 1;
        if self.depth > 40 {
            0
        } else {
            self.below(3) as usize
        }
    }
    pub(crate) fn unknown_tags(&mut self) -> Vec<RawTaggedField> {
        if self.below(3) != 0 {
            return Vec::new();
        }
        let first = 1000 + self.below(50) as u32;
        let mut tags = vec![RawTaggedField {
            tag: first,
            data: self.bytes(),
        }];
        if self.bool() {
            tags.push(RawTaggedField {
                tag: first + 1 + self.below(1000) as u32,
                data: self.bytes(),
            });
        }
        tags
    }
}
