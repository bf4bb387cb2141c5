//! Replays the wire vectors that Apache Kafka's own classes produced (`vectors/messages/`):
//! every vector decodes, renders to the same JSON as Kafka's converter (compared with
//! `oracle::json_matches`: numbers by value, non-finite doubles as Jackson writes them),
//! keeps its unknown tagged fields, and re-encodes to identical bytes. No Java is needed
//! at test time.

use std::path::PathBuf;

use bytes::Bytes;
use kafka_core::protocol::messages::{
    request_header::RequestHeader, response_header::ResponseHeader,
};
use kafka_core::protocol::oracle::json_matches;
use kafka_core::protocol::{visit_message, ApiKey, Direction, Message, MessageVisitor};
use serde_json::Value;

/// What replaying one vector produced: re-encoded bytes, JSON and top-level unknown tags.
type Replay = Result<(Vec<u8>, Value, Vec<(u32, Vec<u8>)>), String>;

struct Decode {
    bytes: Bytes,
    version: i16,
}

impl MessageVisitor for Decode {
    type Output = Replay;
    fn visit<M: Message>(self) -> Replay {
        replay::<M>(self.bytes, self.version)
    }
}

fn replay<M: Message>(bytes: Bytes, version: i16) -> Replay {
    let msg = M::decode_from(bytes, version).map_err(|e| format!("decode: {e}"))?;
    let mut out = Vec::new();
    msg.encode_to(&mut out, version)
        .map_err(|e| format!("encode: {e}"))?;
    let json = msg.to_json(version);
    let again =
        M::decode_from(Bytes::from(out.clone()), version).map_err(|e| format!("re-decode: {e}"))?;
    if again != msg {
        return Err("value changed after re-encoding".into());
    }
    let unknown = msg
        .unknown_tagged_fields()
        .iter()
        .map(|f| (f.tag, f.data.to_vec()))
        .collect();
    Ok((out, json, unknown))
}

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../vectors/messages")
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

#[test]
fn kafka_vectors_replay_byte_exact() {
    let mut files: Vec<_> = std::fs::read_dir(vectors_dir())
        .expect("vectors/messages exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    let (mut passed, mut failures) = (0usize, Vec::new());
    let mut combos = std::collections::BTreeSet::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let v: Value = serde_json::from_str(line).unwrap();
            let version = v["version"].as_i64().unwrap() as i16;
            let direction = v["direction"].as_str().unwrap();
            let bytes = hex(v["hex"].as_str().unwrap());
            let input = Bytes::from(bytes.clone());
            let result = match (v["apiKey"].as_i64(), direction) {
                (Some(key), d) => {
                    let key = ApiKey::from_i16(key as i16).expect("known key");
                    let dir = if d == "request" {
                        Direction::Request
                    } else {
                        Direction::Response
                    };
                    combos.insert((key as i16, d.to_string(), version));
                    visit_message(
                        key,
                        dir,
                        Decode {
                            bytes: input,
                            version,
                        },
                    )
                }
                (None, _) if v["name"] == "RequestHeader" => {
                    replay::<RequestHeader>(input, version)
                }
                (None, _) => replay::<ResponseHeader>(input, version),
            };
            let where_ = format!(
                "{}:{} {} {direction} v{version}",
                file.display(),
                n + 1,
                v["name"]
            );
            let expected_unknown: Vec<(u32, Vec<u8>)> = v["unknownTags"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    (
                        t["tag"].as_u64().unwrap() as u32,
                        hex(t["hex"].as_str().unwrap()),
                    )
                })
                .collect();
            match result {
                Ok((_, _, unknown)) if unknown != expected_unknown => failures.push(format!(
                    "{where_}: unknown tagged fields {unknown:?} != {expected_unknown:?}"
                )),
                Ok((out, _, _)) if out != bytes => {
                    failures.push(format!("{where_}: re-encoded bytes differ"))
                }
                Ok((_, json_ours, _)) if !json_matches(&json_ours, &v["json"]) => {
                    failures.push(format!(
                        "{where_}: JSON differs\n ours:  {json_ours}\n kafka: {}",
                        v["json"]
                    ))
                }
                Ok(_) => passed += 1,
                Err(e) => failures.push(format!("{where_}: {e}")),
            }
        }
    }
    for f in failures.iter().take(20) {
        eprintln!("FAIL {f}");
    }
    eprintln!("vectors: {passed} passed, {} failed", failures.len());
    assert!(failures.is_empty(), "{} vectors failed", failures.len());
    assert_eq!(
        combos.len(),
        604,
        "every (API key, direction, version) has vectors"
    );
    assert!(passed >= 3 * 604, "only {passed} vectors");
}
