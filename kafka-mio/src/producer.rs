//! [`ProducerView`]: producing through the caller's loop: records go straight into the
//! core producer (borrowed, copied once into the batch), reports come back after its
//! `Event::Notify`.

use std::time::Instant;

use kafka_core::client::OpId;
use kafka_core::config::ConfigError;
use kafka_core::producer::{
    Appended, FlushToken, Producer, ProducerMetrics, ProducerRecord, Report, SendError,
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

    fn command<T>(
        &mut self,
        f: impl FnOnce(&mut Producer, &mut kafka_core::client::OpContext<'_>) -> T,
    ) -> Option<T> {
        self.driver.core_mut().command(Instant::now(), self.id, f)
    }
}
