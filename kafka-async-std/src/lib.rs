//! `kafka-async-std`: drive the sans-IO `kafka-core` client on the `async-io` reactor that
//! async-std and smol share.
//!
//! The driver is a future that owns the core; every socket gets a task that connects,
//! writes what the driver hands it and reports what it reads. The loop, its bounded pipes
//! and the socket tasks are [`kafka_driver::front`], shared with `kafka-tokio`; this crate
//! supplies only async-io's timer and sockets and the spawner. The adapter assumes no
//! executor: it hands its futures to a spawner, [`Admin::with_spawner`]
//! (e.g. `|task| { smol::spawn(task).detach(); }`), or with the `async-std` feature
//! [`Admin::new`] spawns them with `async_std::task::spawn`. Every protocol decision
//! (routing, retries, deadlines, TLS, SASL) is in the core; the driver stops once every
//! handle is dropped, closing its sockets.
//!
//! Connection failures are logged with `tracing` (feature `tracing`, on by default) and
//! handed to [`Admin::on_notice`]'s hook.
//!
//! With smol:
//!
//! ```no_run
//! use kafka_async_std::Admin;
//! use kafka_core::admin::NewTopic;
//! use kafka_core::config::ClientConfig;
//!
//! smol::block_on(async {
//!     let config = ClientConfig::from_pairs([("bootstrap.servers", "127.0.0.1:9092")])?;
//!     let admin = Admin::with_spawner(config, |task| smol::spawn(task).detach())?;
//!     let cluster = admin.describe_cluster().await?;
//!     println!("{} brokers", cluster.brokers.len());
//!     let created = admin.create_topics([NewTopic::new("events", 3, 1)]).await?;
//!     println!("{:?}", created["events"]);
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod consumer;
mod group;
mod pipeline;
mod producer;
mod runtime;
mod share;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

pub use consumer::{Consumer, ConsumerMetrics, ConsumerRecord};
pub use group::{
    CommitError, CommitHandle, GroupConsumer, Offsets, Rebalance, RebalanceListener, TopicPartition,
};
use kafka_core::admin::AdminError;
use kafka_core::client::{ClientError, Operation};
use kafka_core::cluster::{Metadata, Route};
use kafka_core::config::ClientConfig;
use kafka_core::protocol::Request;
use kafka_driver::front::{self, Handle};
pub use kafka_driver::front::{Call, Task};
pub use kafka_driver::{HubStats, Notice};
pub use pipeline::TxnPipeline;
pub use producer::{DeliveryFuture, Producer, Record, RecordMetadata};
pub use share::{
    AckCompletion, AckResults, AcknowledgeType, ShareCommitId, ShareConsumer, ShareError,
    ShareEvent, ShareRecord,
};

/// Runs [`Task`]s to completion in the background, on any executor.
pub type Spawner = dyn Fn(Task) + Send + Sync + 'static;

/// Why an [`Admin`] or [`Producer`] could not be created, or a send was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The core refused the configuration.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The producer settings are unusable (e.g. a codec not built in).
    #[error(transparent)]
    Config(#[from] kafka_core::config::ConfigError),
    /// No room for the record within `max.block.ms` (`buffer.memory` is used up), or a
    /// `commit_sync` not answered within its timeout (the commit goes on).
    #[error("timed out after {0:?} (max.block.ms, or a commit_sync timeout)")]
    Timeout(Duration),
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
    /// A commit failed (a `commit_sync`'s result).
    #[error(transparent)]
    Commit(kafka_core::group::CommitError),
    /// A transactional call failed: abortable ([`TxnError::is_abortable`]: abort, then
    /// go on) or fatal (drop the producer).
    ///
    /// [`TxnError::is_abortable`]: kafka_core::producer::TxnError::is_abortable
    #[error(transparent)]
    Transaction(#[from] kafka_core::producer::TxnError),
    /// The share consumer cannot go on, or an acknowledgement was refused locally.
    #[error(transparent)]
    Share(kafka_core::share::ShareError),
    /// The driver is gone (its executor stopped running it).
    #[error("the driver task is gone")]
    DriverGone,
}

/// The async admin client: every admin operation as a method returning a `'static`,
/// `Send` future (spawn it as is; dropping it cancels the operation), with per-item
/// results. Cheap to clone; all clones share one driver and its connections, which stop
/// when the last clone (and the last unfinished [`Call`]) is dropped.
#[derive(Clone, Debug)]
pub struct Admin {
    front: Handle,
}

impl Admin {
    /// Creates the admin client, its driver spawned on async-std's executor; connections
    /// open on first use.
    #[cfg(feature = "async-std")]
    pub fn new(config: ClientConfig) -> Result<Admin, Error> {
        Admin::with_spawner(config, |task| {
            async_std::task::spawn(task);
        })
    }

    /// Creates the admin client; `spawner` runs its driver and socket tasks to completion
    /// in the background (smol: `|task| smol::spawn(task).detach()`).
    pub fn with_spawner<S>(config: ClientConfig, spawner: S) -> Result<Admin, Error>
    where
        S: Fn(Task) + Send + Sync + 'static,
    {
        let spawner: Arc<Spawner> = Arc::new(spawner);
        let front = front::start(runtime::AsyncIo(spawner), config)?;
        Ok(Admin { front })
    }

    /// Runs any admin operation, e.g. one built with non-default options:
    /// `admin.run(CreateTopics::new(topics).validate_only(true)).await`. Operations end
    /// by their own deadline, so this returns even if no broker answers. The [`Call`] is
    /// `'static` and `Send` (spawn it as is); dropping it before it finishes cancels the
    /// operation.
    pub fn run<O, T>(&self, op: O) -> Call<Result<T, AdminError>>
    where
        O: Operation<Output = Result<T, AdminError>>,
    {
        self.front.run(op)
    }

    /// Sends one request to `route` and returns its response, resending after connection
    /// failures until `default.api.timeout.ms` (see
    /// [`RawRequest`](kafka_core::admin::RawRequest) for other limits).
    pub fn call<R>(&self, route: Route, request: R) -> Call<Result<R::Response, AdminError>>
    where
        R: Request + Clone + Send + Sync + std::fmt::Debug + 'static,
        R::Response: Send + 'static,
    {
        self.front.call(route, request)
    }

    /// A snapshot of the cached cluster metadata (a `'static` future, like the named
    /// methods').
    pub fn metadata(&self) -> impl Future<Output = Result<Metadata, AdminError>> + Send + 'static {
        self.front.metadata()
    }

    /// Sets the hook that receives [`Notice`]s: every broker connection failure (node and
    /// cause) and metadata update. It runs on the driver task: keep it short and
    /// non-blocking. Replaces any earlier hook; notices before the first hook are only
    /// logged.
    pub fn on_notice(&self, hook: impl Fn(&Notice) + Send + Sync + 'static) {
        self.front.on_notice(hook);
    }

    /// The driver's outbound counters (bytes waiting for sockets, the most one socket has
    /// held).
    pub fn stats(&self) -> impl Future<Output = Result<HubStats, AdminError>> + Send + 'static {
        self.front.stats()
    }

    kafka_core::admin_methods!(async run);
}
