//! `kafka-driver`: the pieces every socket-owning adapter of the sans-IO `kafka-core`
//! client repeats, written once. [`Hub`] owns the core and one [`Outlet`] per socket and
//! runs the drain order (`poll_io` → `poll_transmit` → `poll_event`) until the core is
//! idle; socket tasks or threads report back with [`SocketReport`]s. The adapter keeps
//! only what is really runtime-specific: opening sockets, the tasks that move bytes, the
//! timer and the wait.
//!
//! The I/O the core must not do lives here too: [`new_client`] (reads `ssl.*.location`
//! files), [`os_seed`] (randomness for SCRAM nonces and jitter) and [`wall_clock`]
//! (certificate validity).

use std::collections::HashMap;
use std::io::Read;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kafka_core::client::{Client, ClientError, ConnId, Event, IoCommand};
use kafka_core::config::ClientConfig;

/// What a socket's task (or reader thread) tells its driver.
#[derive(Debug)]
pub enum SocketReport {
    /// The socket connected.
    Connected(ConnId),
    /// Bytes arrived.
    Data(ConnId, Vec<u8>),
    /// The socket failed to connect or closed, and why.
    Closed(ConnId, String),
}

/// Where the bytes for one socket go: a channel to the socket's task, or the socket.
pub trait Outlet {
    /// Hands over bytes to write; `Err` (with why) when the socket is gone.
    fn send(&mut self, bytes: Vec<u8>) -> Result<(), String>;

    /// Called when the core closes the socket, before the outlet is dropped (dropping a
    /// channel sender is enough for task-based drivers).
    fn close(&mut self) {}
}

/// The core and the outlets of its sockets.
#[derive(Debug)]
pub struct Hub<O> {
    /// The sans-IO client.
    pub core: Client,
    sockets: HashMap<ConnId, O>,
}

impl<O: Outlet> Hub<O> {
    /// A hub around `core`, with no sockets yet.
    pub fn new(core: Client) -> Self {
        Hub {
            core,
            sockets: HashMap::new(),
        }
    }

    /// Drains the core until it has nothing more to do right now: opens sockets with
    /// `open` (the new socket's outlet, or why it could not be opened), closes the ones
    /// the core is done with, hands every pending byte to its outlet and discards events
    /// (operations deliver their outputs through callbacks or `take_op_output`).
    pub fn flush(&mut self, mut open: impl FnMut(ConnId, String, u16) -> Result<O, String>) {
        loop {
            let mut progressed = false;
            self.core.handle_wall_clock(wall_clock());
            while let Some(cmd) = self.core.poll_io() {
                progressed = true;
                match cmd {
                    IoCommand::Connect { conn, host, port } => match open(conn, host, port) {
                        Ok(outlet) => {
                            self.sockets.insert(conn, outlet);
                        }
                        Err(cause) => self.core.handle_closed(Instant::now(), conn, &cause),
                    },
                    IoCommand::Close { conn } => self.close(conn),
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
                let sent = match self.sockets.get_mut(&conn) {
                    Some(outlet) => outlet.send(buf),
                    None => Err("socket gone".into()),
                };
                if let Err(cause) = sent {
                    self.close(conn);
                    self.core.handle_closed(now, conn, &cause);
                }
            }
            while let Some(event) = self.core.poll_event() {
                answer_token_request(&mut self.core, &event);
            }
            if !progressed && !self.core.poll_io_pending() {
                return;
            }
        }
    }

    /// Applies what a socket reported.
    pub fn report(&mut self, report: SocketReport) {
        let now = Instant::now();
        match report {
            SocketReport::Connected(conn) => {
                self.core.handle_wall_clock(wall_clock());
                self.core.handle_connected(now, conn);
            }
            SocketReport::Data(conn, data) => self.core.handle_received(now, conn, &data),
            SocketReport::Closed(conn, cause) => {
                self.sockets.remove(&conn);
                self.core.handle_closed(now, conn, &cause);
            }
        }
    }

    /// Closes every socket (on shutdown).
    pub fn close_all(&mut self) {
        for (_, mut outlet) in self.sockets.drain() {
            outlet.close();
        }
    }

    fn close(&mut self, conn: ConnId) {
        if let Some(mut outlet) = self.sockets.remove(&conn) {
            outlet.close();
        }
    }
}

/// Answers the core's [`Event::OAuthTokenNeeded`] from the configured token provider
/// (the core never calls it itself); other events are left to the caller.
pub fn answer_token_request(core: &mut Client, event: &Event) {
    if !matches!(event, Event::OAuthTokenNeeded) {
        return;
    }
    let provider = core.config().security().sasl.token_provider.clone();
    let token = match provider {
        Some(p) => p.token(),
        None => Err("no OAUTHBEARER token provider configured".into()),
    };
    core.handle_oauth_token(Instant::now(), token);
}

/// The core client for `config`, with the `ssl.*.location` files read from disk (the
/// core opens no files) and fresh OS randomness as its seed.
pub fn new_client(config: ClientConfig) -> Result<Client, ClientError> {
    let config = config
        .with_ssl_files_loaded(|path| std::fs::read(path))
        .map_err(|e| ClientError::Config(e.to_string()))?;
    Client::new(config, os_seed())
}

/// Time since the Unix epoch, for TLS certificate validity.
pub fn wall_clock() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Fresh randomness for `Client::new` (SCRAM nonces, backoff jitter): the OS source where
/// there is one, else hashes of the clock with std's randomly keyed hasher.
pub fn os_seed() -> [u8; 32] {
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
