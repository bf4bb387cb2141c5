//! The transcript format of `vectors/transcripts/` (written by `transcripts_capture.rs`
//! from the fault proxy's recording, read by `sim_fidelity.rs`).
//!
//! A transcript is one pretty-printed JSON document:
//!
//! ```text
//! { "transcript": name, "kafka": "4.3.1", "about": what the client did,
//!   "setup": { "node": 1, "transactionVersion": 2,
//!              "topics": [ { "name", "id" (Kafka's base64 text), "partitions" } ] },
//!   "exchanges": [ { "seq", "atMs", "conn", "node", "api", "apiKey", "version",
//!                    "requestHex", "responseHex",          <- the frames, authoritative
//!                    "requestHeader", "request",           <- decoded, for reading
//!                    "responseHeader", "response" } ] }
//! ```
//!
//! The hex strings are the frames as they crossed the proxy, without the 4-byte size
//! prefix (header then body); `responseHex` is `null` when no answer came. The decoded
//! parts are Kafka's JSON rendering of the same bytes (`OracleExt::to_json`), there
//! so that a refreshed transcript diffs field by field; readers decode the hex.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use bytes::Bytes;
use kafka_core::protocol::messages::{
    request_header::RequestHeader, response_header::ResponseHeader,
};
use kafka_core::protocol::oracle::OracleExt;
use kafka_core::protocol::{visit_message, ApiKey, Decodable, Direction, Message, MessageVisitor};
use serde_json::{json, Value};

/// The folder of the transcripts.
pub(crate) fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../vectors/transcripts")
}

/// A topic as the real cluster had it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TopicSetup {
    /// Its name.
    pub(crate) name: String,
    /// Its topic id (Kafka's text form).
    pub(crate) id: String,
    /// Its partition count.
    pub(crate) partitions: i32,
}

/// The real cluster a transcript was captured from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Setup {
    /// The broker's node id.
    pub(crate) node: i32,
    /// The finalized `transaction.version`.
    pub(crate) transaction_version: i16,
    /// The topics the scenario created.
    pub(crate) topics: Vec<TopicSetup>,
}

/// One recorded exchange.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    /// Forwarding order.
    pub(crate) seq: u64,
    /// Milliseconds since the recording started.
    pub(crate) at_ms: u64,
    /// The proxy's connection number.
    pub(crate) conn: u64,
    /// The broker node.
    pub(crate) node: i32,
    /// The API.
    pub(crate) api: ApiKey,
    /// Its version.
    pub(crate) version: i16,
    /// The request frame (header and body, no size prefix).
    pub(crate) request: Vec<u8>,
    /// The answer frame, if one came.
    pub(crate) response: Option<Vec<u8>>,
}

/// A transcript.
#[derive(Debug, Clone)]
pub(crate) struct Transcript {
    /// Its name (the file stem).
    pub(crate) name: String,
    /// What the client did.
    pub(crate) about: String,
    /// The cluster.
    pub(crate) setup: Setup,
    /// The exchanges in forwarding order.
    pub(crate) exchanges: Vec<Recorded>,
}

/// A request or response frame decoded: header and body as Kafka's JSON.
pub(crate) fn decode(
    api: ApiKey,
    direction: Direction,
    version: i16,
    frame: &[u8],
) -> Result<(Value, Value), String> {
    let mut bytes = Bytes::copy_from_slice(frame);
    let header = match direction {
        Direction::Request => {
            let hv = api.request_header_version(version);
            RequestHeader::decode(&mut bytes, hv)
                .map_err(|e| format!("request header: {e}"))?
                .to_json(hv)
        }
        Direction::Response => {
            let hv = api.response_header_version(version);
            ResponseHeader::decode(&mut bytes, hv)
                .map_err(|e| format!("response header: {e}"))?
                .to_json(hv)
        }
    };
    let body = visit_message(api, direction, ToJson { bytes, version })?;
    Ok((header, body))
}

struct ToJson {
    bytes: Bytes,
    version: i16,
}

impl MessageVisitor for ToJson {
    type Output = Result<Value, String>;
    fn visit<M: Message>(self) -> Result<Value, String> {
        let m = M::decode_from(self.bytes, self.version)
            .map_err(|e| format!("{} v{}: {e}", M::NAME, self.version))?;
        Ok(m.to_json(self.version))
    }
}

/// Renders a transcript as its file's text.
pub(crate) fn render(t: &Transcript) -> Result<String, String> {
    let mut exchanges = Vec::new();
    for x in &t.exchanges {
        let (req_header, req) = decode(x.api, Direction::Request, x.version, &x.request)?;
        let (resp_header, resp) = match &x.response {
            Some(r) => decode(x.api, Direction::Response, x.version, r)?,
            None => (Value::Null, Value::Null),
        };
        exchanges.push(json!({
            "seq": x.seq,
            "atMs": x.at_ms,
            "conn": x.conn,
            "node": x.node,
            "api": x.api.name(),
            "apiKey": x.api as i16,
            "version": x.version,
            "requestHex": hex(&x.request),
            "responseHex": x.response.as_deref().map(hex),
            "requestHeader": req_header,
            "request": req,
            "responseHeader": resp_header,
            "response": resp,
        }));
    }
    let topics: Vec<Value> = t
        .setup
        .topics
        .iter()
        .map(|tp| json!({"name": tp.name, "id": tp.id, "partitions": tp.partitions}))
        .collect();
    let doc = json!({
        "transcript": t.name,
        "kafka": "4.3.1",
        "about": t.about,
        "setup": {
            "node": t.setup.node,
            "transactionVersion": t.setup.transaction_version,
            "topics": topics,
        },
        "exchanges": exchanges,
    });
    serde_json::to_string_pretty(&doc)
        .map(|s| s + "\n")
        .map_err(|e| e.to_string())
}

/// Reads a transcript file's text (the hex frames; the decoded parts are ignored).
pub(crate) fn parse(name: &str, text: &str) -> Result<Transcript, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("{name}: {e}"))?;
    let field = |v: &Value, k: &str| -> Result<i64, String> {
        v[k].as_i64().ok_or_else(|| format!("{name}: {k} missing"))
    };
    let setup = &doc["setup"];
    let topics = setup["topics"]
        .as_array()
        .ok_or_else(|| format!("{name}: setup.topics missing"))?
        .iter()
        .map(|tp| {
            Ok(TopicSetup {
                name: tp["name"].as_str().unwrap_or_default().to_string(),
                id: tp["id"].as_str().unwrap_or_default().to_string(),
                partitions: field(tp, "partitions")? as i32,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let mut exchanges = Vec::new();
    for x in doc["exchanges"]
        .as_array()
        .ok_or_else(|| format!("{name}: exchanges missing"))?
    {
        let key = field(x, "apiKey")? as i16;
        let api = ApiKey::from_i16(key).ok_or_else(|| format!("{name}: api key {key}"))?;
        let request = unhex(x["requestHex"].as_str().unwrap_or_default())
            .ok_or_else(|| format!("{name}: bad requestHex"))?;
        let response = match x["responseHex"].as_str() {
            Some(h) => Some(unhex(h).ok_or_else(|| format!("{name}: bad responseHex"))?),
            None => None,
        };
        exchanges.push(Recorded {
            seq: field(x, "seq")? as u64,
            at_ms: field(x, "atMs")? as u64,
            conn: field(x, "conn")? as u64,
            node: field(x, "node")? as i32,
            api,
            version: field(x, "version")? as i16,
            request,
            response,
        });
    }
    Ok(Transcript {
        name: name.to_string(),
        about: doc["about"].as_str().unwrap_or_default().to_string(),
        setup: Setup {
            node: field(setup, "node")? as i32,
            transaction_version: field(setup, "transactionVersion")? as i16,
            topics,
        },
        exchanges,
    })
}

/// Every transcript in `dir`, by file name.
pub(crate) fn load_all(dir: &Path) -> Vec<Transcript> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|x| x == "json"));
    files.sort();
    files
        .iter()
        .map(|p| {
            let name = p
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            let text =
                std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            parse(&name, &text).unwrap_or_else(|e| panic!("{e}"))
        })
        .collect()
}

/// Lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of lower- or upper-case hex, `None` if it is not hex.
pub(crate) fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}
