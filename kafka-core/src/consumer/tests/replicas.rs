//! Follower fetching (KIP-392): `client.rack` goes out as `rack_id`; the leader's
//! preferred read replica serves the partition's next fetches until an error from it,
//! `metadata.max.age.ms`, a leader change, or its absence from metadata sends the
//! consumer back to the leader.

use std::time::Duration;

use super::*;

/// Nodes that partition `p` was fetched from, from the `from`-th Fetch on, in order,
/// deduplicated.
fn served_by(h: &Harness, p: i32, from: usize) -> Vec<i32> {
    let mut nodes: Vec<i32> = Vec::new();
    for f in &h.seen_fetches[from..] {
        if f.parts.iter().any(|q| q.0 == p) && nodes.last() != Some(&f.node) {
            nodes.push(f.node);
        }
    }
    nodes
}

fn all_read_once(h: &Harness, n: usize) {
    for p in 0..PARTITIONS {
        assert_eq!(h.values(p), expected(p, n), "partition {p}");
    }
    assert!(h.errors.is_empty(), "{:?}", h.errors);
}

fn append_all(h: &mut Harness, from: usize, to: usize) {
    for p in 0..PARTITIONS {
        let values: Vec<String> = (from..to).map(|i| format!("p{p}-{i}")).collect();
        h.logs[p as usize].append_values(&values);
    }
}

#[test]
fn the_rack_is_sent_and_the_preferred_replica_serves_the_next_fetches() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest"), ("client.rack", "r2")]);
    h.prefer = Some(2);
    h.assign_all();
    h.run(Duration::from_millis(100));
    assert!(h.seen_fetches.iter().all(|f| f.rack == "r2"));
    assert_eq!(h.seen_fetches[0].node, 1, "the leader first");
    for p in 0..PARTITIONS {
        assert_eq!(
            served_by(&h, p, 0),
            vec![1, 2],
            "partition {p}: then node 2"
        );
    }
    all_read_once(&h, 20);
    assert!(h.consumer(|c| c.metrics().preferred_replica_fetches) > 0);
    // Without a rack the consumer never hears of a preferred replica.
    let mut plain = Harness::new(&[("auto.offset.reset", "earliest")]);
    plain.prefer = Some(2);
    plain.assign_all();
    plain.run(Duration::from_millis(100));
    assert!(plain
        .seen_fetches
        .iter()
        .all(|f| f.node == 1 && f.rack.is_empty()));
    all_read_once(&plain, 20);
}

#[test]
fn an_error_from_the_preferred_replica_goes_back_to_the_leader() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest"), ("client.rack", "r2")]);
    h.prefer = Some(2);
    h.assign_all();
    h.run(Duration::from_millis(100));
    all_read_once(&h, 20);
    // The leader stops preferring a replica; node 2 fails partition 0 once.
    h.prefer = None;
    h.inject.push((2, 0, KafkaCode::NOT_LEADER_OR_FOLLOWER));
    append_all(&mut h, 20, 25);
    let before = h.seen_fetches.len();
    h.run(Duration::from_millis(300));
    assert!(h.inject.is_empty(), "node 2 failed partition 0");
    // (Node 2's session held partition 0 unchanged: those fetches did not name it.)
    assert_eq!(
        served_by(&h, 0, before),
        vec![1],
        "back to the leader after the error"
    );
    assert!(
        !served_by(&h, 1, before).contains(&1),
        "the others stay on the replica"
    );
    all_read_once(&h, 25);
}

#[test]
fn out_of_range_on_the_replica_is_not_a_reset() {
    // A lagging follower answers OFFSET_OUT_OF_RANGE: Java goes back to the leader
    // without resetting the position.
    let mut h = Harness::new(&[("auto.offset.reset", "earliest"), ("client.rack", "r2")]);
    h.prefer = Some(2);
    h.assign_all();
    h.run(Duration::from_millis(100));
    h.prefer = None;
    h.inject.push((2, 1, KafkaCode::OFFSET_OUT_OF_RANGE));
    append_all(&mut h, 20, 25);
    h.run(Duration::from_millis(300));
    all_read_once(&h, 25);
    assert_eq!(h.consumer(|c| c.metrics().resets), 0);
}

#[test]
fn the_preferred_replica_expires_after_metadata_max_age() {
    let mut h = Harness::new(&[
        ("auto.offset.reset", "earliest"),
        ("client.rack", "r2"),
        ("metadata.max.age.ms", "200"),
    ]);
    h.prefer = Some(2);
    h.assign_all();
    h.run(Duration::from_millis(50));
    h.prefer = None;
    let before = h.seen_fetches.len();
    h.run(Duration::from_millis(100));
    assert!(
        h.seen_fetches[before..].iter().all(|f| f.node == 2),
        "still held"
    );
    h.run(Duration::from_millis(200));
    let last = h.seen_fetches.last().unwrap();
    assert_eq!(last.node, 1, "expired: back to the leader");
    append_all(&mut h, 20, 25);
    h.run(Duration::from_millis(100));
    all_read_once(&h, 25);
}

#[test]
fn a_leader_change_drops_the_preferred_replica() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest"), ("client.rack", "r2")]);
    h.prefer = Some(2);
    h.assign_all();
    h.run(Duration::from_millis(100));
    h.prefer = None;
    h.elect(0, 3, 2);
    h.refresh_metadata();
    append_all(&mut h, 20, 25);
    let before = h.seen_fetches.len();
    h.run(Duration::from_millis(200));
    assert_eq!(
        served_by(&h, 0, before),
        vec![3],
        "the new leader, not the old replica"
    );
    assert_eq!(served_by(&h, 1, before), vec![2]);
    assert_eq!(h.validations, vec![(3, 0, 1, 2)]);
    all_read_once(&h, 25);
}

#[test]
fn a_replica_missing_from_metadata_is_not_fetched_from() {
    let mut h = Harness::new(&[("auto.offset.reset", "earliest"), ("client.rack", "r2")]);
    h.prefer = Some(7);
    h.assign_all();
    for _ in 0..20 {
        h.step();
        if !h.seen_fetches.is_empty() {
            break;
        }
    }
    h.prefer = None;
    h.run(Duration::from_millis(200));
    assert!(h.seen_fetches.iter().all(|f| f.node == 1));
    assert!(!h.open.values().any(|&n| n == 7));
    all_read_once(&h, 20);
}
