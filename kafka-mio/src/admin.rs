//! [`Admin`]: a blocking convenience over [`Driver`] with its own `mio::Poll`.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use mio::{Events, Poll};

use kafka_core::admin::AdminError;
use kafka_core::client::Operation;
use kafka_core::config::ClientConfig;
use kafka_core::conn::{ConnError, RequestError};

use crate::{Driver, Error};

/// The driver's tokens inside the admin client's private poll.
const TOKENS: std::ops::Range<usize> = 0..1024;
/// Upper bound of one wait, so a missed wake-up can never hang a call for long.
const MAX_WAIT: Duration = Duration::from_secs(1);

/// Admin client for tests and simple programs: every admin operation as a blocking call
/// (per-item results), run on a private `mio::Poll` by a [`Driver`]. Calls from several
/// threads take turns. Applications with their own loop use [`Driver`] directly.
///
/// ```no_run
/// use kafka_core::admin::NewTopic;
/// use kafka_core::config::ClientConfig;
/// use kafka_mio::Admin;
///
/// let admin = Admin::new(ClientConfig::from_pairs([("bootstrap.servers", "127.0.0.1:9092")])?)?;
/// let created = admin.create_topics([NewTopic::new("events", 3, 1)])?;
/// println!("{:?}", created["events"]);
/// println!("{} brokers", admin.describe_cluster()?.brokers.len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Admin {
    inner: Mutex<Looper>,
}

/// The private loop: a poll, its event buffer and the driver.
struct Looper {
    poll: Poll,
    events: Events,
    driver: Driver,
}

impl Admin {
    /// Creates the admin client; connections open on first use.
    pub fn new(config: ClientConfig) -> Result<Self, Error> {
        let poll = Poll::new().map_err(Error::Io)?;
        let driver = Driver::new(config, poll.registry(), TOKENS)?;
        Ok(Admin {
            inner: Mutex::new(Looper {
                poll,
                events: Events::with_capacity(256),
                driver,
            }),
        })
    }

    /// Runs any admin operation to completion, e.g. one built with non-default options:
    /// `admin.run(CreateTopics::new(topics).validate_only(true))`. Operations end by their
    /// own deadline, so this returns even if no broker answers.
    pub fn run<O, T>(&self, op: O) -> Result<T, AdminError>
    where
        O: Operation<Output = Result<T, AdminError>>,
    {
        let mut guard = self.lock();
        let looper = &mut *guard;
        let id = looper.driver.start(op);
        loop {
            looper.driver.poll(looper.poll.registry());
            while looper.driver.poll_completed().is_some() {}
            while looper.driver.poll_event().is_some() {}
            if let Some(out) = looper.driver.take_output(id) {
                return out;
            }
            let wait = looper
                .driver
                .timeout()
                .map_or(MAX_WAIT, |t| t.min(MAX_WAIT));
            if let Err(e) = looper.poll.poll(&mut looper.events, Some(wait)) {
                if e.kind() != std::io::ErrorKind::Interrupted {
                    looper.driver.core_mut().cancel_op(id.untyped());
                    let cause = ConnError::Closed(format!("mio poll failed: {e}"));
                    return Err(AdminError::Request(RequestError::Connection(cause)));
                }
            }
            for event in looper.events.iter() {
                looper.driver.handle_event(looper.poll.registry(), event);
            }
        }
    }

    /// Calls `f` with the driver, e.g. for metadata or raw requests through
    /// [`Driver::core_mut`] (calls from other threads wait meanwhile).
    pub fn with_driver<R>(&self, f: impl FnOnce(&mut Driver) -> R) -> R {
        f(&mut self.lock().driver)
    }

    kafka_core::admin_methods!(blocking run);

    fn lock(&self) -> MutexGuard<'_, Looper> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Looper {
    fn drop(&mut self) {
        self.driver.shutdown(self.poll.registry());
    }
}

impl std::fmt::Debug for Admin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admin").finish_non_exhaustive()
    }
}
