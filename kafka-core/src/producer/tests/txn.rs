//! Transactional producer scenarios on a virtual clock against the scripted cluster
//! and its transaction coordinator (`txn_broker.rs`). Each checks what a
//! `read_committed` reader would see: every committed record once, nothing of an
//! aborted or fenced transaction.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::cluster::{Cluster, PARTITIONS, TOPIC};
use super::txn_broker::Outcome;
use super::{all_reported, value};
use crate::client::OpContext;
use crate::group::GroupMetadata;
use crate::producer::{ProduceError, Producer, SendError, TxnError, TxnOffset, TxnOp, TxnState};
use crate::protocol::{ApiKey, KafkaCode};

const ID: &str = "tx-1";

fn cluster(v2: bool, extra: &[(&str, &str)]) -> Cluster {
    let mut pairs = vec![("transactional.id", ID), ("linger.ms", "0")];
    pairs.extend_from_slice(extra);
    let mut c = Cluster::new(&pairs);
    c.txn.v2 = v2;
    c
}

fn call<T>(c: &mut Cluster, f: impl FnOnce(&mut Producer, &mut OpContext<'_>) -> T) -> T {
    c.client
        .command(c.now, c.producer, f)
        .expect("producer running")
}

fn state(c: &mut Cluster) -> TxnState {
    call(c, |p, _| p.transaction_state()).expect("transactional")
}

/// Runs until the call under way has a result; it must be `op`'s.
fn result(c: &mut Cluster, op: TxnOp) -> Result<(), TxnError> {
    let mut got = None;
    let done = c.run_until(Duration::from_secs(30), |c| {
        got = call(c, |p, _| p.take_transaction_result());
        got.is_some()
    });
    assert!(done, "{op:?} has no result; state {:?}", state(c));
    let (was, r) = got.expect("result");
    assert_eq!(was, op);
    r
}

fn init(c: &mut Cluster) {
    call(c, |p, _| p.init_transactions()).expect("init starts");
    result(c, TxnOp::Init).expect("init");
    assert_eq!(state(c), TxnState::Ready);
}

fn begin(c: &mut Cluster) {
    call(c, |p, cx| p.begin_transaction(cx)).expect("begin");
}

fn send_many(c: &mut Cluster, from: u64, count: u64) -> Vec<Bytes> {
    (from..from + count)
        .map(|n| {
            let v = value(n);
            c.send_ok((n % PARTITIONS as u64) as i32, &v);
            Bytes::from(v)
        })
        .collect()
}

fn commit(c: &mut Cluster) -> Result<(), TxnError> {
    call(c, |p, _| p.commit_transaction())?;
    result(c, TxnOp::Commit)
}

fn abort(c: &mut Cluster) -> Result<(), TxnError> {
    call(c, |p, _| p.abort_transaction())?;
    result(c, TxnOp::Abort)
}

fn sorted(mut v: Vec<Bytes>) -> Vec<Bytes> {
    v.sort();
    v
}

#[test]
fn a_committed_transaction_is_visible_whole_and_v1_adds_each_partition_once() {
    let mut c = cluster(false, &[]);
    init(&mut c);
    begin(&mut c);
    let sent = send_many(&mut c, 0, 120);
    assert!(
        c.all_committed().is_empty(),
        "nothing visible before the commit"
    );
    commit(&mut c).expect("commit");
    assert_eq!(state(&mut c), TxnState::Ready);
    assert_eq!(sorted(c.all_committed()), sorted(sent));
    assert_eq!(c.check_guarantees(), 120);
    c.check_sequences();
    // Every partition was added before its first batch, in few requests; Produce
    // stayed at v11 and EndTxn at v4 (transactions v1).
    assert!(c.txn.count(ApiKey::AddPartitionsToTxn) <= PARTITIONS as usize);
    assert_eq!(c.txn.count(ApiKey::EndTxn), 1);
    for (api, v) in &c.txn.seen {
        match api {
            ApiKey::Produce => assert!(*v <= 11, "Produce v{v} under transactions v1"),
            ApiKey::EndTxn => assert!(*v <= 4),
            ApiKey::AddPartitionsToTxn => assert!(*v <= 3),
            _ => {}
        }
    }
    // A second transaction continues the sequences under the same epoch (v1).
    begin(&mut c);
    let more = send_many(&mut c, 120, 60);
    commit(&mut c).expect("second commit");
    assert_eq!(c.all_committed().len(), 180);
    assert!(more.iter().all(|v| c.all_committed().contains(v)));
    c.check_sequences();
    assert_eq!(c.txn.end_txns, vec![(0, true), (0, true)]);
}

#[test]
fn an_abort_hides_what_was_sent_and_drops_what_was_not() {
    let mut c = cluster(false, &[]);
    init(&mut c);
    begin(&mut c);
    send_many(&mut c, 0, 30);
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    // Held unanswered: these stay in flight while the abort starts.
    c.faults.hold = true;
    send_many(&mut c, 30, 6);
    c.step(Duration::from_millis(1));
    // These never leave the producer.
    let kept = c.reports.len();
    for n in 36..42u64 {
        c.send_ok((n % PARTITIONS as u64) as i32, &value(n));
    }
    call(&mut c, |p, _| p.abort_transaction()).expect("abort starts");
    c.faults.hold = false;
    result(&mut c, TxnOp::Abort).expect("abort");
    assert!(
        c.all_committed().is_empty(),
        "nothing of an aborted transaction"
    );
    let aborted = c.reports[kept..]
        .iter()
        .filter(|r| matches!(r.outcome, Err(ProduceError::Aborted)))
        .count();
    assert!(aborted >= 1, "unsent batches are reported aborted");
    assert_eq!(c.txn.end_txns, vec![(0, false)]);
    // The producer goes on.
    begin(&mut c);
    let sent = send_many(&mut c, 100, 12);
    commit(&mut c).expect("commit after abort");
    assert_eq!(sorted(c.all_committed()), sorted(sent));
}

#[test]
fn concurrent_transactions_at_init_are_retried() {
    let mut c = cluster(false, &[]);
    c.txn.faults.concurrent_on_init = 3;
    init(&mut c);
    assert_eq!(c.txn.count(ApiKey::InitProducerId), 4);
}

#[test]
fn a_lost_end_txn_answer_is_asked_again_with_the_same_decision() {
    let mut c = cluster(false, &[]);
    init(&mut c);
    begin(&mut c);
    let sent = send_many(&mut c, 0, 24);
    c.txn.faults.lose_end_answers = 2;
    commit(&mut c).expect("commit once its outcome is known");
    assert_eq!(
        c.txn.end_txns,
        vec![(0, true); 3],
        "never turned into an abort"
    );
    assert_eq!(sorted(c.all_committed()), sorted(sent));
}

#[test]
fn a_coordinator_that_moves_mid_transaction_is_found_again() {
    let mut c = cluster(false, &[]);
    init(&mut c);
    begin(&mut c);
    let mut sent = send_many(&mut c, 0, 12);
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    c.txn.coordinator = 2;
    sent.extend(send_many(&mut c, 12, 12));
    commit(&mut c).expect("commit through the new coordinator");
    assert_eq!(sorted(c.all_committed()), sorted(sent));
    assert!(c.txn.count(ApiKey::FindCoordinator) >= 2);
}

#[test]
fn a_fenced_zombie_ends_fatally_and_its_writes_never_show() {
    let mut c = cluster(false, &[]);
    init(&mut c);
    begin(&mut c);
    send_many(&mut c, 0, 12);
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    // A newer instance initializes the same transactional id.
    c.txn.fence(ID);
    send_many(&mut c, 12, 6);
    // Its Produce answers INVALID_PRODUCER_EPOCH: abortable (KIP-588)...
    let err = commit(&mut c).expect_err("the commit cannot succeed");
    assert!(err.is_abortable(), "{err:?}");
    assert_eq!(err.code(), Some(KafkaCode::INVALID_PRODUCER_EPOCH));
    assert_eq!(state(&mut c), TxnState::AbortableError);
    // ...and the abort meets PRODUCER_FENCED from the coordinator: fatal.
    let err = abort(&mut c).expect_err("fenced");
    assert!(err.is_fatal(), "{err:?}");
    assert_eq!(err.code(), Some(KafkaCode::PRODUCER_FENCED));
    assert_eq!(state(&mut c), TxnState::FatalError);
    assert!(c.all_committed().is_empty());
    let refused = c.send(0, &value(99));
    assert!(matches!(refused, Err(SendError::Fatal(_))), "{refused:?}");
    let again = call(&mut c, |p, cx| p.begin_transaction(cx));
    assert!(again.is_err_and(|e| e.is_fatal()));
}

#[test]
fn an_abortable_error_then_abort_bumps_the_epoch_and_the_next_transaction_commits() {
    let mut c = cluster(false, &[]);
    init(&mut c);
    begin(&mut c);
    send_many(&mut c, 0, 6);
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    // The broker lost the producer's state on one partition.
    c.faults.codes.push_back(KafkaCode::UNKNOWN_PRODUCER_ID.0);
    send_many(&mut c, 6, 6);
    let err = commit(&mut c).expect_err("a record failed");
    assert!(err.is_abortable());
    let refused = c.send(0, &value(50));
    assert!(matches!(refused, Err(SendError::Transaction(e)) if e.is_abortable()));
    abort(&mut c).expect("abort");
    assert_eq!(state(&mut c), TxnState::Ready);
    assert_eq!(
        c.txn.producer(ID).map(|(_, e)| e),
        Some(1),
        "the epoch was bumped after the abort (KIP-360)"
    );
    begin(&mut c);
    let sent = send_many(&mut c, 100, 12);
    commit(&mut c).expect("commit");
    assert_eq!(sorted(c.all_committed()), sorted(sent));
    c.check_sequences();
}

#[test]
fn a_transaction_timed_out_by_the_coordinator_never_commits() {
    let mut c = cluster(false, &[]);
    init(&mut c);
    begin(&mut c);
    send_many(&mut c, 0, 12);
    assert!(c.run_until(Duration::from_secs(5), all_reported));
    // transaction.timeout.ms passes on the coordinator just before the commit.
    c.txn.fence(ID);
    let err = commit(&mut c).expect_err("the coordinator aborted it");
    assert!(err.is_fatal(), "{err:?}");
    assert_eq!(err.code(), Some(KafkaCode::PRODUCER_FENCED));
    assert!(c.all_committed().is_empty());
    assert_eq!(c.txn.outcomes.values().next(), Some(&Outcome::Aborted));
}

/// Found by the simulation (`sim_txn` F11): a batch in flight when the abort began
/// and answered with a retriable error afterwards went back to its queue behind the
/// closed gate. The next transaction's commit then waited for it until
/// `delivery.timeout.ms`, and a next transaction writing its partition sent it — the
/// aborted record committed in a later transaction.
#[test]
fn a_batch_returned_for_a_retry_during_an_abort_is_dropped_with_its_transaction() {
    for v2 in [false, true] {
        let mut c = cluster(v2, &[]);
        init(&mut c);
        begin(&mut c);
        c.faults.hold = true;
        c.send_ok(0, &value(0));
        let in_flight = |c: &mut Cluster| super::metrics(c).requests_in_flight == 1;
        assert!(c.run_until(Duration::from_secs(1), in_flight), "v2 {v2}");
        call(&mut c, |p, _| p.abort_transaction()).expect("abort starts");
        // The held Produce is answered retriably once the abort has begun.
        c.faults.codes.push_back(KafkaCode::NOT_ENOUGH_REPLICAS.0);
        c.faults.hold = false;
        result(&mut c, TxnOp::Abort).expect("abort");
        assert!(all_reported(&mut c), "v2 {v2}: no batch outlives the abort");
        assert!(
            matches!(
                c.reports.last().map(|r| &r.outcome),
                Some(Err(ProduceError::Aborted))
            ),
            "v2 {v2}: {:?}",
            c.reports.last()
        );
        // The next transaction writes the same partition and another, and commits.
        begin(&mut c);
        let sent: Vec<Bytes> = [(0, 100), (1, 101)]
            .into_iter()
            .map(|(p, n)| {
                c.send_ok(p, &value(n));
                Bytes::from(value(n))
            })
            .collect();
        commit(&mut c).expect("the next commit is not held up");
        assert_eq!(sorted(c.all_committed()), sorted(sent), "v2 {v2}");
    }
}

/// Found by the simulation (`sim_txn` F10, F16): a batch whose Produce answer was lost
/// (the broker appended it) and that the abort dropped before its retry was reported
/// [`ProduceError::Aborted`] — never written — though the broker had it (in the aborted
/// transaction). It is reported possibly delivered.
#[test]
fn a_batch_with_a_lost_answer_dropped_by_an_abort_is_reported_possibly_delivered() {
    let slow_retry = [
        ("retry.backoff.ms", "1000"),
        ("retry.backoff.max.ms", "1000"),
    ];
    let mut c = cluster(false, &slow_retry);
    init(&mut c);
    begin(&mut c);
    c.faults.lose_answers = 1;
    c.send_ok(0, &value(0));
    assert!(c.run_until(Duration::from_secs(1), |c| c.parts[0].values.len() == 1));
    c.run(Duration::from_millis(5));
    abort(&mut c).expect("abort");
    assert!(all_reported(&mut c));
    let outcome = &c.reports.last().expect("reported").outcome;
    assert!(
        outcome
            .as_ref()
            .is_err_and(ProduceError::possibly_delivered),
        "{outcome:?}"
    );
    assert!(c.all_committed().is_empty());
}

fn group() -> GroupMetadata {
    GroupMetadata {
        group_id: "g".into(),
        generation_id: 5,
        member_id: "m-1".into(),
        group_instance_id: None,
    }
}

fn offsets(at: i64) -> Vec<((Arc<str>, i32), i64)> {
    (0..3)
        .map(|p| ((Arc::from(TOPIC), p), at + i64::from(p)))
        .collect()
}

fn send_offsets_and_commit(v2: bool) {
    let mut c = cluster(v2, &[]);
    init(&mut c);
    begin(&mut c);
    send_many(&mut c, 0, 6);
    // With the leader epochs of the records before them where known (KIP-320).
    let with_epochs: Vec<TxnOffset> = [Some(3), Some(4), None]
        .into_iter()
        .zip(0..)
        .map(|(epoch, p)| TxnOffset::new(TOPIC, p, 10 + i64::from(p)).leader_epoch(epoch))
        .collect();
    call(&mut c, |p, _| {
        p.send_offsets_to_transaction(with_epochs, &group())
    })
    .expect("starts");
    result(&mut c, TxnOp::SendOffsets).expect("offsets in the transaction");
    assert!(
        c.txn.group_offsets.is_empty(),
        "not committed before the commit"
    );
    assert_eq!(c.txn.committed_epochs, [(0, 3), (1, 4), (2, -1)]);
    commit(&mut c).expect("commit");
    let want: Vec<((String, i32), i64)> = (0..3)
        .map(|p| (("g".into(), p), 10 + i64::from(p)))
        .collect();
    assert_eq!(
        c.txn.group_offsets.clone().into_iter().collect::<Vec<_>>(),
        want
    );
    assert!(
        c.txn
            .offset_commits
            .iter()
            .all(|(g, m)| *g == 5 && m == "m-1"),
        "KIP-447 fields"
    );
    assert_eq!(c.txn.count(ApiKey::AddOffsetsToTxn), usize::from(!v2));
    // Offsets of an aborted transaction are not committed.
    begin(&mut c);
    call(&mut c, |p, _| {
        p.send_offsets_to_transaction(offsets(90), &group())
    })
    .expect("starts");
    result(&mut c, TxnOp::SendOffsets).expect("offsets in the transaction");
    abort(&mut c).expect("abort");
    assert_eq!(c.txn.group_offsets.get(&("g".into(), 0)), Some(&10));
}

#[test]
fn offsets_sent_to_a_transaction_commit_with_it_v1() {
    send_offsets_and_commit(false);
}

#[test]
fn offsets_sent_to_a_transaction_commit_with_it_v2() {
    send_offsets_and_commit(true);
}

#[test]
fn transactions_v2_add_partitions_through_produce_and_bump_the_epoch_at_every_end() {
    let mut c = cluster(true, &[]);
    init(&mut c);
    let mut all = Vec::new();
    for round in 0..3u64 {
        begin(&mut c);
        all.extend(send_many(&mut c, round * 100, 30));
        commit(&mut c).expect("commit");
    }
    begin(&mut c);
    send_many(&mut c, 900, 6);
    abort(&mut c).expect("abort");
    assert_eq!(sorted(c.all_committed()), sorted(all));
    assert_eq!(c.txn.count(ApiKey::AddPartitionsToTxn), 0);
    let epochs: Vec<i16> = c.txn.end_txns.iter().map(|(e, _)| *e).collect();
    assert_eq!(
        epochs,
        vec![0, 1, 2, 3],
        "a new epoch for every transaction"
    );
    assert!(c
        .txn
        .seen
        .iter()
        .filter(|(a, _)| *a == ApiKey::Produce)
        .all(|(_, v)| *v >= 12));
    c.check_sequences();
}

#[test]
fn calls_out_of_order_are_refused_with_the_state_named() {
    let mut c = cluster(false, &[]);
    let early = c.send(0, &value(1));
    assert!(
        matches!(
            early,
            Err(SendError::Transaction(TxnError::InvalidState {
                state: TxnState::Uninitialized,
                ..
            }))
        ),
        "{early:?}"
    );
    let begun = call(&mut c, |p, cx| p.begin_transaction(cx));
    assert!(matches!(begun, Err(TxnError::InvalidState { .. })));
    init(&mut c);
    let again = call(&mut c, |p, _| p.init_transactions());
    assert!(matches!(again, Err(TxnError::InvalidState { .. })));
    let commit_early = call(&mut c, |p, _| p.commit_transaction());
    assert!(matches!(
        commit_early,
        Err(TxnError::InvalidState {
            state: TxnState::Ready,
            ..
        })
    ));
    begin(&mut c);
    let twice = call(&mut c, |p, cx| p.begin_transaction(cx));
    assert!(matches!(twice, Err(TxnError::InvalidState { .. })));
    // An empty transaction commits without asking the coordinator.
    commit(&mut c).expect("empty commit");
    assert_eq!(c.txn.count(ApiKey::EndTxn), 0);

    let mut plain = Cluster::new(&[]);
    let r = plain
        .client
        .command(plain.now, plain.producer, |p, _| p.init_transactions())
        .expect("running");
    assert_eq!(r, Err(TxnError::NotTransactional));
}

#[test]
fn add_partitions_errors_are_retried_or_make_the_transaction_abortable() {
    let mut c = cluster(false, &[]);
    init(&mut c);
    begin(&mut c);
    c.txn.faults.add_codes.extend([
        KafkaCode::CONCURRENT_TRANSACTIONS.0,
        KafkaCode::COORDINATOR_LOAD_IN_PROGRESS.0,
    ]);
    let sent = send_many(&mut c, 0, 12);
    commit(&mut c).expect("retried");
    assert_eq!(sorted(c.all_committed()), sorted(sent));

    begin(&mut c);
    c.txn
        .faults
        .add_codes
        .push_back(KafkaCode::TOPIC_AUTHORIZATION_FAILED.0);
    send_many(&mut c, 100, 1);
    let err = commit(&mut c).expect_err("not authorized for the topic");
    assert!(err.is_abortable());
    abort(&mut c).expect("abort");
    assert!(
        c.all_committed().len() == 12,
        "the aborted record is not visible"
    );
}

#[test]
fn a_record_refused_at_send_makes_the_transaction_abortable() {
    let mut c = cluster(false, &[]);
    init(&mut c);
    begin(&mut c);
    let sent = send_many(&mut c, 0, 6);
    let refused = c.send(PARTITIONS + 3, &value(7));
    assert!(
        matches!(refused, Err(SendError::UnknownPartition { .. })),
        "{refused:?}"
    );
    let err = commit(&mut c).expect_err("the transaction lacks a record");
    assert!(err.is_abortable(), "{err:?}");
    abort(&mut c).expect("abort");
    assert!(c.all_committed().is_empty());
    begin(&mut c);
    let again = send_many(&mut c, 100, 6);
    commit(&mut c).expect("commit");
    assert_eq!(sorted(c.all_committed()), sorted(again));
    assert_eq!(sent.len(), 6);
}

/// Runs a closed producer until it finishes; returns the transaction results it
/// handed out meanwhile.
fn results_until_finished(c: &mut Cluster) -> Vec<(TxnOp, Result<(), TxnError>)> {
    let mut results = Vec::new();
    let finished = c.run_until(Duration::from_secs(30), |c| {
        match c
            .client
            .command(c.now, c.producer, |p, _| p.take_transaction_result())
        {
            Some(r) => {
                results.extend(r);
                false
            }
            None => true,
        }
    });
    assert!(finished, "the closed producer finished");
    results
}

#[test]
fn close_aborts_an_open_transaction_without_a_result_nobody_asked_for() {
    let mut c = cluster(false, &[]);
    init(&mut c);
    begin(&mut c);
    send_many(&mut c, 0, 12);
    call(&mut c, |p, _| p.close());
    assert_eq!(results_until_finished(&mut c), vec![], "nobody asked");
    assert_eq!(
        c.txn.end_txns,
        vec![(0, false)],
        "the transaction was aborted"
    );
    assert!(c.all_committed().is_empty());
    assert_eq!(c.reported_records(), 12, "every record reported");

    // An application abort after close joins that same abort (one EndTxn); the
    // producer finishes with it.
    let mut c = cluster(false, &[]);
    init(&mut c);
    begin(&mut c);
    send_many(&mut c, 0, 12);
    call(&mut c, |p, _| p.close());
    call(&mut c, |p, _| p.abort_transaction()).expect("joins close's abort");
    results_until_finished(&mut c);
    assert_eq!(c.txn.end_txns, vec![(0, false)]);
}
