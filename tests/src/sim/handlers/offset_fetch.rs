//! OffsetFetch on the group's coordinator: the offsets committed for the group (by
//! transactions here, `txn_state`), every partition with one or those asked for (-1
//! without). With `require_stable` (KIP-447), a partition with offsets staged in an
//! open transaction is UNSTABLE_OFFSET_COMMIT until its markers are written. v1–v7 name
//! one group at the top level, v8+ several in `groups`; from v9 a consumer group's
//! member asking with its member id and epoch is checked as for OffsetCommit
//! (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH). Offsets committed by OffsetCommit
//! (`offset_commit.rs`) and by transactions are served alike.

use kafka_core::protocol::messages::offset_fetch::response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_core::protocol::messages::offset_fetch::{OffsetFetchRequest, OffsetFetchResponse};
use kafka_core::protocol::{ApiKey, KafkaCode};

use super::super::cluster::SimCluster;
use super::super::txn_state::Phase;
use super::super::wire::{answer, Frame};

/// `(topic, [(partition, (offset, leader epoch), code)])` of one group.
type Fetched = Vec<(String, Vec<(i32, (i64, i32), i16)>)>;

/// The answer to `frame` arriving at `node`.
pub fn handle(cluster: &mut SimCluster, node: i32, frame: &Frame) -> Vec<u8> {
    let req: OffsetFetchRequest = frame.decode().expect("OffsetFetch decodes");
    let stable = req.require_stable;
    let body = if frame.version >= 8 {
        let groups = req
            .groups
            .iter()
            .map(|g| {
                let asked = g.topics.as_ref().map(|ts| {
                    ts.iter()
                        .map(|t| (t.name.clone(), t.partition_indexes.clone()))
                        .collect()
                });
                let member = g.member_id.as_deref().filter(|m| !m.is_empty());
                let (code, topics) = match member.filter(|_| frame.version >= 9) {
                    // v9+: a member asks with its id and epoch, checked as for commits.
                    Some(m) => match cluster.groups.check_member(&g.group_id, m, g.member_epoch) {
                        Ok(()) => fetch(cluster, node, &g.group_id, asked, stable),
                        Err(code) => {
                            cluster.count_error(code.0);
                            (code, Vec::new())
                        }
                    },
                    None => fetch(cluster, node, &g.group_id, asked, stable),
                };
                OffsetFetchResponseGroup {
                    group_id: g.group_id.clone(),
                    error_code: code.0,
                    topics: topics
                        .into_iter()
                        .map(|(name, ps)| OffsetFetchResponseTopics {
                            name,
                            partitions: ps
                                .into_iter()
                                .map(|(p, (o, e), c)| OffsetFetchResponsePartitions {
                                    partition_index: p,
                                    committed_offset: o,
                                    committed_leader_epoch: e,
                                    metadata: Some(String::new()),
                                    error_code: c,
                                    ..Default::default()
                                })
                                .collect(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }
            })
            .collect();
        OffsetFetchResponse {
            groups,
            ..Default::default()
        }
    } else {
        let asked = req.topics.as_ref().map(|ts| {
            ts.iter()
                .map(|t| (t.name.clone(), t.partition_indexes.clone()))
                .collect()
        });
        let (code, topics) = fetch(cluster, node, &req.group_id, asked, stable);
        OffsetFetchResponse {
            error_code: code.0,
            topics: topics
                .into_iter()
                .map(|(name, ps)| OffsetFetchResponseTopic {
                    name,
                    partitions: ps
                        .into_iter()
                        .map(|(p, (o, e), c)| OffsetFetchResponsePartition {
                            partition_index: p,
                            committed_offset: o,
                            committed_leader_epoch: e,
                            metadata: Some(String::new()),
                            error_code: c,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    };
    answer(frame, &body)
}

/// One group's offsets: the group-level code and, when it is zero, the partitions.
fn fetch(
    cluster: &mut SimCluster,
    node: i32,
    group: &str,
    asked: Option<Vec<(String, Vec<i32>)>>,
    stable: bool,
) -> (KafkaCode, Fetched) {
    if let Err(code) = cluster.txn.gate(ApiKey::OffsetFetch, group, node) {
        cluster.count_error(code.0);
        return (code, Vec::new());
    }
    let txn = &cluster.txn;
    let asked = asked.unwrap_or_else(|| {
        let mut all: Vec<(String, Vec<i32>)> = Vec::new();
        for (g, t, p) in txn.group_offsets.keys() {
            if g != group {
                continue;
            }
            match all.iter_mut().find(|(name, _)| name == t) {
                Some((_, ps)) => ps.push(*p),
                None => all.push((t.clone(), vec![*p])),
            }
        }
        all
    });
    let pending = |t: &str, p: i32| {
        txn.ids.values().any(|e| {
            matches!(
                e.phase,
                Phase::Ongoing | Phase::PrepareCommit | Phase::PrepareAbort
            ) && e
                .staged
                .contains_key(&(group.to_string(), t.to_string(), p))
        })
    };
    let mut unstable = 0;
    let topics = asked
        .into_iter()
        .map(|(t, ps)| {
            let parts = ps
                .into_iter()
                .map(|p| {
                    if stable && pending(&t, p) {
                        unstable += 1;
                        (p, (-1, -1), KafkaCode::UNSTABLE_OFFSET_COMMIT.0)
                    } else {
                        (
                            p,
                            txn.committed_with_epoch(group, &t, p).unwrap_or((-1, -1)),
                            0,
                        )
                    }
                })
                .collect();
            (t, parts)
        })
        .collect();
    cluster.txn.counters.unstable_offsets += unstable;
    (KafkaCode::NONE, topics)
}
