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

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use kafka_core::admin::AdminError;
use kafka_core::client::{Client, ClientError, ConnId, Operation};
use kafka_core::cluster::Route;
use kafka_core::config::ClientConfig;
use kafka_core::conn::RequestError;
use kafka_core::protocol::Request;
use kafka_driver::{Hub, Outlet, SocketReport};

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

/// Writes go straight to the socket; closing shuts it down, which ends its reader thread.
#[derive(Debug)]
struct Stream(TcpStream);

impl Outlet for Stream {
    fn send(&mut self, bytes: Vec<u8>) -> Result<(), String> {
        self.0.write_all(&bytes).map_err(|e| e.to_string())
    }

    fn close(&mut self) {
        let _ = self.0.shutdown(Shutdown::Both);
    }
}

/// A blocking Kafka client over `kafka-core`.
pub struct BlockingClient {
    hub: Hub<Stream>,
    tx: Sender<SocketReport>,
    rx: Receiver<SocketReport>,
    call_timeout: Duration,
    setup_timeout: Duration,
}

impl BlockingClient {
    /// Creates a client; connections open on first use.
    pub fn new(config: ClientConfig) -> Result<Self, Error> {
        let setup_timeout = config.common().socket_connection_setup_timeout;
        let call_timeout = config.common().request_timeout * 2 + setup_timeout;
        let core = kafka_driver::new_client(config)?;
        let (tx, rx) = channel();
        Ok(BlockingClient {
            hub: Hub::new(core),
            tx,
            rx,
            call_timeout,
            setup_timeout,
        })
    }

    /// The core, for metadata and other state.
    pub fn core(&self) -> &Client {
        &self.hub.core
    }

    /// The core, to request metadata refreshes and the like.
    pub fn core_mut(&mut self) -> &mut Client {
        &mut self.hub.core
    }

    /// Sends `request` to `route` and waits for its response.
    pub fn call<R>(&mut self, route: Route, request: R) -> Result<R::Response, Error>
    where
        R: Request + Send + Sync + 'static,
        R::Response: Send + 'static,
    {
        let id = self.hub.core.send(Instant::now(), route, request);
        let deadline = Instant::now() + self.call_timeout;
        loop {
            if let Some(result) = self.hub.core.take_response(id) {
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
        let id = self.hub.core.start_op(Instant::now(), op);
        loop {
            if let Some(out) = self.hub.core.take_op_output(id) {
                return out;
            }
            self.turn(Instant::now() + Duration::from_secs(60));
        }
    }

    /// One turn of the loop: sockets and writes, then wait for input or the next deadline.
    fn turn(&mut self, limit: Instant) {
        let (tx, setup_timeout) = (&self.tx, self.setup_timeout);
        self.hub
            .flush(|conn, host, port| connect(conn, &host, port, setup_timeout, tx));
        let wake = self.hub.core.poll_timeout().map_or(limit, |t| t.min(limit));
        let wait = wake
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        match self.rx.recv_timeout(wait) {
            Ok(msg) => self.hub.report(msg),
            Err(RecvTimeoutError::Timeout) => self.hub.core.handle_timeout(Instant::now()),
            Err(RecvTimeoutError::Disconnected) => {}
        }
        while let Ok(msg) = self.rx.try_recv() {
            self.hub.report(msg);
        }
    }
}

/// Opens a socket with a reader thread that reports to `tx`; `Connected` is reported
/// first, through the same channel.
fn connect(
    conn: ConnId,
    host: &str,
    port: u16,
    setup_timeout: Duration,
    tx: &Sender<SocketReport>,
) -> Result<Stream, String> {
    let addr = (host, port)
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .next()
        .ok_or_else(|| format!("{host} did not resolve"))?;
    let stream = TcpStream::connect_timeout(&addr, setup_timeout).map_err(|e| e.to_string())?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let mut reader = stream.try_clone().map_err(|e| e.to_string())?;
    let _ = tx.send(SocketReport::Connected(conn));
    let tx = tx.clone();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break tx.send(SocketReport::Closed(conn, "closed by peer".into())),
                Ok(n) => {
                    if tx
                        .send(SocketReport::Data(conn, buf[..n].to_vec()))
                        .is_err()
                    {
                        break Ok(());
                    }
                }
                Err(e) => break tx.send(SocketReport::Closed(conn, e.to_string())),
            }
        }
    });
    Ok(Stream(stream))
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
        self.hub.close_all();
    }
}
