//! `kafka-mio`: run the sans-IO `kafka-core` client inside your own [mio] event loop.
//!
//! A [`Driver`] owns the core [`Client`](kafka_core::client::Client) and its sockets. It
//! registers them on *your* [`mio::Registry`] with tokens from a range you choose, so the
//! Kafka client shares one `Poll` with the rest of your program. It never owns the loop,
//! spawns no threads and never blocks, with one exception: broker host names are resolved
//! with std's blocking `ToSocketAddrs` when a connection opens (IP literals, as on most
//! brokers' advertised listeners, resolve without any lookup). Every protocol decision
//! is in the core; the driver only moves bytes and readiness. It does enforce the
//! core's per-attempt setup timeout (`socket.connection.setup.timeout.ms`, grown per
//! failed attempt up to its `.max.ms`) on its non-blocking connects (a socket-level timer
//! the core leaves to adapters), reporting a stalled connect as a failure.
//!
//! Each turn of your loop: wait with the driver's [`timeout`](Driver::timeout) (or the
//! minimum with your own timers), hand it the events whose tokens it
//! [`owns`](Driver::owns), then call [`Driver::poll`], drain [`Driver::poll_event`] and
//! collect finished operations with [`Driver::take_output`]. The driver runs
//! `kafka_driver`'s drain loop: it pulls bytes from the core only for sockets whose
//! previous writes the kernel took (back-pressure) and hands every read straight to the
//! core, so its memory stays at the core's frame buffer plus one read buffer.
//!
//! ```no_run
//! use kafka_core::admin::DescribeCluster;
//! use kafka_core::config::ClientConfig;
//! use kafka_mio::Driver;
//! use mio::{Events, Poll};
//!
//! let mut poll = Poll::new()?;
//! let mut events = Events::with_capacity(128);
//! let config = ClientConfig::from_pairs([("bootstrap.servers", "127.0.0.1:9092")])?;
//! // Tokens 100..200 are the driver's; the rest of the program uses others.
//! let mut driver = Driver::new(config, poll.registry(), 100..200)?;
//! let id = driver.start(DescribeCluster::new());
//! loop {
//!     driver.poll(poll.registry());
//!     if let Some(cluster) = driver.take_output(id) {
//!         println!("{} brokers", cluster?.brokers.len());
//!         break;
//!     }
//!     poll.poll(&mut events, driver.timeout())?;
//!     for event in events.iter() {
//!         if driver.owns(event.token()) {
//!             driver.handle_event(poll.registry(), event);
//!         } // else: one of the program's own sockets
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! For tests and simple programs, [`Admin`] runs the same driver on a private `Poll` and
//! offers every admin operation as a blocking method.

mod admin;
mod consumer;
mod driver;
mod group;
mod producer;
mod share;
mod socket;

use std::time::Duration;

pub use admin::Admin;
pub use consumer::ConsumerView;
pub use driver::Driver;
pub use group::GroupConsumerView;
pub use kafka_core::client::OpId;
pub use kafka_core::client::Operation;
/// The share consumer types: [`ShareConsumer`] is the core machine a
/// [`ShareConsumerView`] drives (`OpId<ShareConsumer>` from
/// [`Driver::start_share_consumer`]).
pub use kafka_core::share::{
    AckResults, AcknowledgeType, ShareCommitId, ShareConsumer, ShareError, ShareEvent, ShareRecord,
};
/// The mio version the driver registers with (use it for the `Poll` you hand over).
pub use mio;
pub use producer::ProducerView;
pub use share::ShareConsumerView;

/// Why a driver or admin client could not be created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The core refused the configuration.
    #[error(transparent)]
    Client(#[from] kafka_core::client::ClientError),
    /// The poll could not be created.
    #[error("mio: {0}")]
    Io(std::io::Error),
}

/// Why the driver could not open a broker connection. The driver reports it to the core
/// as a connection failure (the core backs off and retries); its text appears in the
/// resulting errors and [`Event::ConnectionFailed`](kafka_core::client::Event).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// Every token of the driver's range is in use by another socket.
    #[error("mio token range {start}..{end} exhausted")]
    TokensExhausted {
        /// First token of the range.
        start: usize,
        /// End of the range (exclusive).
        end: usize,
    },
    /// The host name did not resolve.
    #[error("cannot resolve {0}: {1}")]
    Resolve(String, std::io::Error),
    /// The socket could not connect.
    #[error("connect: {0}")]
    Io(std::io::Error),
    /// The connection was not established within the attempt's setup timeout
    /// (`socket.connection.setup.timeout.ms`, grown per failed attempt up to its `.max.ms`).
    #[error("connection setup timed out after {0:?}")]
    SetupTimeout(Duration),
}

impl ConnectError {
    /// The typed cause the core takes (refused, resolve failure, timed out...).
    pub fn socket_error(&self) -> kafka_driver::SocketError {
        use kafka_driver::SocketError;
        match self {
            ConnectError::Resolve(_, e) => SocketError::Resolve(e.to_string()),
            ConnectError::Io(e) => kafka_driver::socket_error(e),
            ConnectError::SetupTimeout(_) => SocketError::ConnectTimedOut,
            other => SocketError::Io(other.to_string()),
        }
    }
}
