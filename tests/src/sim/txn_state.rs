//! The simulated cluster's transaction coordinator: every transactional id with its
//! producer id, epochs and transaction state (Kafka's `TransactionMetadata`: Empty,
//! Ongoing, PrepareCommit/PrepareAbort while markers are being written,
//! CompleteCommit/CompleteAbort), offsets staged by TxnOffsetCommit, committed group
//! offsets, and per partition the open transactions (for the last stable offset) and
//! the aborted-transaction index served to `read_committed` fetches.
//!
//! Coordinators: the coordinator of a key (a transactional id or a group id) is the
//! running broker chosen by a hash of the key; when the set of running brokers changes
//! the coordinators move and answer COORDINATOR_LOAD_IN_PROGRESS for
//! [`CoordFaults::load_ms`]. The state itself is replicated (it survives any broker).
//!
//! Time: [`SimCluster::advance`] (called by the world at every step) writes the markers
//! whose delay has passed and aborts transactions open longer than their
//! `transaction.timeout.ms` (with Kafka's epoch bump, so the producer is fenced).
//! Transactions v2 (KIP-890) when [`TxnCoordinator::v2`] is set: `transaction.version`
//! 2 is finalized in ApiVersions, Produce v12+ and TxnOffsetCommit v5+ add partitions
//! and groups implicitly, EndTxn v5+ bumps the epoch. The handlers in `handlers/`
//! (`find_coordinator`, `init_producer_id`, `add_partitions_to_txn`,
//! `add_offsets_to_txn`, `txn_offset_commit`, `end_txn`) call in here.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kafka_core::protocol::{ApiKey, KafkaCode};
use kafka_core::record::{BatchOptions, ControlRecord};

use super::cluster::{SimCluster, StoredBatch};
use super::rng::Rng;

/// Where a transactional id's transaction stands (Kafka's `TransactionState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// No transaction yet.
    Empty,
    /// Open: partitions or groups were added.
    Ongoing,
    /// Committing: the markers are being written.
    PrepareCommit,
    /// Aborting: the markers are being written.
    PrepareAbort,
    /// The last transaction committed.
    CompleteCommit,
    /// The last transaction aborted.
    CompleteAbort,
}

/// One transactional id.
#[derive(Debug, Clone)]
pub struct TxnEntry {
    /// Its producer id.
    pub pid: i64,
    /// The current epoch (`-1` before the first InitProducerId completes).
    pub epoch: i16,
    /// The epoch before the last bump by the client (a retried bump or EndTxn v5 is
    /// recognized by it); `-1` after a fence.
    pub last_epoch: i16,
    /// `transaction.timeout.ms` from InitProducerId.
    pub timeout_ms: u64,
    /// The state.
    pub phase: Phase,
    /// The open transaction uses transactions v2.
    pub v2: bool,
    /// Partitions in the transaction.
    pub partitions: BTreeSet<(String, i32)>,
    /// Groups in the transaction.
    pub groups: BTreeSet<String>,
    /// Offsets staged by TxnOffsetCommit: `(group, topic, partition)` → (offset, leader
    /// epoch).
    pub staged: BTreeMap<(String, String, i32), (i64, i32)>,
    /// When the open transaction started (ms of virtual time).
    pub started_ms: u64,
    /// When the markers of a Prepare* state are written.
    pub markers_due_ms: u64,
    /// The producer epoch the markers carry.
    pub marker_epoch: i16,
}

/// A partition's transactional index.
#[derive(Debug, Clone, Default)]
pub struct PartTxns {
    /// Producer id → offset of its open transaction's first batch here.
    pub open: BTreeMap<i64, i64>,
    /// Aborted transactions: `(producer id, first offset, marker offset)`.
    pub aborted: Vec<(i64, i64, i64)>,
}

/// Coordinator faults, active while [`TxnCoordinator::faults_on`] is set.
#[derive(Debug, Clone)]
pub struct CoordFaults {
    /// Per mille of coordinator requests answered NOT_COORDINATOR (not applied).
    pub not_coordinator: u32,
    /// Per mille answered COORDINATOR_LOAD_IN_PROGRESS (not applied).
    pub loading: u32,
    /// Per mille of FindCoordinator keys answered COORDINATOR_NOT_AVAILABLE.
    pub lookup_unavailable: u32,
    /// The APIs the injected errors apply to (`None`: every coordinator API).
    pub apis: Option<Vec<ApiKey>>,
    /// After coordinators move, how long they answer COORDINATOR_LOAD_IN_PROGRESS
    /// (always, faults on or not).
    pub load_ms: u64,
    /// Markers are written this long (a range in ms) after EndTxn.
    pub marker_delay_ms: (u64, u64),
}

impl Default for CoordFaults {
    fn default() -> Self {
        CoordFaults {
            not_coordinator: 0,
            loading: 0,
            lookup_unavailable: 0,
            apis: None,
            load_ms: 20,
            marker_delay_ms: (0, 5),
        }
    }
}

/// What the coordinator counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnCounters {
    /// Transactions committed (markers written).
    pub committed: u64,
    /// Transactions aborted (markers written), by the client or the coordinator.
    pub aborted: u64,
    /// Transactions the coordinator aborted after `transaction.timeout.ms`.
    pub timed_out: u64,
    /// Open transactions aborted because a newer instance called InitProducerId.
    pub fenced_by_init: u64,
    /// Requests refused PRODUCER_FENCED or INVALID_PRODUCER_EPOCH.
    pub fenced_refusals: u64,
    /// Answers CONCURRENT_TRANSACTIONS.
    pub concurrent: u64,
    /// Injected NOT_COORDINATOR answers.
    pub injected_not_coordinator: u64,
    /// Injected COORDINATOR_LOAD_IN_PROGRESS answers (and those after a move).
    pub injected_loading: u64,
    /// Requests that reached a broker not coordinating the key.
    pub wrong_coordinator: u64,
    /// Times the coordinators moved (the running brokers changed).
    pub moves: u64,
    /// Control batches written.
    pub markers: u64,
    /// EndTxn requests recognized as retries of one already applied.
    pub end_retries: u64,
    /// Transactions started implicitly (v2: by Produce or TxnOffsetCommit).
    pub implicit_starts: u64,
    /// v2 EndTxn at the new epoch while the last transaction's markers were pending,
    /// answered PRODUCER_FENCED as Kafka 4.x does.
    pub prepare_fences: u64,
    /// OffsetFetch partitions answered UNSTABLE_OFFSET_COMMIT (offsets staged in an
    /// open transaction).
    pub unstable_offsets: u64,
    /// read_committed Fetch partition answers with the LSO below the high watermark.
    pub rc_held_at_lso: u64,
    /// Aborted transactions listed in read_committed Fetch answers.
    pub rc_aborted_listed: u64,
}

/// The coordinator's state. See the module docs.
#[derive(Debug)]
pub struct TxnCoordinator {
    /// `transaction.version` 2 is finalized (KIP-890).
    pub v2: bool,
    /// Transactional ids.
    pub ids: BTreeMap<String, TxnEntry>,
    /// Per `(topic, partition)`: open and aborted transactions.
    pub logs: BTreeMap<(String, i32), PartTxns>,
    /// Committed offsets: `(group, topic, partition)` → offset.
    pub group_offsets: BTreeMap<(String, String, i32), (i64, i32)>,
    /// Faults.
    pub faults: CoordFaults,
    /// Whether the injected faults fire (cleared to heal).
    pub faults_on: bool,
    /// Counters.
    pub counters: TxnCounters,
    rng: Rng,
    now_ms: u64,
    live: Vec<i32>,
    loading_until_ms: u64,
}

impl Default for TxnCoordinator {
    fn default() -> Self {
        TxnCoordinator {
            v2: false,
            ids: BTreeMap::new(),
            logs: BTreeMap::new(),
            group_offsets: BTreeMap::new(),
            faults: CoordFaults::default(),
            faults_on: false,
            counters: TxnCounters::default(),
            rng: Rng::new(0),
            now_ms: 0,
            live: Vec::new(),
            loading_until_ms: 0,
        }
    }
}

/// FNV-1a of a key: which running broker coordinates it.
fn key_hash(key: &str) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl TxnCoordinator {
    /// Draws the coordinator's own choices (marker delays, injected errors) from `seed`.
    pub fn reseed(&mut self, seed: u64) {
        self.rng = Rng::new(seed ^ 0x7478_6e5f_636f_6f72);
    }

    /// Virtual time, in ms, as of the last [`SimCluster::advance`].
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// The running broker coordinating `key`, if any runs.
    pub fn coordinator_of(&self, key: &str) -> Option<i32> {
        if self.live.is_empty() {
            return None;
        }
        Some(self.live[(key_hash(key) % self.live.len() as u64) as usize])
    }

    /// Whether `node` may serve a coordinator request of `api` for `key` now: the
    /// error to answer otherwise (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, or an
    /// injected one).
    pub fn gate(&mut self, api: ApiKey, key: &str, node: i32) -> Result<(), KafkaCode> {
        if self.coordinator_of(key) != Some(node) {
            self.counters.wrong_coordinator += 1;
            return Err(KafkaCode::NOT_COORDINATOR);
        }
        if self.now_ms < self.loading_until_ms {
            self.counters.injected_loading += 1;
            return Err(KafkaCode::COORDINATOR_LOAD_IN_PROGRESS);
        }
        if self.faulty(api) {
            if self.rng.chance(self.faults.not_coordinator) {
                self.counters.injected_not_coordinator += 1;
                return Err(KafkaCode::NOT_COORDINATOR);
            }
            if self.rng.chance(self.faults.loading) {
                self.counters.injected_loading += 1;
                return Err(KafkaCode::COORDINATOR_LOAD_IN_PROGRESS);
            }
        }
        Ok(())
    }

    /// Whether an injected FindCoordinator refusal fires for one key.
    pub fn lookup_refused(&mut self) -> bool {
        self.faulty(ApiKey::FindCoordinator) && self.rng.chance(self.faults.lookup_unavailable)
    }

    fn faulty(&self, api: ApiKey) -> bool {
        self.faults_on && self.faults.apis.as_ref().is_none_or(|a| a.contains(&api))
    }

    /// Counts a refusal by code.
    pub fn count(&mut self, code: KafkaCode) {
        match code {
            KafkaCode::PRODUCER_FENCED | KafkaCode::INVALID_PRODUCER_EPOCH => {
                self.counters.fenced_refusals += 1
            }
            KafkaCode::CONCURRENT_TRANSACTIONS => self.counters.concurrent += 1,
            _ => {}
        }
    }

    fn marker_delay(&mut self) -> u64 {
        let (lo, hi) = self.faults.marker_delay_ms;
        lo + self.rng.below(hi.saturating_sub(lo) + 1)
    }

    /// `id`'s entry, checked against the request's producer id and epoch (exact).
    pub fn entry_for(
        &mut self,
        id: &str,
        pid: i64,
        epoch: i16,
    ) -> Result<&mut TxnEntry, KafkaCode> {
        let code = match self.ids.get(id) {
            None => Some(KafkaCode::INVALID_PRODUCER_ID_MAPPING),
            Some(e) if e.pid != pid => Some(KafkaCode::INVALID_PRODUCER_ID_MAPPING),
            Some(e) if e.epoch != epoch => Some(KafkaCode::PRODUCER_FENCED),
            Some(_) => None,
        };
        if let Some(code) = code {
            self.count(code);
            return Err(code);
        }
        Ok(self.ids.get_mut(id).expect("checked"))
    }

    /// Opens a transaction on `id` unless one is open; CONCURRENT_TRANSACTIONS while
    /// the last one's markers are being written.
    pub fn ensure_open(&mut self, id: &str, v2: bool) -> Result<&mut TxnEntry, KafkaCode> {
        let now = self.now_ms;
        let e = self
            .ids
            .get_mut(id)
            .ok_or(KafkaCode::INVALID_PRODUCER_ID_MAPPING)?;
        match e.phase {
            Phase::PrepareCommit | Phase::PrepareAbort => {
                self.counters.concurrent += 1;
                Err(KafkaCode::CONCURRENT_TRANSACTIONS)
            }
            Phase::Ongoing => Ok(self.ids.get_mut(id).expect("known")),
            Phase::Empty | Phase::CompleteCommit | Phase::CompleteAbort => {
                e.phase = Phase::Ongoing;
                e.v2 = v2;
                e.partitions.clear();
                e.groups.clear();
                e.staged.clear();
                e.started_ms = now;
                if v2 {
                    self.counters.implicit_starts += 1;
                }
                Ok(self.ids.get_mut(id).expect("known"))
            }
        }
    }

    /// Aborts `id`'s open transaction on the coordinator's own initiative (a newer
    /// instance, or the timeout): the epoch is bumped so the current producer is
    /// fenced, and the markers carry the new epoch.
    pub fn fence_abort(&mut self, id: &str) {
        let delay = self.marker_delay();
        let now = self.now_ms;
        let Some(e) = self.ids.get_mut(id) else {
            return;
        };
        e.epoch += 1;
        e.last_epoch = -1;
        e.marker_epoch = e.epoch;
        e.phase = Phase::PrepareAbort;
        e.markers_due_ms = now + delay;
    }

    /// Ends `id`'s open transaction as its producer asked: markers are due after the
    /// marker delay; `bump` (EndTxn v5 under v2) moves to the next epoch.
    pub fn prepare_end(&mut self, id: &str, commit: bool, bump: bool) {
        let delay = self.marker_delay();
        let now = self.now_ms;
        let e = self.ids.get_mut(id).expect("known");
        if bump {
            e.last_epoch = e.epoch;
            e.epoch += 1;
        }
        e.marker_epoch = e.epoch;
        e.phase = if commit {
            Phase::PrepareCommit
        } else {
            Phase::PrepareAbort
        };
        e.markers_due_ms = now + delay;
    }

    /// A transactional batch of `pid` (for `id`, at `epoch`) about to be appended to
    /// `topic`/`partition` by a Produce at `version`: whether it may be (under v2 the
    /// partition joins, or opens, the transaction).
    pub fn produce_check(
        &mut self,
        id: Option<&str>,
        pid: i64,
        epoch: i16,
        topic: &str,
        partition: i32,
        version: i16,
    ) -> Result<(), KafkaCode> {
        let Some(id) = id else {
            return Err(KafkaCode::INVALID_TXN_STATE);
        };
        let code = match self.ids.get(id) {
            None => Some(KafkaCode::INVALID_PRODUCER_ID_MAPPING),
            Some(e) if e.pid != pid => Some(KafkaCode::INVALID_PRODUCER_ID_MAPPING),
            Some(e) if e.epoch != epoch => Some(KafkaCode::INVALID_PRODUCER_EPOCH),
            Some(_) => None,
        };
        if let Some(code) = code {
            self.count(code);
            return Err(code);
        }
        let tp = (topic.to_string(), partition);
        if self.v2 && version >= 12 {
            let e = self.ensure_open(id, true)?;
            e.partitions.insert(tp);
            return Ok(());
        }
        let e = &self.ids[id];
        if e.phase == Phase::Ongoing && e.partitions.contains(&tp) {
            Ok(())
        } else {
            Err(KafkaCode::INVALID_TXN_STATE)
        }
    }

    /// A transactional batch of `pid` was appended at `base` to `topic`/`partition`.
    pub fn appended(&mut self, topic: &str, partition: i32, pid: i64, base: i64) {
        self.logs
            .entry((topic.to_string(), partition))
            .or_default()
            .open
            .entry(pid)
            .or_insert(base);
    }

    /// The last stable offset of `topic`/`partition` whose high watermark is `hwm`.
    pub fn lso(&self, topic: &str, partition: i32, hwm: i64) -> i64 {
        self.logs
            .get(&(topic.to_string(), partition))
            .and_then(|l| l.open.values().min().copied())
            .map_or(hwm, |first| first.min(hwm))
    }

    /// The aborted transactions of `topic`/`partition` overlapping `[from, to)`:
    /// `(producer id, first offset)`.
    pub fn aborted_in(&self, topic: &str, partition: i32, from: i64, to: i64) -> Vec<(i64, i64)> {
        self.logs
            .get(&(topic.to_string(), partition))
            .map(|l| {
                l.aborted
                    .iter()
                    .filter(|&&(_, first, last)| last >= from && first < to)
                    .map(|&(pid, first, _)| (pid, first))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Counts a read_committed partition answer: whether an open transaction held it
    /// below the high watermark, and how many aborted transactions it listed.
    pub fn note_read_committed(&mut self, held: bool, aborted: usize) {
        self.counters.rc_held_at_lso += u64::from(held);
        self.counters.rc_aborted_listed += aborted as u64;
    }

    /// The committed offset of `group` for `topic`/`partition`.
    pub fn committed(&self, group: &str, topic: &str, partition: i32) -> Option<i64> {
        self.committed_with_epoch(group, topic, partition)
            .map(|(o, _)| o)
    }

    /// The committed offset of `group` for `topic`/`partition` with the leader epoch
    /// committed with it (-1: none given).
    pub fn committed_with_epoch(
        &self,
        group: &str,
        topic: &str,
        partition: i32,
    ) -> Option<(i64, i32)> {
        self.group_offsets
            .get(&(group.to_string(), topic.to_string(), partition))
            .copied()
    }

    /// When the coordinator next has something to do (markers or a timeout).
    pub fn next_due_ms(&self) -> Option<u64> {
        self.ids
            .values()
            .filter_map(|e| match e.phase {
                Phase::PrepareCommit | Phase::PrepareAbort => Some(e.markers_due_ms),
                Phase::Ongoing => Some(e.started_ms + e.timeout_ms),
                _ => None,
            })
            .min()
    }
}

impl SimCluster {
    /// Moves the coordinator to `now` (virtual time since the start): coordinators
    /// move if the running brokers changed, transactions past their timeout are
    /// aborted, due markers are written, group members whose session expired are
    /// removed (`group_state`).
    pub fn advance(&mut self, now: Duration) {
        let now_ms = now.as_millis() as u64;
        let txn = &mut self.txn;
        txn.now_ms = txn.now_ms.max(now_ms);
        let live: Vec<i32> = self.brokers.iter().filter(|b| b.up).map(|b| b.id).collect();
        if live != txn.live {
            if !txn.live.is_empty() {
                txn.counters.moves += 1;
                txn.loading_until_ms = txn.now_ms + txn.faults.load_ms;
            }
            txn.live = live;
        }
        let expired: Vec<String> = txn
            .ids
            .iter()
            .filter(|(_, e)| e.phase == Phase::Ongoing && e.started_ms + e.timeout_ms <= txn.now_ms)
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            txn.counters.timed_out += 1;
            txn.fence_abort(&id);
        }
        let due: Vec<String> = self
            .txn
            .ids
            .iter()
            .filter(|(_, e)| {
                matches!(e.phase, Phase::PrepareCommit | Phase::PrepareAbort)
                    && e.markers_due_ms <= self.txn.now_ms
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            self.write_markers(&id);
        }
        self.groups
            .advance(self.txn.now_ms, self.txn.counters.moves);
        self.classic
            .advance(self.txn.now_ms, self.txn.counters.moves);
    }

    /// The running broker coordinating `key` (a transactional id or a group id).
    pub fn coordinator_of(&self, key: &str) -> Option<i32> {
        let live: Vec<i32> = self.brokers.iter().filter(|b| b.up).map(|b| b.id).collect();
        if live.is_empty() {
            return None;
        }
        Some(live[(key_hash(key) % live.len() as u64) as usize])
    }

    /// When the cluster next has something to do on its own.
    pub fn next_due(&self) -> Option<Duration> {
        let txn = self.txn.next_due_ms();
        let groups = self.groups.next_due_ms();
        let classic = self.classic.next_due_ms();
        txn.into_iter()
            .chain(groups)
            .chain(classic)
            .min()
            .map(Duration::from_millis)
    }

    /// Writes the COMMIT or ABORT marker of `id`'s transaction to every partition in
    /// it, updates the partitions' producer state, open transactions and aborted
    /// index, and (on commit) the group offsets staged in it.
    fn write_markers(&mut self, id: &str) {
        let e = self.txn.ids.get_mut(id).expect("known");
        let commit = e.phase == Phase::PrepareCommit;
        let (pid, epoch) = (e.pid, e.marker_epoch);
        e.phase = if commit {
            Phase::CompleteCommit
        } else {
            Phase::CompleteAbort
        };
        let partitions = std::mem::take(&mut e.partitions);
        let staged = std::mem::take(&mut e.staged);
        e.groups.clear();
        if commit {
            self.txn.counters.committed += 1;
            self.txn.group_offsets.extend(staged);
        } else {
            self.txn.counters.aborted += 1;
        }
        let marker = ControlRecord::EndTransaction {
            commit,
            coordinator_epoch: 0,
        };
        for (topic, index) in partitions {
            let Some(part) = self
                .topics
                .get_mut(&topic)
                .and_then(|t| t.partitions.get_mut(index as usize))
            else {
                continue;
            };
            let base = part.next_offset;
            let opts = BatchOptions {
                base_offset: base,
                partition_leader_epoch: part.leader_epoch,
                producer_id: pid,
                producer_epoch: epoch,
                ..Default::default()
            };
            let mut bytes = Vec::new();
            let _ = marker
                .encode_batch(
                    &opts,
                    1_700_000_000_000 + self.txn.now_ms as i64,
                    &mut bytes,
                )
                .expect("a marker encodes");
            part.next_offset += 1;
            part.log.push(StoredBatch {
                base,
                last: base,
                bytes: bytes.into(),
            });
            // A marker with a newer epoch (a fence, or a v2 bump) starts the producer's
            // sequences afresh here; older batches are refused from now on.
            if let Some(state) = part.producers.get_mut(&pid) {
                if epoch > state.epoch {
                    state.epoch = epoch;
                    state.recent.clear();
                }
            }
            self.txn.counters.markers += 1;
            let log = self.txn.logs.entry((topic, index)).or_default();
            if let Some(first) = log.open.remove(&pid) {
                if !commit {
                    log.aborted.push((pid, first, base));
                }
            }
        }
    }
}
