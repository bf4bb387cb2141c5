//! Writes seeded sample messages encoded by our codecs, in the `vectors/` line format, so
//! that Apache Kafka's own classes can check them (`vectors/oracle.sh verify <dir>`).
//!
//! Usage: `cargo run -p kafka-tests --example write_oracle_samples -- <out-dir> [cases]`

use std::fmt::Write as _;
use std::io::Write as _;

use kafka_core::protocol::messages::{
    request_header::RequestHeader, response_header::ResponseHeader,
};
use kafka_core::protocol::oracle::SampleRng;
use kafka_core::protocol::{visit_message, ApiKey, Direction, Message, MessageVisitor};
use serde_json::{json, Value};

struct Lines {
    api_key: Option<i16>,
    direction: &'static str,
    cases: u64,
}

impl MessageVisitor for Lines {
    type Output = Vec<Value>;
    fn visit<M: Message>(self) -> Vec<Value> {
        let mut out = Vec::new();
        for version in M::VERSIONS.min..=M::VERSIONS.max {
            for case in 0..self.cases {
                let seed = (self.api_key.unwrap_or(-1) as u64) << 32
                    ^ (version as u64) << 16
                    ^ case
                    ^ 0xA5A5;
                let msg = M::sample(&mut SampleRng::new(seed), version);
                let mut buf = Vec::new();
                msg.encode_to(&mut buf, version).expect("samples encode");
                let unknown: Vec<Value> = msg
                    .unknown_tagged_fields()
                    .iter()
                    .map(|t| json!({"tag": t.tag, "hex": hex(&t.data)}))
                    .collect();
                out.push(json!({
                    "apiKey": self.api_key, "name": M::NAME, "direction": self.direction,
                    "version": version, "case": case, "hex": hex(&buf), "unknownTags": unknown,
                    "json": msg.to_json(version),
                }));
            }
        }
        out
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::PathBuf::from(
        args.get(1)
            .expect("usage: write_oracle_samples <out-dir> [cases]"),
    );
    let cases: u64 = args.get(2).map_or(6, |c| c.parse().expect("cases"));
    std::fs::create_dir_all(&dir).expect("create out dir");
    let mut total = 0;
    let mut write = |name: String, lines: Vec<Value>| {
        let mut f = std::fs::File::create(dir.join(name)).expect("create file");
        for l in &lines {
            writeln!(f, "{l}").expect("write");
        }
        total += lines.len();
    };
    for &key in ApiKey::ALL {
        let mut lines = Vec::new();
        for (direction, d) in [
            (Direction::Request, "request"),
            (Direction::Response, "response"),
        ] {
            lines.extend(visit_message(
                key,
                direction,
                Lines {
                    api_key: Some(key as i16),
                    direction: d,
                    cases,
                },
            ));
        }
        write(format!("{:03}-{}.jsonl", key as i16, key.name()), lines);
    }
    let header = |direction| Lines {
        api_key: None,
        direction,
        cases,
    };
    write(
        "header-RequestHeader.jsonl".into(),
        header("header").visit::<RequestHeader>(),
    );
    write(
        "header-ResponseHeader.jsonl".into(),
        header("header").visit::<ResponseHeader>(),
    );
    println!("wrote {total} sample messages to {}", dir.display());
}
