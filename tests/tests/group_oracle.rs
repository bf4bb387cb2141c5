//! Consumer groups against Apache Kafka's classes, both directions.
//!
//! The vectors in `vectors/group/` come from `vectors/oracle.sh group-generate vectors/group`
//! (Kafka's `ConsumerProtocol`, `StickyAssignor` / `CooperativeStickyAssignor` user data
//! and the four built-in assignors):
//! - `java_protocol_bytes_match_ours`: our encodings are byte-identical to Kafka's for
//!   versions 0-4, and our decodings (also of newer versions with trailing data) equal
//!   Kafka's;
//! - `java_user_data_matches_ours`: the sticky assignors' user data, byte for byte;
//! - `java_assignments_match_ours`: range and roundrobin give Kafka's assignment exactly;
//!   sticky and cooperative-sticky give valid assignments (every partition at most once,
//!   only to subscribers, complete unless cooperative revocations are pending, balanced
//!   within one for identical subscriptions) and equal Kafka's where Kafka's answer does
//!   not depend on hash-map order (`deterministic`).
//! - `our_protocol_bytes_for_kafka`: with `KAFKA_RS_GROUP_VECTORS_OUT=<dir>`, writes our
//!   encodings of seeded inputs for `vectors/oracle.sh group-verify <dir>`
//!   (`scripts/test-group-oracle`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::PathBuf;

use kafka_core::group::assignor::{builtin, MemberSubscription, PartitionRacks, TopicLayout};
use kafka_core::group::{Assignment, Subscription, TopicPartitions};
use serde_json::{json, Value};

fn vectors(name: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../vectors/group")
        .join(name);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn opt_bytes(v: &Value) -> Option<Vec<u8>> {
    v.as_str().map(unhex)
}

fn bytes_json(b: &Option<Vec<u8>>) -> Value {
    b.as_ref().map_or(Value::Null, |b| Value::String(hex(b)))
}

/// `[[topic, partition], ...]` as one `TopicPartitions` per pair, in order.
fn pairs(v: &Value) -> Vec<TopicPartitions> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| TopicPartitions {
            topic: p[0].as_str().unwrap().to_string(),
            partitions: vec![p[1].as_i64().unwrap() as i32],
        })
        .collect()
}

fn pairs_json(tps: &[TopicPartitions]) -> Value {
    Value::Array(
        tps.iter()
            .flat_map(|t| t.partitions.iter().map(move |p| json!([t.topic, p])))
            .collect(),
    )
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

fn describe_subscription(s: &Subscription) -> Value {
    json!({
        "topics": s.topics,
        "userData": bytes_json(&s.user_data),
        "owned": pairs_json(&s.owned_partitions),
        "generationId": s.generation_id,
        "rackId": s.rack_id,
    })
}

fn describe_assignment(a: &Assignment) -> Value {
    json!({ "partitions": pairs_json(&a.partitions), "userData": bytes_json(&a.user_data) })
}

#[test]
fn java_protocol_bytes_match_ours() {
    let lines = vectors("protocol.jsonl");
    let (mut encoded, mut decoded) = (0, 0);
    for line in &lines {
        let kind = line["kind"].as_str().unwrap();
        let case = &line["case"];
        let version = line["version"].as_i64().unwrap() as i16;
        let bytes = unhex(line["hex"].as_str().unwrap());
        let ctx = format!("{kind} case {case} v{version}");
        match kind {
            "subscription" => {
                let input = &line["input"];
                let s = Subscription {
                    topics: strings(&input["topics"]),
                    user_data: opt_bytes(&input["userData"]),
                    owned_partitions: pairs(&input["owned"]),
                    generation_id: input["generationId"].as_i64().unwrap() as i32,
                    rack_id: input["rackId"].as_str().map(String::from),
                };
                assert_eq!(hex(&s.encode(version)), hex(&bytes), "{ctx}: encoding");
                encoded += 1;
            }
            "assignment" => {
                let input = &line["input"];
                let a = Assignment {
                    partitions: pairs(&input["partitions"]),
                    user_data: opt_bytes(&input["userData"]),
                };
                assert_eq!(hex(&a.encode(version)), hex(&bytes), "{ctx}: encoding");
                encoded += 1;
            }
            _ => {}
        }
        let ours = if kind.starts_with("subscription") {
            describe_subscription(&Subscription::decode(&bytes).unwrap())
        } else {
            describe_assignment(&Assignment::decode(&bytes).unwrap())
        };
        assert_eq!(ours, line["decoded"], "{ctx}: decoding");
        decoded += 1;
    }
    assert!(
        encoded >= 300 && decoded >= 400,
        "{encoded} encoded, {decoded} decoded"
    );
}

#[test]
fn java_user_data_matches_ours() {
    let lines = vectors("user_data.jsonl");
    for (i, line) in lines.iter().enumerate() {
        let assignor = builtin(line["assignor"].as_str().unwrap()).unwrap();
        let owned = pairs(&line["owned"]);
        let generation = line["generation"].as_i64().unwrap() as i32;
        let ours = assignor.user_data(&owned, generation);
        assert_eq!(
            bytes_json(&ours),
            line["hex"],
            "line {}: {}",
            i + 1,
            line["assignor"]
        );
    }
    assert!(lines.len() >= 30);
}

fn layout(v: &Value) -> TopicLayout {
    TopicLayout {
        topics: v
            .as_object()
            .unwrap()
            .iter()
            .map(|(t, parts)| {
                let parts = parts
                    .as_array()
                    .unwrap()
                    .iter()
                    .enumerate()
                    .map(|(p, racks)| PartitionRacks {
                        partition: p as i32,
                        racks: strings(racks),
                    })
                    .collect();
                (t.clone(), parts)
            })
            .collect(),
    }
}

fn members(v: &Value) -> Vec<MemberSubscription> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|m| MemberSubscription {
            member_id: m["id"].as_str().unwrap().into(),
            instance_id: m["instanceId"].as_str().map(String::from),
            subscription: Subscription {
                topics: strings(&m["topics"]),
                user_data: opt_bytes(&m["userData"]),
                owned_partitions: pairs(&m["owned"]),
                generation_id: m["generationId"].as_i64().unwrap() as i32,
                rack_id: m["rackId"].as_str().map(String::from),
            },
        })
        .collect()
}

/// `{member: {topic: [partitions]}}`, sorted, as the oracle writes results.
fn result_json(out: &BTreeMap<String, Assignment>) -> Value {
    let mut o = serde_json::Map::new();
    for (m, a) in out {
        let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for tp in &a.partitions {
            by_topic
                .entry(tp.topic.clone())
                .or_default()
                .extend(&tp.partitions);
        }
        let mut t = serde_json::Map::new();
        for (topic, mut ps) in by_topic {
            ps.sort_unstable();
            t.insert(topic, json!(ps));
        }
        o.insert(m.clone(), Value::Object(t));
    }
    Value::Object(o)
}

/// The checks every sticky result must pass, whatever Kafka answered.
fn check_sticky(
    case: &str,
    cooperative: bool,
    l: &TopicLayout,
    ms: &[MemberSubscription],
    out: &BTreeMap<String, Assignment>,
) {
    assert_eq!(out.len(), ms.len(), "{case}: one entry per member");
    let mut seen = BTreeSet::new();
    for m in ms {
        for tp in &out[&m.member_id].partitions {
            assert!(
                m.subscription.topics.contains(&tp.topic),
                "{case}: {} not subscribed to {}",
                m.member_id,
                tp.topic
            );
            for p in &tp.partitions {
                assert!(
                    seen.insert((tp.topic.clone(), *p)),
                    "{case}: {}-{p} twice",
                    tp.topic
                );
            }
        }
    }
    let subscribed: BTreeSet<&String> = ms.iter().flat_map(|m| &m.subscription.topics).collect();
    let all: usize = l
        .topics
        .iter()
        .filter(|(t, _)| subscribed.contains(t))
        .map(|(_, ps)| ps.len())
        .sum();
    if !cooperative {
        assert_eq!(seen.len(), all, "{case}: every partition assigned");
    }
    let same = ms.windows(2).all(|w| {
        let a: BTreeSet<_> = w[0].subscription.topics.iter().collect();
        let b: BTreeSet<_> = w[1].subscription.topics.iter().collect();
        a == b
    });
    if same && seen.len() == all {
        let counts: Vec<usize> = out
            .values()
            .map(|a| a.partitions.iter().map(|t| t.partitions.len()).sum())
            .collect();
        let (min, max) = (
            counts.iter().min().unwrap_or(&0),
            counts.iter().max().unwrap_or(&0),
        );
        assert!(max - min <= 1, "{case}: unbalanced {counts:?}");
    }
}

#[test]
fn java_assignments_match_ours() {
    let lines = vectors("assignors.jsonl");
    let mut stats: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new(); // (cases, compared, equal)
    let mut differing = Vec::new();
    for line in &lines {
        let case = line["case"].as_str().unwrap();
        let name = line["assignor"].as_str().unwrap();
        let l = layout(&line["layout"]);
        let ms = members(&line["members"]);
        let out = builtin(name)
            .unwrap()
            .assign(&l, &ms)
            .unwrap_or_else(|e| panic!("{case}: {e}"));
        let ours = result_json(&out);
        let entry = stats.entry(name.to_string()).or_default();
        entry.0 += 1;
        match name {
            "range" | "roundrobin" => {
                assert_eq!(ours, line["result"], "{case}");
                entry.1 += 1;
                entry.2 += 1;
            }
            _ => {
                check_sticky(case, name == "cooperative-sticky", &l, &ms, &out);
                if line["deterministic"] == json!(true) {
                    entry.1 += 1;
                    if ours == line["result"] {
                        entry.2 += 1;
                    } else {
                        differing.push(format!("{case}: ours {ours} Kafka {}", line["result"]));
                    }
                }
            }
        }
    }
    eprintln!("assignor vectors (cases, compared with Kafka, equal): {stats:?}");
    assert!(
        differing.is_empty(),
        "{} sticky results differ from Kafka's:\n{}",
        differing.len(),
        differing.join("\n")
    );
    assert!(stats.values().all(|s| s.0 >= 30));
}

/// A small seeded generator for our own inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const NAMES: [&str; 9] = [
    "",
    "a",
    "zeta",
    "orders.v2",
    "ü",
    "日本",
    "\u{ff61}",
    "\u{1f600}",
    "T_0",
];

fn random_tps(r: &mut Rng) -> Vec<TopicPartitions> {
    (0..r.below(5))
        .map(|_| TopicPartitions {
            topic: NAMES[r.below(NAMES.len() as u64) as usize].into(),
            partitions: (0..r.below(4)).map(|_| r.next() as i32 % 64).collect(),
        })
        .collect()
}

fn random_bytes(r: &mut Rng) -> Option<Vec<u8>> {
    match r.below(3) {
        0 => None,
        _ => Some((0..r.below(24)).map(|_| r.next() as u8).collect()),
    }
}

#[test]
fn our_protocol_bytes_for_kafka() {
    let mut r = Rng(0x0123_4567);
    let mut lines = Vec::new();
    for _ in 0..60 {
        let s = Subscription {
            topics: (0..r.below(5))
                .map(|_| NAMES[r.below(9) as usize].to_string())
                .collect(),
            user_data: random_bytes(&mut r),
            owned_partitions: random_tps(&mut r),
            generation_id: [-1, 0, 3, i32::MAX][r.below(4) as usize],
            rack_id: [None, Some("rack-1"), Some("é")][r.below(3) as usize].map(String::from),
        };
        for version in 0..=3 {
            let bytes = s.encode(version);
            let back = Subscription::decode(&bytes).unwrap();
            lines.push(json!({"kind": "subscription", "version": version, "hex": hex(&bytes), "decoded": describe_subscription(&back)}));
        }
        let a = Assignment {
            partitions: random_tps(&mut r),
            user_data: random_bytes(&mut r),
        };
        for version in 0..=3 {
            let bytes = a.encode(version);
            let back = Assignment::decode(&bytes).unwrap();
            lines.push(json!({"kind": "assignment", "version": version, "hex": hex(&bytes), "decoded": describe_assignment(&back)}));
        }
    }
    if let Some(dir) = std::env::var_os("KAFKA_RS_GROUP_VECTORS_OUT") {
        let dir = PathBuf::from(dir);
        fs::create_dir_all(&dir).unwrap();
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        fs::write(dir.join("protocol.jsonl"), text).unwrap();
    }
}
