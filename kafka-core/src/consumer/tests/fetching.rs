//! Reading: every record once and in order, fetch sessions, read_committed, the buffer
//! budget, corrupt data.

use std::time::Duration;

use bytes::Bytes;

use super::*;

#[test]
fn assign_from_earliest_reads_every_partition_once_in_order() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    h.assign_all();
    h.run(Duration::from_millis(200));
    for p in 0..PARTITIONS {
        assert_eq!(h.values(p), expected(p, 20));
        let offsets: Vec<i64> = h
            .records
            .iter()
            .filter(|r| r.partition == p)
            .map(|r| r.offset)
            .collect();
        assert_eq!(offsets, (0..20).collect::<Vec<_>>());
    }
    let pos = h
        .client
        .command(h.now, h.consumer, |c, _| c.position(TOPIC, 1))
        .unwrap();
    assert_eq!(pos, Some(20));
    assert!(h.errors.is_empty(), "{:?}", h.errors);
}

#[test]
fn the_first_fetch_opens_a_session_and_later_ones_are_incremental() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    h.assign_all();
    h.run(Duration::from_millis(50));
    let (id, epoch, sent, _) = &h.fetches[0];
    assert_eq!(
        (*id, *epoch, sent.len()),
        (0, 0, 3),
        "full fetch opens the session"
    );
    let later = &h.fetches[1..];
    assert!(!later.is_empty());
    for (i, (id, epoch, sent, _)) in later.iter().enumerate() {
        assert_eq!(*id, 101, "the session is kept");
        assert_eq!(*epoch, i as i32 + 1, "epochs count up");
        assert!(sent.len() <= 3);
    }
    // Once caught up, nothing changes: the fetches name no partition at all.
    h.run(Duration::from_millis(50));
    assert!(
        h.fetches.last().unwrap().2.is_empty(),
        "{:?}",
        h.fetches.last()
    );
}

#[test]
fn a_session_error_falls_back_to_a_full_fetch_without_losing_or_repeating_records() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    // Records arrive in two steps so the error lands mid-stream.
    h.assign_all();
    h.run(Duration::from_millis(30));
    h.fail_next_fetch = Some(KafkaCode::FETCH_SESSION_ID_NOT_FOUND);
    for p in 0..PARTITIONS as usize {
        let values: Vec<String> = (20..25).map(|i| format!("p{p}-{i}")).collect();
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        h.logs[p].append(&refs, None);
    }
    h.run(Duration::from_millis(200));
    for p in 0..PARTITIONS {
        assert_eq!(h.values(p), expected(p, 25));
    }
    let full_again = h
        .fetches
        .iter()
        .skip(1)
        .any(|(id, epoch, _, _)| *id == 0 && *epoch == 0);
    assert!(full_again, "a new session was opened: {:?}", h.fetches);
}

#[test]
fn a_lost_connection_starts_a_new_session() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    h.assign_all();
    h.run(Duration::from_millis(30));
    h.reset_connections();
    for p in 0..PARTITIONS as usize {
        let values: Vec<String> = (20..25).map(|i| format!("p{p}-{i}")).collect();
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        h.logs[p].append(&refs, None);
    }
    h.run(Duration::from_millis(500));
    for p in 0..PARTITIONS {
        assert_eq!(h.values(p), expected(p, 25));
    }
    let opened = h
        .fetches
        .iter()
        .filter(|(id, epoch, _, _)| *id == 0 && *epoch == 0)
        .count();
    assert_eq!(opened, 2, "{:?}", h.fetches);
}

#[test]
fn read_committed_drops_aborted_transactions_and_control_records_never_surface() {
    for committed in [true, false] {
        let level = if committed {
            "read_committed"
        } else {
            "read_uncommitted"
        };
        let mut h = Harness::new(&[
            ("auto.offset.reset", "earliest"),
            ("isolation.level", level),
        ]);
        let log = &mut h.logs[0];
        let first = log.next;
        log.append(&["aborted-1", "aborted-2"], Some((7, true)));
        log.append(&["kept-1"], Some((8, true)));
        log.append(&["aborted-3"], Some((7, true)));
        log.marker(7, false, first);
        log.marker(8, true, first + 2);
        log.append(&["after"], None);
        h.assign_all();
        h.run(Duration::from_millis(200));
        let mut want = expected(0, 20);
        if committed {
            want.extend(["kept-1", "after"].map(String::from));
        } else {
            want.extend(
                ["aborted-1", "aborted-2", "kept-1", "aborted-3", "after"].map(String::from),
            );
        }
        assert_eq!(h.values(0), want, "{level}");
        let pos = h
            .client
            .command(h.now, h.consumer, |c, _| c.position(TOPIC, 0))
            .unwrap();
        assert_eq!(
            pos,
            Some(h.logs[0].next),
            "{level}: the position passes the markers"
        );
    }
}

#[test]
fn max_poll_records_and_the_buffer_budget_hold() {
    let mut h = Harness::new(&[
        ("auto.offset.reset", "earliest"),
        ("max.poll.records", "7"),
        ("queued.max.messages.kbytes", "1"),
    ]);
    h.assign_all();
    for _ in 0..20 {
        h.serve();
        let mut got = Vec::new();
        let n = h
            .client
            .command(h.now, h.consumer, |c, _| c.poll(&mut got))
            .unwrap();
        assert!(n <= 7);
        let m = h
            .client
            .command(h.now, h.consumer, |c, _| c.metrics())
            .unwrap();
        // One answer may pass the budget (like fetch.max.bytes); none is fetched after.
        assert!(
            m.buffered_bytes <= 1024 + 3 * 4 * 200,
            "{}",
            m.buffered_bytes
        );
        h.records.extend(got);
        h.now += Duration::from_millis(1);
        h.client.handle_timeout(h.now);
    }
    h.run(Duration::from_millis(100));
    for p in 0..PARTITIONS {
        assert_eq!(h.values(p), expected(p, 20));
    }
}

#[test]
fn corrupt_data_is_a_typed_error_and_the_rest_goes_on() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")]);
    // Flip a byte inside partition 1's second batch: its CRC no longer matches.
    let (base, bytes) = h.logs[1].batches[1].clone();
    let mut damaged = bytes.to_vec();
    let last = damaged.len() - 1;
    damaged[last] ^= 0xff;
    h.logs[1].batches[1] = (base, Bytes::from(damaged));
    h.assign_all();
    h.run(Duration::from_millis(200));
    assert_eq!(h.values(1), expected(1, 5), "records before the damage");
    assert!(matches!(
        h.errors[0],
        ConsumeError::Corrupt {
            partition: 1,
            offset: 5,
            ..
        }
    ));
    assert_eq!(h.values(0), expected(0, 20));
    assert_eq!(h.values(2), expected(2, 20));
}
