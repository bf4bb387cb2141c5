//! A fake broker on loopback for the adapter suites (`adapter_bounds`, `adapter_memory`):
//! it answers ApiVersions like a broker and then misbehaves on purpose.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_core::protocol::messages::api_versions::response::ApiVersion;
use kafka_core::protocol::messages::api_versions::ApiVersionsResponse;
use kafka_core::protocol::{ApiKey, Message};

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
}

impl FakeBroker {
    /// Starts a fake broker in `mode` on an ephemeral loopback port.
    pub fn start(mode: Mode) -> FakeBroker {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        listener.set_nonblocking(true).expect("nonblocking");
        let state = Arc::new(State::default());
        let st = state.clone();
        std::thread::spawn(move || {
            let until = Instant::now() + LIFETIME;
            while !st.stop.load(Ordering::SeqCst) && Instant::now() < until {
                match listener.accept() {
                    Ok((socket, _)) => {
                        st.connections.fetch_add(1, Ordering::SeqCst);
                        let st = st.clone();
                        std::thread::spawn(move || serve(socket, mode, &st));
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

    /// Bytes of requests other than ApiVersions read so far.
    pub fn request_bytes(&self) -> u64 {
        self.state.request_bytes.load(Ordering::SeqCst)
    }

    /// Whether the [`Mode::Flood`] frame was written completely.
    pub fn flooded(&self) -> bool {
        self.state.flooded.load(Ordering::SeqCst)
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

/// One request's size and header fields.
struct Header {
    api_key: i16,
    version: i16,
    correlation_id: i32,
    len: usize,
}

fn read_request(socket: &mut TcpStream) -> Option<Header> {
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
    })
}

fn api_versions_answer(h: &Header) -> Vec<u8> {
    let keys = [
        ApiKey::ApiVersions,
        ApiKey::Metadata,
        ApiKey::DescribeCluster,
    ];
    let response = ApiVersionsResponse {
        api_keys: keys
            .iter()
            .map(|k| ApiVersion {
                api_key: *k as i16,
                min_version: k.versions().min,
                max_version: k.versions().max,
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
        if h.api_key == ApiKey::ApiVersions as i16 {
            if socket.write_all(&api_versions_answer(&h)).is_err() {
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
