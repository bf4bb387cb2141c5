//! Hostile servers through every adapter (no real broker: `kafka_tests::fake_broker` in
//! [`Mode::Hostile`], and a closed port): each admin call ends with an error that names
//! the cause, and causes no retry can fix (a protocol violation on every attempt, see the
//! bootstrap rule in DESIGN.md) end well before the call's 30 s deadline. The same
//! answers after a normal negotiation end the call by the request rule (three written
//! attempts broke the protocol). Memory bounds under hostile frames are `adapter_memory`'s.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use kafka_core::admin::{AdminError, DescribeCluster, RawRequest};
use kafka_core::client::REQUEST_VIOLATIONS;
use kafka_core::cluster::Route;
use kafka_core::config::ClientConfig;
use kafka_core::conn::RequestError;
use kafka_core::protocol::messages::list_groups::ListGroupsRequest;
use kafka_core::protocol::ApiKey;
use kafka_tests::fake_broker::{FakeBroker, Hostile, Mode};

/// What every hostile case runs: a DescribeCluster with this deadline…
const DEADLINE: Duration = Duration::from_secs(30);
/// …that must end this soon when the cause is not retriable.
const FAST: Duration = Duration::from_secs(5);
/// The deadline of the retriable cases (a closed port, no answer), which run to it.
const SHORT: Duration = Duration::from_millis(2500);

/// What a case runs.
#[derive(Debug, Clone, Copy)]
enum Probe {
    /// `DescribeCluster` with this deadline.
    Describe(Duration),
    /// A ListGroups request (an API the fake broker does not advertise), 30 s deadline.
    ListGroups,
}

/// One adapter: runs a probe on a fresh client for a config.
type RunFn<'a> = dyn Fn(ClientConfig, Probe) -> Result<(), AdminError> + 'a;

/// Runs `probe` through an adapter's `run` (`$run`: a closure taking any admin
/// operation; a macro because the operations' types differ).
macro_rules! probe {
    ($probe:expr, $run:expr) => {
        match $probe {
            Probe::Describe(t) => $run(DescribeCluster::new().timeout(t)).map(|_| ()),
            Probe::ListGroups => {
                $run(RawRequest::new(Route::Any, ListGroupsRequest::default()).timeout(DEADLINE))
                    .map(|_| ())
            }
        }
    };
}

/// The phrase the error must contain, and whether it must come fast.
fn expected(h: Hostile) -> (&'static str, bool) {
    match h {
        Hostile::GiantFrame => ("frame of 2147483647 bytes exceeds the maximum", true),
        Hostile::NegativeFrame => ("negative frame size -4", true),
        Hostile::HugeArrayCount => ("could not decode ApiVersions", true),
        Hostile::WrongCorrelationId => ("correlation id mismatch", true),
        Hostile::TruncatedBody => ("could not decode ApiVersions", true),
        Hostile::TlsAlert => ("is this a TLS port?", true),
        Hostile::Garbage => ("bytes exceeds the maximum", true),
        // request.timeout.ms (1 s) fails the connection; the call runs to its deadline.
        Hostile::NoAnswer => ("ApiVersions request 0 timed out", false),
    }
}

/// [`expected`] for the answer to DescribeCluster after a normal ApiVersions exchange.
fn expected_after_negotiation(h: Hostile) -> (&'static str, bool) {
    match h {
        Hostile::HugeArrayCount | Hostile::TruncatedBody => {
            ("could not decode DescribeCluster", true)
        }
        Hostile::NoAnswer => ("DescribeCluster request", false),
        other => expected(other),
    }
}

fn config(addr: &str) -> ClientConfig {
    ClientConfig::from_pairs([("bootstrap.servers", addr), ("request.timeout.ms", "1000")])
        .expect("config")
}

/// Every hostile answer and a closed port through one adapter.
fn hostile_servers(name: &str, run: &RunFn<'_>) {
    for h in Hostile::ALL {
        let fake = FakeBroker::start(Mode::Hostile(h));
        let (phrase, fast) = expected(h);
        let limit = if fast { DEADLINE } else { SHORT };
        let started = Instant::now();
        let err = run(config(&fake.addr), Probe::Describe(limit)).expect_err("a hostile server");
        let took = started.elapsed();
        let text = err.to_string();
        println!("{name} {h:?}: {took:?}: {text}");
        assert!(text.contains(phrase), "{name} {h:?}: {text}");
        if fast {
            assert!(took < FAST, "{name} {h:?}: {took:?}");
            assert!(
                matches!(err, AdminError::Request(RequestError::BootstrapBroken(_))),
                "{name} {h:?}: {err:?}"
            );
            assert!(!err.is_retriable(), "{name} {h:?}");
        } else {
            assert!(
                matches!(err, AdminError::Timeout { .. }),
                "{name} {h:?}: {err:?}"
            );
            assert!(took < SHORT + FAST, "{name} {h:?}: {took:?}");
        }
    }
    // The same answers after a normal negotiation: every answer to the call breaks the
    // protocol, so it ends after the request rule's attempts, not at the deadline.
    for h in Hostile::ALL {
        let fake = FakeBroker::start(Mode::HostileAfterNegotiation(h));
        let (phrase, fast) = expected_after_negotiation(h);
        let limit = if fast { DEADLINE } else { SHORT };
        let started = Instant::now();
        let err = run(config(&fake.addr), Probe::Describe(limit)).expect_err("a hostile server");
        let took = started.elapsed();
        let text = err.to_string();
        println!("{name} after negotiation {h:?}: {took:?}: {text}");
        assert!(text.contains(phrase), "{name} {h:?}: {text}");
        if fast {
            assert!(took < FAST, "{name} {h:?}: {took:?}");
            assert!(
                matches!(err, AdminError::Request(RequestError::RepeatedViolation(_))),
                "{name} {h:?}: {err:?}"
            );
            assert_eq!(
                fake.connections(),
                u64::from(REQUEST_VIOLATIONS),
                "{name} {h:?}: one connection per attempt"
            );
        } else {
            assert!(
                matches!(err, AdminError::Timeout { .. }),
                "{name} {h:?}: {err:?}"
            );
            assert!(took < SHORT + FAST, "{name} {h:?}: {took:?}");
        }
    }
    // A closed port: refused is retriable (the broker may be starting), so the call runs
    // to its deadline and names the refusal.
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let addr = format!("127.0.0.1:{port}");
    let started = Instant::now();
    let err = run(config(&addr), Probe::Describe(SHORT)).expect_err("nothing listens");
    let text = err.to_string();
    println!("{name} refused: {:?}: {text}", started.elapsed());
    assert!(matches!(err, AdminError::Timeout { .. }), "{name}: {err:?}");
    assert!(
        text.contains(&format!("last cause: connection to {addr} refused")),
        "{name}: {text}"
    );
    // An API the broker does not advertise fails as soon as the connection is
    // negotiated, not at the deadline.
    let fake = FakeBroker::start(Mode::Ignore);
    let started = Instant::now();
    let err = run(config(&fake.addr), Probe::ListGroups).expect_err("not advertised");
    println!("{name} unsupported: {:?}: {err}", started.elapsed());
    assert!(started.elapsed() < FAST, "{name}: {:?}", started.elapsed());
    assert!(
        matches!(
            err,
            AdminError::Request(RequestError::UnsupportedVersion {
                api: ApiKey::ListGroups,
                broker: None,
                ..
            })
        ),
        "{name}: {err:?}"
    );
}

#[test]
fn blocking_names_every_hostile_cause() {
    hostile_servers("blocking", &|c, p| {
        let admin = kafka_blocking::Admin::new(c).expect("admin");
        probe!(p, |op| admin.run(op))
    });
}

/// `BlockingClient::call` (one raw request, no admin machinery) names the refused
/// connection when its deadline passes.
#[test]
fn a_blocking_raw_call_that_times_out_names_its_cause() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let addr = format!("127.0.0.1:{port}");
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", addr.as_str()),
        ("request.timeout.ms", "500"),
        ("socket.connection.setup.timeout.ms", "500"),
        ("socket.connection.setup.timeout.max.ms", "500"),
    ])
    .expect("config");
    let client = kafka_blocking::BlockingClient::new(config).expect("client");
    let err = client
        .call(Route::Any, ListGroupsRequest::default())
        .expect_err("nothing listens");
    let text = err.to_string();
    println!("blocking call: {text}");
    assert!(
        matches!(
            &err,
            kafka_blocking::Error::CallTimedOut {
                last_cause: Some(_),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        text.contains(&format!("last cause: connection to {addr} refused")),
        "{text}"
    );
}

#[test]
fn mio_names_every_hostile_cause() {
    hostile_servers("mio", &|c, p| {
        let admin = kafka_mio::Admin::new(c).expect("admin");
        probe!(p, |op| admin.run(op))
    });
}

#[test]
fn tokio_names_every_hostile_cause() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    hostile_servers("tokio", &|c, p| {
        let admin = kafka_tokio::Admin::with_runtime(c, rt.handle()).expect("admin");
        probe!(p, |op| rt.block_on(admin.run(op)))
    });
}

#[test]
fn async_std_names_every_hostile_cause() {
    hostile_servers("async-std", &|c, p| {
        let admin =
            kafka_async_std::Admin::with_spawner(c, |t| smol::spawn(t).detach()).expect("admin");
        probe!(p, |op| smol::block_on(admin.run(op)))
    });
}
