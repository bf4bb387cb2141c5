//! `kafka-blocking`: drive the sans-IO `kafka-core` client with plain blocking sockets,
//! for scripts and tools. No async runtime.
//!
//! One thread per socket reads into a channel; the calling thread owns the core, writes,
//! and waits on the channel until the core's next deadline. Every protocol decision is in
//! the core.
//!
//! ```no_run
//! use kafka_blocking::BlockingClient;
//! use kafka_core::cluster::Route;
//! use kafka_core::config::ClientConfig;
//! use kafka_core::protocol::messages::metadata::MetadataRequest;
//!
//! let config = ClientConfig::from_pairs([("bootstrap.servers", "127.0.0.1:9092")])?;
//! let mut client = BlockingClient::new(config)?;
//! let metadata = client.call(Route::Any, MetadataRequest::default())?;
//! println!("{} brokers", metadata.brokers.len());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kafka_core::admin::AdminError;
use kafka_core::client::{Client, ClientError, ConnId, IoCommand, Operation};
use kafka_core::cluster::Route;
use kafka_core::config::ClientConfig;
use kafka_core::conn::RequestError;
use kafka_core::protocol::Request;

/// Why a blocking call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The core refused the configuration.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The request failed.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// No answer within the call's deadline.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
}

enum Inbound {
    Data(ConnId, Vec<u8>),
    Closed(ConnId, String),
}

/// A blocking Kafka client over `kafka-core`.
pub struct BlockingClient {
    core: Client,
    sockets: HashMap<ConnId, TcpStream>,
    tx: Sender<Inbound>,
    rx: Receiver<Inbound>,
    call_timeout: Duration,
    setup_timeout: Duration,
}

impl BlockingClient {
    /// Creates a client; connections open on first use.
    pub fn new(config: ClientConfig) -> Result<Self, Error> {
        let setup_timeout = config.common().socket_connection_setup_timeout;
        let call_timeout = config.common().request_timeout * 2 + setup_timeout;
        let core = Client::new(config, os_seed())?;
        let (tx, rx) = channel();
        Ok(BlockingClient {
            core,
            sockets: HashMap::new(),
            tx,
            rx,
            call_timeout,
            setup_timeout,
        })
    }

    /// The core, for metadata and other state.
    pub fn core(&self) -> &Client {
        &self.core
    }

    /// The core, to request metadata refreshes and the like.
    pub fn core_mut(&mut self) -> &mut Client {
        &mut self.core
    }

    /// Sends `request` to `route` and waits for its response.
    pub fn call<R>(&mut self, route: Route, request: R) -> Result<R::Response, Error>
    where
        R: Request + Send + Sync + 'static,
        R::Response: Send + 'static,
    {
        let id = self.core.send(Instant::now(), route, request);
        let deadline = Instant::now() + self.call_timeout;
        loop {
            if let Some(result) = self.core.take_response(id) {
                return Ok(result?);
            }
            if Instant::now() >= deadline {
                return Err(Error::Timeout(self.call_timeout));
            }
            self.turn(deadline);
        }
    }

    /// Runs an operation (e.g. an admin call) to completion. Operations end by their own
    /// deadline, so this returns even if no broker answers.
    pub fn run_op<O: Operation>(&mut self, op: O) -> O::Output {
        let id = self.core.start_op(Instant::now(), op);
        loop {
            if let Some(out) = self.core.take_op_output(id) {
                return out;
            }
            self.turn(Instant::now() + Duration::from_secs(60));
        }
    }

    /// One turn of the loop: sockets, writes, then wait for input or the next deadline.
    fn turn(&mut self, limit: Instant) {
        let now = Instant::now();
        self.core.handle_wall_clock(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default(),
        );
        while let Some(cmd) = self.core.poll_io() {
            match cmd {
                IoCommand::Connect { conn, host, port } => self.connect(now, conn, &host, port),
                IoCommand::Close { conn } => {
                    if let Some(s) = self.sockets.remove(&conn) {
                        let _ = s.shutdown(Shutdown::Both);
                    }
                }
                _ => {}
            }
        }
        let conns: Vec<ConnId> = self.core.connections().collect();
        let mut buf = Vec::new();
        for conn in conns {
            buf.clear();
            if self.core.poll_transmit(now, conn, &mut buf) > 0 {
                let failed = match self.sockets.get_mut(&conn) {
                    Some(s) => s.write_all(&buf).err().map(|e| e.to_string()),
                    None => Some("socket gone".into()),
                };
                if let Some(cause) = failed {
                    self.core.handle_closed(now, conn, &cause);
                }
            }
        }
        while self.core.poll_event().is_some() {}
        if self.core.poll_io_pending() {
            return;
        }
        let wake = self.core.poll_timeout().map_or(limit, |t| t.min(limit));
        let wait = wake
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        match self.rx.recv_timeout(wait) {
            Ok(msg) => self.inbound(msg),
            Err(RecvTimeoutError::Timeout) => self.core.handle_timeout(Instant::now()),
            Err(RecvTimeoutError::Disconnected) => {}
        }
        while let Ok(msg) = self.rx.try_recv() {
            self.inbound(msg);
        }
    }

    fn inbound(&mut self, msg: Inbound) {
        let now = Instant::now();
        match msg {
            Inbound::Data(conn, data) => self.core.handle_received(now, conn, &data),
            Inbound::Closed(conn, cause) => {
                self.sockets.remove(&conn);
                self.core.handle_closed(now, conn, &cause);
            }
        }
    }

    fn connect(&mut self, now: Instant, conn: ConnId, host: &str, port: u16) {
        let stream = (host, port)
            .to_socket_addrs()
            .map_err(|e| e.to_string())
            .and_then(|mut addrs| {
                addrs
                    .next()
                    .ok_or_else(|| format!("{host} did not resolve"))
            })
            .and_then(|addr| {
                TcpStream::connect_timeout(&addr, self.setup_timeout).map_err(|e| e.to_string())
            });
        let stream =
            match stream.and_then(|s| s.set_nodelay(true).map(|()| s).map_err(|e| e.to_string())) {
                Ok(s) => s,
                Err(cause) => return self.core.handle_closed(now, conn, &cause),
            };
        let Ok(mut reader) = stream.try_clone() else {
            return self.core.handle_closed(now, conn, "socket clone failed");
        };
        let tx = self.tx.clone();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) => break tx.send(Inbound::Closed(conn, "closed by peer".into())),
                    Ok(n) => {
                        if tx.send(Inbound::Data(conn, buf[..n].to_vec())).is_err() {
                            break Ok(());
                        }
                    }
                    Err(e) => break tx.send(Inbound::Closed(conn, e.to_string())),
                }
            }
        });
        self.sockets.insert(conn, stream);
        self.core.handle_connected(now, conn);
    }
}

/// The admin client for scripts: every admin operation as a blocking call, each with
/// per-item results. Shareable between threads (calls take turns on one client).
///
/// ```no_run
/// use kafka_blocking::Admin;
/// use kafka_core::admin::NewTopic;
/// use kafka_core::config::ClientConfig;
///
/// let admin = Admin::new(ClientConfig::from_pairs([("bootstrap.servers", "127.0.0.1:9092")])?)?;
/// let created = admin.create_topics([NewTopic::new("events", 3, 1)])?;
/// println!("{:?}", created["events"]);
/// println!("{} brokers", admin.describe_cluster()?.brokers.len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Admin {
    client: std::sync::Mutex<BlockingClient>,
}

impl Admin {
    /// Creates the admin client; connections open on first use.
    pub fn new(config: ClientConfig) -> Result<Self, Error> {
        Ok(Admin {
            client: std::sync::Mutex::new(BlockingClient::new(config)?),
        })
    }

    /// Runs any admin operation, e.g. one built with non-default options:
    /// `admin.run(CreateTopics::new(topics).validate_only(true))`.
    pub fn run<O, T>(&self, op: O) -> Result<T, AdminError>
    where
        O: Operation<Output = Result<T, AdminError>>,
    {
        let mut client = self
            .client
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        client.run_op(op)
    }

    /// The underlying client, e.g. for raw requests or metadata.
    pub fn client(&self) -> std::sync::MutexGuard<'_, BlockingClient> {
        self.client
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    kafka_core::admin_methods!(blocking run);
}

impl Drop for BlockingClient {
    fn drop(&mut self) {
        for s in self.sockets.values() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
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
            h.write_u128(
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_nanos(),
            );
            chunk.copy_from_slice(&h.finish().to_be_bytes());
        }
    }
    seed
}
