//! An assignor of the application's own, registered in the config: offered first in
//! JoinGroup, run by the leader when the coordinator chooses it; refused under KIP-848.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{World, TOPIC};
use crate::config::ClientConfig;
use crate::group::assignor::{
    AssignError, Assignor, MemberSubscription, RebalanceProtocol, TopicLayout,
};
use crate::group::protocol::{Assignment, TopicPartitions};
use crate::group::{GroupConsumer, GroupError};

const S: Duration = Duration::from_secs(1);

/// Everything to the member with the greatest id.
#[derive(Debug)]
struct AllToTheLast;

impl Assignor for AllToTheLast {
    fn name(&self) -> &str {
        "all-to-the-last"
    }

    fn protocols(&self) -> &[RebalanceProtocol] {
        &[RebalanceProtocol::Eager]
    }

    fn assign(
        &self,
        layout: &TopicLayout,
        members: &[MemberSubscription],
    ) -> Result<BTreeMap<String, Assignment>, AssignError> {
        let last = members.iter().map(|m| &m.member_id).max();
        Ok(members
            .iter()
            .map(|m| {
                let partitions = if Some(&m.member_id) == last {
                    layout
                        .topics
                        .iter()
                        .filter(|(t, _)| m.subscription.topics.contains(t))
                        .map(|(t, ps)| TopicPartitions {
                            topic: t.clone(),
                            partitions: ps.iter().map(|p| p.partition).collect(),
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                let a = Assignment {
                    partitions,
                    user_data: None,
                };
                (m.member_id.clone(), a)
            })
            .collect())
    }
}

#[test]
fn a_registered_assignor_is_offered_first_and_decides_the_assignment() {
    let mut w = World::new(4, 10);
    let config = || World::config(&[]).with_assignor(AllToTheLast);
    let a = w.add_config(config(), |g, cx| g.subscribe(cx, [TOPIC]));
    let b = w.add_config(config(), |g, cx| g.subscribe(cx, [TOPIC]));
    w.run_until(20 * S, |w| w.owned(a).len() + w.owned(b).len() == 4);
    w.run(3 * S);
    // Ahead of the strategy's defaults (range, cooperative-sticky) in JoinGroup, so the
    // coordinator chose it; one member has everything, the other nothing.
    assert_eq!(w.coordinator.protocol, "all-to-the-last");
    let member = w.coordinator.members.values().next().expect("a member");
    let offered: Vec<&str> = member.protocols.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(offered, ["all-to-the-last", "range", "cooperative-sticky"]);
    let mut counts = [w.owned(a).len(), w.owned(b).len()];
    counts.sort_unstable();
    assert_eq!(counts, [0, 4]);
}

#[test]
fn a_registered_assignor_named_in_the_strategy_takes_that_place() {
    let mut w = World::new(2, 10);
    let config = World::config(&[(
        "partition.assignment.strategy",
        "roundrobin,all-to-the-last",
    )])
    .with_assignor(AllToTheLast);
    let a = w.add_config(config, |g, cx| g.subscribe(cx, [TOPIC]));
    w.run_until(10 * S, |w| w.owned(a).len() == 2);
    let member = w.coordinator.members.values().next().expect("a member");
    let offered: Vec<&str> = member.protocols.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(offered, ["roundrobin", "all-to-the-last"]);
}

#[test]
fn a_kip848_consumer_refuses_client_side_assignors() {
    let mut b = ClientConfig::builder();
    b.set("bootstrap.servers", "b1:9092").unwrap();
    b.set("group.id", "g").unwrap();
    b.set("group.protocol", "consumer").unwrap();
    b.assignor(AllToTheLast);
    let config = b.build().unwrap();
    assert_eq!(
        config
            .group()
            .custom_assignors
            .get("all-to-the-last")
            .map(|a| a.name()),
        Some("all-to-the-last")
    );
    assert!(matches!(
        GroupConsumer::new(&config),
        Err(GroupError::Unsupported(_))
    ));
}
