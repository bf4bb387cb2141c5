//! A Kafka-aware TCP fault proxy on loopback (tier T2 of `PERF-AND-FAULTS.md` B3):
//! one listener per broker node, each client connection forwarded frame by frame to
//! its own upstream connection, with faults switched on and off from the test thread.
//!
//! It reads the 4-byte size-prefixed frames, remembers each request's API key and
//! version by correlation id, and rewrites the broker addresses in Metadata,
//! FindCoordinator and DescribeCluster responses to its own listeners (node ids it
//! does not proxy are left alone), so a client bootstrapped through the proxy stays
//! behind it. Frames it does not rewrite are forwarded byte for byte.
//!
//! A "reset" here is `shutdown(Both)` on the client socket (and, unless the fault waits
//! for the broker's answer first, the upstream one), then close: the peer sees a FIN,
//! not an RST — std has no stable `SO_LINGER`, `socket2` is not a dependency and the
//! workspace denies `unsafe`. Writes the client makes after that are answered with an
//! RST by the kernel. Either way the client's connection is gone with its requests in
//! flight, which is what faults F3/F4 need.
//!
//! One fault is in effect per node at a time: the node's own ([`FaultProxy::set_for`])
//! if it has one, else the proxy-wide one ([`FaultProxy::set`]). Every fault fired is
//! counted in [`Stats`] and written to the schedule ([`FaultProxy::log`]).
//!
//! Between [`FaultProxy::start_recording`] and [`FaultProxy::take_recording`] it also
//! keeps every request it forwards and the broker's answer (`record.rs`): the capture of
//! the transcripts in `vectors/transcripts/`.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_core::protocol::messages::describe_cluster::DescribeClusterResponse;
use kafka_core::protocol::messages::find_coordinator::FindCoordinatorResponse;
use kafka_core::protocol::messages::metadata::MetadataResponse;
use kafka_core::protocol::messages::response_header::ResponseHeader;
use kafka_core::protocol::{ApiKey, Decodable, Encodable, Message};

mod pump;
mod record;
use pump::{accept_loop, Conn, Pacer};
pub use record::Exchange;
use record::Recording;

/// Frames larger than this end the connection (a broker's default is 100 MiB).
const MAX_FRAME: usize = 512 << 20;
/// After a [`Fault::ResetAfterRequest`], how long the upstream side waits for the
/// broker's answer to the request before it is closed anyway (acks=0 gets none).
const ANSWER_WAIT: Duration = Duration::from_secs(10);
/// Upstream connect timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Bandwidth-capped writes go out in pieces of at most this many bytes.
const PACE_CHUNK: usize = 16 << 10;
/// The schedule keeps at most this many events (later ones are only counted).
const LOG_CAP: usize = 100_000;

/// A fault the proxy applies to the connections of a node (or of every node).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Each forwarded frame, in both directions, waits this long before it is written.
    /// Frames of one direction of a connection are forwarded one after another, so this
    /// also caps that direction at one frame per delay.
    Delay(Duration),
    /// Caps the throughput of each direction of each connection.
    Bandwidth {
        /// Bytes per second.
        bytes_per_sec: u64,
    },
    /// Reads everything from the client, forwards nothing, answers nothing (answers to
    /// requests forwarded before are dropped too).
    BlackHole,
    /// Forwards client → broker, drops broker → client: the broker applies requests,
    /// the client never hears.
    HalfOpen,
    /// Every `every`-th request (of `api`, or of any API) is forwarded, then the client
    /// connection is reset at once; the broker's answer is read and dropped: the request
    /// is applied, its answer lost (F3/F4).
    ResetAfterRequest {
        /// Which request fires: the `every`-th, `2 * every`-th, ... counted since the
        /// fault was set, over all connections it applies to.
        every: u32,
        /// Only requests of this API count; `None`: every request.
        api: Option<ApiKey>,
    },
    /// Every `every`-th request (of `api`, or of any API) is not forwarded; the
    /// connection is reset instead: nothing applied.
    ResetBeforeRequest {
        /// As in [`Fault::ResetAfterRequest`].
        every: u32,
        /// As in [`Fault::ResetAfterRequest`].
        api: Option<ApiKey>,
    },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let api = |a: &Option<ApiKey>| a.map_or("any", ApiKey::name);
        match self {
            Fault::Delay(d) => write!(f, "delay:{}ms", d.as_millis()),
            Fault::Bandwidth { bytes_per_sec } => write!(f, "bandwidth:{bytes_per_sec}"),
            Fault::BlackHole => f.write_str("blackhole"),
            Fault::HalfOpen => f.write_str("halfopen"),
            Fault::ResetAfterRequest { every, api: a } => {
                write!(f, "reset-after:{}:{every}", api(a))
            }
            Fault::ResetBeforeRequest { every, api: a } => {
                write!(f, "reset-before:{}:{every}", api(a))
            }
        }
    }
}

/// Parses the by-hand binary's spelling: `delay:50ms` (or `delay:2s`),
/// `bandwidth:1000000`, `blackhole`, `halfopen`, `reset-after:produce:10`,
/// `reset-before:fetch:5` (the API by its Kafka name, case and `_`/`-` ignored, or
/// `any`).
impl FromStr for Fault {
    type Err = String;

    fn from_str(s: &str) -> Result<Fault, String> {
        let parts: Vec<&str> = s.split(':').collect();
        let number = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("fault {s:?}: {v:?} is not a number"))
        };
        let every = |v: &str| match number(v)? {
            0 => Err(format!("fault {s:?}: every must be at least 1")),
            n => u32::try_from(n).map_err(|_| format!("fault {s:?}: {n} is too large")),
        };
        match parts[..] {
            ["delay", d] => {
                let (n, unit) = match d.strip_suffix("ms") {
                    Some(n) => (n, 1),
                    None => (d.strip_suffix('s').unwrap_or(d), 1000),
                };
                Ok(Fault::Delay(Duration::from_millis(number(n)? * unit)))
            }
            ["bandwidth", b] => match number(b)? {
                0 => Err(format!("fault {s:?}: bandwidth must be at least 1")),
                bytes_per_sec => Ok(Fault::Bandwidth { bytes_per_sec }),
            },
            ["blackhole"] => Ok(Fault::BlackHole),
            ["halfopen"] => Ok(Fault::HalfOpen),
            ["reset-after", a, n] => Ok(Fault::ResetAfterRequest {
                every: every(n)?,
                api: api_by_name(a).ok_or_else(|| format!("fault {s:?}: no API {a:?}"))?,
            }),
            ["reset-before", a, n] => Ok(Fault::ResetBeforeRequest {
                every: every(n)?,
                api: api_by_name(a).ok_or_else(|| format!("fault {s:?}: no API {a:?}"))?,
            }),
            _ => Err(format!(
                "fault {s:?}: expected delay:MS|bandwidth:BYTES|blackhole|halfopen|\
                 reset-after:API:N|reset-before:API:N"
            )),
        }
    }
}

/// `Some(None)` for `any`, `Some(Some(key))` for a known API name.
fn api_by_name(name: &str) -> Option<Option<ApiKey>> {
    let norm = |s: &str| s.replace(['_', '-'], "").to_ascii_lowercase();
    if norm(name) == "any" {
        return Some(None);
    }
    (0..2000)
        .filter_map(ApiKey::from_i16)
        .find(|k| norm(k.name()) == norm(name))
        .map(Some)
}

/// Counters of what the proxy did, since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Client connections accepted.
    pub connections: u64,
    /// Upstream connections that could not be made (the client connection is closed).
    pub upstream_failures: u64,
    /// Requests forwarded to a broker.
    pub requests_forwarded: u64,
    /// Responses forwarded to a client.
    pub responses_forwarded: u64,
    /// Responses whose broker addresses were rewritten to the proxy's.
    pub rewritten_responses: u64,
    /// Connections cut by a fault or by [`FaultProxy::reset_all`].
    pub resets: u64,
    /// Requests read and not forwarded ([`Fault::BlackHole`], [`Fault::ResetBeforeRequest`]).
    pub dropped_requests: u64,
    /// Responses read and not forwarded ([`Fault::BlackHole`], [`Fault::HalfOpen`], and
    /// answers after a [`Fault::ResetAfterRequest`]).
    pub dropped_responses: u64,
    /// Frames held back by [`Fault::Delay`].
    pub delayed_frames: u64,
    /// Frames paced by [`Fault::Bandwidth`].
    pub paced_frames: u64,
}

/// One entry of the fault schedule: what happened, when, on which connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Since the proxy started.
    pub at: Duration,
    /// The connection (numbered from 1 in accept order), if it concerns one.
    pub conn: Option<u64>,
    /// The broker node, if it concerns one.
    pub node: Option<i32>,
    /// What happened.
    pub what: String,
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:>8.3}s", self.at.as_secs_f64())?;
        match self.conn {
            Some(c) => write!(f, " conn {c:<4}")?,
            None => f.write_str("          ")?,
        }
        match self.node {
            Some(n) => write!(f, " node {n:<3}")?,
            None => f.write_str("         ")?,
        }
        write!(f, " {}", self.what)
    }
}

/// A running fault proxy; dropping it closes its listeners and connections and waits
/// for its threads.
pub struct FaultProxy {
    shared: Arc<Shared>,
    listeners: Vec<(i32, SocketAddr)>,
    accept_threads: Vec<JoinHandle<()>>,
}

impl FaultProxy {
    /// Starts one listener on `127.0.0.1:0` per `(node id, upstream host:port)`.
    pub fn start(upstreams: &[(i32, String)]) -> io::Result<FaultProxy> {
        let mut bound = Vec::new();
        for (node, upstream) in upstreams {
            let target = upstream.to_socket_addrs()?.next().ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("node {node}: {upstream:?} resolves to nothing"),
                )
            })?;
            let listener = TcpListener::bind("127.0.0.1:0")?;
            listener.set_nonblocking(true)?;
            bound.push((*node, target, listener));
        }
        let mut routes = HashMap::new();
        for (node, _, listener) in &bound {
            routes.insert(*node, listener.local_addr()?);
        }
        let shared = Arc::new(Shared {
            started: Instant::now(),
            stop: AtomicBool::new(false),
            routes,
            faults: Mutex::new(Faults::default()),
            conns: Mutex::new(HashMap::new()),
            threads: Mutex::new(Vec::new()),
            next_conn: AtomicU64::new(1),
            counters: Counters::default(),
            log: Mutex::new(Vec::new()),
            recording: Mutex::new(None),
        });
        let mut listeners = Vec::new();
        let mut accept_threads = Vec::new();
        for (node, target, listener) in bound {
            let addr = listener.local_addr()?;
            listeners.push((node, addr));
            shared.record(
                None,
                Some(node),
                format!("listening on {addr} for {target}"),
            );
            let sh = shared.clone();
            accept_threads.push(
                std::thread::Builder::new()
                    .name(format!("fault-proxy-accept-{node}"))
                    .spawn(move || accept_loop(&sh, node, target, &listener))?,
            );
        }
        Ok(FaultProxy {
            shared,
            listeners,
            accept_threads,
        })
    }

    /// The proxy's listener for `node`.
    pub fn addr(&self, node: i32) -> Option<SocketAddr> {
        self.shared.routes.get(&node).copied()
    }

    /// Every `(node id, listener)`, in the order given to [`FaultProxy::start`].
    pub fn listeners(&self) -> &[(i32, SocketAddr)] {
        &self.listeners
    }

    /// The listeners as a `bootstrap.servers` value.
    pub fn bootstrap(&self) -> String {
        let addrs: Vec<String> = self.listeners.iter().map(|(_, a)| a.to_string()).collect();
        addrs.join(",")
    }

    /// Puts `fault` in effect for every node without a fault of its own (replacing the
    /// proxy-wide one; request counting starts afresh).
    pub fn set(&self, fault: Fault) {
        lock(&self.shared.faults).global = Some(Active::new(fault));
        self.shared.record(None, None, format!("set {fault}"));
    }

    /// Puts `fault` in effect for `node` only (it takes precedence over [`FaultProxy::set`]).
    pub fn set_for(&self, node: i32, fault: Fault) {
        lock(&self.shared.faults)
            .per_node
            .insert(node, Active::new(fault));
        self.shared.record(None, Some(node), format!("set {fault}"));
    }

    /// Ends every fault, proxy-wide and per node.
    pub fn clear(&self) {
        let mut faults = lock(&self.shared.faults);
        faults.global = None;
        faults.per_node.clear();
        drop(faults);
        self.shared.record(None, None, "clear".into());
    }

    /// Ends `node`'s own fault (the proxy-wide one, if any, applies again).
    pub fn clear_for(&self, node: i32) {
        lock(&self.shared.faults).per_node.remove(&node);
        self.shared.record(None, Some(node), "clear".into());
    }

    /// Cuts every current connection now (both sides); each counts as a reset.
    pub fn reset_all(&self) {
        let conns: Vec<Arc<Conn>> = lock(&self.shared.conns).values().cloned().collect();
        self.shared.record(
            None,
            None,
            format!("reset_all: {} connections", conns.len()),
        );
        for c in conns {
            c.reset_client(&self.shared);
            c.cut_upstream();
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        self.shared.counters.snapshot()
    }

    /// Starts recording every exchange from now on (see [`Exchange`]); a recording
    /// already running is discarded.
    pub fn start_recording(&self) {
        *lock(&self.shared.recording) = Some(Recording::new());
    }

    /// Stops recording and returns the exchanges in the order their requests were
    /// forwarded (empty if no recording ran).
    pub fn take_recording(&self) -> Vec<Exchange> {
        lock(&self.shared.recording)
            .take()
            .map_or_else(Vec::new, Recording::finish)
    }

    /// The fault schedule so far: faults set and cleared, connections, and every fault
    /// that fired, in order.
    pub fn log(&self) -> Vec<Event> {
        lock(&self.shared.log).clone()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for t in self.accept_threads.drain(..) {
            let _ = t.join();
        }
        let conns: Vec<Arc<Conn>> = lock(&self.shared.conns).drain().map(|(_, c)| c).collect();
        for c in conns {
            c.cut_client();
            c.cut_upstream();
        }
        let threads = std::mem::take(&mut *lock(&self.shared.threads));
        for t in threads {
            let _ = t.join();
        }
    }
}

impl fmt::Debug for FaultProxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultProxy")
            .field("listeners", &self.listeners)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

/// A poisoned lock only means a proxy thread panicked; the data is still usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

struct Shared {
    started: Instant,
    stop: AtomicBool,
    /// The proxy's listener per node id.
    routes: HashMap<i32, SocketAddr>,
    faults: Mutex<Faults>,
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    next_conn: AtomicU64,
    counters: Counters,
    log: Mutex<Vec<Event>>,
    /// The recording in progress, if any.
    recording: Mutex<Option<Recording>>,
}

#[derive(Default)]
struct Faults {
    global: Option<Active>,
    per_node: HashMap<i32, Active>,
}

/// A fault in effect and the requests it counted.
struct Active {
    fault: Fault,
    requests: u64,
}

impl Active {
    fn new(fault: Fault) -> Active {
        Active { fault, requests: 0 }
    }
}

#[derive(Default)]
struct Counters {
    connections: AtomicU64,
    upstream_failures: AtomicU64,
    requests_forwarded: AtomicU64,
    responses_forwarded: AtomicU64,
    rewritten_responses: AtomicU64,
    resets: AtomicU64,
    dropped_requests: AtomicU64,
    dropped_responses: AtomicU64,
    delayed_frames: AtomicU64,
    paced_frames: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> Stats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Stats {
            connections: get(&self.connections),
            upstream_failures: get(&self.upstream_failures),
            requests_forwarded: get(&self.requests_forwarded),
            responses_forwarded: get(&self.responses_forwarded),
            rewritten_responses: get(&self.rewritten_responses),
            resets: get(&self.resets),
            dropped_requests: get(&self.dropped_requests),
            dropped_responses: get(&self.dropped_responses),
            delayed_frames: get(&self.delayed_frames),
            paced_frames: get(&self.paced_frames),
        }
    }
}

/// What to do with one request.
enum OnRequest {
    Forward(Shape),
    Drop,
    ResetBefore,
    ForwardThenReset(Shape),
}

/// How a forwarded frame is slowed.
#[derive(Clone, Copy, Default)]
struct Shape {
    delay: Option<Duration>,
    bytes_per_sec: Option<u64>,
}

impl Shape {
    fn of(fault: Option<Fault>) -> Shape {
        match fault {
            Some(Fault::Delay(d)) => Shape {
                delay: Some(d),
                bytes_per_sec: None,
            },
            Some(Fault::Bandwidth { bytes_per_sec }) => Shape {
                delay: None,
                bytes_per_sec: Some(bytes_per_sec.max(1)),
            },
            _ => Shape::default(),
        }
    }
}

impl Shared {
    /// Records a request about to be forwarded, if a recording runs.
    fn record_request(&self, conn: &Conn, corr: i32, frame: &[u8]) {
        if let Some(r) = lock(&self.recording).as_mut() {
            r.request(conn.id, conn.node, corr, frame);
        }
    }

    fn record(&self, conn: Option<u64>, node: Option<i32>, what: String) {
        let mut log = lock(&self.log);
        if log.len() < LOG_CAP {
            log.push(Event {
                at: self.started.elapsed(),
                conn,
                node,
                what,
            });
        }
    }

    /// The fault in effect for `node`, with its request counter.
    fn active(faults: &mut Faults, node: i32) -> Option<&mut Active> {
        match faults.per_node.get_mut(&node) {
            Some(a) => Some(a),
            None => faults.global.as_mut(),
        }
    }

    fn on_request(&self, node: i32, key: Option<ApiKey>) -> OnRequest {
        let mut faults = lock(&self.faults);
        let Some(active) = Shared::active(&mut faults, node) else {
            return OnRequest::Forward(Shape::default());
        };
        let fires = |active: &mut Active, every: u32, api: Option<ApiKey>| {
            if api.is_some() && api != key {
                return false;
            }
            active.requests += 1;
            active.requests.is_multiple_of(u64::from(every.max(1)))
        };
        let fault = active.fault;
        match fault {
            Fault::BlackHole => OnRequest::Drop,
            Fault::ResetBeforeRequest { every, api } if fires(active, every, api) => {
                OnRequest::ResetBefore
            }
            Fault::ResetAfterRequest { every, api } if fires(active, every, api) => {
                OnRequest::ForwardThenReset(Shape::default())
            }
            f => OnRequest::Forward(Shape::of(Some(f))),
        }
    }

    /// `None`: drop the response.
    fn on_response(&self, node: i32) -> Option<Shape> {
        let mut faults = lock(&self.faults);
        let fault = Shared::active(&mut faults, node).map(|a| a.fault);
        match fault {
            Some(Fault::BlackHole | Fault::HalfOpen) => None,
            f => Some(Shape::of(f)),
        }
    }

    /// Writes `frame` to `to`, slowed as `shape` says.
    fn forward(&self, to: &mut TcpStream, frame: &[u8], shape: Shape, pace: &mut Pacer) -> bool {
        if let Some(d) = shape.delay {
            self.counters.delayed_frames.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(d);
        }
        match shape.bytes_per_sec {
            Some(rate) => {
                self.counters.paced_frames.fetch_add(1, Ordering::Relaxed);
                frame
                    .chunks(PACE_CHUNK)
                    .all(|chunk| pace.write(to, chunk, rate).is_ok())
            }
            None => to.write_all(frame).is_ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_parse_and_print_back() {
        for s in [
            "delay:50ms",
            "bandwidth:1000000",
            "blackhole",
            "halfopen",
            "reset-after:Produce:10",
            "reset-before:Fetch:5",
            "reset-after:any:3",
        ] {
            let f: Fault = s.parse().expect(s);
            assert_eq!(f.to_string(), s);
        }
        assert_eq!(
            "reset-after:produce:10".parse::<Fault>(),
            Ok(Fault::ResetAfterRequest {
                every: 10,
                api: Some(ApiKey::Produce)
            })
        );
        assert_eq!(
            "reset-before:find_coordinator:2".parse::<Fault>(),
            Ok(Fault::ResetBeforeRequest {
                every: 2,
                api: Some(ApiKey::FindCoordinator)
            })
        );
        assert_eq!(
            "delay:2s".parse::<Fault>(),
            Ok(Fault::Delay(Duration::from_secs(2)))
        );
        for bad in ["delay", "reset-after:nope:1", "reset-before:produce:0", "x"] {
            assert!(bad.parse::<Fault>().is_err(), "{bad}");
        }
    }
}
