//! A fake broker on loopback for the adapter suites (`adapter_bounds`, `adapter_memory`,
//! `adapter_hostile`, `producer_*`): it answers ApiVersions like a broker and then
//! misbehaves on purpose, or answers ApiVersions itself with a [`Hostile`] answer, or
//! ([`Mode::Produce`]) acts as a one-node cluster that takes produce requests.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_core::protocol::messages::api_versions::response::ApiVersion;
use kafka_core::protocol::messages::api_versions::ApiVersionsResponse;
use kafka_core::protocol::messages::init_producer_id::InitProducerIdResponse;
use kafka_core::protocol::messages::metadata::response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_core::protocol::messages::metadata::{MetadataRequest, MetadataResponse};
use kafka_core::protocol::messages::produce::response::{
    PartitionProduceResponse, TopicProduceResponse,
};
use kafka_core::protocol::messages::produce::{ProduceRequest, ProduceResponse};
use kafka_core::protocol::messages::request_header::RequestHeader;
use kafka_core::protocol::messages::response_header::ResponseHeader;
use kafka_core::protocol::{ApiKey, Decodable, Encodable, KafkaCode, Message, Uuid};
use kafka_core::record::{DecodeOptions, RecordBatch};

mod sasl;
mod tls;
pub use sasl::SaslStall;
pub use tls::{ca_path, TlsBreak};

/// What the fake broker does after answering ApiVersions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Answers every ApiVersions request; reads and ignores everything else.
    Ignore,
    /// After the first ApiVersions answer on a connection, never reads again (the
    /// client's writes fill the socket buffers, then stall).
    StopReading,
    /// Answers the first other request of the first connection with one frame of this
    /// many bytes (its size prefix says so), written as fast as the socket takes it;
    /// later connections are treated as [`Mode::Ignore`].
    Flood(usize),
    /// A one-node cluster: every topic asked for exists with `partitions` partitions led
    /// by this broker; InitProducerId is answered; Produce appends (offsets count up per
    /// partition from 0) and is answered, or with `answer: false` read and never
    /// answered (the client's buffer then fills).
    Produce {
        /// Partitions of every topic.
        partitions: i32,
        /// Whether Produce requests are answered.
        answer: bool,
    },
    /// Answers every ApiVersions request (on every connection) with a hostile answer.
    Hostile(Hostile),
    /// Answers ApiVersions normally, then every other request with a hostile answer (a
    /// broker that negotiates, then breaks the protocol).
    HostileAfterNegotiation(Hostile),
    /// Advertises SaslHandshake and SaslAuthenticate, accepts the handshake for any
    /// mechanism, then keeps the exchange from finishing (see [`SaslStall`]).
    SaslStall(SaslStall),
    /// A TLS listener: handshake, ApiVersions answered, then the stream broken on the
    /// next request (see [`TlsBreak`]; the CA is [`ca_path`]).
    TlsBreak(TlsBreak),
}

/// A hostile answer (to ApiVersions, or to any request after it): what a broken,
/// confused or malicious server sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hostile {
    /// A frame size of `i32::MAX`.
    GiantFrame,
    /// A negative frame size.
    NegativeFrame,
    /// A compact array count of `i32::MAX` elements in a 10-byte body.
    HugeArrayCount,
    /// A valid ApiVersions answer under another correlation id.
    WrongCorrelationId,
    /// A frame whose body ends inside the first field.
    TruncatedBody,
    /// A TLS alert record (what a TLS listener sends a plaintext client), then close.
    TlsAlert,
    /// Text (an HTTP server's answer): its first four bytes read as a ~1.2 GB frame.
    Garbage,
    /// Reads the request and never answers.
    NoAnswer,
}

impl Hostile {
    /// Every hostile answer.
    pub const ALL: [Hostile; 8] = [
        Hostile::GiantFrame,
        Hostile::NegativeFrame,
        Hostile::HugeArrayCount,
        Hostile::WrongCorrelationId,
        Hostile::TruncatedBody,
        Hostile::TlsAlert,
        Hostile::Garbage,
        Hostile::NoAnswer,
    ];

    /// The bytes answering request `h` (`None`: no answer).
    fn answer(self, h: &Header) -> Option<Vec<u8>> {
        let framed = |body: &[u8]| {
            let mut f = ((4 + body.len()) as i32).to_be_bytes().to_vec();
            f.extend_from_slice(&h.correlation_id.to_be_bytes());
            f.extend_from_slice(body);
            f
        };
        Some(match self {
            Hostile::GiantFrame => i32::MAX.to_be_bytes().to_vec(),
            Hostile::NegativeFrame => (-4i32).to_be_bytes().to_vec(),
            // Error code 0, then a compact array count (uvarint) of i32::MAX + 1.
            Hostile::HugeArrayCount => framed(&[0, 0, 0xff, 0xff, 0xff, 0xff, 0x07, 0, 0, 0]),
            Hostile::WrongCorrelationId => {
                let mut f = api_versions_answer(h, Mode::Ignore);
                f[4..8].copy_from_slice(&h.correlation_id.wrapping_add(1000).to_be_bytes());
                f
            }
            Hostile::TruncatedBody => framed(&[0]),
            // Content type alert (21), TLS 1.2, length 2, fatal (2) unexpected_message (10).
            Hostile::TlsAlert => vec![21, 3, 3, 0, 2, 2, 10],
            Hostile::Garbage => b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n".to_vec(),
            Hostile::NoAnswer => return None,
        })
    }
}

/// A running fake broker; it stops accepting when dropped (connections end on their own
/// after [`LIFETIME`]).
pub struct FakeBroker {
    /// `127.0.0.1:port`.
    pub addr: String,
    state: Arc<State>,
}

/// How long a fake broker's threads live at most.
pub const LIFETIME: Duration = Duration::from_secs(60);

#[derive(Default)]
struct State {
    stop: AtomicBool,
    connections: AtomicU64,
    /// Bytes of requests other than ApiVersions read.
    request_bytes: AtomicU64,
    /// The flood frame was written completely.
    flooded: AtomicBool,
    flood_claimed: AtomicBool,
    /// An ApiVersions answer was sent and the connection stopped reading.
    stalled: AtomicBool,
    /// [`Mode::Produce`]: the next offset per topic and partition.
    logs: Mutex<HashMap<(String, i32), i64>>,
    /// [`Mode::Produce`]: records appended.
    records: AtomicU64,
    /// [`Mode::Produce`]: batches over this many bytes are answered MESSAGE_TOO_LARGE
    /// (the topic's `max.message.bytes`); 0: no limit.
    max_message_bytes: AtomicU64,
    /// [`Mode::Produce`]: batches answered MESSAGE_TOO_LARGE.
    too_large: AtomicU64,
    port: AtomicU64,
    /// Requests other than ApiVersions read.
    requests: AtomicU64,
    /// [`Mode::SaslStall`]: SaslAuthenticate requests read.
    sasl_authenticates: AtomicU64,
}

impl FakeBroker {
    /// Starts a fake broker in `mode` on an ephemeral loopback port.
    pub fn start(mode: Mode) -> FakeBroker {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        listener.set_nonblocking(true).expect("nonblocking");
        let state = Arc::new(State::default());
        let port = listener.local_addr().expect("addr").port();
        state.port.store(u64::from(port), Ordering::SeqCst);
        let st = state.clone();
        std::thread::spawn(move || {
            let until = Instant::now() + LIFETIME;
            while !st.stop.load(Ordering::SeqCst) && Instant::now() < until {
                match listener.accept() {
                    Ok((socket, _)) => {
                        st.connections.fetch_add(1, Ordering::SeqCst);
                        let st = st.clone();
                        let _ = socket.set_nonblocking(false);
                        std::thread::spawn(move || match mode {
                            Mode::TlsBreak(how) => tls::serve(socket, how),
                            _ => serve(socket, mode, &st),
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        FakeBroker { addr, state }
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.state.connections.load(Ordering::SeqCst)
    }

    /// Requests other than ApiVersions read so far (plaintext modes).
    pub fn requests(&self) -> u64 {
        self.state.requests.load(Ordering::SeqCst)
    }

    /// SaslAuthenticate requests read so far ([`Mode::SaslStall`]).
    pub fn sasl_authenticates(&self) -> u64 {
        self.state.sasl_authenticates.load(Ordering::SeqCst)
    }

    /// Bytes of requests other than ApiVersions read so far.
    pub fn request_bytes(&self) -> u64 {
        self.state.request_bytes.load(Ordering::SeqCst)
    }

    /// Whether the [`Mode::Flood`] frame was written completely.
    pub fn flooded(&self) -> bool {
        self.state.flooded.load(Ordering::SeqCst)
    }

    /// Records appended so far ([`Mode::Produce`]).
    pub fn records(&self) -> u64 {
        self.state.records.load(Ordering::SeqCst)
    }

    /// From now on, batches over `bytes` are answered MESSAGE_TOO_LARGE and not
    /// appended, as with a topic's `max.message.bytes` ([`Mode::Produce`]).
    pub fn set_max_message_bytes(&self, bytes: u64) {
        self.state.max_message_bytes.store(bytes, Ordering::SeqCst);
    }

    /// Batches answered MESSAGE_TOO_LARGE so far ([`Mode::Produce`]).
    pub fn too_large(&self) -> u64 {
        self.state.too_large.load(Ordering::SeqCst)
    }

    /// Whether a [`Mode::StopReading`] connection has stopped reading.
    pub fn stalled(&self) -> bool {
        self.state.stalled.load(Ordering::SeqCst)
    }
}

impl Drop for FakeBroker {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
    }
}

/// One request's size and header fields, and its whole frame.
struct Header {
    api_key: i16,
    version: i16,
    correlation_id: i32,
    len: usize,
    frame: Vec<u8>,
}

fn read_request(socket: &mut impl Read) -> Option<Header> {
    let mut size = [0u8; 4];
    socket.read_exact(&mut size).ok()?;
    let len = i32::from_be_bytes(size) as usize;
    let mut body = vec![0u8; len];
    socket.read_exact(&mut body).ok()?;
    if len < 8 {
        return None;
    }
    Some(Header {
        api_key: i16::from_be_bytes([body[0], body[1]]),
        version: i16::from_be_bytes([body[2], body[3]]),
        correlation_id: i32::from_be_bytes([body[4], body[5], body[6], body[7]]),
        len,
        frame: body,
    })
}

fn api_versions_answer(h: &Header, mode: Mode) -> Vec<u8> {
    let mut keys = vec![
        ApiKey::ApiVersions,
        ApiKey::Metadata,
        ApiKey::DescribeCluster,
    ];
    if matches!(mode, Mode::Produce { .. }) {
        keys.extend([ApiKey::InitProducerId, ApiKey::Produce]);
    }
    if matches!(mode, Mode::SaslStall(_)) {
        keys.extend([ApiKey::SaslHandshake, ApiKey::SaslAuthenticate]);
    }
    let response = ApiVersionsResponse {
        api_keys: keys
            .iter()
            .map(|k| ApiVersion {
                api_key: *k as i16,
                min_version: k.versions().min,
                // Produce by topic name (v13 names topics by id).
                max_version: if *k == ApiKey::Produce {
                    k.versions().max.min(12)
                } else {
                    k.versions().max
                },
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let mut body = h.correlation_id.to_be_bytes().to_vec();
    response
        .encode_to(&mut body, h.version)
        .expect("encode ApiVersions");
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

fn serve(mut socket: TcpStream, mode: Mode, st: &State) {
    let _ = socket.set_read_timeout(Some(LIFETIME));
    while let Some(h) = read_request(&mut socket) {
        let hostile = match mode {
            Mode::Hostile(hostile) => Some(hostile),
            Mode::HostileAfterNegotiation(hostile) if h.api_key != ApiKey::ApiVersions as i16 => {
                Some(hostile)
            }
            _ => None,
        };
        if let Some(hostile) = hostile {
            if let Some(bytes) = hostile.answer(&h) {
                if socket.write_all(&bytes).is_err() || hostile == Hostile::TlsAlert {
                    return;
                }
            }
            continue;
        }
        if h.api_key == ApiKey::ApiVersions as i16 {
            if socket.write_all(&api_versions_answer(&h, mode)).is_err() {
                return;
            }
            if mode == Mode::StopReading {
                st.stalled.store(true, Ordering::SeqCst);
                let until = Instant::now() + LIFETIME;
                while !st.stop.load(Ordering::SeqCst) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(20));
                }
                return;
            }
            continue;
        }
        st.request_bytes
            .fetch_add(h.len as u64 + 4, Ordering::SeqCst);
        st.requests.fetch_add(1, Ordering::SeqCst);
        if let Mode::SaslStall(stall) = mode {
            match sasl::answer(&h, stall, st) {
                Some(frame) if socket.write_all(&frame).is_err() => return,
                _ => continue,
            }
        }
        if let Mode::Produce { partitions, answer } = mode {
            match produce_mode_answer(&h, partitions, answer, st) {
                Some(frame) if socket.write_all(&frame).is_err() => return,
                _ => continue,
            }
        }
        if let Mode::Flood(size) = mode {
            if !st.flood_claimed.swap(true, Ordering::SeqCst) {
                let mut head = (size as i32).to_be_bytes().to_vec();
                head.extend_from_slice(&h.correlation_id.to_be_bytes());
                if socket.write_all(&head).is_err() {
                    return;
                }
                let block = vec![0u8; 1 << 20];
                let mut left = size - 4;
                while left > 0 {
                    let n = left.min(block.len());
                    if socket.write_all(&block[..n]).is_err() {
                        return;
                    }
                    left -= n;
                }
                st.flooded.store(true, Ordering::SeqCst);
            }
        }
    }
}

/// The [`Mode::Produce`] answer to `h`, if it gets one.
fn produce_mode_answer(h: &Header, partitions: i32, answer: bool, st: &State) -> Option<Vec<u8>> {
    let key = ApiKey::from_i16(h.api_key)?;
    let mut frame = Bytes::from(h.frame.clone());
    RequestHeader::decode(&mut frame, key.request_header_version(h.version)).ok()?;
    let body = match key {
        ApiKey::Metadata => {
            let req = MetadataRequest::decode_from(frame, h.version).ok()?;
            let names: Vec<String> = req
                .topics
                .unwrap_or_default()
                .into_iter()
                .filter_map(|t| t.name)
                .collect();
            let resp = MetadataResponse {
                brokers: vec![MetadataResponseBroker {
                    node_id: 1,
                    host: "127.0.0.1".into(),
                    port: st.port.load(Ordering::SeqCst) as i32,
                    ..Default::default()
                }],
                controller_id: 1,
                cluster_id: Some("fake".into()),
                topics: names
                    .into_iter()
                    .map(|name| MetadataResponseTopic {
                        topic_id: topic_id(&name),
                        name: Some(name),
                        partitions: (0..partitions)
                            .map(|p| MetadataResponsePartition {
                                partition_index: p,
                                leader_id: 1,
                                leader_epoch: 1,
                                replica_nodes: vec![1],
                                isr_nodes: vec![1],
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            encode(&resp, h.version)
        }
        ApiKey::InitProducerId => encode(
            &InitProducerIdResponse {
                producer_id: 4242,
                producer_epoch: 0,
                ..Default::default()
            },
            h.version,
        ),
        ApiKey::Produce => {
            if !answer {
                return None;
            }
            let req = ProduceRequest::decode_from(frame, h.version).ok()?;
            let mut logs = st.logs.lock().ok()?;
            let responses = req
                .topic_data
                .iter()
                .map(|t| TopicProduceResponse {
                    name: t.name.clone(),
                    topic_id: t.topic_id,
                    partition_responses: t
                        .partition_data
                        .iter()
                        .map(|pd| {
                            let bytes = pd.records.clone().unwrap_or_default();
                            let max = st.max_message_bytes.load(Ordering::SeqCst);
                            if max > 0 && bytes.len() as u64 > max {
                                st.too_large.fetch_add(1, Ordering::SeqCst);
                                return PartitionProduceResponse {
                                    index: pd.index,
                                    error_code: KafkaCode::MESSAGE_TOO_LARGE.0,
                                    base_offset: -1,
                                    ..Default::default()
                                };
                            }
                            let count = record_count(bytes);
                            st.records.fetch_add(count as u64, Ordering::SeqCst);
                            let next = logs.entry((t.name.clone(), pd.index)).or_insert(0);
                            let base = *next;
                            *next += count;
                            PartitionProduceResponse {
                                index: pd.index,
                                base_offset: base,
                                log_append_time_ms: -1,
                                log_start_offset: 0,
                                ..Default::default()
                            }
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect();
            if req.acks == 0 {
                return None;
            }
            encode(
                &ProduceResponse {
                    responses,
                    ..Default::default()
                },
                h.version,
            )
        }
        _ => return None,
    };
    let header = ResponseHeader {
        correlation_id: h.correlation_id,
        ..Default::default()
    };
    let mut out = vec![0; 4];
    header
        .encode(&mut out, key.response_header_version(h.version))
        .ok()?;
    out.extend_from_slice(&body);
    let size = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&size.to_be_bytes());
    Some(out)
}

/// The request's API key and its body after the request header.
fn request_body(h: &Header) -> Option<(ApiKey, Bytes)> {
    let key = ApiKey::from_i16(h.api_key)?;
    let mut frame = Bytes::from(h.frame.clone());
    RequestHeader::decode(&mut frame, key.request_header_version(h.version)).ok()?;
    Some((key, frame))
}

/// `m` as the whole framed answer to `h` (size, response header, body).
fn answer_frame<M: Message>(h: &Header, key: ApiKey, m: &M) -> Vec<u8> {
    let header = ResponseHeader {
        correlation_id: h.correlation_id,
        ..Default::default()
    };
    let mut out = vec![0; 4];
    header
        .encode(&mut out, key.response_header_version(h.version))
        .expect("encode a response header");
    out.extend_from_slice(&encode(m, h.version));
    let size = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&size.to_be_bytes());
    out
}

fn encode<M: Message>(m: &M, version: i16) -> Vec<u8> {
    let mut out = Vec::new();
    m.encode_to(&mut out, version).expect("encode fake answer");
    out
}

/// Records in the batches of one partition's `records` field.
fn record_count(mut bytes: Bytes) -> i64 {
    let mut count = 0;
    while !bytes.is_empty() {
        let Ok((batch, used)) = RecordBatch::decode(&bytes, &DecodeOptions::default()) else {
            break;
        };
        count += i64::from(batch.header().records_count);
        if used == 0 || used > bytes.len() {
            break;
        }
        bytes = bytes.slice(used..);
    }
    count
}

/// A stable id per topic name (the same in every Metadata answer).
fn topic_id(name: &str) -> Uuid {
    let mut id = [0u8; 16];
    for (i, b) in name.bytes().enumerate() {
        id[i % 16] = id[i % 16].wrapping_mul(31).wrapping_add(b);
    }
    id[15] |= 1;
    Uuid::from_bytes(id)
}
