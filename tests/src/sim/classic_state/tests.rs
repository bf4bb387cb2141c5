//! The classic coordinator's rules, request by request.

use bytes::Bytes;
use kafka_core::protocol::messages::request_header::RequestHeader;
use kafka_core::protocol::{ApiKey, KafkaCode};

use super::*;

fn frame(api: ApiKey) -> Frame {
    Frame {
        api,
        version: api.versions().max,
        header: RequestHeader::default(),
        body: Bytes::new(),
    }
}

fn join(c: &mut ClassicCoordinator, id: &str, now_ms: u64) -> Reply<JoinGroupResponse> {
    let j = Join {
        member_id: id.to_string(),
        client_id: "c".into(),
        session_timeout_ms: 1_000,
        rebalance_timeout_ms: 2_000,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), Bytes::from_static(b"m"))],
        require_member_id: true,
    };
    c.join("g", j, &frame(ApiKey::JoinGroup), now_ms)
}

/// A first join gets an id with MEMBER_ID_REQUIRED; the join with it is parked.
fn member(c: &mut ClassicCoordinator, now_ms: u64) -> (String, u64) {
    let Reply::Now(r) = join(c, "", now_ms) else {
        panic!("answered at once")
    };
    assert_eq!(r.error_code, KafkaCode::MEMBER_ID_REQUIRED.0);
    match join(c, &r.member_id, now_ms) {
        Reply::Parked(t) => (r.member_id, t),
        Reply::Now(r) => panic!("parked, not {r:?}"),
    }
}

fn tickets(c: &mut ClassicCoordinator) -> Vec<u64> {
    c.take_ready().into_iter().map(|(t, _)| t).collect()
}

fn sync(c: &mut ClassicCoordinator, id: &str, gen: i32, now_ms: u64) -> Reply<SyncGroupResponse> {
    let given = vec![(id.to_string(), Bytes::from_static(b"a"))];
    c.sync("g", id, gen, given, &frame(ApiKey::SyncGroup), now_ms)
}

#[test]
fn a_join_phase_waits_for_every_member_then_the_leader_assigns() {
    let mut c = ClassicCoordinator {
        initial_delay_ms: 100,
        ..Default::default()
    };
    let (a, ta) = member(&mut c, 0);
    // The initial delay holds the first generation back.
    c.advance(99, 0);
    assert!(tickets(&mut c).is_empty());
    c.advance(100, 0);
    assert_eq!(tickets(&mut c), vec![ta]);
    let g = &c.groups["g"];
    assert_eq!(
        (g.generation, g.leader.as_deref(), g.state),
        (1, Some(a.as_str()), ClassicState::CompletingRebalance)
    );
    // A commit before the assignment: REBALANCE_IN_PROGRESS.
    assert_eq!(
        c.check_commit("g", &a, 1),
        Err(KafkaCode::REBALANCE_IN_PROGRESS)
    );
    assert!(matches!(sync(&mut c, &a, 1, 110), Reply::Parked(_)));
    assert_eq!(tickets(&mut c).len(), 1, "the leader's sync answered");
    assert_eq!(c.groups["g"].state, ClassicState::Stable);
    // A second member: the group rebalances; the first hears it by heartbeat and
    // rejoins; the phase ends when both are in.
    let (b, tb) = member(&mut c, 200);
    assert_eq!(
        c.heartbeat("g", &a, 1, 210),
        KafkaCode::REBALANCE_IN_PROGRESS
    );
    assert_eq!(
        c.check_commit("g", &a, 1),
        Ok(()),
        "the revocation commit is accepted"
    );
    assert!(tickets(&mut c).is_empty());
    let Reply::Parked(ta) = join(&mut c, &a, 220) else {
        panic!("parked")
    };
    let mut done = tickets(&mut c);
    done.sort();
    assert_eq!(done, vec![tb, ta]);
    assert_eq!(c.groups["g"].generation, 2);
    assert_eq!(c.heartbeat("g", &b, 1, 230), KafkaCode::ILLEGAL_GENERATION);
    assert_eq!(
        c.check_commit("g", &a, 1),
        Err(KafkaCode::ILLEGAL_GENERATION)
    );
    // The follower's sync waits for the leader's.
    assert!(matches!(sync(&mut c, &b, 2, 240), Reply::Parked(_)));
    assert!(tickets(&mut c).is_empty());
    assert!(matches!(sync(&mut c, &a, 2, 250), Reply::Parked(_)));
    assert_eq!(tickets(&mut c).len(), 2);
    assert_eq!(c.heartbeat("g", &b, 2, 260), KafkaCode::NONE);
    assert_eq!(
        c.heartbeat("g", "nobody", 2, 260),
        KafkaCode::UNKNOWN_MEMBER_ID
    );
    assert_eq!(
        c.check_commit("g", "nobody", 2),
        Err(KafkaCode::UNKNOWN_MEMBER_ID)
    );
}

#[test]
fn a_silent_member_expires_and_a_missing_one_is_dropped_at_the_rebalance_timeout() {
    let mut c = ClassicCoordinator {
        initial_delay_ms: 0,
        ..Default::default()
    };
    let (a, _) = member(&mut c, 0);
    c.advance(0, 0);
    sync(&mut c, &a, 1, 0);
    let (b, _) = member(&mut c, 10);
    // a hears of the rebalance by heartbeat but never rejoins: its heartbeats keep it,
    // and at the 2 s rebalance timeout it is dropped; b leads alone.
    assert_eq!(
        c.heartbeat("g", &a, 1, 900),
        KafkaCode::REBALANCE_IN_PROGRESS
    );
    assert_eq!(
        c.heartbeat("g", &a, 1, 1_800),
        KafkaCode::REBALANCE_IN_PROGRESS
    );
    c.advance(2_000, 0);
    assert_eq!(c.groups["g"].members.len(), 2);
    c.advance(2_010, 0);
    let g = &c.groups["g"];
    assert_eq!((g.generation, g.leader.as_deref()), (2, Some(b.as_str())));
    assert_eq!(c.counters.dropped_at_join, 1);
    sync(&mut c, &b, 2, 2_010);
    // b stops heartbeating: removed after its 1 s session, the group is empty.
    c.advance(3_010, 0);
    assert_eq!(c.counters.expired, 1);
    assert_eq!(c.groups["g"].state, ClassicState::Empty);
    assert_eq!(
        c.check_commit("g", "", -1),
        Ok(()),
        "an admin commit to an empty group"
    );
}

#[test]
fn a_coordinator_move_answers_parked_requests_and_reloads_the_persisted_group() {
    let mut c = ClassicCoordinator {
        initial_delay_ms: 0,
        ..Default::default()
    };
    let (a, _) = member(&mut c, 0);
    c.advance(0, 0);
    sync(&mut c, &a, 1, 0);
    c.take_ready();
    let (_b, tb) = member(&mut c, 10);
    assert_eq!(c.groups["g"].state, ClassicState::PreparingRebalance);
    c.advance(20, 1);
    let ready = c.take_ready();
    assert_eq!(ready.len(), 1);
    assert_eq!(ready[0].0, tb);
    let g = &c.groups["g"];
    assert_eq!(
        (g.state, g.generation, g.members.len()),
        (ClassicState::Stable, 1, 1)
    );
    assert_eq!(c.leave("g", &a, 30), KafkaCode::NONE);
    assert_eq!(c.leave("g", &a, 30), KafkaCode::UNKNOWN_MEMBER_ID);
}
