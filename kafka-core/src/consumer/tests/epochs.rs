//! Leader epochs (KIP-320): positions carry the epoch of the last record handed out,
//! requests carry the leader epoch the consumer knows, a leader change is validated with
//! OffsetForLeaderEpoch before fetching on, and log truncation moves the position back
//! (with a reset policy) or stops the partition with a typed error.

use std::time::Duration;

use super::*;

/// The offsets handed out for a partition, in order.
fn offsets(h: &Harness, partition: i32) -> Vec<i64> {
    h.records
        .iter()
        .filter(|r| r.partition == partition)
        .map(|r| r.offset)
        .collect()
}

fn other_values(range: std::ops::Range<i64>) -> Vec<String> {
    range.map(|i| format!("p0-new-{i}")).collect()
}

/// A harness whose consumer has read all 20 records of every partition (epoch 1).
fn caught_up(policy: &str) -> Harness {
    let mut h = Harness::new(&[("auto.offset.reset", policy)]);
    h.assign_all();
    h.consumer(|c| (0..PARTITIONS).for_each(|p| c.seek(TOPIC, p, 0)));
    h.run(Duration::from_millis(100));
    if policy == "none" {
        // Assigned before the seeks: each partition said it had no position.
        assert_eq!(h.errors.len(), 3);
        h.errors.clear();
    }
    for p in 0..PARTITIONS {
        assert_eq!(h.values(p), expected(p, 20));
    }
    assert!(h.errors.is_empty(), "{:?}", h.errors);
    h
}

/// Partition 0 loses offsets 15.. in an unclean election: node 2 leads at epoch 2 and
/// has written five other records there.
fn unclean_election(h: &mut Harness) {
    let log = &mut h.logs[0];
    log.truncate(15);
    h.elect(0, 2, 2);
    let other: Vec<String> = (15..20).map(|i| format!("p0-new-{i}")).collect();
    h.logs[0].append_values(&other);
}

#[test]
fn positions_carry_the_epoch_of_the_last_record_and_requests_the_leader_epoch() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    h.assign_all();
    h.run(Duration::from_millis(100));
    assert!(h.records.iter().all(|r| r.leader_epoch == 1));
    assert!(
        h.list_offsets_epochs.iter().all(|&(_, e)| e == 1),
        "ListOffsets carries current_leader_epoch: {:?}",
        h.list_offsets_epochs
    );
    assert!(h
        .seen_fetches
        .iter()
        .all(|f| f.parts.iter().all(|p| p.2 == 1)));
    // The first fetch of a reset position has no last epoch; later ones have the
    // epoch of the record before the position.
    let first = &h.seen_fetches[0];
    assert!(first
        .parts
        .iter()
        .all(|&(_, o, _, last)| o == 0 && last == -1));
    let later: Vec<_> = h.seen_fetches[1..]
        .iter()
        .flat_map(|f| f.parts.iter())
        .collect();
    assert!(!later.is_empty());
    assert!(
        later.iter().all(|&&(_, o, _, last)| o > 0 && last == 1),
        "{later:?}"
    );
    assert_eq!(h.consumer(|c| c.epoch_before(TOPIC, 0, 20)), Some(1));
    // No leader changed: nothing was validated.
    assert!(h.validations.is_empty());
}

#[test]
fn a_leader_change_is_validated_and_fetching_resumes_at_the_same_offset() {
    let mut h = caught_up("earliest");
    // A clean election: node 2 has every record and leads at epoch 2.
    h.elect(0, 2, 2);
    let more: Vec<String> = (20..25).map(|i| format!("p0-{i}")).collect();
    h.logs[0].append_values(&more);
    h.refresh_metadata();
    let before = h.seen_fetches.len();
    h.run(Duration::from_millis(100));
    assert_eq!(
        h.validations,
        vec![(2, 0, 1, 2)],
        "asked node 2 for the end of epoch 1, as the holder of epoch 2"
    );
    assert_eq!(
        h.values(0),
        expected(0, 25),
        "nothing skipped, nothing twice"
    );
    let after: Vec<_> = h.seen_fetches[before..]
        .iter()
        .filter(|f| f.parts.iter().any(|p| p.0 == 0 && p.1 >= 20))
        .collect();
    assert!(after.iter().all(|f| f.node == 2), "{after:?}");
    assert!(after
        .iter()
        .flat_map(|f| f.parts.iter())
        .filter(|p| p.0 == 0)
        .all(|p| p.2 == 2));
    assert_eq!(h.consumer(|c| c.epoch_before(TOPIC, 0, 25)), Some(2));
    assert_eq!(h.consumer(|c| c.epoch_before(TOPIC, 0, 20)), Some(1));
    let m = h.consumer(|c| c.metrics());
    assert_eq!((m.validations, m.truncations), (1, 0));
    assert!(h.errors.is_empty(), "{:?}", h.errors);
}

#[test]
fn a_fenced_leader_epoch_refreshes_metadata_and_validates_before_fetching_on() {
    let mut h = caught_up("earliest");
    // Same node, new epoch; the consumer is not told: its next Fetch is fenced.
    h.elect(0, 1, 5);
    let more: Vec<String> = (20..25).map(|i| format!("p0-{i}")).collect();
    h.logs[0].append_values(&more);
    h.run(Duration::from_millis(300));
    assert!(
        h.seen_fetches
            .iter()
            .flat_map(|f| f.parts.iter())
            .any(|p| p.0 == 0 && p.2 == 1 && p.1 == 20),
        "fetched at epoch 1 first"
    );
    assert_eq!(h.validations, vec![(1, 0, 1, 5)]);
    assert_eq!(h.values(0), expected(0, 25));
    assert!(h.errors.is_empty(), "{:?}", h.errors);
}

#[test]
fn truncation_with_auto_offset_reset_none_is_a_typed_error() {
    let mut h = caught_up("none");
    unclean_election(&mut h);
    h.refresh_metadata();
    h.run(Duration::from_millis(200));
    assert_eq!(h.validations, vec![(2, 0, 1, 2)]);
    assert!(
        matches!(
            h.errors[..],
            [ConsumeError::LogTruncation {
                partition: 0,
                offset: 20,
                divergent_offset: Some(15),
                ..
            }]
        ),
        "{:?}",
        h.errors
    );
    assert_eq!(h.values(0), expected(0, 20), "nothing after the truncation");
    assert_eq!(
        h.consumer(|c| c.position(TOPIC, 0)),
        None,
        "stopped until sought"
    );
    assert_eq!(h.consumer(|c| c.metrics().truncations), 1);
    // The application decides: a seek to the divergent offset reads the new records.
    h.consumer(|c| c.seek(TOPIC, 0, 15));
    h.run(Duration::from_millis(100));
    let want: Vec<String> = expected(0, 20)
        .into_iter()
        .chain((15..20).map(|i| format!("p0-new-{i}")))
        .collect();
    assert_eq!(h.values(0), want);
}

#[test]
fn truncation_with_a_reset_policy_moves_back_to_the_divergent_offset() {
    for policy in ["earliest", "latest"] {
        let mut h = caught_up(policy);
        unclean_election(&mut h);
        h.refresh_metadata();
        h.run(Duration::from_millis(200));
        // Offsets 15..20 were read from the lost log, and again from the new one: the
        // records there are other records. Nothing before 15 comes twice (not a reset
        // to the log start), nothing new is skipped (not a reset to the end).
        let mut want = (0..20).collect::<Vec<i64>>();
        want.extend(15..20);
        assert_eq!(offsets(&h, 0), want, "{policy}");
        let tail: Vec<String> = h.values(0)[20..].to_vec();
        let new: Vec<String> = (15..20).map(|i| format!("p0-new-{i}")).collect();
        assert_eq!(tail, new, "{policy}");
        assert!(h.errors.is_empty(), "{policy}: {:?}", h.errors);
        let m = h.consumer(|c| c.metrics());
        assert_eq!(
            (m.validations, m.truncations, m.resets),
            (1, 1, 0),
            "{policy}"
        );
        assert_eq!(h.consumer(|c| c.epoch_before(TOPIC, 0, 20)), Some(2));
        for p in 1..PARTITIONS {
            assert_eq!(h.values(p), expected(p, 20), "{policy}: others untouched");
        }
    }
}

#[test]
fn a_diverging_epoch_in_a_fetch_answer_is_judged_like_a_validation() {
    for policy in ["earliest", "none"] {
        let mut h = caught_up(policy);
        // Scripted: the leader's epoch cache says epoch 1 ended at 15 and epoch 2 wrote
        // other records from there (while the leader epoch the consumer fetches with
        // stays valid). Its divergence check answers the consumer's fetch at 20 with
        // last_fetched_epoch 1 with diverging_epoch (1, 15).
        let log = &mut h.logs[0];
        log.truncate(15);
        log.new_epoch(2);
        log.append_values(&other_values(15..22));
        log.epoch = 1;
        h.run(Duration::from_millis(200));
        assert!(
            h.seen_fetches
                .iter()
                .flat_map(|f| f.parts.iter())
                .any(|p| p.0 == 0 && p.1 == 20 && p.3 == 1),
            "{policy}: fetched at 20 with last_fetched_epoch 1"
        );
        if policy == "none" {
            assert!(
                matches!(
                    h.errors[..],
                    [ConsumeError::LogTruncation {
                        partition: 0,
                        offset: 20,
                        divergent_offset: Some(15),
                        ..
                    }]
                ),
                "{:?}",
                h.errors
            );
            assert_eq!(h.values(0), expected(0, 20));
        } else {
            let mut want = (0..20).collect::<Vec<i64>>();
            want.extend(15..22);
            assert_eq!(offsets(&h, 0), want);
            assert_eq!(h.values(0)[20..], other_values(15..22)[..]);
            assert!(h.errors.is_empty(), "{:?}", h.errors);
        }
        assert!(h.validations.is_empty(), "the Fetch answer said it all");
        assert_eq!(h.consumer(|c| c.metrics().truncations), 1);
    }
}

#[test]
fn a_seek_with_an_epoch_is_validated_before_fetching() {
    // As a committed offset restored with its leader epoch: the leader no longer has
    // offsets 15.. of epoch 1.
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    unclean_election(&mut h);
    h.assign_all();
    h.consumer(|c| {
        c.seek_with_epoch(TOPIC, 0, 18, Some(1));
        c.seek(TOPIC, 1, 0);
        c.seek(TOPIC, 2, 0);
    });
    h.run(Duration::from_millis(200));
    assert_eq!(
        h.validations,
        vec![(2, 0, 1, 2)],
        "only the position with an epoch"
    );
    assert_eq!(offsets(&h, 0), (15..20).collect::<Vec<_>>());
    assert_eq!(h.values(1), expected(1, 20));
    assert!(h.errors.is_empty(), "{:?}", h.errors);
}

#[test]
fn validation_errors_refresh_metadata_and_retry() {
    let mut h = caught_up("earliest");
    h.elect(0, 2, 2);
    h.refuse_validation = Some(KafkaCode::UNKNOWN_LEADER_EPOCH);
    h.refresh_metadata();
    h.run(Duration::from_millis(300));
    assert_eq!(h.validations.len(), 2, "{:?}", h.validations);
    assert!(h.validations.iter().all(|v| *v == (2, 0, 1, 2)));
    let more: Vec<String> = (20..23).map(|i| format!("p0-{i}")).collect();
    h.logs[0].append_values(&more);
    h.run(Duration::from_millis(100));
    assert_eq!(h.values(0), expected(0, 23));
    assert!(h.errors.is_empty(), "{:?}", h.errors);
}

#[test]
fn brokers_without_offset_for_leader_epoch_v3_are_not_asked() {
    // Java validates only with v3+ (topic authorization); an older broker means
    // fetching on unvalidated.
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    h.offset_for_leader_epoch_max = Some(2);
    h.assign_all();
    h.run(Duration::from_millis(100));
    h.elect(0, 2, 2);
    let more: Vec<String> = (20..25).map(|i| format!("p0-{i}")).collect();
    h.logs[0].append_values(&more);
    h.refresh_metadata();
    h.run(Duration::from_millis(200));
    assert!(h.validations.is_empty(), "{:?}", h.validations);
    assert_eq!(h.values(0), expected(0, 25));
    assert_eq!(h.consumer(|c| c.metrics().validations), 0);
}

#[test]
fn a_reset_with_a_stale_leader_epoch_is_fenced_and_retried_after_a_refresh() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    h.assign_all();
    h.run(Duration::from_millis(100));
    // A new epoch the consumer has not heard of; then a reset of partition 0.
    h.elect(0, 1, 4);
    h.consumer(|c| c.seek_to_beginning([(TOPIC, 0)]));
    h.list_offsets_epochs.clear();
    h.run(Duration::from_millis(200));
    let asked: Vec<i32> = h
        .list_offsets_epochs
        .iter()
        .filter(|&&(p, _)| p == 0)
        .map(|&(_, e)| e)
        .collect();
    assert_eq!(
        asked,
        vec![1, 4],
        "fenced at epoch 1, then asked at epoch 4"
    );
    let twice: Vec<String> = expected(0, 20).into_iter().chain(expected(0, 20)).collect();
    assert_eq!(h.values(0), twice);
    assert!(h.errors.is_empty(), "{:?}", h.errors);
}

#[test]
fn a_rewind_keeps_the_epoch_of_the_record_before_and_is_validated_with_it() {
    // An adapter's pause rewinds to its first queued record: unlike a seek, the
    // position keeps its epoch, so a leader change is still validated.
    let mut h = caught_up("earliest");
    h.elect(0, 1, 2);
    let more: Vec<String> = (20..25).map(|i| format!("p0-{i}")).collect();
    h.logs[0].append_values(&more);
    h.refresh_metadata();
    h.run(Duration::from_millis(100));
    assert_eq!(h.values(0), expected(0, 25));
    assert_eq!(h.validations.len(), 1);
    h.consumer(|c| c.rewind(TOPIC, 0, 22));
    assert_eq!(h.consumer(|c| c.epoch_before(TOPIC, 0, 22)), Some(2));
    h.consumer(|c| c.rewind(TOPIC, 0, 10));
    assert_eq!(h.consumer(|c| c.epoch_before(TOPIC, 0, 10)), Some(1));
    // A leader change now: the rewound position is validated with epoch 1.
    h.elect(0, 3, 3);
    h.refresh_metadata();
    h.run(Duration::from_millis(100));
    assert_eq!(h.validations[1..], [(3, 0, 1, 3)]);
    let again: Vec<String> = expected(0, 25)
        .into_iter()
        .chain((10..25).map(|i| format!("p0-{i}")))
        .collect();
    assert_eq!(h.values(0), again);
    // A plain seek forgets the epoch.
    h.consumer(|c| c.seek(TOPIC, 0, 5));
    assert_eq!(h.consumer(|c| c.epoch_before(TOPIC, 0, 5)), None);
}
