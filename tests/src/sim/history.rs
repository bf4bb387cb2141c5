//! A Jepsen-style history checker: scenarios record what clients did (sends and their
//! outcomes, transaction outcomes, reads per consumer pass) and [`History::check`] judges
//! the whole history afterwards, returning every [`Anomaly`] found.
//!
//! Records are identified by their **value bytes**, which scenarios make unique. A read
//! belongs to the send with its value *to the same topic-partition*; any other read is a
//! [`Anomaly::PhantomRead`]. The first outcome given to a send is the one judged; a second
//! one is itself an anomaly. Everything is kept in ordered maps, so the verdict (and its
//! text) is the same on every run of a seed.
//!
//! Rules that keep one fault from being reported under several names:
//! - re-reading an offset already read in a session is [`Anomaly::DoubleDelivery`], not
//!   also [`Anomaly::Rewound`];
//! - the missing records of a [`Anomaly::TornTxn`] are not also reported as
//!   [`Anomaly::LostAck`] for that session.

use std::collections::{BTreeMap, BTreeSet};

/// The record of a simulation run: sends, their outcomes, transaction outcomes, reads.
#[derive(Debug, Default)]
pub struct History {
    sends: Vec<SendRec>,
    txns: BTreeMap<u64, TxnOutcome>,
    sessions: Vec<Session>,
    /// Value → the first send that had it.
    by_value: BTreeMap<Vec<u8>, SendId>,
    /// Per partition, the offset below which records were deleted (DeleteRecords): no
    /// complete session can read them.
    deleted: BTreeMap<(String, i32), i64>,
    /// Values of acknowledged records a broker destroyed (a leader that lost its last
    /// batches): judged neither lost nor out of order.
    lost_by_broker: BTreeSet<Vec<u8>>,
}

/// One send, as numbered by [`History::send`] (call order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SendId(pub u64);

/// What the producer was told about a send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Acknowledged at `offset`.
    Acked {
        /// The offset the broker acknowledged.
        offset: i64,
    },
    /// Definitely not written.
    Failed,
    /// Timed out: possibly delivered.
    Indeterminate,
}

/// A read session's isolation level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    /// Sees every written record, aborted transactions included.
    ReadUncommitted,
    /// Sees non-transactional records and committed transactions only.
    ReadCommitted,
}

/// How a transaction ended, as far as its producer knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnOutcome {
    /// The commit was acknowledged.
    Committed,
    /// The abort was acknowledged.
    Aborted,
    /// The end of the transaction timed out or failed indeterminately.
    Unknown,
}

/// One read session (a consumer's pass), from [`History::begin_reads`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReadSession(usize);

/// The result of [`History::check`].
#[derive(Debug)]
pub struct Verdict {
    /// Every anomaly found, in a stable order.
    pub anomalies: Vec<Anomaly>,
    /// Sends recorded.
    pub sends: usize,
    /// Sends whose (first) outcome is `Acked`.
    pub acked: usize,
    /// Reads recorded, over all sessions.
    pub reads: usize,
}

/// A record named in an anomaly: where it is, its value and the send that had it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rec {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// The offset in question (acked or read, per anomaly), if any.
    pub offset: Option<i64>,
    /// The value bytes.
    pub value: Vec<u8>,
    /// The send with this value to this partition, if any.
    pub send: Option<SendId>,
}

/// Which offsets of a producer's sends were out of send order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffsetKind {
    /// The offsets in the acknowledgements.
    Acked,
    /// The offsets the records were read at.
    Read,
}

/// Why a read_committed session should not have seen a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbortCause {
    /// Its transaction was aborted.
    TxnAborted,
    /// Its send failed: the transaction never wrote it.
    SendFailed,
}

/// A violation of the guarantees, naming the records involved. Sessions are named
/// `reader#index`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Anomaly {
    /// An acked, committed (or non-transactional) record missing from a complete session.
    LostAck {
        /// The session.
        session: String,
        /// The record, at its acked offset.
        record: Rec,
    },
    /// One value read at several offsets of a partition: written more than once.
    Duplicate {
        /// The record (offset: the lowest).
        record: Rec,
        /// Every offset it was read at.
        offsets: Vec<i64>,
    },
    /// One offset read twice within a session.
    DoubleDelivery {
        /// The session.
        session: String,
        /// The record read twice.
        record: Rec,
    },
    /// Two acked sends of one producer to one partition whose offsets are not in send order.
    Reordered {
        /// The producer.
        producer: String,
        /// Which offsets disagree with the send order.
        by: OffsetKind,
        /// The earlier send.
        earlier: Rec,
        /// The later send, at an offset not above the earlier one's.
        later: Rec,
    },
    /// A record read at an offset other than its acked one.
    OffsetMismatch {
        /// The session of the (first) such read.
        session: String,
        /// The record, at the offset read.
        record: Rec,
        /// The acked offset.
        acked: i64,
    },
    /// Within a session, a read of a partition below an offset already read there.
    Rewound {
        /// The session.
        session: String,
        /// The highest record read before.
        previous: Rec,
        /// The read that went back.
        record: Rec,
    },
    /// Within a session, a visible record known at an offset between two offsets read,
    /// but not read.
    Skipped {
        /// The session.
        session: String,
        /// The record not read.
        record: Rec,
    },
    /// A read_committed session read an aborted record (G1a).
    AbortedRead {
        /// The session.
        session: String,
        /// The record.
        record: Rec,
        /// Its transaction.
        txn: u64,
        /// Why it was not committed.
        cause: AbortCause,
    },
    /// A read_committed session read a record of a transaction not known to be committed.
    UncommittedRead {
        /// The session.
        session: String,
        /// The record.
        record: Rec,
        /// Its transaction.
        txn: u64,
        /// The transaction's outcome (`None`: never given).
        outcome: Option<TxnOutcome>,
    },
    /// A complete read_committed session saw part of a committed transaction's acked records.
    TornTxn {
        /// The session.
        session: String,
        /// The transaction.
        txn: u64,
        /// Its records read.
        seen: Vec<Rec>,
        /// Its acked records not read.
        missing: Vec<Rec>,
    },
    /// A value read that no send to that partition had.
    PhantomRead {
        /// The session.
        session: String,
        /// The record read.
        record: Rec,
        /// The send with this value to another partition, if any.
        sent_elsewhere: Option<Rec>,
    },
    /// A send whose outcome is `Failed` was read.
    FailedButWritten {
        /// The session.
        session: String,
        /// The record read.
        record: Rec,
    },
    /// A second outcome for one send.
    DoubleOutcome {
        /// The send.
        record: Rec,
        /// The outcome judged.
        first: Outcome,
        /// The extra one.
        second: Outcome,
    },
    /// A send that never got an outcome.
    MissingOutcome {
        /// The send.
        record: Rec,
    },
}

#[derive(Debug)]
struct SendRec {
    producer: String,
    topic: String,
    partition: i32,
    value: Vec<u8>,
    txn: Option<u64>,
    outcomes: Vec<Outcome>,
}

#[derive(Debug)]
struct Session {
    name: String,
    isolation: Isolation,
    complete: bool,
    /// The one topic a complete session read to its end (`None`: every topic).
    topic: Option<String>,
    reads: Vec<ReadRec>,
}

#[derive(Debug)]
struct ReadRec {
    topic: String,
    partition: i32,
    offset: i64,
    value: Vec<u8>,
}

type Tp = (String, i32);

impl History {
    /// An empty history.
    pub fn new() -> History {
        History::default()
    }

    /// A send attempted by `producer` (any label, e.g. "p1"); `txn`: the transaction it
    /// belongs to (None = not transactional). Send order per (producer, topic, partition)
    /// is the call order.
    pub fn send(
        &mut self,
        producer: &str,
        topic: &str,
        partition: i32,
        value: &[u8],
        txn: Option<u64>,
    ) -> SendId {
        let id = SendId(self.sends.len() as u64);
        self.by_value.entry(value.to_vec()).or_insert(id);
        self.sends.push(SendRec {
            producer: producer.to_string(),
            topic: topic.to_string(),
            partition,
            value: value.to_vec(),
            txn,
            outcomes: Vec::new(),
        });
        id
    }

    /// The outcome of send `id`: exactly one per send; a second call is recorded as an
    /// anomaly ([`Anomaly::DoubleOutcome`]).
    ///
    /// # Panics
    /// If `id` was not returned by this history's [`History::send`] (a scenario bug).
    pub fn outcome(&mut self, id: SendId, outcome: Outcome) {
        let index = usize::try_from(id.0).unwrap_or(usize::MAX);
        match self.sends.get_mut(index) {
            Some(send) => send.outcomes.push(outcome),
            None => panic!("outcome for unknown send {id:?}"),
        }
    }

    /// Records of `topic`/`partition` below offset `before` were deleted
    /// (DeleteRecords): acknowledged ones there are not expected in complete sessions.
    pub fn records_deleted(&mut self, topic: &str, partition: i32, before: i64) {
        let e = self
            .deleted
            .entry((topic.to_string(), partition))
            .or_insert(before);
        *e = (*e).max(before);
    }

    /// The records with these values were cut off the log by the broker (a new leader
    /// lacking the last batches): they are not expected in complete sessions, and the
    /// records written after them into the same offsets are not out of order.
    pub fn records_lost_by_broker(&mut self, values: impl IntoIterator<Item = Vec<u8>>) {
        self.lost_by_broker.extend(values);
    }

    /// Whether send `id`'s record was destroyed by the broker.
    fn broker_lost(&self, id: SendId) -> bool {
        self.lost_by_broker.contains(&self.rec_of(id).value)
    }

    /// How transaction `txn` ended; a later call replaces an earlier one.
    pub fn txn_outcome(&mut self, txn: u64, outcome: TxnOutcome) {
        self.txns.insert(txn, outcome);
    }

    /// Starts a read session (one consumer's pass). `complete: true` means the session
    /// drained every partition to its end after the faults healed: then every acknowledged
    /// record must appear in it (visible ones per isolation).
    pub fn begin_reads(
        &mut self,
        reader: &str,
        isolation: Isolation,
        complete: bool,
    ) -> ReadSession {
        let id = ReadSession(self.sessions.len());
        self.sessions.push(Session {
            name: format!("{reader}#{}", id.0),
            isolation,
            complete,
            topic: None,
            reads: Vec::new(),
        });
        id
    }

    /// As [`begin_reads`](Self::begin_reads) for a session reading one `topic`: when
    /// complete, every acknowledged record of that topic must appear in it.
    pub fn begin_reads_of(
        &mut self,
        reader: &str,
        isolation: Isolation,
        complete: bool,
        topic: &str,
    ) -> ReadSession {
        let id = self.begin_reads(reader, isolation, complete);
        self.sessions[id.0].topic = Some(topic.to_string());
        id
    }

    /// A record read by `session`, in the order the consumer handed it out.
    ///
    /// # Panics
    /// If `session` was not returned by this history's [`History::begin_reads`].
    pub fn read(
        &mut self,
        session: ReadSession,
        topic: &str,
        partition: i32,
        offset: i64,
        value: &[u8],
    ) {
        let Some(s) = self.sessions.get_mut(session.0) else {
            panic!("read in unknown session {session:?}")
        };
        s.reads.push(ReadRec {
            topic: topic.to_string(),
            partition,
            offset,
            value: value.to_vec(),
        });
    }

    /// Judges the history: every anomaly, in a stable order.
    pub fn check(&self) -> Verdict {
        let mut out = Vec::new();
        self.check_outcomes(&mut out);
        self.check_reads(&mut out);
        self.check_duplicates(&mut out);
        self.check_order(&mut out);
        self.check_skips(&mut out);
        self.check_complete(&mut out);
        Verdict {
            anomalies: out,
            sends: self.sends.len(),
            acked: self.ids().filter(|&id| self.acked_at(id).is_some()).count(),
            reads: self.sessions.iter().map(|s| s.reads.len()).sum(),
        }
    }

    fn ids(&self) -> impl Iterator<Item = SendId> {
        (0..self.sends.len() as u64).map(SendId)
    }

    fn rec_of(&self, id: SendId) -> &SendRec {
        // Ids come from `send` only, and sends are never removed.
        &self.sends[id.0 as usize]
    }

    /// The outcome judged: the first one given.
    fn outcome_of(&self, id: SendId) -> Option<Outcome> {
        self.rec_of(id).outcomes.first().copied()
    }

    /// Whether send `id` was acknowledged at an offset since deleted.
    fn deleted_at(&self, id: SendId, offset: i64) -> bool {
        let r = self.rec_of(id);
        self.deleted
            .get(&(r.topic.clone(), r.partition))
            .is_some_and(|&before| offset < before)
    }

    fn acked_at(&self, id: SendId) -> Option<i64> {
        match self.outcome_of(id) {
            Some(Outcome::Acked { offset }) => Some(offset),
            _ => None,
        }
    }

    /// Non-transactional, or of a committed transaction.
    fn committed(&self, id: SendId) -> bool {
        self.rec_of(id)
            .txn
            .is_none_or(|t| self.txns.get(&t) == Some(&TxnOutcome::Committed))
    }

    fn visible(&self, id: SendId, isolation: Isolation) -> bool {
        isolation == Isolation::ReadUncommitted || self.committed(id)
    }

    /// The send a read belongs to: the one with its value, to its partition.
    fn matched(&self, r: &ReadRec) -> Option<SendId> {
        let id = *self.by_value.get(&r.value)?;
        let s = self.rec_of(id);
        (s.topic == r.topic && s.partition == r.partition).then_some(id)
    }

    fn send_rec(&self, id: SendId, offset: Option<i64>) -> Rec {
        let s = self.rec_of(id);
        Rec {
            topic: s.topic.clone(),
            partition: s.partition,
            offset,
            value: s.value.clone(),
            send: Some(id),
        }
    }

    fn read_rec(&self, r: &ReadRec) -> Rec {
        Rec {
            topic: r.topic.clone(),
            partition: r.partition,
            offset: Some(r.offset),
            value: r.value.clone(),
            send: self.matched(r),
        }
    }
}

impl Verdict {
    /// No anomaly found.
    pub fn is_clean(&self) -> bool {
        self.anomalies.is_empty()
    }

    /// Panics listing up to 20 anomalies, prefixed with `context` (e.g. the seed), unless clean.
    pub fn assert_clean(&self, context: &str) {
        if !self.is_clean() {
            panic!("{context}: {self}");
        }
    }
}

impl Anomaly {
    /// The variant's name, e.g. `"LostAck"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Anomaly::LostAck { .. } => "LostAck",
            Anomaly::Duplicate { .. } => "Duplicate",
            Anomaly::DoubleDelivery { .. } => "DoubleDelivery",
            Anomaly::Reordered { .. } => "Reordered",
            Anomaly::OffsetMismatch { .. } => "OffsetMismatch",
            Anomaly::Rewound { .. } => "Rewound",
            Anomaly::Skipped { .. } => "Skipped",
            Anomaly::AbortedRead { .. } => "AbortedRead",
            Anomaly::UncommittedRead { .. } => "UncommittedRead",
            Anomaly::TornTxn { .. } => "TornTxn",
            Anomaly::PhantomRead { .. } => "PhantomRead",
            Anomaly::FailedButWritten { .. } => "FailedButWritten",
            Anomaly::DoubleOutcome { .. } => "DoubleOutcome",
            Anomaly::MissingOutcome { .. } => "MissingOutcome",
        }
    }
}

mod check;
mod display;

#[cfg(test)]
mod tests;
