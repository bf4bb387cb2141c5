//! Position resets by `auto.offset.reset` (and `seek_to_beginning`/`seek_to_end`):
//! ListOffsets (earliest, latest, or the wall clock minus `by_duration`'s duration) to each partition's leader, with the leader epoch the consumer knows
//! (KIP-320: a broker with a newer or older epoch answers FENCED_LEADER_EPOCH /
//! UNKNOWN_LEADER_EPOCH, and the reset is retried after a metadata refresh).

use std::collections::BTreeMap;

use super::{ConsumeError, Consumer, Reset};
use crate::client::OpContext;
use crate::cluster::Route;
use crate::protocol::messages::list_offsets::request::{ListOffsetsPartition, ListOffsetsTopic};
use crate::protocol::messages::list_offsets::ListOffsetsRequest;
use crate::protocol::KafkaCode;

impl Consumer {
    /// Sends ListOffsets for partitions waiting for a reset, per leader.
    pub(super) fn send_resets(&mut self, cx: &mut OpContext<'_>) {
        let now = cx.now();
        let now_ms = cx.wall_clock_ms();
        let mut by_node: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
        let mut epochs: BTreeMap<usize, i32> = BTreeMap::new();
        for (i, p) in self.parts.iter().enumerate() {
            if !p.assigned || p.resetting || p.reset.is_none() {
                continue;
            }
            if p.retry_at.is_some_and(|at| at > now) {
                continue;
            }
            match cx.metadata().leader(&p.topic, p.partition) {
                Some(node) => {
                    by_node.entry(node).or_default().push(i);
                    epochs.insert(i, leader_epoch(cx, &p.topic, p.partition));
                }
                None => {
                    let topic = p.topic.to_string();
                    cx.request_metadata([topic]);
                }
            }
        }
        for (node, parts) in by_node {
            let mut topics: Vec<ListOffsetsTopic> = Vec::new();
            for &i in &parts {
                let p = &mut self.parts[i];
                p.resetting = true;
                let lp = ListOffsetsPartition {
                    partition_index: p.partition,
                    current_leader_epoch: epochs.get(&i).copied().unwrap_or(-1),
                    timestamp: p.reset.map_or(-1, |r| r.timestamp(now_ms)),
                    ..Default::default()
                };
                match topics.iter_mut().find(|t| *t.name == *p.topic) {
                    Some(t) => t.partitions.push(lp),
                    None => topics.push(ListOffsetsTopic {
                        name: p.topic.to_string(),
                        partitions: vec![lp],
                        ..Default::default()
                    }),
                }
            }
            let request = ListOffsetsRequest {
                replica_id: -1,
                isolation_level: self.cfg.isolation_level.wire(),
                topics,
                timeout_ms: i32::try_from(self.request_timeout.as_millis()).unwrap_or(i32::MAX),
                ..Default::default()
            };
            let id = cx.send(Route::Broker(node), request);
            self.resets.push((id, parts));
        }
    }

    /// Takes ListOffsets answers: positions, or a retry after a leader error.
    pub(super) fn collect_resets(&mut self, cx: &mut OpContext<'_>) {
        let mut i = 0;
        while i < self.resets.len() {
            if !cx.is_done(self.resets[i].0) {
                i += 1;
                continue;
            }
            let (id, parts) = self.resets.swap_remove(i);
            let answer = cx.take_response(id);
            for &pi in &parts {
                self.parts[pi].resetting = false;
            }
            let Some(Ok(resp)) = answer else {
                let at = cx.now() + cx.retry_backoff(1);
                for &pi in &parts {
                    self.parts[pi].retry_at = Some(at);
                }
                continue;
            };
            for t in resp.topics {
                for r in t.partitions {
                    let Some(&pi) = self.index.get(&(t.name.as_str().into(), r.partition_index))
                    else {
                        continue;
                    };
                    if !parts.contains(&pi) {
                        continue;
                    }
                    let p = &mut self.parts[pi];
                    let code = KafkaCode(r.error_code);
                    if code == KafkaCode::NONE
                        && r.offset < 0
                        && matches!(p.reset, Some(Reset::Since(_)))
                    {
                        // No record that recent: the log end, as KIP-1106 says.
                        p.reset = Some(Reset::Latest);
                        p.retry_at = None;
                    } else if code == KafkaCode::NONE && r.offset >= 0 {
                        if p.reset.is_some() {
                            // No epoch: a reset position is not validated (as in Java).
                            p.moved(Some(r.offset), -1);
                            p.reset = None;
                            p.retry_at = None;
                            self.leaders_stale = true;
                        }
                    } else if code.is_retriable() || code == KafkaCode::NONE {
                        let (topic, partition) = (p.topic.clone(), p.partition);
                        p.retry_at = Some(cx.now() + cx.retry_backoff(1));
                        cx.invalidate_leader(&topic, partition);
                    } else {
                        p.reset = None;
                        self.errors.push_back(ConsumeError::Partition {
                            topic: p.topic.to_string(),
                            partition: p.partition,
                            code,
                        });
                    }
                }
            }
        }
    }
}

/// The leader epoch the cached metadata names for a partition (-1 if unknown).
pub(super) fn leader_epoch(cx: &OpContext<'_>, topic: &str, partition: i32) -> i32 {
    cx.metadata()
        .topic(topic)
        .and_then(|t| t.partitions.get(&partition))
        .map_or(-1, |p| p.leader_epoch)
}
