//! Adapter-level behaviour of the async-io driver under both async-std and smol, without a
//! broker: deadlines when nothing answers, shutdown when every handle is dropped, and
//! `Cancelled` once the driver is gone.

use std::future::Future;
use std::io::Read;
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kafka_async_std::{Admin, Task};
use kafka_core::admin::{AdminError, DescribeCluster, RawRequest};
use kafka_core::cluster::Route;
use kafka_core::config::ClientConfig;
use kafka_core::conn::RequestError;
use kafka_core::protocol::messages::metadata::MetadataRequest;

/// An executor the tests run the adapter on.
trait Runtime: 'static {
    fn spawn(task: Task);
    fn block_on<F: Future>(future: F) -> F::Output;
}

struct AsyncStd;

impl Runtime for AsyncStd {
    fn spawn(task: Task) {
        async_std::task::spawn(task);
    }
    fn block_on<F: Future>(future: F) -> F::Output {
        async_std::task::block_on(future)
    }
}

struct Smol;

impl Runtime for Smol {
    fn spawn(task: Task) {
        smol::spawn(task).detach();
    }
    fn block_on<F: Future>(future: F) -> F::Output {
        smol::block_on(future)
    }
}

fn admin<R: Runtime>(bootstrap: &str) -> Admin {
    let config = ClientConfig::from_pairs([("bootstrap.servers", bootstrap)]).expect("config");
    Admin::with_spawner(config, R::spawn).expect("admin")
}

/// `future`, or `None` after `limit`.
async fn within<F: Future>(limit: Duration, future: F) -> Option<F::Output> {
    let late = async {
        async_io::Timer::after(limit).await;
        None
    };
    smol::future::or(async { Some(future.await) }, late).await
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

fn unreachable_bootstrap_times_out_with_an_error<R: Runtime>() {
    let admin = admin::<R>("127.0.0.1:1");
    let started = Instant::now();
    let op = DescribeCluster::new().timeout(Duration::from_millis(500));
    let err = R::block_on(within(Duration::from_secs(20), admin.run(op)))
        .expect("the operation ends by its own deadline")
        .expect_err("nothing listens on port 1");
    assert!(
        matches!(err, AdminError::Timeout { .. } | AdminError::Request(_)),
        "{err:?}"
    );
    // The error names the cause: the refused connection.
    assert!(err.to_string().contains("127.0.0.1:1 refused"), "{err}");
    let raw =
        RawRequest::new(Route::Any, MetadataRequest::default()).timeout(Duration::from_millis(300));
    let raw = R::block_on(within(Duration::from_secs(20), admin.run(raw)));
    assert!(raw.expect("raw request ends by its deadline").is_err());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

fn dropping_every_handle_stops_the_driver<R: Runtime>() {
    let (addr, seen) = silent_broker();
    let admin = admin::<R>(&addr);
    let clone = admin.clone();
    let op = DescribeCluster::new().timeout(Duration::from_millis(300));
    let err = R::block_on(clone.run(op)).expect_err("the fake broker never answers");
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

fn operations_without_a_driver_are_cancelled<R: Runtime>() {
    let config = ClientConfig::from_pairs([("bootstrap.servers", "127.0.0.1:1")]).expect("config");
    // A spawner that drops what it is given: the driver never runs.
    let admin = Admin::with_spawner(config, drop).expect("admin");
    let err = R::block_on(admin.describe_cluster()).expect_err("no driver");
    assert_eq!(err, AdminError::Request(RequestError::Cancelled));
}

fn operation_futures_are_send<R: Runtime>() {
    fn clone_send_sync<T: Clone + Send + Sync>() {}
    clone_send_sync::<Admin>();
    let admin = admin::<R>("127.0.0.1:1");
    let (tx, rx) = async_channel::bounded(1);
    R::spawn(Box::pin(async move {
        let op = DescribeCluster::new().timeout(Duration::from_millis(200));
        let _ = tx.send(admin.run(op).await).await;
    }));
    let out = R::block_on(within(Duration::from_secs(20), rx.recv()));
    assert!(out.expect("in time").expect("sent").is_err());
}

macro_rules! on_runtime {
    ($module:ident, $rt:ty) => {
        mod $module {
            #[test]
            fn unreachable_bootstrap_times_out_with_an_error() {
                super::unreachable_bootstrap_times_out_with_an_error::<$rt>();
            }
            #[test]
            fn dropping_every_handle_stops_the_driver() {
                super::dropping_every_handle_stops_the_driver::<$rt>();
            }
            #[test]
            fn operations_without_a_driver_are_cancelled() {
                super::operations_without_a_driver_are_cancelled::<$rt>();
            }
            #[test]
            fn operation_futures_are_send() {
                super::operation_futures_are_send::<$rt>();
            }
        }
    };
}

on_runtime!(async_std_runtime, super::AsyncStd);
on_runtime!(smol_runtime, super::Smol);
