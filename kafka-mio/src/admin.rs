//! [`Admin`]: a blocking convenience over [`Driver`]: a driver thread with its own
//! `mio::Poll`, woken by a `mio::Waker` when callers submit work.

use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::time::Duration;

use mio::{Events, Poll, Token, Waker};

use kafka_core::admin::AdminError;
use kafka_core::client::Operation;
use kafka_core::config::ClientConfig;
use kafka_core::conn::RequestError;

use crate::{Driver, Error};

/// The driver's tokens inside the admin client's private poll.
const TOKENS: std::ops::Range<usize> = 0..1024;
/// The waker's token (outside the driver's range).
const WAKE: Token = Token(usize::MAX);
/// Upper bound of one wait, so a missed wake-up can never hang a call for long.
const MAX_WAIT: Duration = Duration::from_secs(1);

/// Work for the driver thread.
type Job = Box<dyn FnOnce(&mut Driver) + Send>;

/// Admin client for tests and simple programs: every admin operation as a blocking call
/// (per-item results), run by a [`Driver`] on a thread of its own with a private
/// `mio::Poll`. Calls from several threads run at the same time, each waiting only for
/// its own answer. Applications with their own loop use [`Driver`] directly.
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
    jobs: Sender<Job>,
    waker: Arc<Waker>,
}

impl Admin {
    /// Creates the admin client and its driver thread; connections open on first use.
    pub fn new(config: ClientConfig) -> Result<Self, Error> {
        let poll = Poll::new().map_err(Error::Io)?;
        let driver = Driver::new(config, poll.registry(), TOKENS)?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKE).map_err(Error::Io)?);
        let (jobs, rx) = channel();
        std::thread::Builder::new()
            .name("kafka-mio-driver".into())
            .spawn(move || run(poll, driver, rx))
            .map_err(Error::Io)?;
        Ok(Admin { jobs, waker })
    }

    /// Runs any admin operation to completion, e.g. one built with non-default options:
    /// `admin.run(CreateTopics::new(topics).validate_only(true))`. Operations end by their
    /// own deadline, so this returns even if no broker answers.
    pub fn run<O, T>(&self, op: O) -> Result<T, AdminError>
    where
        O: Operation<Output = Result<T, AdminError>>,
    {
        self.run_op(op)
            .unwrap_or(Err(AdminError::Request(RequestError::Cancelled)))
    }

    /// Runs any operation to completion; `None` if the driver thread is gone. (Generic
    /// over the operation alone, so its output's `Send` comes from [`Operation`].)
    pub fn run_op<O: Operation>(&self, op: O) -> Option<O::Output> {
        let (tx, rx) = channel();
        self.submit(Box::new(move |driver| {
            driver.start_then(op, move |out| {
                let _ = tx.send(out);
            });
        }));
        rx.recv().ok()
    }

    /// Calls `f` with the driver on its thread (e.g. for metadata, raw requests through
    /// [`Driver::core_mut`], or [`Driver::on_notice`]) and returns its result; `None` if
    /// the driver thread is gone.
    pub fn with_driver<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Driver) -> R + Send + 'static,
    ) -> Option<R> {
        let (tx, rx) = channel();
        self.submit(Box::new(move |driver| {
            let _ = tx.send(f(driver));
        }));
        rx.recv().ok()
    }

    kafka_core::admin_methods!(blocking run);

    fn submit(&self, job: Job) {
        // A failed send drops the job and its reply sender: the caller sees it as gone.
        if self.jobs.send(job).is_ok() {
            let _ = self.waker.wake();
        }
    }
}

impl Drop for Admin {
    fn drop(&mut self) {
        // The thread sees the job channel disconnected and shuts down.
        let (jobs, _) = channel();
        drop(std::mem::replace(&mut self.jobs, jobs));
        let _ = self.waker.wake();
    }
}

/// The driver thread: the private loop until the admin client is dropped.
fn run(mut poll: Poll, mut driver: Driver, jobs: Receiver<Job>) {
    let mut events = Events::with_capacity(256);
    'outer: loop {
        driver.poll(poll.registry());
        // Outputs go to their callers' channels; events are only logged (by the hub).
        while driver.poll_event().is_some() {}
        let wait = driver.timeout().map_or(MAX_WAIT, |t| t.min(MAX_WAIT));
        if let Err(e) = poll.poll(&mut events, Some(wait)) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                break;
            }
        }
        for event in events.iter() {
            if event.token() == WAKE {
                loop {
                    match jobs.try_recv() {
                        Ok(job) => {
                            job(&mut driver);
                            // Each job's requests go out (or stay in the core) at once.
                            driver.poll(poll.registry());
                        }
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => break 'outer,
                    }
                }
            } else {
                driver.handle_event(poll.registry(), event);
            }
        }
    }
    driver.shutdown(poll.registry());
}

impl std::fmt::Debug for Admin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admin").finish_non_exhaustive()
    }
}
