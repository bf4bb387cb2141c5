//! The simulated network's pieces: the faults it injects, its counters, and one
//! connection's state (bytes in flight each way, muting, a parked request).

use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;

use kafka_core::protocol::ApiKey;

use super::super::wire::Frame;

/// Network faults, active while [`World::faults_on`] is set.
#[derive(Debug, Clone)]
pub struct NetFaults {
    /// Per mille of requests applied by the broker whose answer is lost: the connection
    /// resets before it arrives (a lost acknowledgement).
    pub lose_answer: u32,
    /// Per mille of requests never applied: the connection resets as the broker reads.
    pub reset_before: u32,
    /// Per mille of answers held for [`stall_ms`](Self::stall_ms) (a slow broker: the
    /// client's request timeout fires first).
    pub stall: u32,
    /// How long a stalled answer is held.
    pub stall_ms: u64,
    /// The APIs the three faults above apply to (`None`: all but ApiVersions).
    pub apis: Option<Vec<ApiKey>>,
}

impl Default for NetFaults {
    fn default() -> Self {
        NetFaults {
            lose_answer: 0,
            reset_before: 0,
            stall: 0,
            stall_ms: 5_000,
            apis: None,
        }
    }
}

/// What travels to a client.
#[derive(Debug)]
pub(super) enum ToClient {
    /// An answer, and the throttle (ms) it carries.
    Bytes(Vec<u8>, u64),
    Reset,
}

/// One simulated connection.
#[derive(Debug)]
pub(super) struct SimConn {
    pub(super) node: i32,
    /// When the connect attempt completes (`None` once open).
    pub(super) opening: Option<(Instant, bool)>,
    pub(super) to_broker: VecDeque<(Instant, Vec<u8>)>,
    pub(super) broker_buf: Vec<u8>,
    pub(super) to_client: VecDeque<(Instant, ToClient)>,
    /// The broker side reset it: whatever the client still writes is lost.
    pub(super) dead: bool,
    /// The broker reads nothing more before this (KIP-219: muted after a throttled
    /// answer).
    pub(super) muted_until: Option<Instant>,
    /// The client received a throttled answer: it must write nothing before this.
    pub(super) throttled_until: Option<Instant>,
    /// Requests read in the current virtual second: `(second, count)`.
    pub(super) window: (u64, u64),
    /// A request parked by the cluster (a classic JoinGroup or SyncGroup): nothing more
    /// is read until it is answered, as Kafka mutes a channel with a request in flight.
    pub(super) parked: Option<u64>,
    /// Requests read behind the parked one, handled once it is answered.
    pub(super) held: VecDeque<Frame>,
}

/// Counts of what the network did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetCounters {
    /// Connections opened.
    pub connects: u64,
    /// Connect attempts refused (broker down).
    pub refused: u64,
    /// Answers lost after the request was applied.
    pub answers_lost: u64,
    /// Requests dropped unread.
    pub requests_dropped: u64,
    /// Answers stalled.
    pub stalls: u64,
    /// Answers stalled, by API.
    pub stalled_apis: BTreeMap<&'static str, u64>,
    /// Connections reset by a broker stopping.
    pub kill_resets: u64,
    /// Connections the clients closed.
    pub client_closes: u64,
    /// Answers that carried a throttle (KIP-219).
    pub throttled: u64,
    /// Throttled answers by API.
    pub throttled_apis: BTreeMap<&'static str, u64>,
    /// Writes by a client to a connection it had been told was throttled.
    pub throttle_violations: u64,
    /// The most requests one connection carried in one virtual second, and their API
    /// (the last one counted).
    pub peak_rate: (u64, &'static str),
}
