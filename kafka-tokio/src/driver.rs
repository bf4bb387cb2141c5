//! The driver task: owns the core, one task per socket, one timer.
//!
//! Every turn drains the core (`poll_io` → `poll_transmit` → `poll_event`), arms the
//! timer at `poll_timeout`, then waits for a command from an [`Admin`](crate::Admin)
//! handle, bytes or a close from a socket task, or the timer. The loop ends when every
//! handle is gone; dropping the socket senders then ends every socket task.

use std::collections::HashMap;
use std::io::Read;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kafka_core::client::{Client, ConnId, IoCommand};
use kafka_core::config::ClientConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::Error;

/// Work for the driver: runs on the core inside the driver task (starting an operation,
/// reading metadata).
pub(crate) type Command = Box<dyn FnOnce(&mut Client, Instant) + Send>;

/// What a socket task reports.
enum Inbound {
    Connected(ConnId),
    Data(ConnId, Vec<u8>),
    Closed(ConnId, String),
}

/// The state of the driver task.
pub(crate) struct Driver {
    core: Client,
    commands: UnboundedReceiver<Command>,
    inbound_tx: UnboundedSender<Inbound>,
    inbound: UnboundedReceiver<Inbound>,
    /// Bytes to write, per open or opening socket; dropping a sender closes its socket.
    sockets: HashMap<ConnId, UnboundedSender<Vec<u8>>>,
    setup_timeout: Duration,
}

impl Driver {
    /// A driver for `config` and the sender its handles use.
    pub(crate) fn new(config: ClientConfig) -> Result<(Driver, UnboundedSender<Command>), Error> {
        let setup_timeout = config.common().socket_connection_setup_timeout;
        let core = Client::new(config, os_seed())?;
        let (commands_tx, commands) = unbounded_channel();
        let (inbound_tx, inbound) = unbounded_channel();
        let driver = Driver {
            core,
            commands,
            inbound_tx,
            inbound,
            sockets: HashMap::new(),
            setup_timeout,
        };
        Ok((driver, commands_tx))
    }

    /// Runs until every handle is dropped.
    pub(crate) async fn run(mut self) {
        loop {
            self.flush();
            let wake = self.core.poll_timeout();
            let timer = async move {
                match wake {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                command = self.commands.recv() => match command {
                    Some(command) => {
                        self.core.handle_wall_clock(wall_clock());
                        command(&mut self.core, Instant::now());
                    }
                    None => break,
                },
                Some(msg) = self.inbound.recv() => {
                    self.inbound(msg);
                    while let Ok(msg) = self.inbound.try_recv() {
                        self.inbound(msg);
                    }
                }
                () = timer => self.core.handle_timeout(Instant::now()),
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
                let sent = self.sockets.get(&conn).is_some_and(|s| s.send(buf).is_ok());
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
        let (tx, rx) = unbounded_channel();
        self.sockets.insert(conn, tx);
        let socket = Socket {
            conn,
            out: rx,
            report: self.inbound_tx.clone(),
        };
        tokio::spawn(socket.run(host, port, self.setup_timeout));
    }
}

/// One socket's task: connects, then reads and writes until either side closes.
struct Socket {
    conn: ConnId,
    out: UnboundedReceiver<Vec<u8>>,
    report: UnboundedSender<Inbound>,
}

impl Socket {
    async fn run(mut self, host: String, port: u16, setup_timeout: Duration) {
        let connect =
            tokio::time::timeout(setup_timeout, TcpStream::connect((host.as_str(), port)));
        let connected = tokio::select! {
            result = connect => result,
            // Nothing is sent before `Connected`: this only ends when the driver closes us.
            _ = self.out.recv() => return,
        };
        let stream = match connected {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return self.closed(format!("connect to {host}:{port}: {e}")),
            Err(_) => {
                return self.closed(format!(
                    "connect to {host}:{port}: no connection within {setup_timeout:?}"
                ))
            }
        };
        let _ = stream.set_nodelay(true);
        if self.report.send(Inbound::Connected(self.conn)).is_err() {
            return;
        }
        let (mut read, mut write) = stream.into_split();
        let (conn, report, out) = (self.conn, &self.report, &mut self.out);
        let reader = async {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match read.read(&mut buf).await {
                    Ok(0) => return Some("closed by peer".to_string()),
                    Ok(n) => {
                        if report.send(Inbound::Data(conn, buf[..n].to_vec())).is_err() {
                            return None;
                        }
                    }
                    Err(e) => return Some(e.to_string()),
                }
            }
        };
        let writer = async {
            while let Some(bytes) = out.recv().await {
                if let Err(e) = write.write_all(&bytes).await {
                    return Some(e.to_string());
                }
            }
            None
        };
        let cause = tokio::select! {
            cause = reader => cause,
            cause = writer => cause,
        };
        if let Some(cause) = cause {
            self.closed(cause);
        }
    }

    fn closed(&self, cause: String) {
        let _ = self.report.send(Inbound::Closed(self.conn, cause));
    }
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
