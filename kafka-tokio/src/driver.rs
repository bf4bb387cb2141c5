//! The driver task: owns the core, one task per socket, one timer.
//!
//! Every turn drains the core (`poll_io` → `poll_transmit` → `poll_event`), arms the
//! timer at `poll_timeout`, then waits for a command from an [`Admin`](crate::Admin)
//! handle, bytes or a close from a socket task, or the timer. The loop ends when every
//! handle is gone; dropping the socket senders then ends every socket task.

use std::time::{Duration, Instant};

use kafka_core::client::{Client, ConnId};
use kafka_core::config::ClientConfig;
use kafka_driver::{wall_clock, Hub, Outlet, SocketReport as Inbound};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::Error;

/// Work for the driver: runs on the core inside the driver task (starting an operation,
/// reading metadata).
pub(crate) type Command = Box<dyn FnOnce(&mut Client, Instant) + Send>;

/// The bytes for one socket go to its task; dropping the sender closes the socket.
struct ToSocket(UnboundedSender<Vec<u8>>);

impl Outlet for ToSocket {
    fn send(&mut self, bytes: Vec<u8>) -> Result<(), String> {
        self.0
            .send(bytes)
            .map_err(|_| "socket task gone".to_string())
    }
}

/// The state of the driver task.
pub(crate) struct Driver {
    hub: Hub<ToSocket>,
    commands: UnboundedReceiver<Command>,
    inbound_tx: UnboundedSender<Inbound>,
    inbound: UnboundedReceiver<Inbound>,
    setup_timeout: Duration,
}

impl Driver {
    /// A driver for `config` and the sender its handles use.
    pub(crate) fn new(config: ClientConfig) -> Result<(Driver, UnboundedSender<Command>), Error> {
        let setup_timeout = config.common().socket_connection_setup_timeout;
        let core = kafka_driver::new_client(config)?;
        let (commands_tx, commands) = unbounded_channel();
        let (inbound_tx, inbound) = unbounded_channel();
        let driver = Driver {
            hub: Hub::new(core),
            commands,
            inbound_tx,
            inbound,
            setup_timeout,
        };
        Ok((driver, commands_tx))
    }

    /// Runs until every handle is dropped.
    pub(crate) async fn run(mut self) {
        loop {
            let (report, setup_timeout) = (&self.inbound_tx, self.setup_timeout);
            self.hub.flush(|conn, host, port| {
                let (tx, rx) = unbounded_channel();
                let socket = Socket {
                    conn,
                    out: rx,
                    report: report.clone(),
                };
                tokio::spawn(socket.run(host, port, setup_timeout));
                Ok(ToSocket(tx))
            });
            let wake = self.hub.core.poll_timeout();
            let timer = async move {
                match wake {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                command = self.commands.recv() => match command {
                    Some(command) => {
                        self.hub.core.handle_wall_clock(wall_clock());
                        command(&mut self.hub.core, Instant::now());
                    }
                    None => break,
                },
                Some(msg) = self.inbound.recv() => {
                    self.hub.report(msg);
                    while let Ok(msg) = self.inbound.try_recv() {
                        self.hub.report(msg);
                    }
                }
                () = timer => self.hub.core.handle_timeout(Instant::now()),
            }
        }
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
