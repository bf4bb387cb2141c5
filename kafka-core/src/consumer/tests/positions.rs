//! Positions: resets by policy, seeks and pauses against fetches in flight, caught-up
//! partitions, waiting for an unknown leader.

use std::time::Duration;

use super::*;

#[test]
fn out_of_range_positions_reset_by_policy_or_fail_typed() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    h.assign_all();
    h.run(Duration::from_millis(30));
    h.client
        .command(h.now, h.consumer, |c, _| c.seek(TOPIC, 0, 1_000))
        .unwrap();
    h.records.clear();
    h.run(Duration::from_millis(100));
    assert_eq!(
        h.values(0),
        expected(0, 20),
        "reset to earliest and read again"
    );
    assert!(h.values(1).is_empty());
    let m = h
        .client
        .command(h.now, h.consumer, |c, _| c.metrics())
        .unwrap();
    assert_eq!(m.resets, 1);

    let mut none = Harness::new(&[("auto.offset.reset", "none")]);
    none.assign_all();
    none.run(Duration::from_millis(20));
    assert_eq!(none.errors.len(), 3);
    assert!(matches!(none.errors[0], ConsumeError::NoOffset { .. }));
    assert!(none.records.is_empty());
    none.client
        .command(none.now, none.consumer, |c, _| {
            c.seek(TOPIC, 0, 3);
            c.seek(TOPIC, 1, 1_000);
        })
        .unwrap();
    none.errors.clear();
    none.run(Duration::from_millis(100));
    assert_eq!(none.values(0), expected(0, 20)[3..].to_vec());
    assert!(
        matches!(
            none.errors[..],
            [ConsumeError::OffsetOutOfRange {
                partition: 1,
                offset: 1_000,
                ..
            }]
        ),
        "{:?}",
        none.errors
    );
}

#[test]
fn a_fetch_answered_after_a_seek_is_dropped_and_fetched_again_from_the_new_position() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    h.hold_fetches = true;
    h.assign_all();
    h.client
        .command(h.now, h.consumer, |c, _| c.seek(TOPIC, 0, 15))
        .unwrap();
    h.run(Duration::from_millis(20));
    assert_eq!(
        h.held.len(),
        1,
        "one Fetch, from offset 15 for partition 0, held"
    );
    // Rewind while that Fetch is out (a pause's rewind in the adapters does this too).
    h.client
        .command(h.now, h.consumer, |c, _| c.seek(TOPIC, 0, 5))
        .unwrap();
    h.hold_fetches = false;
    for (conn, seen) in std::mem::take(&mut h.held) {
        h.answer(conn, &seen);
    }
    h.run(Duration::from_millis(200));
    let want: Vec<String> = (5..20).map(|i| format!("p0-{i}")).collect();
    assert_eq!(
        h.values(0),
        want,
        "nothing from the stale answer, nothing skipped"
    );
    for p in 1..PARTITIONS {
        assert_eq!(h.values(p), expected(p, 20));
    }
}

#[test]
fn paused_partitions_buffered_records_wait_without_notifying_and_come_after_resume() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest"), ("max.poll.records", "1")]);
    h.assign_all();
    h.run(Duration::from_millis(5));
    assert!(!h.records.is_empty(), "chunks fetched and being handed out");
    let all = || (0..PARTITIONS).map(|p| (TOPIC, p));
    h.client
        .command(h.now, h.consumer, |c, _| c.pause(all()))
        .unwrap();
    let (pending, buffered) = h
        .client
        .command(h.now, h.consumer, |c, _| {
            (c.has_pending(), c.metrics().buffered_bytes)
        })
        .unwrap();
    assert!(buffered > 0, "the paused chunks are kept");
    assert!(
        !pending,
        "nothing to hand out while every partition is paused"
    );
    // No Notify while paused (an adapter pumping on Notify would spin otherwise).
    while h.client.poll_event().is_some() {}
    let before = h.records.len();
    h.run(Duration::from_millis(50));
    assert_eq!(h.records.len(), before);
    h.client
        .command(h.now, h.consumer, |c, _| c.resume(all()))
        .unwrap();
    h.run(Duration::from_millis(300));
    for p in 0..PARTITIONS {
        assert_eq!(
            h.values(p),
            expected(p, 20),
            "partition {p}: once, in order"
        );
    }
}

#[test]
fn caught_up_partitions_do_not_hold_the_broker_while_another_drains() {
    // A Fetch naming only partitions at their log end would wait out fetch.max.wait.ms
    // at a real broker, and the partition whose chunk is being drained could not be
    // fetched again until it returns (one Fetch in flight per broker).
    let mut h = Harness::new(&[("auto.offset.reset", "earliest"), ("max.poll.records", "2")]);
    h.assign_all();
    h.run(Duration::from_millis(100));
    for p in 0..PARTITIONS {
        assert_eq!(h.values(p), expected(p, 20), "all caught up first");
    }
    let values: Vec<String> = (20..25).map(|i| format!("p1-{i}")).collect();
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
    h.logs[1].append(&refs, None);

    // The next Fetch brings partition 1's new records; they wait for the application.
    let before = h.fetches.len();
    let mut waited = 0;
    for _ in 0..50 {
        h.serve();
        h.now += Duration::from_millis(1);
        h.client.handle_timeout(h.now);
        while h.client.poll_event().is_some() {}
        waited += 1;
    }
    let pending = h
        .client
        .command(h.now, h.consumer, |c, _| c.metrics().buffered_bytes)
        .unwrap();
    assert!(pending > 0, "partition 1's chunk waits");
    let sent = h.fetches.len() - before;
    assert!(
        sent <= 2,
        "{sent} Fetches in {waited} ms with only caught-up partitions to fetch: {:?}",
        &h.fetches[before..]
    );

    // Handing the chunk out lets the next Fetch go, and every record arrives once.
    h.run(Duration::from_millis(50));
    assert!(h.fetches.len() - before > sent, "fetching goes on");
    assert_eq!(h.values(1), expected(1, 25));
    assert_eq!(h.values(0), expected(0, 20));
}

#[test]
fn a_reset_waiting_for_an_unknown_leader_does_not_wake_itself_in_a_busy_loop() {
    // As the simulation found it: a partition's ListOffsets is refused with a leader
    // error, which forgets its leader and asks for metadata; the answer is slow to come.
    // Once the retry time has passed the partition can only wait for metadata, and the
    // consumer must not keep asking to be woken at that past instant.
    let mut h = Harness::new(&[
        ("auto.offset.reset", "earliest"),
        ("retry.backoff.ms", "50"),
    ]);
    h.assign_all();
    h.run(Duration::from_millis(100));
    for p in 0..PARTITIONS {
        assert_eq!(h.values(p), expected(p, 20));
    }
    h.records.clear();
    h.refuse_list_offsets = Some(KafkaCode::NOT_LEADER_OR_FOLLOWER);
    h.hold_metadata = true;
    h.client
        .command(h.now, h.consumer, |c, _| c.seek_to_beginning([(TOPIC, 0)]))
        .unwrap();
    h.run(Duration::from_millis(5));
    assert!(
        h.refuse_list_offsets.is_none(),
        "the ListOffsets was refused"
    );
    assert!(
        h.held.iter().any(|(_, s)| s.api() == ApiKey::Metadata),
        "metadata asked for, and held"
    );
    // Well past the retry backoff, with the leader still unknown.
    for _ in 0..500 {
        h.step();
        let next = h.client.poll_timeout();
        assert!(
            next.is_none_or(|t| t > h.now),
            "woken again at {:?} after handle_timeout({:?}): a busy loop",
            next.map(|t| t - origin()),
            h.now - origin()
        );
    }
    assert!(
        h.values(0).is_empty(),
        "no position while the leader is unknown"
    );
    // Metadata names the leader again: the reset completes and partition 0 is read again.
    h.hold_metadata = false;
    for (conn, seen) in std::mem::take(&mut h.held) {
        h.answer(conn, &seen);
    }
    h.run(Duration::from_millis(300));
    assert_eq!(h.values(0), expected(0, 20));
    assert!(h.values(1).is_empty() && h.values(2).is_empty());
    assert!(h.errors.is_empty(), "{:?}", h.errors);
}

#[test]
fn by_duration_resets_to_the_first_recent_record_or_the_log_end() {
    let mut h = Harness::new(&[("auto.offset.reset", "by_duration:PT1H")]);
    let wall = Duration::from_secs(1_700_000_000);
    h.client.handle_wall_clock(wall);
    h.offsets_by_time.insert(0, 15);
    h.offsets_by_time.insert(2, 0);
    // Partition 1 has no record within the hour: the broker answers offset -1.
    h.assign_all();
    h.run(Duration::from_millis(100));
    assert_eq!(h.values(0), expected(0, 20)[15..].to_vec());
    assert!(h.values(1).is_empty(), "{:?}", h.values(1));
    assert_eq!(h.values(2), expected(2, 20));
    let hour_ago = i64::try_from((wall - Duration::from_secs(3_600)).as_millis()).unwrap();
    for p in 0..PARTITIONS {
        let asked: Vec<i64> = h
            .list_offsets_times
            .iter()
            .filter(|&&(q, _)| q == p)
            .map(|&(_, t)| t)
            .collect();
        assert!(!asked.is_empty(), "partition {p} was never reset");
        let t = asked[0];
        assert!(
            (hour_ago..hour_ago + 100).contains(&t),
            "partition {p} asked for {t}, an hour before the wall clock is {hour_ago}"
        );
        // Only the partition without a recent record asks again, for the log end.
        let again = if p == 1 { vec![-1] } else { vec![] };
        assert_eq!(asked[1..], again[..], "partition {p}");
    }
    assert_eq!(h.consumer(|c| c.position(TOPIC, 1)), Some(20));
    assert!(h.errors.is_empty(), "{:?}", h.errors);
}
