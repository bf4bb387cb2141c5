//! The simulated cluster on loopback sockets: every broker listens on `127.0.0.1`, so the
//! real adapters (blocking, tokio, async-std, mio) run against it over real sockets, and a
//! test commands faults a real broker cannot produce on demand while they run: leader
//! moves, broker kills and restarts, resets of every connection to a broker
//! ([`Faults`]).
//!
//! Time: the adapters read the wall clock, so the world's clock is mapped onto it one to
//! one: the cluster's virtual time is the real time since [`SimServer::start`]
//! (`SimCluster::advance(origin.elapsed())`), advanced before every request and by a
//! clock thread at the cluster's next deadline (at least every 10 ms): session
//! timeouts, join phases (`group.initial.rebalance.delay.ms`, rebalance timeouts),
//! transaction timeouts and markers and coordinator moves after a kill or restart all
//! happen in real milliseconds (`serve/clock.rs`).
//!
//! Each connection is served by its own thread, one request at a time, as Kafka serves a
//! channel: a request's answer is written before the next request is read, so answers go
//! out in wire order. A held answer (a long-poll Fetch) is written after its hold; a
//! parked one (a classic JoinGroup waiting for the join phase's end, a SyncGroup waiting
//! for the leader's) when the cluster releases it — on another member's request, or at a
//! deadline the clock thread reaches. Only that connection waits: the cluster's lock is
//! not held meanwhile. A reset, a kill or the server's drop ends the wait; an answer
//! released after its connection is gone is dropped. A request the simulated cluster does
//! not serve closes its connection.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use super::cluster::SimCluster;
use super::wire::take_frames;

mod clock;
mod faults;

use clock::Released;
pub use faults::{schedule_seed, FaultPlan, Faults, Injected};

/// An open connection, as resets see it.
struct Conn {
    node: i32,
    /// A clone of the served socket.
    socket: TcpStream,
    /// Cleared when the connection is reset (its thread stops waiting).
    open: Arc<AtomicBool>,
}

/// Shared between the server's threads.
struct Shared {
    cluster: Mutex<SimCluster>,
    /// Open connections, for resets.
    conns: Mutex<Vec<Conn>>,
    stop: AtomicBool,
    /// Connections reset or refused by a fault.
    resets: AtomicU64,
    /// Virtual time zero: the cluster's clock is the real time since.
    origin: Instant,
    /// Answers to parked requests released by the cluster, until written.
    released: Mutex<Released>,
    /// Signalled when an answer is released or a connection reset.
    wake: Condvar,
}

impl Shared {
    fn cluster(&self) -> MutexGuard<'_, SimCluster> {
        self.cluster.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn conns(&self) -> MutexGuard<'_, Vec<Conn>> {
        self.conns.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn up(&self, node: i32) -> bool {
        self.cluster().broker(node).is_some_and(|b| b.up)
    }
}

/// A running simulated cluster on loopback; it stops accepting when dropped.
pub struct SimServer {
    shared: Arc<Shared>,
    addrs: Vec<String>,
}

impl SimServer {
    /// Serves `cluster`: one listener per broker on an ephemeral loopback port, which its
    /// Metadata and FindCoordinator answers advertise.
    pub fn start(mut cluster: SimCluster) -> SimServer {
        let listeners: Vec<TcpListener> = cluster
            .brokers
            .iter()
            .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a loopback port"))
            .collect();
        let mut addrs = Vec::new();
        for (b, l) in cluster.brokers.iter_mut().zip(&listeners) {
            let port = l.local_addr().expect("local addr").port();
            b.host = "127.0.0.1".into();
            b.port = i32::from(port);
            addrs.push(format!("127.0.0.1:{port}"));
        }
        let nodes: Vec<i32> = cluster.brokers.iter().map(|b| b.id).collect();
        let shared = Arc::new(Shared {
            cluster: Mutex::new(cluster),
            conns: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            resets: AtomicU64::new(0),
            origin: Instant::now(),
            released: Mutex::new(Released::default()),
            wake: Condvar::new(),
        });
        let label = addrs[0].clone();
        for (node, listener) in nodes.into_iter().zip(listeners) {
            let (shared, label) = (shared.clone(), label.clone());
            thread::spawn(move || accept(&label, node, listener, &shared));
        }
        let ticking = shared.clone();
        let _ = thread::Builder::new()
            .name(format!("sim {label} clock"))
            .spawn(move || clock::run(&ticking));
        SimServer { shared, addrs }
    }

    /// Every broker's address, comma-separated (`bootstrap.servers`).
    pub fn bootstrap(&self) -> String {
        self.addrs.join(",")
    }

    /// Runs `f` on the cluster (between requests).
    pub fn with_cluster<R>(&self, f: impl FnOnce(&mut SimCluster) -> R) -> R {
        f(&mut self.shared.cluster())
    }

    /// Resets every open connection to `node` (both directions shut at once: requests in
    /// flight may or may not have been applied; a parked one is never answered).
    /// Returns how many.
    pub fn reset_connections(&self, node: i32) -> usize {
        let mut n = 0;
        self.shared.conns().retain(|c| {
            if c.node != node {
                return true;
            }
            c.open.store(false, Ordering::SeqCst);
            let _ = c.socket.shutdown(Shutdown::Both);
            n += 1;
            false
        });
        self.shared.resets.fetch_add(n as u64, Ordering::SeqCst);
        clock::wake_all(&self.shared);
        n
    }

    /// Kills `node` (its partitions move to running replicas, its connections reset; new
    /// ones are closed at once until [`restart`](Self::restart)). Coordinators move at
    /// the clock's next tick.
    pub fn kill(&self, node: i32) {
        self.shared.cluster().kill(node);
        self.reset_connections(node);
    }

    /// Starts `node` again.
    pub fn restart(&self, node: i32) {
        self.shared.cluster().restart(node);
    }

    /// Connections reset or refused so far.
    pub fn resets(&self) -> u64 {
        self.shared.resets.load(Ordering::SeqCst)
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for c in self.shared.conns().iter() {
            c.open.store(false, Ordering::SeqCst);
            let _ = c.socket.shutdown(Shutdown::Both);
        }
        clock::wake_all(&self.shared);
    }
}

fn accept(label: &str, node: i32, listener: TcpListener, shared: &Arc<Shared>) {
    listener
        .set_nonblocking(true)
        .expect("nonblocking listener");
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((socket, _)) => {
                let _ = socket.set_nonblocking(false);
                if !shared.up(node) {
                    shared.resets.fetch_add(1, Ordering::SeqCst);
                    continue; // dropped: the client sees the connection closed
                }
                let open = Arc::new(AtomicBool::new(true));
                if let Ok(clone) = socket.try_clone() {
                    shared.conns().push(Conn {
                        node,
                        socket: clone,
                        open: open.clone(),
                    });
                }
                let shared = shared.clone();
                // Named after the server's first address, so traces tell servers apart.
                let _ = thread::Builder::new()
                    .name(format!("sim {label} node {node}"))
                    .spawn(move || {
                        serve(node, &socket, &open, &shared);
                        close(&socket, &open, &shared);
                    });
            }
            Err(_) => thread::sleep(Duration::from_millis(2)),
        }
    }
}

/// Closes a connection whose thread stopped serving it (and forgets it): the client
/// sees it closed instead of a silent socket (the clone kept for resets would hold it
/// open otherwise, e.g. for a connection accepted while its broker was being killed).
fn close(socket: &TcpStream, open: &Arc<AtomicBool>, shared: &Shared) {
    open.store(false, Ordering::SeqCst);
    let _ = socket.shutdown(Shutdown::Both);
    shared.conns().retain(|c| !Arc::ptr_eq(&c.open, open));
}

/// Serves one connection until it closes, breaks the protocol, is reset or asks for an
/// API the simulated cluster does not serve.
fn serve(node: i32, mut socket: &TcpStream, open: &AtomicBool, shared: &Shared) {
    let _ = socket.set_nodelay(true);
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    while !shared.stop.load(Ordering::SeqCst) {
        let n = match socket.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        let Ok(frames) = take_frames(&mut buf) else {
            return;
        };
        for frame in frames {
            let answer = {
                let mut cluster = shared.cluster();
                if !cluster.broker(node).is_some_and(|b| b.up) {
                    return;
                }
                clock::advance(shared, &mut cluster);
                let handled = catch_unwind(AssertUnwindSafe(|| cluster.handle(node, &frame)));
                clock::release_ready(shared, &mut cluster);
                match handled {
                    Ok(answer) => answer,
                    Err(_) => return, // not served: the connection closes
                }
            };
            let Some(answer) = answer else {
                continue; // acks=0
            };
            let bytes = match answer.parked {
                Some(ticket) => match clock::await_release(shared, ticket, open) {
                    Some(bytes) => bytes,
                    None => return,
                },
                None => {
                    let until = Instant::now() + Duration::from_millis(answer.hold_ms);
                    if answer.hold_ms > 0 && !clock::hold(shared, until, open) {
                        return;
                    }
                    answer.bytes
                }
            };
            if socket.write_all(&bytes).is_err() {
                return;
            }
        }
    }
}
