//! Writes the protocol fuzz seed corpora (`fuzz/corpus/decode_request`, `decode_response`)
//! from the Kafka-made vectors in `vectors/messages/`.
//!
//! Usage: `cargo run -p kafka-tests --example write_protocol_seeds`

use std::path::PathBuf;

use kafka_core::protocol::{fuzz::seed, ApiKey};
use serde_json::Value;

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut n = 0;
    for d in ["decode_request", "decode_response"] {
        let _ = std::fs::remove_dir_all(root.join("fuzz/corpus").join(d));
        std::fs::create_dir_all(root.join("fuzz/corpus").join(d)).unwrap();
    }
    let mut files: Vec<_> = std::fs::read_dir(root.join("vectors/messages"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    for file in files {
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            // One seed per (key, version, direction): case 2 is the richest.
            let (Some(key), Some(2)) = (v["apiKey"].as_i64(), v["case"].as_i64()) else {
                continue;
            };
            let key = ApiKey::from_i16(key as i16).unwrap();
            let hex = v["hex"].as_str().unwrap();
            let body: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            let dir = if v["direction"] == "request" {
                "decode_request"
            } else {
                "decode_response"
            };
            let name = format!("{:03}-v{:02}", key as i16, v["version"].as_i64().unwrap());
            std::fs::write(
                root.join("fuzz/corpus").join(dir).join(name),
                seed(key, v["version"].as_i64().unwrap() as i16, &body),
            )
            .unwrap();
            n += 1;
        }
    }
    println!("wrote {n} seeds");
}
