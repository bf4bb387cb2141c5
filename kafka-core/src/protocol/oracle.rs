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

/// A `float64` as Kafka's JSON shows it: a JSON number when finite; otherwise the
/// strings `"NaN"`, `"Infinity"` and `"-Infinity"`, which is what Jackson (Kafka's
/// `*JsonConverter` builds a `DoubleNode`) writes by default for non-finite doubles
/// (`JsonWriteFeature.WRITE_NAN_AS_STRINGS`). JSON has no number for them.
pub fn json_f64(v: f64) -> Value {
    match serde_json::Number::from_f64(v) {
        Some(n) => Value::Number(n),
        None if v.is_nan() => Value::String("NaN".into()),
        None if v > 0.0 => Value::String("Infinity".into()),
        None => Value::String("-Infinity".into()),
    }
}

/// Whether two Kafka-JSON renderings are the same message: equal structure, and
/// numbers equal by value (Kafka may write a double in any syntax that parses to the
/// same value, `1.0E10` for `10000000000`). A non-finite double matches in either
/// form Jackson writes it: the strings of [`json_f64`], or (when a line came from a
/// lenient writer) a number that parsed to the same non-finite value. `NaN` equals
/// `NaN`, as Java's `Double.compare` has it.
pub fn json_matches(ours: &Value, kafka: &Value) -> bool {
    match (ours, kafka) {
        (Value::Number(a), Value::Number(b)) => {
            match (a.as_i64(), b.as_i64(), a.as_u64(), b.as_u64()) {
                (Some(x), Some(y), _, _) => x == y,
                (_, _, Some(x), Some(y)) => x == y,
                _ => match (a.as_f64(), b.as_f64()) {
                    (Some(x), Some(y)) => same_double(x, y),
                    _ => false,
                },
            }
        }
        (Value::String(a), Value::String(b)) => a == b,
        (Value::String(_), Value::Number(_)) | (Value::Number(_), Value::String(_)) => {
            match (
                non_finite(ours).or_else(|| ours.as_f64()),
                non_finite(kafka).or_else(|| kafka.as_f64()),
            ) {
                (Some(x), Some(y)) if !x.is_finite() || !y.is_finite() => same_double(x, y),
                _ => false,
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| json_matches(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, x)| b.get(k).is_some_and(|y| json_matches(x, y)))
        }
        (a, b) => a == b,
    }
}

/// The double a non-finite Kafka-JSON string stands for.
fn non_finite(v: &Value) -> Option<f64> {
    match v.as_str()? {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// Java's `Double.compare(a, b) == 0`: `NaN` equals itself, `-0.0` differs from `0.0`.
fn same_double(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::messages::describe_client_quotas::response::{
        DescribeClientQuotasResponse, EntryData, ValueData,
    };

    #[test]
    fn non_finite_doubles_render_as_kafkas_json_does() {
        assert_eq!(json_f64(f64::NAN), json!("NaN"));
        assert_eq!(json_f64(f64::INFINITY), json!("Infinity"));
        assert_eq!(json_f64(f64::NEG_INFINITY), json!("-Infinity"));
        assert_eq!(json_f64(-1.5), json!(-1.5));

        // A message holding them, against the JSON Kafka's converter writes for it.
        let values = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e10, -0.0];
        let response = DescribeClientQuotasResponse {
            entries: Some(vec![EntryData {
                values: values
                    .iter()
                    .map(|&value| ValueData {
                        key: "k".into(),
                        value,
                        ..ValueData::default()
                    })
                    .collect(),
                ..EntryData::default()
            }]),
            error_message: None,
            ..DescribeClientQuotasResponse::default()
        };
        let ours = response.to_json(1);
        let kafka: Value = serde_json::from_str(
            r#"{"throttleTimeMs":0,"errorCode":0,"errorMessage":null,"entries":[{"entity":[],
               "values":[{"key":"k","value":"NaN"},{"key":"k","value":"Infinity"},
                         {"key":"k","value":"-Infinity"},{"key":"k","value":1.0E10},
                         {"key":"k","value":-0.0}]}]}"#,
        )
        .unwrap();
        assert!(json_matches(&ours, &kafka), "ours: {ours}\nkafka: {kafka}");
    }

    #[test]
    fn json_matches_compares_values_not_spelling() {
        assert!(json_matches(
            &json!(1.0e10),
            &serde_json::from_str("1.0E10").unwrap()
        ));
        assert!(json_matches(&json!("NaN"), &json!("NaN")));
        assert!(json_matches(&json!(-0.0), &json!(-0.0)));
        assert!(!json_matches(&json!(-0.0), &json!(0.0)));
        assert!(!json_matches(&json!("NaN"), &json!("Infinity")));
        assert!(!json_matches(&json!("NaN"), &json!(1.0)));
        assert!(!json_matches(&json!("1"), &json!(1)));
        assert!(!json_matches(&json!(1), &json!(2)));
        assert!(!json_matches(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(!json_matches(&json!([1, 2]), &json!([1])));
        assert!(json_matches(
            &json!({"a": [1, "x", null]}),
            &json!({"a": [1, "x", null]})
        ));
    }
}
