//! Adapter-level behaviour of the tokio driver, without a broker: deadlines when nothing
//! answers, shutdown when every handle is dropped, and `Cancelled` once the driver is gone.

use std::future::Future;
use std::io::Read;
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kafka_core::admin::{AdminError, DescribeCluster, RawRequest};
use kafka_core::cluster::Route;
use kafka_core::config::ClientConfig;
use kafka_core::conn::RequestError;
use kafka_core::protocol::messages::metadata::MetadataRequest;
use kafka_tokio::Admin;

fn config(bootstrap: &str) -> ClientConfig {
    ClientConfig::from_pairs([("bootstrap.servers", bootstrap)]).expect("config")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime")
}

/// What the silent fake broker saw on the one connection it accepts.
#[derive(Debug, PartialEq)]
enum Seen {
    Bytes,
    Eof,
}

/// A listener that accepts one connection, reads what comes (never answering) and
/// reports the first bytes and the close.
fn silent_broker() -> (String, mpsc::Receiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let Ok((mut socket, _)) = listener.accept() else {
            return;
        };
        let _ = socket.set_read_timeout(Some(Duration::from_secs(30)));
        let mut buf = [0u8; 4096];
        let mut told = false;
        loop {
            match socket.read(&mut buf) {
                Ok(0) | Err(_) => {
                    let _ = tx.send(Seen::Eof);
                    return;
                }
                Ok(_) if !told => {
                    told = true;
                    let _ = tx.send(Seen::Bytes);
                }
                Ok(_) => {}
            }
        }
    });
    (addr, rx)
}

#[test]
fn unreachable_bootstrap_times_out_with_an_error() {
    let rt = runtime();
    let admin = Admin::with_runtime(config("127.0.0.1:1"), rt.handle()).expect("admin");
    let started = Instant::now();
    let described = rt.block_on(async {
        tokio::time::timeout(
            Duration::from_secs(20),
            admin.run(DescribeCluster::new().timeout(Duration::from_millis(500))),
        )
        .await
    });
    let err = described
        .expect("the operation ends by its own deadline")
        .expect_err("nothing listens on port 1");
    assert!(
        matches!(err, AdminError::Timeout { .. } | AdminError::Request(_)),
        "{err:?}"
    );
    // The error names the cause: the refused connection.
    assert!(err.to_string().contains("127.0.0.1:1 refused"), "{err}");
    let raw = rt.block_on(async {
        tokio::time::timeout(
            Duration::from_secs(20),
            admin.run(
                RawRequest::new(Route::Any, MetadataRequest::default())
                    .timeout(Duration::from_millis(300)),
            ),
        )
        .await
    });
    assert!(raw.expect("raw request ends by its deadline").is_err());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn dropping_every_handle_stops_the_driver() {
    let rt = runtime();
    let (addr, seen) = silent_broker();
    let admin = Admin::with_runtime(config(&addr), rt.handle()).expect("admin");
    let clone = admin.clone();
    let err = rt
        .block_on(clone.run(DescribeCluster::new().timeout(Duration::from_millis(300))))
        .expect_err("the fake broker never answers");
    assert!(matches!(err, AdminError::Timeout { .. }), "{err:?}");
    assert_eq!(seen.recv_timeout(Duration::from_secs(5)), Ok(Seen::Bytes));
    // One handle left: the driver keeps its connection open.
    drop(clone);
    assert_eq!(
        seen.recv_timeout(Duration::from_millis(300)),
        Err(mpsc::RecvTimeoutError::Timeout)
    );
    drop(admin);
    assert_eq!(seen.recv_timeout(Duration::from_secs(5)), Ok(Seen::Eof));
}

#[test]
fn operations_after_the_runtime_is_gone_are_cancelled() {
    let rt = runtime();
    let admin = Admin::with_runtime(config("127.0.0.1:1"), rt.handle()).expect("admin");
    drop(rt);
    let other = runtime();
    let err = other
        .block_on(admin.describe_cluster())
        .expect_err("no driver");
    assert_eq!(err, AdminError::Request(RequestError::Cancelled));
}

#[test]
fn admin_is_shareable_and_outside_a_runtime_refused() {
    fn clone_send_sync<T: Clone + Send + Sync>() {}
    clone_send_sync::<Admin>();
    assert!(matches!(
        Admin::new(config("127.0.0.1:1")),
        Err(kafka_tokio::Error::NoRuntime)
    ));
    let rt = runtime();
    let admin = rt
        .block_on(async { Admin::new(config("127.0.0.1:1")) })
        .expect("admin");
    // Operation futures are Send: they can run on any worker.
    let task = rt.spawn(async move {
        admin
            .run(DescribeCluster::new().timeout(Duration::from_millis(200)))
            .await
    });
    assert!(rt.block_on(task).expect("task").is_err());
}

/// Holds only for futures that borrow nothing.
fn assert_static<F: Future + Send + 'static>(_: &F) {}

#[test]
fn named_methods_return_static_futures_that_outlive_the_admin() {
    let rt = runtime();
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", "127.0.0.1:1"),
        ("default.api.timeout.ms", "300"),
    ])
    .expect("config");
    let admin = Admin::with_runtime(config, rt.handle()).expect("admin");
    let listed = admin.list_topics();
    // Borrowed arguments are consumed when the method is called, not when awaited.
    let name = String::from("events");
    let described = admin.describe_topics([name.as_str()]);
    drop(name);
    let metadata = admin.metadata();
    assert_static(&listed);
    assert_static(&described);
    assert_static(&metadata);
    drop(admin);
    // The futures keep the driver alive; each ends by its deadline (nothing listens).
    let listed = rt.spawn(listed);
    let described = rt.spawn(described);
    let metadata = rt.spawn(metadata);
    let started = Instant::now();
    assert!(rt.block_on(listed).expect("task").is_err());
    assert!(rt.block_on(described).expect("task").is_err());
    assert!(rt.block_on(metadata).expect("task").is_ok());
    assert!(started.elapsed() < Duration::from_secs(10));
}
