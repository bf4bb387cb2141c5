//! The fault proxy without a real broker: a tiny in-test broker (two nodes) behind it.
//! Metadata, FindCoordinator and DescribeCluster answers come back pointing at the
//! proxy; each fault does what it says (delay and bandwidth measurable, black hole and
//! half-open answer nothing, resets counted, with or without the request applied); and
//! the blocking producer keeps delivering through resets against the fake broker.

use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_core::protocol::messages::api_versions::response::ApiVersion;
use kafka_core::protocol::messages::api_versions::{ApiVersionsRequest, ApiVersionsResponse};
use kafka_core::protocol::messages::describe_cluster::response::DescribeClusterBroker;
use kafka_core::protocol::messages::describe_cluster::{
    DescribeClusterRequest, DescribeClusterResponse,
};
use kafka_core::protocol::messages::find_coordinator::response::Coordinator;
use kafka_core::protocol::messages::find_coordinator::{
    FindCoordinatorRequest, FindCoordinatorResponse,
};
use kafka_core::protocol::messages::metadata::request::MetadataRequestTopic;
use kafka_core::protocol::messages::metadata::response::{
    MetadataResponseBroker, MetadataResponseTopic,
};
use kafka_core::protocol::messages::metadata::{MetadataRequest, MetadataResponse};
use kafka_core::protocol::messages::request_header::RequestHeader;
use kafka_core::protocol::messages::response_header::ResponseHeader;
use kafka_core::protocol::{
    read_response, write_request, ApiKey, Decodable, Encodable, Message, Request,
};
use kafka_tests::fault_proxy::{Fault, FaultProxy, Stats};

/// A node that answers ApiVersions, Metadata, FindCoordinator and DescribeCluster with
/// a fixed cluster (nodes 1 and 2 at `addrs`, node 3 at `10.0.0.3:9092`), and records
/// `(api key, correlation id)` of every request it reads.
struct MiniBroker {
    addr: String,
    seen: Arc<Mutex<Vec<(i16, i32)>>>,
    stop: Arc<AtomicBool>,
}

/// The cluster the mini brokers describe: node id → `(host, port)`.
type Cluster = Arc<Mutex<HashMap<i32, (String, i32)>>>;

impl MiniBroker {
    fn start(cluster: &Cluster) -> MiniBroker {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr").to_string();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st, c) = (seen.clone(), stop.clone(), cluster.clone());
        std::thread::spawn(move || {
            while !st.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((socket, _)) => {
                        let (s, c) = (s.clone(), c.clone());
                        std::thread::spawn(move || serve(socket, &s, &c));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        MiniBroker { addr, seen, stop }
    }

    fn seen(&self, key: ApiKey) -> usize {
        let seen = self.seen.lock().unwrap();
        seen.iter().filter(|(k, _)| *k == key as i16).count()
    }

    /// Waits up to 5 s until `n` requests of `key` were read (the client may hear of
    /// a reset before the broker read the request the proxy forwarded).
    fn wait_seen(&self, key: ApiKey, n: usize) {
        let start = Instant::now();
        while self.seen(key) < n && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(self.seen(key), n, "{key:?} requests the broker read");
    }
}

impl Drop for MiniBroker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn serve(mut socket: TcpStream, seen: &Mutex<Vec<(i16, i32)>>, cluster: &Cluster) {
    let _ = socket.set_read_timeout(Some(Duration::from_secs(60)));
    loop {
        let mut size = [0u8; 4];
        if io::Read::read_exact(&mut socket, &mut size).is_err() {
            return;
        }
        let mut frame = vec![0u8; i32::from_be_bytes(size) as usize];
        if io::Read::read_exact(&mut socket, &mut frame).is_err() {
            return;
        }
        let mut body = Bytes::from(frame);
        let key = ApiKey::from_i16(i16::from_be_bytes([body[0], body[1]])).expect("known API");
        let version = i16::from_be_bytes([body[2], body[3]]);
        let header =
            RequestHeader::decode(&mut body, key.request_header_version(version)).expect("header");
        seen.lock()
            .unwrap()
            .push((key as i16, header.correlation_id));
        let nodes = cluster.lock().unwrap().clone();
        let mut out = Vec::new();
        match key {
            ApiKey::ApiVersions => ApiVersionsResponse {
                api_keys: [
                    ApiKey::ApiVersions,
                    ApiKey::Metadata,
                    ApiKey::FindCoordinator,
                    ApiKey::DescribeCluster,
                ]
                .iter()
                .map(|k| ApiVersion {
                    api_key: *k as i16,
                    min_version: k.versions().min,
                    max_version: k.versions().max,
                    ..Default::default()
                })
                .collect(),
                ..Default::default()
            }
            .encode_to(&mut out, version),
            ApiKey::Metadata => {
                let req = MetadataRequest::decode_from(body, version).expect("metadata");
                let mut brokers: Vec<_> = nodes
                    .iter()
                    .map(|(id, (host, port))| MetadataResponseBroker {
                        node_id: *id,
                        host: host.clone(),
                        port: *port,
                        ..Default::default()
                    })
                    .collect();
                brokers.sort_by_key(|b| b.node_id);
                MetadataResponse {
                    brokers,
                    controller_id: 1,
                    cluster_id: Some("mini".into()),
                    // Echoes the topics asked for (a large request gets a large answer).
                    topics: req
                        .topics
                        .unwrap_or_default()
                        .into_iter()
                        .map(|t| MetadataResponseTopic {
                            name: t.name,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }
                .encode_to(&mut out, version)
            }
            ApiKey::FindCoordinator => {
                let (host, port) = nodes[&2].clone();
                // v0-3: one coordinator at the top level; v4+: one per key.
                let resp = if version < 4 {
                    FindCoordinatorResponse {
                        node_id: 2,
                        host,
                        port,
                        ..Default::default()
                    }
                } else {
                    FindCoordinatorResponse {
                        coordinators: vec![
                            Coordinator {
                                key: "g".into(),
                                node_id: 2,
                                host,
                                port,
                                ..Default::default()
                            },
                            Coordinator {
                                key: "h".into(),
                                node_id: 3,
                                host: nodes[&3].0.clone(),
                                port: nodes[&3].1,
                                ..Default::default()
                            },
                        ],
                        ..Default::default()
                    }
                };
                resp.encode_to(&mut out, version)
            }
            ApiKey::DescribeCluster => {
                let mut brokers: Vec<_> = nodes
                    .iter()
                    .map(|(id, (host, port))| DescribeClusterBroker {
                        broker_id: *id,
                        host: host.clone(),
                        port: *port,
                        ..Default::default()
                    })
                    .collect();
                brokers.sort_by_key(|b| b.broker_id);
                DescribeClusterResponse {
                    cluster_id: "mini".into(),
                    controller_id: 1,
                    brokers,
                    ..Default::default()
                }
                .encode_to(&mut out, version)
            }
            other => panic!("mini broker: unexpected {other:?}"),
        }
        .expect("encode answer");
        let mut frame = vec![0u8; 4];
        ResponseHeader {
            correlation_id: header.correlation_id,
            ..Default::default()
        }
        .encode(&mut frame, key.response_header_version(version))
        .expect("header");
        frame.extend_from_slice(&out);
        let size = (frame.len() - 4) as i32;
        frame[..4].copy_from_slice(&size.to_be_bytes());
        if socket.write_all(&frame).is_err() {
            return;
        }
    }
}

/// Two mini brokers (nodes 1 and 2) and a proxy in front of both.
fn setup() -> (MiniBroker, MiniBroker, FaultProxy) {
    let cluster: Cluster = Arc::default();
    let b1 = MiniBroker::start(&cluster);
    let b2 = MiniBroker::start(&cluster);
    {
        let mut c = cluster.lock().unwrap();
        for (id, b) in [(1, &b1), (2, &b2)] {
            let (h, p) = b.addr.rsplit_once(':').unwrap();
            c.insert(id, (h.to_string(), p.parse().unwrap()));
        }
        c.insert(3, ("10.0.0.3".into(), 9092));
    }
    let proxy = FaultProxy::start(&[(1, b1.addr.clone()), (2, b2.addr.clone())]).expect("proxy");
    (b1, b2, proxy)
}

/// A client connection with a read timeout.
struct Client {
    stream: TcpStream,
    corr: i32,
}

impl Client {
    fn connect(addr: impl std::net::ToSocketAddrs, timeout: Duration) -> Client {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(timeout)).expect("timeout");
        Client { stream, corr: 0 }
    }

    fn call<R: Request>(&mut self, version: i16, req: &R) -> io::Result<R::Response> {
        self.corr += 1;
        let mut buf = Vec::new();
        write_request(&mut buf, version, self.corr, Some("fp-test"), req).expect("encode");
        self.stream.write_all(&buf)?;
        let mut size = [0u8; 4];
        io::Read::read_exact(&mut self.stream, &mut size)?;
        let mut frame = vec![0u8; i32::from_be_bytes(size) as usize];
        io::Read::read_exact(&mut self.stream, &mut frame)?;
        let (corr, resp) = read_response::<R>(Bytes::from(frame), version)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        assert_eq!(corr, self.corr);
        Ok(resp)
    }

    fn metadata(&mut self) -> io::Result<MetadataResponse> {
        self.call(ApiKey::Metadata.versions().max, &MetadataRequest::default())
    }
}

fn print(test: &str, proxy: &FaultProxy) -> Stats {
    let stats = proxy.stats();
    eprintln!("{test}: fault schedule:");
    for e in proxy.log() {
        eprintln!("  {e}");
    }
    eprintln!("{test}: {stats:?}");
    stats
}

/// Waits up to 5 s for `cond` on the proxy's stats.
fn eventually(proxy: &FaultProxy, what: &str, cond: impl Fn(&Stats) -> bool) {
    let start = Instant::now();
    while !cond(&proxy.stats()) {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{what}: {:?}",
            proxy.stats()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

#[test]
fn broker_addresses_in_answers_point_at_the_proxy() {
    let (_b1, _b2, proxy) = setup();
    let p1 = proxy.addr(1).unwrap();
    let p2 = proxy.addr(2).unwrap();
    let at = |a: std::net::SocketAddr| (a.ip().to_string(), i32::from(a.port()));
    let mut c = Client::connect(p1, Duration::from_secs(5));
    // ApiVersions is forwarded as is.
    let versions: ApiVersionsResponse = c
        .call(3, &ApiVersionsRequest::default())
        .expect("api versions");
    assert_eq!(versions.api_keys.len(), 4);

    let m = c.metadata().expect("metadata");
    let brokers: Vec<_> = m
        .brokers
        .iter()
        .map(|b| (b.node_id, (b.host.clone(), b.port)))
        .collect();
    assert_eq!(
        brokers,
        vec![
            (1, at(p1)),
            (2, at(p2)),
            (3, ("10.0.0.3".to_string(), 9092)),
        ],
        "proxied nodes rewritten, unknown node left as is"
    );
    // An old Metadata version too (header v0, classic strings).
    let old: MetadataResponse = c.call(1, &MetadataRequest::default()).expect("v1");
    assert_eq!((old.brokers[1].host.clone(), old.brokers[1].port), at(p2));

    // FindCoordinator: the top-level coordinator (v0-3) and the list (v4+).
    let fc3: FindCoordinatorResponse = c
        .call(
            3,
            &FindCoordinatorRequest {
                key: "g".into(),
                ..Default::default()
            },
        )
        .expect("find coordinator v3");
    assert_eq!((fc3.node_id, (fc3.host, fc3.port)), (2, at(p2)));
    let max = ApiKey::FindCoordinator.versions().max;
    let fc: FindCoordinatorResponse = c
        .call(
            max,
            &FindCoordinatorRequest {
                coordinator_keys: vec!["g".into(), "h".into()],
                ..Default::default()
            },
        )
        .expect("find coordinator");
    assert_eq!(
        (fc.coordinators[0].host.clone(), fc.coordinators[0].port),
        at(p2)
    );
    assert_eq!(fc.coordinators[1].host, "10.0.0.3");

    let dc: DescribeClusterResponse = c
        .call(
            ApiKey::DescribeCluster.versions().max,
            &DescribeClusterRequest::default(),
        )
        .expect("describe cluster");
    assert_eq!((dc.brokers[0].host.clone(), dc.brokers[0].port), at(p1));
    assert_eq!((dc.brokers[1].host.clone(), dc.brokers[1].port), at(p2));
    assert_eq!(dc.brokers[2].port, 9092);

    // Through node 2's listener: the same cluster, so the client stays behind the proxy.
    let mut c2 = Client::connect(p2, Duration::from_secs(5));
    assert_eq!(c2.metadata().expect("metadata").brokers[0].port, at(p1).1);

    // (Counted after each write: the answer can be read before its count.)
    eventually(&proxy, "7 requests and answers, 6 rewritten", |s| {
        (
            s.requests_forwarded,
            s.responses_forwarded,
            s.rewritten_responses,
        ) == (7, 7, 6)
    });
    let stats = print("rewrite", &proxy);
    assert_eq!(stats.connections, 2);
}

#[test]
fn delay_holds_every_frame_both_ways() {
    let (_b1, _b2, proxy) = setup();
    let mut c = Client::connect(proxy.addr(1).unwrap(), Duration::from_secs(5));
    let start = Instant::now();
    c.metadata().expect("metadata");
    let base = start.elapsed();

    proxy.set(Fault::Delay(Duration::from_millis(150)));
    let start = Instant::now();
    c.metadata().expect("metadata");
    let delayed = start.elapsed();

    proxy.clear();
    let start = Instant::now();
    c.metadata().expect("metadata");
    let after = start.elapsed();
    eprintln!("delay: round trip {base:?}, with 150 ms delay {delayed:?}, cleared {after:?}");
    assert!(delayed >= Duration::from_millis(300), "{delayed:?}");
    assert!(after < Duration::from_millis(250), "cleared: {after:?}");
    let stats = print("delay", &proxy);
    assert_eq!(stats.delayed_frames, 2);
}

#[test]
fn delay_for_one_node_only() {
    let (_b1, _b2, proxy) = setup();
    proxy.set_for(2, Fault::Delay(Duration::from_millis(200)));
    let mut c1 = Client::connect(proxy.addr(1).unwrap(), Duration::from_secs(5));
    let mut c2 = Client::connect(proxy.addr(2).unwrap(), Duration::from_secs(5));
    let start = Instant::now();
    c1.metadata().expect("metadata");
    let fast = start.elapsed();
    let start = Instant::now();
    c2.metadata().expect("metadata");
    let slow = start.elapsed();
    eprintln!("per node: node 1 {fast:?}, node 2 (delayed) {slow:?}");
    assert!(fast < Duration::from_millis(200), "{fast:?}");
    assert!(slow >= Duration::from_millis(400), "{slow:?}");
    print("per node", &proxy);
}

#[test]
fn bandwidth_caps_a_large_exchange() {
    let (_b1, _b2, proxy) = setup();
    let mut c = Client::connect(proxy.addr(1).unwrap(), Duration::from_secs(10));
    // ~200 KB each way: 4,000 topic names of 50 bytes.
    let req = MetadataRequest {
        topics: Some(
            (0..4000)
                .map(|i| MetadataRequestTopic {
                    name: Some(format!("{i:0>50}")),
                    ..Default::default()
                })
                .collect(),
        ),
        ..Default::default()
    };
    let v = ApiKey::Metadata.versions().max;
    let start = Instant::now();
    c.call(v, &req).expect("metadata");
    let base = start.elapsed();
    proxy.set(Fault::Bandwidth {
        bytes_per_sec: 1_000_000,
    });
    let start = Instant::now();
    let resp = c.call(v, &req).expect("metadata");
    let capped = start.elapsed();
    assert_eq!(resp.topics.len(), 4000);
    eprintln!("bandwidth: ~400 KB exchanged in {base:?}, at 1 MB/s per direction {capped:?}");
    // ~200 KB at 1 MB/s per direction, both ways in turn: at least ~0.4 s.
    assert!(capped >= Duration::from_millis(350), "{capped:?}");
    let stats = print("bandwidth", &proxy);
    assert_eq!(stats.paced_frames, 2);
}

#[test]
fn black_hole_answers_nothing_and_forwards_nothing() {
    let (b1, _b2, proxy) = setup();
    let mut c = Client::connect(proxy.addr(1).unwrap(), Duration::from_millis(500));
    c.metadata().expect("metadata");
    proxy.set(Fault::BlackHole);
    let e = c.metadata().expect_err("no answer in a black hole");
    assert!(is_timeout(&e), "{e:?}");
    assert_eq!(b1.seen(ApiKey::Metadata), 1, "nothing forwarded");
    // A new connection is accepted, and swallowed too.
    let mut c2 = Client::connect(proxy.addr(1).unwrap(), Duration::from_millis(300));
    assert!(is_timeout(&c2.metadata().expect_err("no answer")));
    proxy.clear();
    let mut c3 = Client::connect(proxy.addr(1).unwrap(), Duration::from_secs(5));
    c3.metadata().expect("answered again once cleared");
    assert_eq!(b1.seen(ApiKey::Metadata), 2);
    let stats = print("black hole", &proxy);
    assert_eq!(stats.dropped_requests, 2);
    assert_eq!(stats.resets, 0);
}

#[test]
fn half_open_broker_gets_the_request_client_gets_no_answer() {
    let (b1, _b2, proxy) = setup();
    let mut c = Client::connect(proxy.addr(1).unwrap(), Duration::from_millis(500));
    c.metadata().expect("metadata");
    proxy.set(Fault::HalfOpen);
    let e = c.metadata().expect_err("no answer when half open");
    assert!(is_timeout(&e), "{e:?}");
    b1.wait_seen(ApiKey::Metadata, 2);
    eventually(&proxy, "2 forwarded, 1 answer dropped", |s| {
        (s.requests_forwarded, s.dropped_responses) == (2, 1)
    });
    print("half open", &proxy);
}

#[test]
fn reset_after_request_applies_it_and_loses_the_answer() {
    let (b1, _b2, proxy) = setup();
    proxy.set(Fault::ResetAfterRequest {
        every: 2,
        api: Some(ApiKey::Metadata),
    });
    let mut c = Client::connect(proxy.addr(1).unwrap(), Duration::from_secs(5));
    // ApiVersions does not count; the first Metadata passes, the second fires.
    c.call::<ApiVersionsRequest>(3, &ApiVersionsRequest::default())
        .expect("api versions");
    c.metadata().expect("first metadata");
    let e = c.metadata().expect_err("reset");
    assert!(!is_timeout(&e), "a reset, not a timeout: {e:?}");
    b1.wait_seen(ApiKey::Metadata, 2);
    eventually(&proxy, "answer read and dropped", |s| {
        s.dropped_responses == 1
    });
    // The count goes on over connections: 3rd passes, 4th fires.
    let mut c = Client::connect(proxy.addr(1).unwrap(), Duration::from_secs(5));
    c.metadata().expect("third metadata");
    c.metadata().expect_err("fourth: reset");
    eventually(&proxy, "second reset", |s| s.dropped_responses == 2);
    let stats = print("reset after", &proxy);
    assert_eq!(stats.resets, 2);
    b1.wait_seen(ApiKey::Metadata, 4);
}

#[test]
fn reset_before_request_cuts_without_forwarding() {
    let (b1, _b2, proxy) = setup();
    proxy.set(Fault::ResetBeforeRequest {
        every: 1,
        api: Some(ApiKey::Metadata),
    });
    let mut c = Client::connect(proxy.addr(1).unwrap(), Duration::from_secs(5));
    c.call::<ApiVersionsRequest>(3, &ApiVersionsRequest::default())
        .expect("other APIs pass");
    let e = c.metadata().expect_err("reset");
    assert!(!is_timeout(&e), "a reset, not a timeout: {e:?}");
    assert_eq!(b1.seen(ApiKey::Metadata), 0, "nothing applied");
    let stats = print("reset before", &proxy);
    assert_eq!((stats.resets, stats.dropped_requests), (1, 1));
}

#[test]
fn reset_all_cuts_every_connection_and_drop_closes_everything() {
    let (_b1, _b2, proxy) = setup();
    let mut c1 = Client::connect(proxy.addr(1).unwrap(), Duration::from_secs(5));
    let mut c2 = Client::connect(proxy.addr(2).unwrap(), Duration::from_secs(5));
    c1.metadata().expect("metadata");
    c2.metadata().expect("metadata");
    proxy.reset_all();
    assert!(c1.metadata().is_err());
    assert!(c2.metadata().is_err());
    let stats = print("reset all", &proxy);
    assert_eq!(stats.resets, 2);

    let mut c3 = Client::connect(proxy.addr(1).unwrap(), Duration::from_secs(5));
    c3.metadata().expect("new connections work");
    let addr = proxy.addr(1).unwrap();
    let start = Instant::now();
    drop(proxy);
    assert!(start.elapsed() < Duration::from_secs(2), "threads exit");
    assert!(c3.metadata().is_err(), "connection closed");
    assert!(TcpStream::connect(addr).is_err(), "listener closed");
}

/// The blocking producer through the proxy in front of the fake broker (which appends
/// whatever it gets, no duplicate check): with a reset after every 3rd Produce, every
/// record is still reported delivered, and the broker holds more than were sent — the
/// requests reset after were applied, their answers lost, and sent again.
#[test]
fn producer_delivers_through_resets_and_the_fake_broker_sees_the_resends() {
    use kafka_tests::fake_broker::{FakeBroker, Mode};
    use kafka_tests::producer_suite as suite;

    let broker = FakeBroker::start(Mode::Produce {
        partitions: 3,
        answer: true,
    });
    let proxy = FaultProxy::start(&[(1, broker.addr.clone())]).expect("proxy");
    proxy.set(Fault::ResetAfterRequest {
        every: 3,
        api: Some(ApiKey::Produce),
    });
    let config = suite::config(&proxy.bootstrap(), &[("batch.size", "2048")]);
    let producer = kafka_blocking::Producer::new(config).expect("producer");
    let n = 2_000;
    let deliveries: Vec<_> = (0..n)
        .map(|i| {
            producer
                .send(kafka_blocking::Record::new("t", suite::value(i)).key(suite::key(i)))
                .expect("send")
        })
        .collect();
    for (i, d) in deliveries.into_iter().enumerate() {
        d.wait_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("record {i}: no outcome"))
            .unwrap_or_else(|e| panic!("record {i}: {e}"));
    }
    producer.close(Duration::from_secs(10)).expect("close");
    let stats = print("producer via fake broker", &proxy);
    assert!(stats.resets >= 1, "{stats:?}");
    assert!(
        stats.rewritten_responses >= 1,
        "metadata pointed at the proxy"
    );
    assert!(
        broker.records() > n as u64,
        "resent after the lost answers: {} records for {n}",
        broker.records()
    );
}

#[test]
fn recording_keeps_each_request_and_the_brokers_own_answer() {
    let (b1, _b2, proxy) = setup();
    let mut c = Client::connect(proxy.addr(1).unwrap(), Duration::from_secs(5));
    c.metadata().expect("before recording");
    proxy.start_recording();
    let seen = c.metadata().expect("recorded");
    let mut c2 = Client::connect(proxy.addr(2).unwrap(), Duration::from_secs(5));
    c2.metadata().expect("recorded on node 2");
    let got = proxy.take_recording();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(
        got.iter().map(|x| (x.seq, x.node)).collect::<Vec<_>>(),
        vec![(0, 1), (1, 2)]
    );
    assert_ne!(got[0].conn, got[1].conn);
    let max = ApiKey::Metadata.versions().max;
    // The request as the client wrote it: header (api key, version, correlation id 2).
    let mut sent = Vec::new();
    write_request(
        &mut sent,
        max,
        2,
        Some("fp-test"),
        &MetadataRequest::default(),
    )
    .unwrap();
    assert_eq!(got[0].request, sent[4..]);
    // The answer as the broker wrote it, before the proxy pointed it at itself.
    let (corr, answer) =
        read_response::<MetadataRequest>(Bytes::from(got[0].response.clone().unwrap()), max)
            .expect("decodes");
    let broker_port: i32 = b1.addr.rsplit_once(':').unwrap().1.parse().unwrap();
    assert_eq!((corr, answer.brokers[0].port), (2, broker_port));
    assert_ne!(
        seen.brokers[0].port, broker_port,
        "the client saw the rewrite"
    );
    c.metadata().expect("after recording");
    assert!(
        proxy.take_recording().is_empty(),
        "nothing recorded after the take"
    );
}
