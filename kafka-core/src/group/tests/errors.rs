//! Every coordinator error the classic member handles, injected into JoinGroup,
//! SyncGroup and Heartbeat answers: retriable ones end in a stable member owning every
//! partition, fatal ones in one `Failed` event; and metadata growth forces a rejoin.

use std::time::Duration;

use super::World;
use crate::group::{GroupError, GroupEvent};
use crate::protocol::{ApiKey, KafkaCode};

const S: Duration = Duration::from_secs(1);

fn recovers_from(api: ApiKey, codes: &[KafkaCode]) {
    let mut w = World::new(4, 10);
    w.fail_next(api, codes);
    let a = w.add(&[]);
    if api == ApiKey::Heartbeat {
        // Heartbeat faults hit a member that is already stable.
        w.faults.clear();
        w.run_until(10 * S, |w| w.owned(a).len() == 4);
        w.fail_next(api, codes);
    }
    w.run_until(30 * S, |w| w.faults.values().all(Vec::is_empty));
    w.run_until(30 * S, |w| {
        w.owned(a).len() == 4 && w.coordinator.members.len() == 1
    });
    assert!(
        !w.nodes[a]
            .events
            .iter()
            .any(|e| matches!(e, GroupEvent::Failed(_))),
        "{api:?} {codes:?}"
    );
}

#[test]
fn join_errors_that_are_retriable_end_in_a_stable_member() {
    for code in [
        KafkaCode::COORDINATOR_LOAD_IN_PROGRESS,
        KafkaCode::COORDINATOR_NOT_AVAILABLE,
        KafkaCode::NOT_COORDINATOR,
        KafkaCode::REBALANCE_IN_PROGRESS,
        KafkaCode::UNKNOWN_MEMBER_ID,
        KafkaCode::ILLEGAL_GENERATION,
    ] {
        recovers_from(ApiKey::JoinGroup, &[code, code]);
    }
}

#[test]
fn sync_errors_that_are_retriable_end_in_a_stable_member() {
    for code in [
        KafkaCode::REBALANCE_IN_PROGRESS,
        KafkaCode::UNKNOWN_MEMBER_ID,
        KafkaCode::ILLEGAL_GENERATION,
        KafkaCode::COORDINATOR_NOT_AVAILABLE,
        KafkaCode::NOT_COORDINATOR,
    ] {
        recovers_from(ApiKey::SyncGroup, &[code]);
    }
}

#[test]
fn heartbeat_errors_rejoin_or_retry_and_end_in_a_stable_member() {
    for code in [
        KafkaCode::REBALANCE_IN_PROGRESS,
        KafkaCode::UNKNOWN_MEMBER_ID,
        KafkaCode::ILLEGAL_GENERATION,
        KafkaCode::COORDINATOR_NOT_AVAILABLE,
        KafkaCode::NOT_COORDINATOR,
        KafkaCode::COORDINATOR_LOAD_IN_PROGRESS,
    ] {
        recovers_from(ApiKey::Heartbeat, &[code]);
    }
}

#[test]
fn fatal_coordinator_errors_end_the_member_with_one_failed_event() {
    for (api, code) in [
        (ApiKey::JoinGroup, KafkaCode::GROUP_AUTHORIZATION_FAILED),
        (ApiKey::JoinGroup, KafkaCode::INCONSISTENT_GROUP_PROTOCOL),
        (ApiKey::JoinGroup, KafkaCode::INVALID_SESSION_TIMEOUT),
        (ApiKey::JoinGroup, KafkaCode::GROUP_MAX_SIZE_REACHED),
        (ApiKey::JoinGroup, KafkaCode::FENCED_INSTANCE_ID),
        (ApiKey::SyncGroup, KafkaCode::GROUP_AUTHORIZATION_FAILED),
    ] {
        let mut w = World::new(2, 10);
        w.fail_next(api, &[code]);
        let a = w.add(&[]);
        w.run(5 * S);
        let failed: Vec<_> = w.nodes[a]
            .events
            .iter()
            .filter_map(|e| match e {
                GroupEvent::Failed(GroupError::Refused { code: c, .. }) => Some(*c),
                _ => None,
            })
            .collect();
        assert_eq!(failed, [code], "{api:?}");
        assert!(w.owned(a).is_empty());
        assert!(w.log.is_empty(), "a failed member hands out no records");
    }
}

#[test]
fn a_heartbeat_fencing_a_static_member_is_fatal() {
    let mut w = World::new(2, 10);
    let a = w.add(&[("group.instance.id", "x")]);
    w.run_until(10 * S, |w| w.owned(a).len() == 2);
    w.fail_next(ApiKey::Heartbeat, &[KafkaCode::FENCED_INSTANCE_ID]);
    w.run(3 * S);
    let events = &w.nodes[a].events;
    let failed = events
        .iter()
        .position(|e| {
            matches!(
                e,
                GroupEvent::Failed(GroupError::Refused {
                    code: KafkaCode::FENCED_INSTANCE_ID,
                    ..
                })
            )
        })
        .expect("failed");
    // Its partitions were lost just before (Java: onPartitionsLost), so the application
    // owns nothing and its close gives nothing up.
    assert!(
        matches!(&events[failed - 1], GroupEvent::Lost(ps) if ps.len() == 2),
        "{events:?}"
    );
    assert!(w.owned(a).is_empty());
    let id = w.nodes[a].id;
    let released = w.nodes[a]
        .client
        .command(w.now, id, |g, _| g.release_on_close());
    assert_eq!(released, Some(None));
}

#[test]
fn more_partitions_in_the_metadata_force_a_rejoin_that_assigns_them() {
    let mut w = World::new(2, 10);
    let a = w.add(&[("metadata.max.age.ms", "1000")]);
    w.run_until(10 * S, |w| w.owned(a).len() == 2);
    let generation = w.coordinator.generation;
    w.grow(4);
    w.run_until(20 * S, |w| w.owned(a).len() == 4);
    assert!(w.coordinator.generation > generation);
}

#[test]
fn a_coordinator_move_during_the_offset_lookup_looks_the_coordinator_up_again() {
    for code in [
        KafkaCode::NOT_COORDINATOR,
        KafkaCode::COORDINATOR_NOT_AVAILABLE,
        KafkaCode::COORDINATOR_LOAD_IN_PROGRESS,
    ] {
        let mut w = World::new(4, 10);
        w.fail_next(ApiKey::OffsetFetch, &[code, code]);
        let a = w.add(&[]);
        // Assigned at once; the records only after the committed offsets are in.
        w.run_until(30 * S, |w| {
            w.faults.values().all(Vec::is_empty) && w.nodes[a].records.len() == 40
        });
        // The first lookup, then one per moved-coordinator answer (a loading one is
        // the right coordinator: asked again as is).
        let again = usize::from(code != KafkaCode::COORDINATOR_LOAD_IN_PROGRESS) * 2;
        assert_eq!(w.coordinator_lookups, 1 + again, "{code:?}");
    }
}
