//! `kafka-blocking`: drive the sans-IO `kafka-core` client with plain blocking sockets,
//! for scripts and tools. No async runtime.
//!
//! One driver thread owns the core and runs `kafka_driver`'s drain loop; callers (any
//! number of threads at once) hand it commands and each waits for its own answer, so
//! concurrent calls run concurrently. Every socket has a connector thread that resolves
//! the broker's host, tries every address in order (`client.dns.lookup=use_all_dns_ips`),
//! each within the attempt's setup timeout from the core (`socket.connection.setup.timeout.ms`
//! grown per failed attempt up to its `.max.ms`), then reads; a writer thread writes
//! what the driver hands it, at most a bounded amount at a time. Connects never block the
//! driver or a caller. Every protocol decision is in the core.
//!
//! Connection failures are logged with `tracing` (feature `tracing`, on by default) and
//! handed to [`BlockingClient::on_notice`]'s hook.
//!
//! ```no_run
//! use kafka_blocking::BlockingClient;
//! use kafka_core::cluster::Route;
//! use kafka_core::config::ClientConfig;
//! use kafka_core::protocol::messages::metadata::MetadataRequest;
//!
//! let config = ClientConfig::from_pairs([("bootstrap.servers", "127.0.0.1:9092")])?;
//! let client = BlockingClient::new(config)?;
//! let metadata = client.call(Route::Any, MetadataRequest::default())?;
//! println!("{} brokers", metadata.brokers.len());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod consumer;
mod driver;
mod group;
mod pipeline;
mod producer;
mod share;

use std::sync::Arc;
use std::time::{Duration, Instant};

pub use consumer::{Consumer, ConsumerMetrics, ConsumerRecord};
pub use group::{
    CommitError, CommitHandle, GroupConsumer, GroupMetadata, Offsets, Rebalance, RebalanceListener,
    TopicPartition, TransactionOffsets,
};
use kafka_core::admin::AdminError;
use kafka_core::client::{Client, ClientError, OpContext, Operation, RequestId};
use kafka_core::cluster::Route;
use kafka_core::config::ClientConfig;
use kafka_core::conn::RequestError;
use kafka_core::protocol::Request;
use kafka_driver::chan::{self, Sender};
pub use kafka_driver::{HubStats, Notice};
pub use pipeline::TxnPipeline;
pub use producer::{Delivery, Producer, Record, RecordMetadata};
pub use share::{
    AckCompletion, AckResults, AcknowledgeType, ShareCommitId, ShareConsumer, ShareError,
    ShareEvent, ShareRecord,
};

use driver::{Command, Msg};

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
    /// No answer within the call's deadline (or a `commit_sync`'s timeout; the commit
    /// goes on).
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// A [`BlockingClient::call`] got no answer by its deadline; `last_cause` is the last
    /// failure the client saw for it (a refused connection, a retriable failure...).
    #[error("timed out after {after:?}{}", last_cause.as_ref().map(|c| format!("; last cause: {c}")).unwrap_or_default())]
    CallTimedOut {
        /// The call's deadline.
        after: Duration,
        /// Why it was still waiting, if the client knows.
        last_cause: Option<Box<kafka_core::client::Cause>>,
    },
    /// The driver thread could not be started, or is gone.
    #[error("driver thread: {0}")]
    Driver(String),
    /// The producer settings are unusable (e.g. a codec not built in).
    #[error(transparent)]
    Config(#[from] kafka_core::config::ConfigError),
    /// The producer or consumer is closing or closed.
    #[error("closed")]
    Closed,
    /// The consumer cannot go on with a partition (the others go on).
    #[error(transparent)]
    Consume(#[from] kafka_core::consumer::ConsumeError),
    /// An offset lookup (`beginning_offsets`, `end_offsets`, `offsets_for_times`)
    /// failed.
    #[error("offset lookup: {0}")]
    Lookup(kafka_core::admin::AdminError),
    /// The group member cannot go on (the group consumer stops consuming).
    #[error(transparent)]
    Group(#[from] kafka_core::group::GroupError),
    /// The share consumer cannot go on, or an acknowledgement was refused locally.
    #[error(transparent)]
    Share(kafka_core::share::ShareError),
    /// A commit failed (a `commit_sync`'s result).
    #[error(transparent)]
    Commit(kafka_core::group::CommitError),
    /// A transactional call failed: abortable ([`TxnError::is_abortable`]: abort, then
    /// go on) or fatal (drop the producer).
    ///
    /// [`TxnError::is_abortable`]: kafka_core::producer::TxnError::is_abortable
    #[error(transparent)]
    Transaction(#[from] kafka_core::producer::TxnError),
}

/// Tells the driver thread to stop when the last handle goes.
struct Stopper(Sender<Msg>);

impl Drop for Stopper {
    fn drop(&mut self) {
        let _ = self.0.push(Msg::Shutdown);
    }
}

/// A blocking Kafka client over `kafka-core`: a handle on its driver thread, usable from
/// any number of threads at once (`Send + Sync`; calls take `&self`).
pub struct BlockingClient {
    pub(crate) inbox: Sender<Msg>,
    _stop: Arc<Stopper>,
    call_timeout: Duration,
}

impl BlockingClient {
    /// Creates a client and its driver thread; connections open on first use.
    pub fn new(config: ClientConfig) -> Result<Self, Error> {
        // The longest one connection attempt may take: the max with its +20% jitter.
        let setup_timeout = config.common().socket_connection_setup_timeout_max * 6 / 5;
        let call_timeout = config.common().request_timeout * 2 + setup_timeout;
        let core = kafka_driver::new_client(config)?;
        let inbox = driver::spawn(core).map_err(|e| Error::Driver(e.to_string()))?;
        Ok(BlockingClient {
            _stop: Arc::new(Stopper(inbox.clone())),
            inbox,
            call_timeout,
        })
    }

    /// Runs `f` on the core inside the driver thread (metadata, invalidations, ...) and
    /// returns its result.
    pub fn with_core<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Client) -> T + Send + 'static,
    ) -> Result<T, Error> {
        self.ask(move |hub, _| f(&mut hub.core))
    }

    /// Sends `request` to `route` once and waits for its response (at most
    /// `2 × request.timeout.ms + 1.2 × socket.connection.setup.timeout.max.ms`).
    pub fn call<R>(&self, route: Route, request: R) -> Result<R::Response, Error>
    where
        R: Request + Send + Sync + 'static,
        R::Response: Send + 'static,
    {
        let op = Once {
            route,
            request: Some(request),
            id: None,
            limit: self.call_timeout,
            deadline: None,
        };
        self.run_op(op)?
    }

    /// Runs an operation (e.g. an admin call) to completion and returns its output.
    /// Operations end by their own deadline, so this returns even if no broker answers.
    pub fn run_op<O: Operation>(&self, op: O) -> Result<O::Output, Error> {
        let (tx, mut rx) = chan::channel(1);
        let command: Command = Box::new(move |hub, now| {
            hub.core.start_op_then(now, op, move |out| {
                let _ = tx.push(out);
            });
        });
        self.submit(command)?;
        rx.recv_deadline(None).map_err(|_| gone())
    }

    /// Sets the hook that receives [`Notice`]s: every broker connection failure (node and
    /// cause) and metadata update. It runs on the driver thread: keep it short and
    /// non-blocking. Replaces any earlier hook; notices before the first hook are only
    /// logged.
    pub fn on_notice(&self, hook: impl Fn(&Notice) + Send + Sync + 'static) -> Result<(), Error> {
        let hook: kafka_driver::OnNotice = Arc::new(hook);
        self.ask(move |hub, _| hub.on_notice(Some(hook)))
    }

    /// The driver's outbound counters (bytes waiting for sockets, the most one socket has
    /// held).
    pub fn stats(&self) -> Result<HubStats, Error> {
        self.ask(|hub, _| hub.stats())
    }

    pub(crate) fn ask<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut kafka_driver::Hub<kafka_driver::PipeOutlet>, Instant) -> T + Send + 'static,
    ) -> Result<T, Error> {
        let (tx, mut rx) = chan::channel(1);
        self.submit(Box::new(move |hub, now| {
            let _ = tx.push(f(hub, now));
        }))?;
        rx.recv_deadline(None).map_err(|_| gone())
    }

    pub(crate) fn submit(&self, command: Command) -> Result<(), Error> {
        self.inbox.push(Msg::Command(command)).map_err(|_| gone())
    }
}

impl std::fmt::Debug for BlockingClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockingClient")
            .field("driver_running", &!self.inbox.is_closed())
            .finish()
    }
}

pub(crate) fn gone() -> Error {
    Error::Driver("the driver thread is gone".into())
}

/// One request, sent once, until its response or the deadline.
struct Once<R: Request> {
    route: Route,
    request: Option<R>,
    id: Option<RequestId<R>>,
    limit: Duration,
    deadline: Option<Instant>,
}

impl<R> Operation for Once<R>
where
    R: Request + Send + Sync + 'static,
    R::Response: Send + 'static,
{
    type Output = Result<R::Response, Error>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = *self.deadline.get_or_insert(cx.now() + self.limit);
        if let Some(request) = self.request.take() {
            self.id = Some(cx.send(self.route.clone(), request));
        }
        let id = self.id?;
        if let Some(result) = cx.take_response(id) {
            return Some(result.map_err(Error::Request));
        }
        if cx.now() >= deadline {
            let last_cause = cx.cause_of(id).map(Box::new);
            cx.discard(id);
            return Some(Err(Error::CallTimedOut {
                after: self.limit,
                last_cause,
            }));
        }
        cx.wake_at(deadline);
        None
    }
}

/// The admin client for scripts: every admin operation as a blocking call, each with
/// per-item results. Shareable between threads: calls from several threads run at the
/// same time on the one driver thread, each waiting only for its own answer.
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
#[derive(Debug)]
pub struct Admin {
    client: BlockingClient,
}

impl Admin {
    /// Creates the admin client; connections open on first use.
    pub fn new(config: ClientConfig) -> Result<Self, Error> {
        Ok(Admin {
            client: BlockingClient::new(config)?,
        })
    }

    /// Runs any admin operation, e.g. one built with non-default options:
    /// `admin.run(CreateTopics::new(topics).validate_only(true))`.
    pub fn run<O, T>(&self, op: O) -> Result<T, AdminError>
    where
        O: Operation<Output = Result<T, AdminError>>,
    {
        self.client
            .run_op(op)
            .unwrap_or(Err(AdminError::Request(RequestError::Cancelled)))
    }

    /// The underlying client, e.g. for raw requests, metadata or [`Notice`]s.
    pub fn client(&self) -> &BlockingClient {
        &self.client
    }

    kafka_core::admin_methods!(blocking run);
}
