//! The driver task: owns the core, one task per socket, one timer.
//!
//! Every turn drains the core (`poll_io` → `poll_transmit` → `poll_event`), arms the
//! timer at `poll_timeout`, then waits for a command from an [`Admin`](crate::Admin)
//! handle, bytes or a close from a socket task, or the timer. The loop ends when every
//! handle is gone; dropping the socket senders then ends every socket task.

use std::collections::HashMap;
use std::io::{self, Read};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_channel::{unbounded, Receiver, Sender};
use async_io::{Async, Timer};
use futures_lite::future::or;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use kafka_core::client::{Client, ConnId, IoCommand};
use kafka_core::config::ClientConfig;

use crate::{Error, Spawner};

/// Work for the driver: runs on the core inside the driver task (starting an operation,
/// reading metadata).
pub(crate) type Command = Box<dyn FnOnce(&mut Client, Instant) + Send>;

/// What a socket task reports.
enum Inbound {
    Connected(ConnId),
    Data(ConnId, Vec<u8>),
    Closed(ConnId, String),
}

/// What woke the driver.
enum Wake {
    Command(Option<Command>),
    Inbound(Option<Inbound>),
    Timer,
}

/// The state of the driver task.
pub(crate) struct Driver {
    core: Client,
    commands: Receiver<Command>,
    inbound_tx: Sender<Inbound>,
    inbound: Receiver<Inbound>,
    /// Bytes to write, per open or opening socket; dropping a sender closes its socket.
    sockets: HashMap<ConnId, Sender<Vec<u8>>>,
    setup_timeout: Duration,
    spawner: Arc<Spawner>,
}

impl Driver {
    /// A driver for `config` and the sender its handles use.
    pub(crate) fn new(
        config: ClientConfig,
        spawner: Arc<Spawner>,
    ) -> Result<(Driver, Sender<Command>), Error> {
        let setup_timeout = config.common().socket_connection_setup_timeout;
        let core = Client::new(config, os_seed())?;
        let (commands_tx, commands) = unbounded();
        let (inbound_tx, inbound) = unbounded();
        let driver = Driver {
            core,
            commands,
            inbound_tx,
            inbound,
            sockets: HashMap::new(),
            setup_timeout,
            spawner,
        };
        Ok((driver, commands_tx))
    }

    /// Runs until every handle is dropped.
    pub(crate) async fn run(mut self) {
        loop {
            self.flush();
            let timer = match self.core.poll_timeout() {
                Some(at) => Timer::at(at),
                None => Timer::never(),
            };
            let wake = or(
                async { Wake::Command(self.commands.recv().await.ok()) },
                or(
                    async { Wake::Inbound(self.inbound.recv().await.ok()) },
                    async {
                        timer.await;
                        Wake::Timer
                    },
                ),
            )
            .await;
            match wake {
                Wake::Command(Some(command)) => {
                    self.core.handle_wall_clock(wall_clock());
                    command(&mut self.core, Instant::now());
                }
                Wake::Command(None) => break,
                Wake::Inbound(msg) => {
                    let mut next = msg;
                    while let Some(msg) = next {
                        self.inbound(msg);
                        next = self.inbound.try_recv().ok();
                    }
                }
                Wake::Timer => self.core.handle_timeout(Instant::now()),
            }
        }
    }

    /// Drains the core until it has nothing more to do right now.
    fn flush(&mut self) {
        loop {
            let mut progressed = false;
            self.core.handle_wall_clock(wall_clock());
            while let Some(cmd) = self.core.poll_io() {
                progressed = true;
                match cmd {
                    IoCommand::Connect { conn, host, port } => self.connect(conn, host, port),
                    IoCommand::Close { conn } => {
                        self.sockets.remove(&conn);
                    }
                    _ => {}
                }
            }
            let now = Instant::now();
            let conns: Vec<ConnId> = self.core.connections().collect();
            for conn in conns {
                let mut buf = Vec::new();
                if self.core.poll_transmit(now, conn, &mut buf) == 0 {
                    continue;
                }
                progressed = true;
                let sent = self
                    .sockets
                    .get(&conn)
                    .is_some_and(|s| s.try_send(buf).is_ok());
                if !sent {
                    self.sockets.remove(&conn);
                    self.core.handle_closed(now, conn, "socket gone");
                }
            }
            while self.core.poll_event().is_some() {}
            if !progressed && !self.core.poll_io_pending() {
                return;
            }
        }
    }

    fn inbound(&mut self, msg: Inbound) {
        let now = Instant::now();
        match msg {
            Inbound::Connected(conn) => {
                self.core.handle_wall_clock(wall_clock());
                self.core.handle_connected(now, conn);
            }
            Inbound::Data(conn, data) => self.core.handle_received(now, conn, &data),
            Inbound::Closed(conn, cause) => {
                self.sockets.remove(&conn);
                self.core.handle_closed(now, conn, &cause);
            }
        }
    }

    fn connect(&mut self, conn: ConnId, host: String, port: u16) {
        let (tx, rx) = unbounded();
        self.sockets.insert(conn, tx);
        let socket = Socket {
            conn,
            out: rx,
            report: self.inbound_tx.clone(),
        };
        (self.spawner)(Box::pin(socket.run(host, port, self.setup_timeout)));
    }
}

/// One socket's task: connects, then reads and writes until either side closes.
struct Socket {
    conn: ConnId,
    out: Receiver<Vec<u8>>,
    report: Sender<Inbound>,
}

impl Socket {
    async fn run(self, host: String, port: u16, setup_timeout: Duration) {
        let connect = or(async { Some(connect(&host, port).await) }, async {
            Timer::after(setup_timeout).await;
            None
        });
        // Nothing is sent before `Connected`: `recv` only ends when the driver closes us.
        let closed = async {
            let _ = self.out.recv().await;
            None
        };
        let stream = match or(async { Some(connect.await) }, closed).await {
            None => return,
            Some(Some(Ok(stream))) => stream,
            Some(Some(Err(e))) => return self.closed(format!("connect to {host}:{port}: {e}")),
            Some(None) => {
                return self.closed(format!(
                    "connect to {host}:{port}: no connection within {setup_timeout:?}"
                ))
            }
        };
        let _ = stream.get_ref().set_nodelay(true);
        if self.report.try_send(Inbound::Connected(self.conn)).is_err() {
            return;
        }
        let reader = async {
            let mut read = &stream;
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match read.read(&mut buf).await {
                    Ok(0) => return Some("closed by peer".to_string()),
                    Ok(n) => {
                        let data = Inbound::Data(self.conn, buf[..n].to_vec());
                        if self.report.try_send(data).is_err() {
                            return None;
                        }
                    }
                    Err(e) => return Some(e.to_string()),
                }
            }
        };
        let writer = async {
            let mut write = &stream;
            while let Ok(bytes) = self.out.recv().await {
                if let Err(e) = write.write_all(&bytes).await {
                    return Some(e.to_string());
                }
            }
            None
        };
        if let Some(cause) = or(reader, writer).await {
            self.closed(cause);
        }
    }

    fn closed(&self, cause: String) {
        let _ = self.report.try_send(Inbound::Closed(self.conn, cause));
    }
}

/// Connects to the first address of `host` that accepts.
async fn connect(host: &str, port: u16) -> io::Result<Async<TcpStream>> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{host} did not resolve"));
    for addr in resolve(host, port).await? {
        match Async::<TcpStream>::connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// The addresses of `host`: parsed if it is an IP address, else looked up on a short-lived
/// thread (the system resolver blocks, and no executor's blocking pool is assumed).
async fn resolve(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    if let Ok(ip) = host.trim_matches(['[', ']']).parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let (tx, rx) = async_channel::bounded(1);
    let name = (host.to_string(), port);
    std::thread::Builder::new()
        .name("kafka-resolve".into())
        .spawn(move || {
            let _ = tx.try_send(name.to_socket_addrs().map(Iterator::collect));
        })?;
    rx.recv()
        .await
        .unwrap_or_else(|_| Err(io::Error::other("resolver thread failed")))
}

/// Time since the Unix epoch, for TLS certificate validity.
fn wall_clock() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Fresh randomness for SCRAM nonces and jitter: the OS source where there is one.
fn os_seed() -> [u8; 32] {
    let mut seed = [0u8; 32];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut seed))
        .is_err()
    {
        use std::hash::{BuildHasher, Hasher};
        for chunk in seed.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(wall_clock().as_nanos());
            chunk.copy_from_slice(&h.finish().to_be_bytes());
        }
    }
    seed
}
