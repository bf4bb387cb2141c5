//! The driver task: owns the core, one task per socket, one timer.
//!
//! Every turn drains the core (`poll_io` → `poll_transmit` → `poll_event`), arms the
//! timer at `poll_timeout`, then waits for a command from an [`Admin`](crate::Admin)
//! handle, bytes or a close from a socket task, or the timer. The loop ends when every
//! handle is gone; dropping the socket senders then ends every socket task.

use std::io;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_channel::{unbounded, Receiver, Sender};
use async_io::{Async, Timer};
use futures_lite::future::or;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use kafka_core::client::{Client, ConnId};
use kafka_core::config::ClientConfig;
use kafka_driver::{wall_clock, Hub, Outlet, SocketReport as Inbound};

use crate::{Error, Spawner};

/// Work for the driver: runs on the core inside the driver task (starting an operation,
/// reading metadata).
pub(crate) type Command = Box<dyn FnOnce(&mut Client, Instant) + Send>;

/// What woke the driver.
enum Wake {
    Command(Option<Command>),
    Inbound(Option<Inbound>),
    Timer,
}

/// The bytes for one socket go to its task; dropping the sender closes the socket.
struct ToSocket(Sender<Vec<u8>>);

impl Outlet for ToSocket {
    fn send(&mut self, bytes: Vec<u8>) -> Result<(), String> {
        self.0
            .try_send(bytes)
            .map_err(|_| "socket task gone".to_string())
    }
}

/// The state of the driver task.
pub(crate) struct Driver {
    hub: Hub<ToSocket>,
    commands: Receiver<Command>,
    inbound_tx: Sender<Inbound>,
    inbound: Receiver<Inbound>,
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
        let core = kafka_driver::new_client(config)?;
        let (commands_tx, commands) = unbounded();
        let (inbound_tx, inbound) = unbounded();
        let driver = Driver {
            hub: Hub::new(core),
            commands,
            inbound_tx,
            inbound,
            setup_timeout,
            spawner,
        };
        Ok((driver, commands_tx))
    }

    /// Runs until every handle is dropped.
    pub(crate) async fn run(mut self) {
        loop {
            let (report, setup_timeout, spawner) =
                (&self.inbound_tx, self.setup_timeout, &self.spawner);
            self.hub.flush(|conn, host, port| {
                let (tx, rx) = unbounded();
                let socket = Socket {
                    conn,
                    out: rx,
                    report: report.clone(),
                };
                spawner(Box::pin(socket.run(host, port, setup_timeout)));
                Ok(ToSocket(tx))
            });
            let timer = match self.hub.core.poll_timeout() {
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
                    self.hub.core.handle_wall_clock(wall_clock());
                    command(&mut self.hub.core, Instant::now());
                }
                Wake::Command(None) => break,
                Wake::Inbound(msg) => {
                    let mut next = msg;
                    while let Some(msg) = next {
                        self.hub.report(msg);
                        next = self.inbound.try_recv().ok();
                    }
                }
                Wake::Timer => self.hub.core.handle_timeout(Instant::now()),
            }
        }
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
