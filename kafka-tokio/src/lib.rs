//! `kafka-tokio`: drive the sans-IO `kafka-core` client on a tokio runtime.
//!
//! [`Admin::new`] spawns one driver task that owns the core; every socket gets a task that
//! connects, writes what the driver hands it and reports what it reads. Handles talk to
//! the driver through a channel, and each operation's output comes back on a oneshot.
//! Every protocol decision (routing, retries, deadlines, TLS, SASL) is in the core; the
//! driver stops once every handle is dropped, closing its sockets.
//!
//! ```no_run
//! use kafka_core::admin::NewTopic;
//! use kafka_core::config::ClientConfig;
//! use kafka_tokio::Admin;
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let config = ClientConfig::from_pairs([("bootstrap.servers", "127.0.0.1:9092")])?;
//!     let admin = Admin::new(config)?;
//!     let cluster = admin.describe_cluster().await?;
//!     println!("{} brokers", cluster.brokers.len());
//!     let created = admin.create_topics([NewTopic::new("events", 3, 1)]).await?;
//!     println!("{:?}", created["events"]);
//!     Ok(())
//! }
//! ```

mod driver;

use kafka_core::admin::{AdminError, RawRequest};
use kafka_core::client::{ClientError, Operation};
use kafka_core::cluster::{Metadata, Route};
use kafka_core::config::ClientConfig;
use kafka_core::conn::RequestError;
use kafka_core::protocol::Request;
use tokio::runtime::Handle;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::oneshot;

use driver::{Command, Driver};

/// Why an [`Admin`] could not be created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The core refused the configuration.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// [`Admin::new`] was called outside a tokio runtime.
    #[error("no tokio runtime: call Admin::new inside one, or use Admin::with_runtime")]
    NoRuntime,
}

/// The async admin client: every admin operation as an `async` method with per-item
/// results. Cheap to clone; all clones share one driver task and its connections, which
/// stop when the last clone is dropped.
#[derive(Clone)]
pub struct Admin {
    commands: UnboundedSender<Command>,
}

impl std::fmt::Debug for Admin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admin")
            .field("driver_running", &!self.commands.is_closed())
            .finish()
    }
}

impl Admin {
    /// Creates the admin client and spawns its driver on the current tokio runtime;
    /// connections open on first use. The driver makes progress whenever the runtime
    /// runs (on a current-thread runtime: while something on it is awaited).
    pub fn new(config: ClientConfig) -> Result<Admin, Error> {
        let handle = Handle::try_current().map_err(|_| Error::NoRuntime)?;
        Admin::with_runtime(config, &handle)
    }

    /// Like [`Admin::new`], spawning the driver on the runtime behind `handle`.
    pub fn with_runtime(config: ClientConfig, handle: &Handle) -> Result<Admin, Error> {
        let (driver, commands) = Driver::new(config)?;
        handle.spawn(driver.run());
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
        rx.await.unwrap_or(Err(cancelled()))
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
        let (tx, rx) = oneshot::channel();
        self.submit(Box::new(move |client, _| {
            let _ = tx.send(client.metadata().clone());
        }));
        rx.await.map_err(|_| cancelled())
    }

    /// Hands `command` to the driver; if the driver is gone it is dropped, and so is
    /// the oneshot sender inside it, which the caller reports as cancelled.
    fn submit(&self, command: Command) {
        let _ = self.commands.send(command);
    }

    kafka_core::admin_methods!(async run);
}

/// The command that starts `op`, and where its output will arrive. Generic over the
/// operation alone, so the output's `Send + 'static` comes from [`Operation`].
fn start<O: Operation>(op: O) -> (Command, oneshot::Receiver<O::Output>) {
    let (tx, rx) = oneshot::channel();
    let command: Command = Box::new(move |client, now| {
        client.start_op_then(now, op, move |out| {
            let _ = tx.send(out);
        });
    });
    (command, rx)
}

fn cancelled() -> AdminError {
    AdminError::Request(RequestError::Cancelled)
}
