//! Suite: the KRaft quorum and broker registrations — DescribeQuorum, UnregisterBroker,
//! AddRaftVoter, RemoveRaftVoter.
//!
//! The rig's single node is broker and controller at once, in a dynamic quorum
//! (`controller.quorum.bootstrap.servers`, storage formatted `--standalone`, so
//! `kraft.version` 1): it is the quorum's only voter and leader and judges voter changes
//! itself. The live broker is never unregistered, and no voter change is applied.

use kafka_core::admin::{
    AddRaftVoter, DescribeCluster, DescribeMetadataQuorum, RemoveRaftVoter, UnregisterBroker,
};
use kafka_core::protocol::{KafkaCode, Uuid};

use super::{plaintext, Driver};

/// Tests of this group (see [`admin_suite!`](crate::admin_suite)).
#[doc(hidden)]
#[macro_export]
macro_rules! __suite_quorum {
    ($d:ty) => {
        $crate::__suite_tests!($d;
            quorum::describe_metadata_quorum_of_the_single_node,
            quorum::unregister_unknown_broker_is_refused,
            quorum::raft_voter_changes_are_judged_by_the_quorum_leader,
        );
    };
}

/// DescribeQuorum: the rig's node leads and is the only voter; the high watermark and
/// its log end offset have moved past the bootstrap records.
pub fn describe_metadata_quorum_of_the_single_node<D: Driver>() {
    let Some(admin) = plaintext::<D>("describe_metadata_quorum_of_the_single_node") else {
        return;
    };
    let node = *admin
        .run(DescribeCluster::new())
        .expect("describe cluster")
        .brokers
        .keys()
        .next()
        .expect("a broker");
    let quorum = admin
        .run(DescribeMetadataQuorum::new())
        .expect("describe quorum");
    assert_eq!(quorum.leader_id, node, "{quorum:?}");
    assert!(quorum.leader_epoch >= 1, "{quorum:?}");
    assert!(quorum.high_watermark > 0, "{quorum:?}");
    assert_eq!(quorum.voters.len(), 1, "{quorum:?}");
    let leader = &quorum.voters[0];
    assert_eq!(leader.replica_id, node);
    assert!(leader.log_end_offset >= quorum.high_watermark, "{quorum:?}");
    assert!(leader.last_caught_up_timestamp.is_some(), "{quorum:?}");
    assert!(
        quorum.observers.iter().all(|o| o.replica_id != node),
        "a voter is no observer: {quorum:?}"
    );
}

/// UnregisterBroker of an id no broker registered: BROKER_ID_NOT_REGISTERED, at once.
pub fn unregister_unknown_broker_is_refused<D: Driver>() {
    let Some(admin) = plaintext::<D>("unregister_unknown_broker_is_refused") else {
        return;
    };
    let err = admin
        .run(UnregisterBroker::new(4242))
        .expect_err("no broker 4242");
    assert_eq!(
        err.code(),
        Some(KafkaCode::BROKER_ID_NOT_REGISTERED),
        "{err}"
    );
}

/// AddRaftVoter and RemoveRaftVoter against the rig's dynamic quorum (`kraft.version` 1,
/// formatted `--standalone`): the KRaft leader itself judges them. Adding the node that
/// already votes is DUPLICATE_VOTER; removing a node that never voted is
/// VOTER_NOT_FOUND. Each comes back as its typed code, not retried.
pub fn raft_voter_changes_are_judged_by_the_quorum_leader<D: Driver>() {
    let Some(admin) = plaintext::<D>("raft_voter_changes_are_judged_by_the_quorum_leader") else {
        return;
    };
    let quorum = admin
        .run(DescribeMetadataQuorum::new())
        .expect("describe quorum");
    let voter = quorum
        .voters
        .iter()
        .find(|v| v.replica_id == quorum.leader_id)
        .expect("the leader votes");
    assert_ne!(
        voter.replica_directory_id,
        Uuid::ZERO,
        "a dynamic quorum names its voters' directories: {quorum:?}"
    );
    let endpoints = quorum.nodes[&quorum.leader_id].clone();
    assert!(!endpoints.is_empty(), "{quorum:?}");
    let added = admin
        .run(AddRaftVoter::new(
            voter.replica_id,
            voter.replica_directory_id,
            endpoints,
        ))
        .expect_err("already a voter");
    println!("{}: add the voting node: {added}", D::NAME);
    assert_eq!(added.code(), Some(KafkaCode::DUPLICATE_VOTER), "{added}");
    let removed = admin
        .run(RemoveRaftVoter::new(4242, Uuid::from_bytes([7; 16])))
        .expect_err("never a voter");
    println!("{}: remove an unknown voter: {removed}", D::NAME);
    assert_eq!(
        removed.code(),
        Some(KafkaCode::VOTER_NOT_FOUND),
        "{removed}"
    );
}
