//! The `tracing` events of the core and the adapters (feature `tracing`, on by default in
//! the adapters), captured by a small `Subscriber` of our own: a refused connection is
//! logged with its address and cause, the call's timeout names it, the call runs in a
//! span, a working connection logs its negotiation, and no event or span field ever holds
//! the SASL password.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use kafka_core::admin::{DescribeCluster, RawRequest};
use kafka_core::cluster::Route;
use kafka_core::config::ClientConfig;
use kafka_core::protocol::messages::metadata::MetadataRequest;
use kafka_tests::fake_broker::{FakeBroker, Mode};
use kafka_tokio::Admin;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

const PASSWORD: &str = "pw-Sup3rSecret-4711";

/// Every event and span seen, one line of text each (level, target, fields).
static CAPTURED: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Capture {
    next_id: AtomicU64,
}

/// Writes every field as ` name=value`.
struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={:?}", field.name(), value);
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, " {}={}", field.name(), value);
    }
}

fn keep(line: String) {
    CAPTURED.lock().expect("lock").push(line);
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut f = Fields(format!("span {}", span.metadata().name()));
        span.record(&mut f);
        keep(f.0);
        Id::from_u64(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    fn record(&self, _: &Id, values: &Record<'_>) {
        let mut f = Fields("record".into());
        values.record(&mut f);
        keep(f.0);
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let meta = event.metadata();
        let mut f = Fields(format!("{} {}", meta.level(), meta.target()));
        event.record(&mut f);
        keep(f.0);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

fn captured() -> Vec<String> {
    CAPTURED.lock().expect("lock").clone()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime")
}

/// One test: the subscriber is process-wide (the driver runs on the runtime's threads).
#[test]
fn events_name_causes_and_never_a_secret() {
    tracing::subscriber::set_global_default(Capture {
        next_id: AtomicU64::new(1),
    })
    .expect("the only subscriber");
    let rt = runtime();

    // A port nothing listens on, with SASL/PLAIN credentials configured.
    let refused = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").to_string()
    };
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", refused.as_str()),
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", "PLAIN"),
        ("sasl.username", "alice"),
        ("sasl.password", PASSWORD),
        ("reconnect.backoff.ms", "20"),
    ])
    .expect("config");
    let admin = Admin::with_runtime(config, rt.handle()).expect("admin");
    let err = rt
        .block_on(admin.run(DescribeCluster::new().timeout(Duration::from_millis(600))))
        .expect_err("nothing listens");
    println!("refused: {err}");
    let lines = captured();
    assert!(
        lines.iter().any(|l| l.starts_with("WARN")
            && l.contains("kafka connection failed")
            && l.contains(&refused)
            && l.contains("refused")),
        "a refused connection is logged with its address and cause: {lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.contains("kafka connecting")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("kafka call timed out") && l.contains("refused")),
        "the timeout names its last cause: {lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("span kafka_op") && l.contains("DescribeCluster")),
        "the call runs in a span named by its operation: {lines:#?}"
    );

    // A plaintext broker that answers: the connection and its negotiation are logged.
    let broker = FakeBroker::start(Mode::Produce {
        partitions: 1,
        answer: true,
    });
    let config =
        ClientConfig::from_pairs([("bootstrap.servers", broker.addr.as_str())]).expect("config");
    let admin = Admin::with_runtime(config, rt.handle()).expect("admin");
    rt.block_on(admin.run(
        RawRequest::new(Route::Any, MetadataRequest::default()).timeout(Duration::from_secs(10)),
    ))
    .expect("metadata");
    let lines = captured();
    for wanted in [
        "kafka socket connected",
        "kafka connection ready: versions negotiated",
    ] {
        assert!(
            lines.iter().any(|l| l.contains(wanted)),
            "{wanted}: {lines:#?}"
        );
    }

    drop(admin);
    rt.shutdown_timeout(Duration::from_secs(5));
    let lines = captured();
    for line in &lines {
        assert!(!line.contains(PASSWORD), "a secret was logged: {line}");
    }
}
