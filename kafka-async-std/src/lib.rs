//! `kafka-async-std`: drive the sans-IO `kafka-core` client on the `async-io` reactor that
//! async-std and smol share.
//!
//! The driver is a future that owns the core; every socket gets a task that connects,
//! writes what the driver hands it and reports what it reads. The adapter assumes no
//! executor: it hands those futures to a spawner, [`Admin::with_spawner`]
//! (e.g. `|task| { smol::spawn(task).detach(); }`), or with the `async-std` feature
//! [`Admin::new`] spawns them with `async_std::task::spawn`. Handles talk to the driver
//! through a channel, and each operation's output comes back on its own channel. Every
//! protocol decision (routing, retries, deadlines, TLS, SASL) is in the core; the driver
//! stops once every handle is dropped, closing its sockets.
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

mod driver;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_channel::Sender;
use kafka_core::admin::{AdminError, RawRequest};
use kafka_core::client::{ClientError, Operation};
use kafka_core::cluster::{Metadata, Route};
use kafka_core::config::ClientConfig;
use kafka_core::conn::RequestError;
use kafka_core::protocol::Request;

use driver::{Command, Driver};

/// A future the adapter needs run in the background (the driver, one per socket).
pub type Task = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Runs [`Task`]s to completion in the background, on any executor.
pub type Spawner = dyn Fn(Task) + Send + Sync + 'static;

/// Why an [`Admin`] could not be created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The core refused the configuration.
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// The async admin client: every admin operation as an `async` method with per-item
/// results. Cheap to clone; all clones share one driver and its connections, which stop
/// when the last clone is dropped.
#[derive(Clone)]
pub struct Admin {
    commands: Sender<Command>,
}

impl std::fmt::Debug for Admin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admin")
            .field("driver_running", &!self.commands.is_closed())
            .finish()
    }
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
        let (driver, commands) = Driver::new(config, spawner.clone())?;
        spawner(Box::pin(driver.run()));
        Ok(Admin { commands })
    }

    /// Runs any admin operation, e.g. one built with non-default options:
    /// `admin.run(CreateTopics::new(topics).validate_only(true)).await`. Operations end
    /// by their own deadline, so this returns even if no broker answers. Dropping the
    /// future does not stop the operation: it runs to its deadline, its output unread.
    pub async fn run<O, T>(&self, op: O) -> Result<T, AdminError>
    where
        O: Operation<Output = Result<T, AdminError>>,
    {
        let (command, rx) = start(op);
        self.submit(command);
        rx.recv().await.unwrap_or(Err(cancelled()))
    }

    /// Sends one request to `route` and returns its response, resending after connection
    /// failures until `default.api.timeout.ms` (see [`RawRequest`] for other limits).
    pub async fn call<R>(&self, route: Route, request: R) -> Result<R::Response, AdminError>
    where
        R: Request + Clone + Send + Sync + std::fmt::Debug + 'static,
        R::Response: Send + 'static,
    {
        self.run(RawRequest::new(route, request)).await
    }

    /// A snapshot of the cached cluster metadata.
    pub async fn metadata(&self) -> Result<Metadata, AdminError> {
        let (tx, rx) = async_channel::bounded(1);
        self.submit(Box::new(move |client, _| {
            let _ = tx.try_send(client.metadata().clone());
        }));
        rx.recv().await.map_err(|_| cancelled())
    }

    /// Hands `command` to the driver; if the driver is gone it is dropped, and so is
    /// the reply sender inside it, which the caller reports as cancelled.
    fn submit(&self, command: Command) {
        let _ = self.commands.try_send(command);
    }

    kafka_core::admin_methods!(async run);
}

/// The command that starts `op`, and where its output will arrive. Generic over the
/// operation alone, so the output's `Send + 'static` comes from [`Operation`].
fn start<O: Operation>(op: O) -> (Command, async_channel::Receiver<O::Output>) {
    let (tx, rx) = async_channel::bounded(1);
    let command: Command = Box::new(move |client, now| {
        client.start_op_then(now, op, move |out| {
            let _ = tx.try_send(out);
        });
    });
    (command, rx)
}

fn cancelled() -> AdminError {
    AdminError::Request(RequestError::Cancelled)
}
