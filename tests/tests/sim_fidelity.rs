//! The simulator's fidelity against Kafka 4.3.1: every transcript of
//! `vectors/transcripts/` (real exchanges captured from the rig by
//! `transcripts_capture.rs`) is replayed against a fresh simulated cluster set up as
//! the real one was (its topics with their ids and partition counts, node 1, the
//! finalized `transaction.version`, the rig's group timeouts), each request at the
//! virtual time it reached the broker, and every decoded answer is compared field by
//! field with Kafka's. A difference fails unless [`EXEMPT`] names it; a few ids the
//! broker picks are carried over instead (see [`Replay`]). No broker needed.

mod transcript_common;

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use kafka_core::protocol::messages::fetch::FetchRequest;
use kafka_core::protocol::messages::fetch::FetchResponse;
use kafka_core::protocol::messages::init_producer_id::InitProducerIdResponse;
use kafka_core::protocol::{ApiKey, Decodable, Direction, Encodable, Message, Uuid};
use kafka_core::record::{Batch, Batches, DecodeOptions, RecordBatch};
use kafka_tests::sim::cluster::SimCluster;
use kafka_tests::sim::handlers::SERVED;
use kafka_tests::sim::wire::take_frames;
use serde_json::Value;
use transcript_common::{decode, Recorded, Transcript};

/// A difference the comparison allows: in the answers to `api` (every API if `None`),
/// the field at `path` (JSON names from the root of the body, `*` for any array
/// index), for the reason given.
struct Exempt {
    api: Option<ApiKey>,
    path: &'static str,
    why: &'static str,
}

/// Everything the real broker and the simulator may answer differently. One entry per
/// field; nothing else is exempt.
const EXEMPT: &[Exempt] = &[
    Exempt {
        api: Some(ApiKey::Metadata),
        path: "clusterId",
        why: "a random id per cluster (the simulator's is \"sim\")",
    },
    Exempt {
        api: Some(ApiKey::Metadata),
        path: "brokers/*/host",
        why: "where the broker listens: the rig's loopback address, the simulator's b<id>",
    },
    Exempt {
        api: Some(ApiKey::Metadata),
        path: "brokers/*/port",
        why: "where the broker listens (a rig port, the simulator's 9092)",
    },
    Exempt {
        api: Some(ApiKey::FindCoordinator),
        path: "coordinators/*/host",
        why: "where the coordinator listens, as for Metadata brokers",
    },
    Exempt {
        api: Some(ApiKey::FindCoordinator),
        path: "coordinators/*/port",
        why: "where the coordinator listens, as for Metadata brokers",
    },
    Exempt {
        api: Some(ApiKey::Fetch),
        path: "sessionId",
        why: "a random number the broker draws for a new fetch session; the replay maps \
              the real id to the simulator's in later requests",
    },
    Exempt {
        api: Some(ApiKey::ApiVersions),
        path: "apiKeys",
        why: "the simulator offers only the APIs it serves, up to the client's versions; \
              Kafka lists every API of the broker",
    },
    Exempt {
        api: Some(ApiKey::ApiVersions),
        path: "supportedFeatures",
        why: "the broker's supported feature ranges (metadata.version, kraft.version, \
              ...); the simulator has no features beyond transaction.version",
    },
    Exempt {
        api: Some(ApiKey::ApiVersions),
        path: "finalizedFeatures",
        why: "as supportedFeatures; the simulator finalizes only transaction.version 2 \
              (set from the transcript)",
    },
    Exempt {
        api: Some(ApiKey::ApiVersions),
        path: "finalizedFeaturesEpoch",
        why: "the metadata offset at which features were last finalized",
    },
    Exempt {
        api: Some(ApiKey::Fetch),
        path: "responses/*/partitions/*/records/*/controlBaseTimestamp",
        why: "a transaction marker (control batch) carries the wall-clock time the \
              coordinator wrote it",
    },
    Exempt {
        api: Some(ApiKey::Fetch),
        path: "responses/*/partitions/*/records/*/controlMaxTimestamp",
        why: "as controlBaseTimestamp",
    },
    Exempt {
        api: Some(ApiKey::Fetch),
        path: "responses/*/partitions/*/records/*/controlCrc",
        why: "the marker's CRC covers its timestamps",
    },
];

/// Arrays compared as sets: in the answers to `api`, the array at `path` is sorted by
/// its `key` field in both answers before comparing.
const UNORDERED: &[Unordered] = &[
    Unordered {
        api: ApiKey::Fetch,
        path: "responses/*/partitions",
        key: "partitionIndex",
        why: "Kafka lists a topic's partitions in the order of a hash map (the fetch \
              session's); no order is specified, the simulator's is by index",
    },
    Unordered {
        api: ApiKey::ListOffsets,
        path: "topics/*/partitions",
        key: "partitionIndex",
        why: "as for Fetch: Kafka groups the partitions in a hash map",
    },
];

/// An array whose order is not part of the protocol (see [`UNORDERED`]).
struct Unordered {
    api: ApiKey,
    path: &'static str,
    key: &'static str,
    why: &'static str,
}

/// Whether `path` matches `pattern` (`*` for any segment), exactly.
fn matches(pattern: &str, path: &[String]) -> bool {
    let pattern: Vec<&str> = pattern.split('/').collect();
    pattern.len() == path.len() && pattern.iter().zip(path).all(|(p, s)| *p == "*" || p == s)
}

/// The rig's `group.consumer.session.timeout.ms` and `group.consumer.heartbeat.interval.ms`.
const RIG_GROUP_SESSION_MS: u64 = 6_000;
const RIG_GROUP_HEARTBEAT_MS: i32 = 500;

/// One transcript's replay: the simulated cluster and the ids carried over from the
/// real answers to the simulator's (Kafka draws them; a request naming the real one
/// must reach the simulator naming its own).
struct Replay {
    cluster: SimCluster,
    /// Real fetch session id → the simulator's.
    sessions: HashMap<i32, i32>,
}

impl Replay {
    fn new(t: &Transcript) -> Replay {
        let mut cluster = SimCluster::new(1);
        assert_eq!(t.setup.node, 1, "{}: single-node transcripts only", t.name);
        for topic in &t.setup.topics {
            cluster.create_topic(&topic.name, topic.partitions);
            let id = Uuid::parse(&topic.id).unwrap_or_else(|| panic!("{}: topic id", t.name));
            cluster.topics.get_mut(&topic.name).expect("created").id = id;
        }
        cluster.txn.v2 = t.setup.transaction_version >= 2;
        cluster.groups.session_timeout_ms = RIG_GROUP_SESSION_MS;
        cluster.groups.heartbeat_interval_ms = RIG_GROUP_HEARTBEAT_MS;
        // Producer ids come from a block the controller hands the broker: the
        // simulator's first id is the transcript's first (later ones must then agree).
        if let Some(first) = t.exchanges.iter().find_map(first_producer_id) {
            cluster.next_producer_id = first;
        }
        Replay {
            cluster,
            sessions: HashMap::new(),
        }
    }

    /// The simulator's answer frame to `x` (no size prefix), or why there is none.
    fn answer(&mut self, x: &Recorded) -> Result<Option<Vec<u8>>, String> {
        self.cluster.advance(Duration::from_millis(x.at_ms));
        let request = self.carry_ids(x)?;
        let mut buf = (request.len() as i32).to_be_bytes().to_vec();
        buf.extend_from_slice(&request);
        let frames = take_frames(&mut buf).map_err(|e| format!("request: {e:?}"))?;
        let frame = frames.first().ok_or("no frame")?;
        Ok(self
            .cluster
            .handle(x.node, frame)
            .map(|a| a.bytes[4..].to_vec()))
    }

    /// `x`'s request with the real ids the simulator knows under its own replaced.
    fn carry_ids(&self, x: &Recorded) -> Result<Vec<u8>, String> {
        if x.api != ApiKey::Fetch {
            return Ok(x.request.clone());
        }
        let (header_len, mut req) = split::<FetchRequest>(x, &x.request)?;
        let Some(&ours) = self.sessions.get(&req.session_id) else {
            return Ok(x.request.clone());
        };
        req.session_id = ours;
        let mut out = x.request[..header_len].to_vec();
        req.encode(&mut out, x.version).map_err(|e| e.to_string())?;
        Ok(out)
    }

    /// Learns the ids in a pair of answers to `x`.
    fn learn(&mut self, x: &Recorded, real: &[u8], sim: &[u8]) {
        if x.api == ApiKey::Fetch {
            let (_, r) = split_response::<FetchResponse>(x, real).expect("real decodes");
            let (_, s) = split_response::<FetchResponse>(x, sim).expect("sim decodes");
            if r.session_id != 0 && s.session_id != 0 {
                self.sessions.insert(r.session_id, s.session_id);
            }
        }
    }
}

fn first_producer_id(x: &Recorded) -> Option<i64> {
    if x.api != ApiKey::InitProducerId {
        return None;
    }
    let (_, r) = split_response::<InitProducerIdResponse>(x, x.response.as_ref()?).ok()?;
    (r.error_code == 0).then_some(r.producer_id)
}

/// A request frame's header length and decoded body.
fn split<M: Message>(x: &Recorded, frame: &[u8]) -> Result<(usize, M), String> {
    let mut bytes = Bytes::copy_from_slice(frame);
    let hv = x.api.request_header_version(x.version);
    kafka_core::protocol::messages::request_header::RequestHeader::decode(&mut bytes, hv)
        .map_err(|e| e.to_string())?;
    let header_len = frame.len() - bytes.len();
    let m = M::decode_from(bytes, x.version).map_err(|e| e.to_string())?;
    Ok((header_len, m))
}

/// A response frame's header length and decoded body.
fn split_response<M: Message>(x: &Recorded, frame: &[u8]) -> Result<(usize, M), String> {
    let mut bytes = Bytes::copy_from_slice(frame);
    let hv = x.api.response_header_version(x.version);
    kafka_core::protocol::messages::response_header::ResponseHeader::decode(&mut bytes, hv)
        .map_err(|e| e.to_string())?;
    let header_len = frame.len() - bytes.len();
    let m = M::decode_from(bytes, x.version).map_err(|e| e.to_string())?;
    Ok((header_len, m))
}

/// Replaces the `records` of every partition of a Fetch answer's JSON (Kafka's JSON
/// leaves them out) with its batches: each header field by name (those of a control
/// batch prefixed `control`), and the records section in hex.
fn show_records(x: &Recorded, frame: &[u8], json: &mut Value) {
    let Ok((_, resp)) = split_response::<FetchResponse>(x, frame) else {
        return;
    };
    for (t, topic) in resp.responses.iter().enumerate() {
        for (p, part) in topic.partitions.iter().enumerate() {
            let bytes = part.records.clone().unwrap_or_default();
            let batches: Vec<Value> = Batches::new(bytes, DecodeOptions::default())
                .map(|b| match b {
                    Ok(Batch::V2(b)) => batch_json(&b),
                    Ok(Batch::Legacy(_)) => Value::String("legacy batch".into()),
                    Err(e) => Value::String(format!("bad batch: {e}")),
                })
                .collect();
            json["responses"][t]["partitions"][p]["records"] = Value::Array(batches);
        }
    }
}

fn batch_json(b: &RecordBatch) -> Value {
    let h = b.header();
    let section = b
        .records_section()
        .map(|r| transcript_common::hex(&r))
        .unwrap_or_default();
    let control = if b.is_control() { "control" } else { "" };
    let name = |n: &str| {
        if control.is_empty() {
            n.to_string()
        } else {
            format!("{control}{}{}", n[..1].to_uppercase(), &n[1..])
        }
    };
    let mut m = serde_json::Map::new();
    m.insert("baseOffset".into(), h.base_offset.into());
    m.insert(
        "partitionLeaderEpoch".into(),
        h.partition_leader_epoch.into(),
    );
    m.insert("attributes".into(), format!("{:?}", h.attributes).into());
    m.insert("lastOffsetDelta".into(), h.last_offset_delta.into());
    m.insert(name("baseTimestamp"), h.base_timestamp.into());
    m.insert(name("maxTimestamp"), h.max_timestamp.into());
    m.insert(name("crc"), h.crc.into());
    m.insert("producerId".into(), h.producer_id.into());
    m.insert("producerEpoch".into(), h.producer_epoch.into());
    m.insert("baseSequence".into(), h.base_sequence.into());
    m.insert("recordsCount".into(), h.records_count.into());
    m.insert("records".into(), section.into());
    Value::Object(m)
}

/// The differences found: readable lines for those not exempt, and per entry of
/// [`EXEMPT`] how many it excused.
#[derive(Default)]
struct Found {
    lines: Vec<String>,
    excused: Vec<usize>,
}

/// The entry of [`EXEMPT`] that covers `path` (segments from the body's root) for `api`.
fn exempt(api: ApiKey, path: &[String]) -> Option<usize> {
    EXEMPT.iter().position(|e| {
        e.api.is_none_or(|a| a == api) && {
            let pattern: Vec<&str> = e.path.split('/').collect();
            pattern.len() <= path.len()
                && pattern
                    .iter()
                    .zip(path)
                    .all(|(p, s)| *p == "*" || *p == s.as_str())
        }
    })
}

/// Appends every difference between Kafka's `real` and the simulator's `sim` below
/// `path` that is not exempt.
fn diff(api: ApiKey, path: &mut Vec<String>, real: &Value, sim: &Value, out: &mut Found) {
    if let Some(e) = exempt(api, path) {
        if real != sim {
            out.excused.resize(EXEMPT.len(), 0);
            out.excused[e] += 1;
        }
        return;
    }
    match (real, sim) {
        (Value::Object(r), Value::Object(s)) => {
            let mut keys: Vec<&String> = r.keys().chain(s.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                path.push(k.clone());
                diff(
                    api,
                    path,
                    r.get(k).unwrap_or(&Value::Null),
                    s.get(k).unwrap_or(&Value::Null),
                    out,
                );
                path.pop();
            }
        }
        (Value::Array(r), Value::Array(s)) if r.len() == s.len() => {
            let (mut r, mut s) = (r.clone(), s.clone());
            if let Some(u) = UNORDERED
                .iter()
                .find(|u| u.api == api && matches(u.path, path))
            {
                r.sort_by_key(|v| v[u.key].as_i64());
                s.sort_by_key(|v| v[u.key].as_i64());
            }
            for (i, (a, b)) in r.iter().zip(&s).enumerate() {
                path.push(i.to_string());
                diff(api, path, a, b, out);
                path.pop();
            }
        }
        _ if real == sim => {}
        _ => out
            .lines
            .push(format!("  {}: kafka {real}, sim {sim}", path.join("/"))),
    }
}

/// Every non-exempt difference of one transcript, as readable lines; `excused` counts
/// the differences each entry of [`EXEMPT`] excused.
fn compare(t: &Transcript, excused: &mut [usize]) -> Vec<String> {
    let mut replay = Replay::new(t);
    let mut out = Vec::new();
    for x in &t.exchanges {
        let Some(real) = &x.response else {
            continue;
        };
        let head = format!(
            "{} #{} {} v{} at {} ms",
            t.name,
            x.seq,
            x.api.name(),
            x.version,
            x.at_ms
        );
        if !SERVED.contains(&x.api) {
            out.push(format!(
                "{head}: the simulator does not serve {}",
                x.api.name()
            ));
            continue;
        }
        let sim = match replay.answer(x) {
            Ok(Some(sim)) => sim,
            Ok(None) => {
                out.push(format!("{head}: kafka answered, the simulator did not"));
                continue;
            }
            Err(e) => {
                out.push(format!("{head}: {e}"));
                continue;
            }
        };
        let (_, real_json) =
            decode(x.api, Direction::Response, x.version, real).expect("real decodes");
        let (_, sim_json) = match decode(x.api, Direction::Response, x.version, &sim) {
            Ok(j) => j,
            Err(e) => {
                out.push(format!(
                    "{head}: the simulator's answer does not decode: {e}"
                ));
                continue;
            }
        };
        let (mut real_json, mut sim_json) = (real_json, sim_json);
        if x.api == ApiKey::Fetch {
            show_records(x, real, &mut real_json);
            show_records(x, &sim, &mut sim_json);
        }
        let mut found = Found::default();
        diff(x.api, &mut Vec::new(), &real_json, &sim_json, &mut found);
        for (total, n) in excused.iter_mut().zip(&found.excused) {
            *total += n;
        }
        if !found.lines.is_empty() {
            out.push(head);
            out.extend(found.lines);
        }
        replay.learn(x, real, &sim);
    }
    out
}

#[test]
fn the_simulator_answers_the_captured_requests_as_kafka_did() {
    let transcripts = transcript_common::load_all(&transcript_common::dir());
    let names: Vec<&str> = transcripts.iter().map(|t| t.name.as_str()).collect();
    for want in [
        "bootstrap_metadata",
        "idempotent_produce",
        "fetch_sessions",
        "group_rebalance",
        "txn_commit_abort",
        "common_errors",
    ] {
        assert!(
            names.contains(&want),
            "transcript {want} missing (have {names:?})"
        );
    }
    let mut failures = Vec::new();
    let mut compared = 0;
    let mut excused = vec![0; EXEMPT.len()];
    for t in &transcripts {
        assert!(!t.exchanges.is_empty(), "{}: empty transcript", t.name);
        compared += t.exchanges.iter().filter(|x| x.response.is_some()).count();
        failures.extend(compare(t, &mut excused));
    }
    assert!(compared > 50, "only {compared} answers compared");
    let mut idle = Vec::new();
    for (e, n) in EXEMPT.iter().zip(&excused) {
        assert!(!e.why.is_empty(), "exemption {} without a reason", e.path);
        if *n == 0 {
            idle.push(format!("{:?} {}", e.api, e.path));
        }
    }
    // An exemption nothing needs any more is removed, so the list stays the truth.
    assert!(idle.is_empty(), "exemptions that excused nothing: {idle:?}");
    for u in UNORDERED {
        assert!(!u.why.is_empty(), "unordered {} without a reason", u.path);
    }
    assert!(
        failures.is_empty(),
        "the simulator differs from Kafka 4.3.1 ({} lines):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_comparison_catches_a_difference_outside_the_exemptions() {
    let real: Value = serde_json::json!({"clusterId": "x", "errorCode": 0, "brokers": [{"host": "a", "nodeId": 1}]});
    let sim: Value = serde_json::json!({"clusterId": "y", "errorCode": 3, "brokers": [{"host": "b", "nodeId": 2}]});
    let mut out = Found::default();
    diff(ApiKey::Metadata, &mut Vec::new(), &real, &sim, &mut out);
    let cluster_id = EXEMPT.iter().position(|e| e.path == "clusterId");
    assert_eq!(out.excused.iter().sum::<usize>(), 2, "cluster id and host");
    assert_eq!(cluster_id.map(|i| out.excused[i]), Some(1));
    assert_eq!(
        out.lines,
        vec![
            "  brokers/0/nodeId: kafka 1, sim 2".to_string(),
            "  errorCode: kafka 0, sim 3".to_string(),
        ]
    );
}
