//! [`ProducerView`]: producing through the caller's loop: records go straight into the
//! core producer (borrowed, copied once into the batch), reports and transaction results
//! come back after its `Event::Notify`.

use std::time::Instant;

use kafka_core::client::{OpContext, OpId};
use kafka_core::config::ConfigError;
use kafka_core::group::GroupMetadata;
use kafka_core::producer::{
    Appended, FlushToken, Producer, ProducerMetrics, ProducerRecord, Report, SendError, TxnError,
    TxnOffset, TxnOp, TxnState,
};

use crate::Driver;

impl Driver {
    /// Starts a producer with the client's producer settings. Its reports are ready
    /// when [`Driver::poll_event`] yields `Event::Notify(op)` with `op == id`; it
    /// finishes (`Event::OperationDone`) after [`ProducerView::close`] once every record
    /// is reported.
    pub fn start_producer(&mut self) -> Result<OpId<Producer>, ConfigError> {
        let producer = Producer::new(self.core().config())?;
        Ok(self.start(producer))
    }

    /// The running producer `id`, to send to and take reports from.
    pub fn producer(&mut self, id: OpId<Producer>) -> ProducerView<'_> {
        ProducerView { driver: self, id }
    }
}

/// A borrowed view of one running producer (see [`Driver::producer`]). Every call is
/// handed to the core at once; the bytes go out at the next [`Driver::poll`]. Nothing
/// here blocks: where a blocking adapter waits up to `max.block.ms`, this returns
/// [`SendError::WouldBlock`] and the caller retries after the producer's next
/// `Event::Notify`.
///
/// With a `transactional.id` in the driver's config the producer is transactional:
/// [`ProducerView::init_transactions`] once, then per transaction
/// [`begin_transaction`](ProducerView::begin_transaction), sends,
/// [`send_offsets_to_transaction`](ProducerView::send_offsets_to_transaction) (a
/// consume-transform-produce loop) and [`commit_transaction`](ProducerView::commit_transaction)
/// or [`abort_transaction`](ProducerView::abort_transaction). The calls that talk to
/// the coordinator only start here; their result arrives with
/// [`ProducerView::take_transaction_result`] after the producer's `Event::Notify`. One
/// such call runs at a time (another is refused [`TxnError::InvalidState`]; the same
/// one again joins the call under way).
///
/// A consume-transform-produce loop, as a state machine in the program's loop (input
/// read `read_committed`, each batch's records and consumed offsets in one transaction):
///
/// ```no_run
/// use std::collections::VecDeque;
///
/// use kafka_core::config::ClientConfig;
/// use kafka_core::producer::{ProducerRecord, SendError, TxnOp};
/// use kafka_mio::mio::{Events, Poll};
/// use kafka_mio::Driver;
///
/// fn turn(poll: &mut Poll, events: &mut Events, driver: &mut Driver) -> std::io::Result<()> {
///     poll.poll(events, driver.timeout())?;
///     for event in events.iter() {
///         if driver.owns(event.token()) {
///             driver.handle_event(poll.registry(), event);
///         }
///     }
///     driver.poll(poll.registry());
///     while driver.poll_event().is_some() {} // this loop looks at everything each turn
///     Ok(())
/// }
///
/// let (mut poll, mut events) = (Poll::new()?, Events::with_capacity(128));
/// let config = ClientConfig::from_pairs([
///     ("bootstrap.servers", "127.0.0.1:9092"),
///     ("group.id", "uppercase"),
///     ("enable.auto.commit", "false"),
///     ("isolation.level", "read_committed"),
///     ("transactional.id", "uppercase-1"),
/// ])?;
/// let mut driver = Driver::new(config, poll.registry(), 0..64)?;
/// let producer = driver.start_producer()?;
/// let consumer = driver.start_group_consumer(["input"])?;
/// driver.producer(producer).init_transactions()?;
/// let (mut busy, mut open) = (true, false); // a call under way; a transaction open
/// let mut out: VecDeque<Vec<u8>> = VecDeque::new(); // transformed, not sent yet
/// loop {
///     turn(&mut poll, &mut events, &mut driver)?;
///     let mut p = driver.producer(producer);
///     while p.take_report().is_some() {}
///     if let Some((op, result)) = p.take_transaction_result() {
///         result?; // (an abortable error: abort_transaction, then go on)
///         busy = false;
///         if op == TxnOp::SendOffsets {
///             p.commit_transaction()?;
///             (busy, open) = (true, false);
///         }
///     }
///     if busy {
///         continue;
///     }
///     if !open {
///         let mut records = Vec::new();
///         if driver.group_consumer(consumer).poll(&mut records) == 0 {
///             continue;
///         }
///         driver.producer(producer).begin_transaction()?;
///         open = true;
///         let upper = |v: Option<&[u8]>| v.unwrap_or_default().to_ascii_uppercase();
///         out.extend(records.iter().map(|r| upper(r.value.as_deref())));
///     }
///     while let Some(value) = out.front() {
///         match driver.producer(producer).send(&ProducerRecord::new("output", value)) {
///             Ok(_) => {
///                 out.pop_front();
///             }
///             Err(SendError::WouldBlock(_)) => break, // again after the next turn
///             Err(e) => return Err(e.into()),
///         }
///     }
///     if out.is_empty() {
///         let (group, offsets) = driver
///             .group_consumer(consumer)
///             .transaction_offsets()
///             .ok_or("the consumer stopped")?;
///         driver.producer(producer).send_offsets_to_transaction(offsets, &group)?;
///         busy = true;
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ProducerView<'a> {
    driver: &'a mut Driver,
    id: OpId<Producer>,
}

impl ProducerView<'_> {
    /// Appends `record` (its bytes are copied now); its outcome arrives in the
    /// [`Report`] of `Appended::batch`, at `Appended::index`. [`SendError::Closed`] if
    /// the producer is not running.
    pub fn send(&mut self, record: &ProducerRecord<'_>) -> Result<Appended, SendError> {
        self.command(|p, cx| p.send(cx, record))
            .unwrap_or(Err(SendError::Closed))
    }

    /// The next delivery report (one per batch), oldest first.
    pub fn take_report(&mut self) -> Option<Report> {
        self.command(|p, _| p.take_report()).flatten()
    }

    /// Seals every open batch now; the token says when everything sent before is
    /// reported ([`ProducerView::is_flushed`]). `None` if the producer is not running.
    pub fn flush(&mut self) -> Option<FlushToken> {
        self.command(|p, _| p.flush())
    }

    /// Whether every record sent before `token` was taken is reported (`true` once the
    /// producer is no longer running).
    pub fn is_flushed(&mut self, token: FlushToken) -> bool {
        self.command(|p, _| p.is_flushed(token)).unwrap_or(true)
    }

    /// Stops taking records; the producer finishes once every record is reported.
    pub fn close(&mut self) {
        self.command(|p, _| p.close());
    }

    /// Gives up on everything unreported (reported `ProduceError::Closed`); the producer
    /// then finishes.
    pub fn abort(&mut self) {
        self.command(|p, cx| p.abort(cx));
    }

    /// A snapshot of the producer's counters (`None` if it is not running; its final
    /// counters are then its output, [`Driver::take_output`]).
    pub fn metrics(&mut self) -> Option<ProducerMetrics> {
        self.command(|p, _| p.metrics())
    }

    /// Starts `init_transactions`: the coordinator gives the `transactional.id` its
    /// producer id, fencing every older instance and ending what they left open. Once,
    /// before the first transaction; the result is `(TxnOp::Init, _)`.
    pub fn init_transactions(&mut self) -> Result<(), TxnError> {
        self.txn(|p, _| p.init_transactions())
    }

    /// Opens a transaction (local, answered at once): records sent from now on belong
    /// to it.
    pub fn begin_transaction(&mut self) -> Result<(), TxnError> {
        self.txn(|p, cx| p.begin_transaction(cx))
    }

    /// Starts adding consumed offsets (the next offset to read per partition) to the
    /// open transaction: they commit for `group` (the consumer's
    /// [`GroupConsumerView::transaction_offsets`](crate::GroupConsumerView::transaction_offsets))
    /// if and only if the transaction commits. The result is `(TxnOp::SendOffsets, _)`.
    pub fn send_offsets_to_transaction(
        &mut self,
        offsets: impl IntoIterator<Item = impl Into<TxnOffset>>,
        group: &GroupMetadata,
    ) -> Result<(), TxnError> {
        self.txn(|p, _| p.send_offsets_to_transaction(offsets, group))
    }

    /// Starts committing the open transaction: every record sent in it is flushed, then
    /// the coordinator commits. Records refused with [`SendError::WouldBlock`] are not
    /// in it: send them before. The result is `(TxnOp::Commit, _)`; an abortable error
    /// ([`TxnError::is_abortable`]) means: abort, then go on.
    pub fn commit_transaction(&mut self) -> Result<(), TxnError> {
        self.txn(|p, _| p.commit_transaction())
    }

    /// Starts aborting the open transaction: records not yet sent are dropped (reported
    /// `ProduceError::Aborted`), the rest are never visible to `read_committed`
    /// consumers. The result is `(TxnOp::Abort, _)`.
    pub fn abort_transaction(&mut self) -> Result<(), TxnError> {
        self.txn(|p, _| p.abort_transaction())
    }

    /// The result of the transactional call that ran (init, send offsets, commit,
    /// abort), once the coordinator answered; the producer notifies then.
    pub fn take_transaction_result(&mut self) -> Option<(TxnOp, Result<(), TxnError>)> {
        self.command(|p, _| p.take_transaction_result()).flatten()
    }

    /// The transaction state (`None` without a `transactional.id`, or when the producer
    /// is not running).
    pub fn transaction_state(&mut self) -> Option<TxnState> {
        self.command(|p, _| p.transaction_state()).flatten()
    }

    /// A transactional call: [`TxnError::Closed`] if the producer is not running.
    fn txn(
        &mut self,
        f: impl FnOnce(&mut Producer, &mut OpContext<'_>) -> Result<(), TxnError>,
    ) -> Result<(), TxnError> {
        self.command(f).unwrap_or(Err(TxnError::Closed))
    }

    fn command<T>(&mut self, f: impl FnOnce(&mut Producer, &mut OpContext<'_>) -> T) -> Option<T> {
        self.driver.core_mut().command(Instant::now(), self.id, f)
    }
}
