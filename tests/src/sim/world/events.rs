//! Cluster events scheduled on the virtual clock (leader moves, broker kills and
//! restarts, topic and record deletions, ...) and how they are fired.

use std::time::Duration;

use super::World;

/// Something scheduled to happen to the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterEvent {
    /// A new leader (and leader epoch) for a partition.
    MoveLeader {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The new leader.
        to: i32,
    },
    /// A broker stops: its connections reset, connecting to it is refused, its
    /// partitions get new leaders.
    Kill(i32),
    /// A stopped broker starts again.
    Restart(i32),
    /// A broker evicts a fetch session.
    EvictSession(i32),
    /// A topic goes missing from the cluster, its log kept (`topics.rs`).
    HideTopic(String),
    /// A hidden topic comes back.
    ShowTopic(String),
    /// A topic is deleted for good.
    DeleteTopic(String),
    /// An unclean election whose new leader lacks the last batches, with the producers'
    /// state rebuilt from what it kept (`lost_batches.rs`); the history must be told
    /// (`World::take_lost_values`).
    LeaderLosesBatches {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The new leader.
        to: i32,
        /// How many of the log's last batches it lacks.
        drop_batches: usize,
    },
    /// DeleteRecords up to a partition's end, its producers' state going with them
    /// (`forget.rs`); the history must be told (`World::take_deletions`).
    DeleteRecords {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
    },
    /// An unclean leader election: the new leader lacks the log's last batches (see
    /// [`SimCluster::unclean_election`](super::super::cluster::SimCluster::unclean_election)).
    UncleanElection {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The new leader.
        to: i32,
        /// How many of the log's last batches it lacks.
        drop_batches: usize,
    },
}

impl World {
    /// Schedules `event` to happen `after` from now.
    pub fn schedule(&mut self, after: Duration, event: ClusterEvent) {
        self.scheduled += 1;
        self.schedule
            .insert((self.now + after, self.scheduled), event);
    }

    /// Schedules `count` leader moves, each of a random partition of `topic` (which has
    /// `partitions` partitions) to a random broker, at random instants in the next
    /// `within_ms` ms.
    pub fn schedule_leader_moves(
        &mut self,
        topic: &str,
        partitions: i32,
        count: usize,
        within_ms: u64,
    ) {
        let brokers = self.cluster.brokers.len() as u64;
        for _ in 0..count {
            let at = Duration::from_millis(5 + self.rng.below(within_ms));
            let partition = self.rng.below(partitions as u64) as i32;
            let to = 1 + self.rng.below(brokers) as i32;
            let event = ClusterEvent::MoveLeader {
                topic: topic.to_string(),
                partition,
                to,
            };
            self.schedule(at, event);
        }
    }

    pub(super) fn fire_schedule(&mut self) {
        while let Some(entry) = self.schedule.first_entry() {
            if entry.key().0 > self.now {
                break;
            }
            let event = entry.remove();
            self.mix(5, 0, 0);
            match event {
                ClusterEvent::MoveLeader {
                    topic,
                    partition,
                    to,
                } => {
                    self.cluster.move_leader(&topic, partition, to);
                }
                ClusterEvent::Kill(node) => {
                    self.cluster.kill(node);
                    let keys: Vec<(usize, u64)> = self
                        .conns
                        .iter()
                        .filter(|(_, c)| c.node == node && !c.dead)
                        .map(|(k, _)| *k)
                        .collect();
                    for k in keys {
                        self.net.kill_resets += 1;
                        self.reset_from_broker(k);
                    }
                }
                ClusterEvent::Restart(node) => self.cluster.restart(node),
                ClusterEvent::UncleanElection {
                    topic,
                    partition,
                    to,
                    drop_batches,
                } => {
                    self.cluster
                        .unclean_election(&topic, partition, to, drop_batches);
                }
                ClusterEvent::HideTopic(name) => {
                    self.cluster.hide_topic(&name);
                }
                ClusterEvent::ShowTopic(name) => {
                    self.cluster.show_topic(&name);
                }
                ClusterEvent::DeleteTopic(name) => {
                    self.cluster.delete_topic(&name);
                }
                ClusterEvent::LeaderLosesBatches {
                    topic,
                    partition,
                    to,
                    drop_batches,
                } => {
                    let values =
                        self.cluster
                            .lose_last_batches(&topic, partition, to, drop_batches);
                    self.lost_values.extend(values);
                }
                ClusterEvent::DeleteRecords { topic, partition } => {
                    if let Some(start) = self.cluster.delete_records(&topic, partition) {
                        self.deletions.push((topic, partition, start));
                    }
                }
                ClusterEvent::EvictSession(node) => {
                    if let Some(b) = self.cluster.brokers.iter_mut().find(|b| b.id == node) {
                        b.sessions.evict_any();
                    }
                }
            }
        }
    }
}
