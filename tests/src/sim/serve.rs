//! The simulated cluster on loopback sockets: every broker listens on `127.0.0.1`, so the
//! real adapters (blocking, tokio, async-std, mio) run against it over real sockets, and a
//! test commands faults a real broker cannot produce on demand while they run: leader
//! moves, broker kills and restarts, resets of every connection to a broker.
//!
//! Time is the wall clock here (no virtual clock: the adapters read their own); a held
//! answer (a long-poll Fetch) is written after sleeping its hold. Each connection is served
//! by its own thread, one request at a time, as Kafka serves a connection. A request the
//! simulated cluster does not serve closes its connection.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use super::cluster::SimCluster;
use super::rng::Rng;
use super::wire::take_frames;

/// Shared between the server's threads.
struct Shared {
    cluster: Mutex<SimCluster>,
    /// Open connections by node, for resets (clones of the served sockets).
    conns: Mutex<Vec<(i32, TcpStream)>>,
    stop: AtomicBool,
    /// Connections reset or refused by a fault.
    resets: AtomicU64,
}

impl Shared {
    fn cluster(&self) -> MutexGuard<'_, SimCluster> {
        self.cluster.lock().unwrap_or_else(|e| e.into_inner())
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
        });
        let label = addrs[0].clone();
        for (node, listener) in nodes.into_iter().zip(listeners) {
            let (shared, label) = (shared.clone(), label.clone());
            thread::spawn(move || accept(&label, node, listener, &shared));
        }
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
    /// flight may or may not have been applied). Returns how many.
    pub fn reset_connections(&self, node: i32) -> usize {
        let mut conns = self.shared.conns.lock().unwrap_or_else(|e| e.into_inner());
        let mut n = 0;
        conns.retain(|(at, s)| {
            if *at != node {
                return true;
            }
            let _ = s.shutdown(Shutdown::Both);
            n += 1;
            false
        });
        self.shared.resets.fetch_add(n as u64, Ordering::SeqCst);
        n
    }

    /// Kills `node` (its partitions move to running replicas, its connections reset; new
    /// ones are closed at once until [`restart`](Self::restart)).
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
        let conns = self.shared.conns.lock().unwrap_or_else(|e| e.into_inner());
        for (_, s) in conns.iter() {
            let _ = s.shutdown(Shutdown::Both);
        }
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
                if let Ok(clone) = socket.try_clone() {
                    let mut conns = shared.conns.lock().unwrap_or_else(|e| e.into_inner());
                    conns.push((node, clone));
                }
                let shared = shared.clone();
                // Named after the server's first address, so traces tell servers apart.
                let _ = thread::Builder::new()
                    .name(format!("sim {label} node {node}"))
                    .spawn(move || serve(node, socket, &shared));
            }
            Err(_) => thread::sleep(Duration::from_millis(2)),
        }
    }
}

/// Serves one connection until it closes, breaks the protocol or asks for an API the
/// simulated cluster does not serve.
fn serve(node: i32, mut socket: TcpStream, shared: &Shared) {
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
                match catch_unwind(AssertUnwindSafe(|| cluster.handle(node, &frame))) {
                    Ok(answer) => answer,
                    Err(_) => return, // not served: the connection closes
                }
            };
            let Some(answer) = answer else {
                continue; // acks=0
            };
            if answer.parked.is_some() {
                return; // classic group joins are not served on loopback
            }
            if answer.hold_ms > 0 {
                thread::sleep(Duration::from_millis(answer.hold_ms));
            }
            if socket.write_all(&answer.bytes).is_err() {
                return;
            }
        }
    }
}

/// The seed of a fault schedule: `SIM_ADAPTER_SEED`, else from the clock (print it).
pub fn schedule_seed(label: &str) -> u64 {
    std::env::var("SIM_ADAPTER_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            t ^ label.len() as u64
        })
}

/// What a [`Faults`] schedule injected, by kind.
#[derive(Debug, Default, Clone, Copy)]
pub struct Injected {
    /// Partition leaders moved.
    pub leader_moves: u64,
    /// Times every connection to a broker was reset.
    pub resets: u64,
    /// Brokers killed (each restarted 100–300 ms later).
    pub kills: u64,
}

impl Injected {
    /// Faults of every kind.
    pub fn total(&self) -> u64 {
        self.leader_moves + self.resets + self.kills
    }
}

/// A seeded fault schedule running on its own thread against a [`SimServer`]: every
/// 10–40 ms one of a leader move of a partition of `topic` (half the time), a reset of
/// every connection to a broker, or a broker killed and restarted 100–300 ms later (one
/// down at a time). Each fault is printed with its time, so a seed's schedule can be
/// read and replayed.
pub struct Faults {
    done: Arc<AtomicBool>,
    thread: thread::JoinHandle<Injected>,
}

impl Faults {
    /// Starts the schedule of `seed`, labelled `label` in its output.
    pub fn start(server: &Arc<SimServer>, label: &str, seed: u64, topic: &str) -> Faults {
        let done = Arc::new(AtomicBool::new(false));
        let (server, stop) = (server.clone(), done.clone());
        let (label, topic) = (label.to_string(), topic.to_string());
        let thread = thread::spawn(move || inject(&label, seed, &server, &topic, &stop));
        Faults { done, thread }
    }

    /// Stops the schedule (a killed broker is restarted) and says what it injected.
    pub fn stop(self) -> Injected {
        self.done.store(true, Ordering::SeqCst);
        self.thread.join().expect("fault thread")
    }
}

fn inject(label: &str, seed: u64, server: &SimServer, topic: &str, done: &AtomicBool) -> Injected {
    let mut rng = Rng::new(seed);
    let mut injected = Injected::default();
    let mut down: Option<(i32, Instant)> = None;
    let began = Instant::now();
    let brokers = server.with_cluster(|c| c.brokers.len() as u64);
    while !done.load(Ordering::SeqCst) {
        thread::sleep(rng.millis(10, 40));
        let at = began.elapsed().as_millis();
        if let Some((node, until)) = down {
            if Instant::now() >= until {
                server.restart(node);
                println!("{label} fault @{at} ms: restart broker {node}");
                down = None;
            }
            continue;
        }
        let node = rng.below(brokers) as i32 + 1;
        match rng.below(10) {
            0..=4 => {
                let moved = server.with_cluster(|c| {
                    let partitions = c.topics[topic].partitions.len() as u64;
                    let partition = rng.below(partitions) as i32;
                    let p = &c.topics[topic].partitions[partition as usize];
                    let to = p
                        .replicas
                        .iter()
                        .copied()
                        .find(|r| *r != p.leader && c.broker(*r).is_some_and(|b| b.up))?;
                    c.move_leader(topic, partition, to)
                        .then_some((partition, to))
                });
                if let Some((partition, to)) = moved {
                    injected.leader_moves += 1;
                    println!("{label} fault @{at} ms: leader of {topic}-{partition} to {to}");
                }
            }
            5..=7 => {
                let n = server.reset_connections(node);
                injected.resets += 1;
                println!("{label} fault @{at} ms: reset {n} connections to broker {node}");
            }
            _ => {
                server.kill(node);
                injected.kills += 1;
                down = Some((node, Instant::now() + rng.millis(100, 300)));
                println!("{label} fault @{at} ms: kill broker {node}");
            }
        }
    }
    if let Some((node, _)) = down {
        server.restart(node);
    }
    injected
}
