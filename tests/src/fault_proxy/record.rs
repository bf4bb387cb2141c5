//! Recording mode: every request forwarded and the broker's answer to it, kept in
//! arrival order for the transcripts of `vectors/transcripts/` (the simulator's
//! fidelity test replays them). Faults and recording are independent; an answer is
//! recorded as the broker wrote it, before any address rewrite and whether or not a
//! fault then drops it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// One request and the broker's answer to it, as they crossed the proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// Order in which the proxy forwarded the request, over every connection, from 0.
    pub seq: u64,
    /// When the request was forwarded, since the recording started.
    pub at: Duration,
    /// The proxy's number for the client connection.
    pub conn: u64,
    /// The broker node the connection goes to.
    pub node: i32,
    /// The request frame as the client wrote it, without its size prefix (header and
    /// body).
    pub request: Vec<u8>,
    /// The broker's answer without its size prefix, or `None` if none came before the
    /// recording was taken (acks=0, a connection that ended).
    pub response: Option<Vec<u8>>,
}

/// The exchanges recorded so far and the requests still waiting for an answer.
#[derive(Debug)]
pub(super) struct Recording {
    started: Instant,
    exchanges: Vec<Exchange>,
    /// `(connection, correlation id)` → index in `exchanges`.
    waiting: HashMap<(u64, i32), usize>,
}

impl Recording {
    pub(super) fn new() -> Recording {
        Recording {
            started: Instant::now(),
            exchanges: Vec::new(),
            waiting: HashMap::new(),
        }
    }

    /// A request `frame` (size prefix included) forwarded on `conn` to `node`.
    pub(super) fn request(&mut self, conn: u64, node: i32, corr: i32, frame: &[u8]) {
        let seq = self.exchanges.len() as u64;
        self.waiting.insert((conn, corr), self.exchanges.len());
        self.exchanges.push(Exchange {
            seq,
            at: self.started.elapsed(),
            conn,
            node,
            request: frame[4..].to_vec(),
            response: None,
        });
    }

    /// The broker's answer `frame` (size prefix included) to `corr` on `conn`; an answer
    /// to a request forwarded before the recording started is ignored.
    pub(super) fn response(&mut self, conn: u64, corr: i32, frame: &[u8]) {
        if let Some(i) = self.waiting.remove(&(conn, corr)) {
            self.exchanges[i].response = Some(frame[4..].to_vec());
        }
    }

    /// Everything recorded, in forwarding order.
    pub(super) fn finish(self) -> Vec<Exchange> {
        self.exchanges
    }
}
