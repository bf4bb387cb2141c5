//! Adapter bounds without a real broker (a fake one on loopback, `kafka_tests::fake_broker`):
//! - every adapter holds at most its outbound bound for a socket whose peer stopped
//!   reading, however much is submitted;
//! - kafka-blocking tries every bootstrap address, a black-holed connect costs one setup
//!   timeout and stalls no other socket;
//! - concurrent callers of the blocking and mio `Admin` each wait one deadline, not N.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_core::admin::{AdminError, DescribeCluster, RawRequest};
use kafka_core::client::{OpContext, Operation};
use kafka_core::cluster::Route;
use kafka_core::config::ClientConfig;
use kafka_core::protocol::messages::api_versions::ApiVersionsRequest;
use kafka_core::protocol::messages::metadata::request::MetadataRequestTopic;
use kafka_core::protocol::messages::metadata::MetadataRequest;
use kafka_core::protocol::{Encodable, Message};
use kafka_driver::{HubStats, OUTBOUND_HIGH_WATER};
use kafka_tests::fake_broker::{FakeBroker, Mode};

/// Requests submitted per adapter in the outbound test.
const REQUESTS: usize = 400;

fn config(pairs: &[(&str, &str)]) -> ClientConfig {
    ClientConfig::from_pairs(pairs.iter().copied()).expect("config")
}

/// A ~80 KB Metadata request (1,000 long topic names).
fn big_request() -> MetadataRequest {
    MetadataRequest {
        topics: Some(
            (0..1000)
                .map(|i| MetadataRequestTopic {
                    name: Some(format!("{i:0>60}")),
                    ..Default::default()
                })
                .collect(),
        ),
        ..Default::default()
    }
}

fn request_len(r: &MetadataRequest) -> usize {
    r.encoded_len(MetadataRequest::VERSIONS.max).expect("size")
}

fn raw(r: &MetadataRequest) -> RawRequest<MetadataRequest> {
    RawRequest::new(Route::Any, r.clone()).timeout(Duration::from_secs(4))
}

/// The outbound test for one adapter: `make` builds its admin client for the fake
/// broker's address, `submit` starts one request (the first one connects; the rest
/// follow once the fake broker has stopped reading), `stats` reads its counters.
fn outbound_bound<A>(
    name: &str,
    make: impl FnOnce(ClientConfig) -> A,
    mut submit: impl FnMut(&A),
    stats: impl FnOnce(&A) -> HubStats,
) {
    let len = request_len(&big_request());
    let fake = FakeBroker::start(Mode::StopReading);
    let admin = make(config(&[
        ("bootstrap.servers", &fake.addr),
        ("max.in.flight.requests.per.connection", "1000"),
        ("request.timeout.ms", "20000"),
    ]));
    submit(&admin);
    let until = Instant::now() + Duration::from_secs(10);
    while !fake.stalled() {
        assert!(Instant::now() < until, "{name}: never connected");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Let the client read the ApiVersions answer: requests queued before the connection
    // is ready would all go out in one batch.
    std::thread::sleep(Duration::from_millis(300));
    for _ in 1..REQUESTS {
        submit(&admin);
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(800));
    let s = stats(&admin);
    let submitted = REQUESTS * len;
    // The drain loop's bound: a full outlet is not pulled, so it holds at most the high
    // water mark plus one transmit (the core's batch, which keeps growing meanwhile).
    let bound = OUTBOUND_HIGH_WATER + s.largest_transmit;
    println!(
        "{name}: submitted {submitted} bytes; peak {} bytes queued for the socket, bound {bound} \
         (high water {OUTBOUND_HIGH_WATER} + largest transmit {}); {} queued now",
        s.peak_queued_per_socket, s.largest_transmit, s.queued
    );
    // Less than half: on a starved box the core's one transmit can grow to a third of
    // what was submitted before the drain loop runs (a CI run under load saw 34%); the
    // bound below is the exact check.
    assert!(
        s.peak_queued_per_socket * 2 < submitted,
        "{name}: the adapter took most of what was submitted"
    );
    assert!(
        s.peak_queued_per_socket <= bound,
        "{name}: {} > {bound}",
        s.peak_queued_per_socket
    );
    assert!(s.queued > 0, "{name}: the socket should be full");
}

#[test]
fn tokio_outbound_is_bounded() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let req = big_request();
    let mut calls = Vec::new();
    outbound_bound(
        "tokio",
        |c| kafka_tokio::Admin::with_runtime(c, rt.handle()).expect("admin"),
        |admin| calls.push(admin.run(raw(&req))),
        |admin| rt.block_on(admin.stats()).expect("stats"),
    );
}

#[test]
fn async_std_outbound_is_bounded() {
    let req = big_request();
    let mut calls = Vec::new();
    outbound_bound(
        "async-std (smol executor)",
        |c| kafka_async_std::Admin::with_spawner(c, |t| smol::spawn(t).detach()).expect("admin"),
        |admin| calls.push(admin.run(raw(&req))),
        |admin| smol::block_on(admin.stats()).expect("stats"),
    );
}

#[test]
fn blocking_outbound_is_bounded() {
    let req = big_request();
    let mut threads = Vec::new();
    outbound_bound(
        "blocking",
        |c| Arc::new(kafka_blocking::Admin::new(c).expect("admin")),
        |admin| {
            let (admin, op) = (admin.clone(), raw(&req));
            threads.push(std::thread::spawn(move || admin.run(op)));
        },
        |admin| admin.client().stats().expect("stats"),
    );
    for t in threads {
        assert!(t.join().expect("thread").is_err(), "nothing is answered");
    }
}

#[test]
fn mio_outbound_is_bounded() {
    let req = big_request();
    let mut threads = Vec::new();
    outbound_bound(
        "mio",
        |c| Arc::new(kafka_mio::Admin::new(c).expect("admin")),
        |admin| {
            let (admin, op) = (admin.clone(), raw(&req));
            threads.push(std::thread::spawn(move || admin.run(op)));
        },
        |admin| admin.with_driver(|d| d.stats()).expect("driver"),
    );
    for t in threads {
        assert!(t.join().expect("thread").is_err(), "nothing is answered");
    }
}

/// A loopback address whose connects hang: a listener whose accept queue is full (the
/// kernel then drops further SYNs). Keep the returned value alive.
fn black_hole() -> (String, impl Drop) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let fillers: Vec<_> = (0..512)
        .filter_map(|_| kafka_mio::mio::net::TcpStream::connect(addr).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    (addr.to_string(), Guard(listener, fillers))
}

struct Guard<A, B>(A, B);

impl<A, B> Drop for Guard<A, B> {
    fn drop(&mut self) {}
}

/// A black-holed first bootstrap address costs one setup timeout (1 s ± 20% jitter),
/// then the second one answers.
#[test]
fn blocking_tries_the_next_bootstrap_address_after_one_setup_timeout() {
    let (hole, _guard) = black_hole();
    let good = FakeBroker::start(Mode::Ignore);
    let servers = format!("{hole},{}", good.addr);
    let client = kafka_blocking::BlockingClient::new(config(&[
        ("bootstrap.servers", &servers),
        ("socket.connection.setup.timeout.ms", "1000"),
        ("socket.connection.setup.timeout.max.ms", "1000"),
    ]))
    .expect("client");
    let started = Instant::now();
    let answer = client.call(Route::Any, ApiVersionsRequest::default());
    let took = started.elapsed();
    println!("blocking: black hole then a good address: {took:?}");
    answer.expect("the second address answers");
    assert!(took >= Duration::from_millis(790), "{took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
}

/// While a connect to a black hole is pending, another broker's socket keeps working.
#[test]
fn blocking_pending_connect_stalls_no_other_socket() {
    let (hole, _guard) = black_hole();
    let good = FakeBroker::start(Mode::Ignore);
    let servers = format!("{},{hole}", good.addr);
    let client = Arc::new(
        kafka_blocking::BlockingClient::new(config(&[
            ("bootstrap.servers", &servers),
            ("socket.connection.setup.timeout.ms", "3000"),
            ("socket.connection.setup.timeout.max.ms", "3000"),
            ("request.timeout.ms", "1000"),
        ]))
        .expect("client"),
    );
    client
        .call(Route::Broker(-1), ApiVersionsRequest::default())
        .expect("good broker");
    let pending = {
        let client = client.clone();
        std::thread::spawn(move || client.call(Route::Broker(-2), ApiVersionsRequest::default()))
    };
    std::thread::sleep(Duration::from_millis(100));
    for _ in 0..5 {
        let started = Instant::now();
        client
            .call(Route::Broker(-1), ApiVersionsRequest::default())
            .expect("good broker");
        let took = started.elapsed();
        assert!(took < Duration::from_millis(500), "{took:?}");
    }
    assert!(
        !pending.is_finished(),
        "the black-holed connect is still pending"
    );
    assert!(pending.join().expect("thread").is_err());
}

/// N callers against a broker that never answers each end at their own deadline.
fn concurrent_callers(name: &str, run: impl Fn() -> Result<(), AdminError> + Send + Sync) {
    const N: usize = 8;
    let started = Instant::now();
    let took: Vec<Duration> = std::thread::scope(|s| {
        let run = &run;
        let threads: Vec<_> = (0..N)
            .map(|_| {
                s.spawn(move || {
                    let t = Instant::now();
                    assert!(run().is_err());
                    t.elapsed()
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().expect("thread"))
            .collect()
    });
    println!(
        "{name}: {N} concurrent 1 s calls took {took:?}, {:?} in all",
        started.elapsed()
    );
    assert!(
        took.iter().all(|t| *t < Duration::from_millis(2500)),
        "{name}: {took:?}"
    );
}

#[test]
fn blocking_concurrent_callers_each_wait_one_deadline() {
    let fake = FakeBroker::start(Mode::StopReading);
    let admin =
        kafka_blocking::Admin::new(config(&[("bootstrap.servers", &fake.addr)])).expect("admin");
    concurrent_callers("blocking", || {
        admin
            .run(DescribeCluster::new().timeout(Duration::from_secs(1)))
            .map(|_| ())
    });
}

#[test]
fn mio_concurrent_callers_each_wait_one_deadline() {
    let fake = FakeBroker::start(Mode::StopReading);
    let admin = kafka_mio::Admin::new(config(&[("bootstrap.servers", &fake.addr)])).expect("admin");
    concurrent_callers("mio", || {
        admin
            .run(DescribeCluster::new().timeout(Duration::from_secs(1)))
            .map(|_| ())
    });
}

/// An operation that never finishes and records when the core drops it.
struct Forever(Arc<AtomicBool>);

impl Operation for Forever {
    type Output = Result<(), AdminError>;

    fn poll(&mut self, _: &mut OpContext<'_>) -> Option<Self::Output> {
        None
    }
}

impl Drop for Forever {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn wait_for(flag: &AtomicBool) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    while !flag.load(Ordering::SeqCst) {
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// The async adapters' calls are `'static` (spawnable as is) and dropping one cancels
/// its operation in the core.
#[test]
fn dropping_an_async_call_cancels_its_operation() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let admin = kafka_tokio::Admin::with_runtime(
        config(&[("bootstrap.servers", "127.0.0.1:1")]),
        rt.handle(),
    )
    .expect("admin");
    let dropped = Arc::new(AtomicBool::new(false));
    let call = admin.run(Forever(dropped.clone()));
    let task = rt.spawn(call);
    std::thread::sleep(Duration::from_millis(100));
    assert!(!dropped.load(Ordering::SeqCst), "still running");
    task.abort();
    assert!(
        wait_for(&dropped),
        "tokio: the aborted call's operation was not cancelled"
    );

    let admin = kafka_async_std::Admin::with_spawner(
        config(&[("bootstrap.servers", "127.0.0.1:1")]),
        |t| smol::spawn(t).detach(),
    )
    .expect("admin");
    let dropped = Arc::new(AtomicBool::new(false));
    drop(admin.run(Forever(dropped.clone())));
    assert!(
        wait_for(&dropped),
        "async-std: the dropped call's operation was not cancelled"
    );
}

/// Connection failures reach the user's `on_notice` hook on the tokio, async-std and
/// blocking clients (and are logged).
#[test]
fn connection_failures_reach_the_notice_hook() {
    use kafka_driver::Notice;
    use std::sync::mpsc;

    fn hook(tx: mpsc::Sender<Notice>) -> impl Fn(&Notice) + Send + Sync + 'static {
        let tx = std::sync::Mutex::new(tx);
        move |n: &Notice| {
            let _ = tx.lock().map(|tx| tx.send(n.clone()));
        }
    }
    fn expect_failure(name: &str, rx: &mpsc::Receiver<Notice>) {
        match rx.recv_timeout(Duration::from_secs(5)) {
            Ok(Notice::ConnectionFailed { node, error }) => {
                println!("{name}: node {node}: {error}");
                assert_eq!(node, -1, "{name}");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    let refused = || config(&[("bootstrap.servers", "127.0.0.1:1")]);
    let short = || DescribeCluster::new().timeout(Duration::from_millis(300));

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let admin = kafka_tokio::Admin::with_runtime(refused(), rt.handle()).expect("admin");
    let (tx, rx) = mpsc::channel();
    admin.on_notice(hook(tx));
    assert!(rt.block_on(admin.run(short())).is_err());
    expect_failure("tokio", &rx);

    let admin = kafka_async_std::Admin::with_spawner(refused(), |t| smol::spawn(t).detach())
        .expect("admin");
    let (tx, rx) = mpsc::channel();
    admin.on_notice(hook(tx));
    assert!(smol::block_on(admin.run(short())).is_err());
    expect_failure("async-std", &rx);

    let admin = kafka_blocking::Admin::new(refused()).expect("admin");
    let (tx, rx) = mpsc::channel();
    admin.client().on_notice(hook(tx)).expect("driver");
    assert!(admin.run(short()).is_err());
    expect_failure("blocking", &rx);

    let admin = kafka_mio::Admin::new(refused()).expect("admin");
    let (tx, rx) = mpsc::channel();
    let hook: kafka_driver::OnNotice = std::sync::Arc::new(hook(tx));
    admin
        .with_driver(move |d| d.on_notice(Some(hook)))
        .expect("driver");
    assert!(admin.run(short()).is_err());
    expect_failure("mio", &rx);
}
