//! The client's view of the cluster: brokers, topics, partitions and their leaders,
//! updated from Metadata responses without ever moving a leader epoch backwards.

use std::collections::BTreeMap;

use crate::protocol::messages::metadata::MetadataResponse;
use crate::protocol::{KafkaCode, Uuid};

/// A broker's address as advertised in metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerInfo {
    /// Node id.
    pub node_id: i32,
    /// Host to connect to.
    pub host: String,
    /// Port to connect to.
    pub port: u16,
    /// Rack, if configured.
    pub rack: Option<String>,
}

/// Leader, epoch and replicas of one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    /// Leader node id, `-1` when there is none.
    pub leader: i32,
    /// Leader epoch (`-1` when the broker does not report it).
    pub leader_epoch: i32,
    /// The partition's error code in the last metadata answer.
    pub error_code: i16,
    /// Every replica's node id (racks via [`Metadata::broker`]).
    pub replicas: Vec<i32>,
    /// The in-sync replicas.
    pub isr: Vec<i32>,
    /// Replicas that are offline.
    pub offline_replicas: Vec<i32>,
}

/// One topic's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TopicInfo {
    /// Topic id (zero when unknown).
    pub id: Uuid,
    /// Partitions by index.
    pub partitions: BTreeMap<i32, PartitionInfo>,
    /// The topic's error code in the last metadata answer.
    pub error_code: i16,
    /// The broker marks it internal (`__consumer_offsets`, `__transaction_state`, ...).
    pub internal: bool,
}

/// Cached cluster metadata.
#[derive(Debug, Clone, Default)]
pub struct Metadata {
    brokers: BTreeMap<i32, BrokerInfo>,
    topics: BTreeMap<String, TopicInfo>,
    controller: Option<i32>,
    cluster_id: Option<String>,
    /// Topics the last answer naming them reported with an error (unknown, unauthorized).
    topic_errors: BTreeMap<String, i16>,
    /// The generation of the last answer that named each topic (with or without error).
    named: BTreeMap<String, u64>,
    /// Counts applied answers, so a machine can tell a refresh it asked for arrived.
    generation: u64,
    /// The generation of the last answer that listed every topic (0: none yet).
    complete_generation: u64,
}

impl Metadata {
    /// Applies a Metadata response. Brokers and the controller are replaced; topics in the
    /// response are updated, partitions keep a newer leader epoch if the answer is stale.
    pub fn update(&mut self, resp: &MetadataResponse) {
        self.generation += 1;
        if !resp.brokers.is_empty() {
            self.brokers = resp
                .brokers
                .iter()
                .map(|b| {
                    let info = BrokerInfo {
                        node_id: b.node_id,
                        host: b.host.clone(),
                        port: u16::try_from(b.port).unwrap_or(0),
                        rack: b.rack.clone(),
                    };
                    (b.node_id, info)
                })
                .collect();
        }
        self.controller = (resp.controller_id >= 0).then_some(resp.controller_id);
        if resp.cluster_id.is_some() {
            self.cluster_id.clone_from(&resp.cluster_id);
        }
        for t in &resp.topics {
            let Some(name) = &t.name else { continue };
            self.named.insert(name.clone(), self.generation);
            if t.error_code == 0 {
                self.topic_errors.remove(name);
            } else {
                self.topic_errors.insert(name.clone(), t.error_code);
            }
            if t.error_code == KafkaCode::UNKNOWN_TOPIC_OR_PARTITION.0
                || t.error_code == KafkaCode::INVALID_TOPIC_EXCEPTION.0
            {
                // Deleted (or never existed): nothing cached may route to it.
                self.topics.remove(name);
                continue;
            }
            let entry = self.topics.entry(name.clone()).or_default();
            let zero = Uuid::default();
            if entry.id != t.topic_id && entry.id != zero && t.topic_id != zero {
                // Re-created under the same name: the old incarnation's epochs say
                // nothing about the new one's (they restart from 0).
                entry.partitions.clear();
            }
            entry.id = t.topic_id;
            entry.error_code = t.error_code;
            entry.internal = t.is_internal;
            for p in &t.partitions {
                let new = PartitionInfo {
                    leader: p.leader_id,
                    leader_epoch: p.leader_epoch,
                    error_code: p.error_code,
                    replicas: p.replica_nodes.clone(),
                    isr: p.isr_nodes.clone(),
                    offline_replicas: p.offline_replicas.clone(),
                };
                match entry.partitions.get(&p.partition_index) {
                    // A stale answer (older epoch) must not move the leader backwards.
                    Some(old)
                        if old.leader_epoch >= 0
                            && new.leader_epoch >= 0
                            && new.leader_epoch < old.leader_epoch => {}
                    _ => {
                        entry.partitions.insert(p.partition_index, new);
                    }
                }
            }
        }
    }

    /// Applies the answer to a request for every topic: as [`Metadata::update`], and a
    /// cached topic the answer does not list is gone (deleted) and dropped.
    pub fn update_complete(&mut self, resp: &MetadataResponse) {
        self.update(resp);
        let listed: std::collections::BTreeSet<&str> = resp
            .topics
            .iter()
            .filter_map(|t| t.name.as_deref())
            .collect();
        self.topics.retain(|name, _| listed.contains(name.as_str()));
        self.complete_generation = self.generation;
    }

    /// The [`Metadata::generation`] of the last answer that listed every topic (0: none).
    pub fn complete_generation(&self) -> u64 {
        self.complete_generation
    }

    /// Keeps only the cached topics `keep` accepts (an all-topics want ended).
    pub fn retain_topics(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.topics.retain(|name, _| keep(name));
        self.topic_errors.retain(|name, _| keep(name));
        self.named.retain(|name, _| keep(name));
    }

    /// Drops a topic from the cache (it expired from the wanted set).
    pub fn forget_topic(&mut self, name: &str) {
        self.topics.remove(name);
        self.topic_errors.remove(name);
        self.named.remove(name);
    }

    /// The error the last answer naming `topic` reported for it, if any.
    pub fn topic_error(&self, topic: &str) -> Option<i16> {
        self.topic_errors.get(topic).copied()
    }

    /// The [`Metadata::generation`] of the last answer that named `topic` (so a caller
    /// can tell an answer after its ask spoke about the topic, not only bumped the count).
    pub fn topic_generation(&self, topic: &str) -> Option<u64> {
        self.named.get(topic).copied()
    }

    /// How many Metadata answers were applied (grows with every refresh).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Brokers by node id.
    pub fn brokers(&self) -> &BTreeMap<i32, BrokerInfo> {
        &self.brokers
    }

    /// A broker's address.
    pub fn broker(&self, node_id: i32) -> Option<&BrokerInfo> {
        self.brokers.get(&node_id)
    }

    /// A topic's metadata.
    pub fn topic(&self, name: &str) -> Option<&TopicInfo> {
        self.topics.get(name)
    }

    /// The leader of a partition, if known and present.
    pub fn leader(&self, topic: &str, partition: i32) -> Option<i32> {
        let p = self.topics.get(topic)?.partitions.get(&partition)?;
        (p.leader >= 0).then_some(p.leader)
    }

    /// Forgets a partition's leader (after NOT_LEADER_OR_FOLLOWER and the like), so
    /// requests wait for fresh metadata instead of going back to the old leader.
    pub fn invalidate_leader(&mut self, topic: &str, partition: i32) {
        if let Some(p) = self
            .topics
            .get_mut(topic)
            .and_then(|t| t.partitions.get_mut(&partition))
        {
            p.leader = -1;
        }
    }

    /// Applies a leader hint from a Produce or Fetch answer (KIP-951): `leader` leads
    /// the partition at `epoch`, reachable at `endpoint` if given. Applied only when the
    /// epoch is newer than the cached one and the leader's address is known (cached or
    /// given); returns whether it was. Counts as a metadata change (generation).
    pub fn apply_leader_hint(
        &mut self,
        topic: &str,
        partition: i32,
        leader: i32,
        epoch: i32,
        endpoint: Option<BrokerInfo>,
    ) -> bool {
        if leader < 0 || epoch < 0 {
            return false;
        }
        let Some(p) = self
            .topics
            .get_mut(topic)
            .and_then(|t| t.partitions.get_mut(&partition))
        else {
            return false;
        };
        if epoch <= p.leader_epoch {
            return false;
        }
        if let std::collections::btree_map::Entry::Vacant(slot) = self.brokers.entry(leader) {
            match endpoint {
                Some(b) if b.node_id == leader && b.port != 0 => {
                    slot.insert(b);
                }
                _ => return false,
            }
        }
        p.leader = leader;
        p.leader_epoch = epoch;
        self.generation += 1;
        true
    }

    /// Forgets every leader on `node_id` (after that broker became unreachable).
    pub fn invalidate_broker_leaders(&mut self, node_id: i32) {
        self.invalidate_broker(node_id);
    }

    /// Forgets every role `node_id` had (partition leader, controller) after a
    /// connection to it failed; true if it had any, so the caller looks them up again.
    pub fn invalidate_broker(&mut self, node_id: i32) -> bool {
        let mut led = false;
        for t in self.topics.values_mut() {
            for p in t.partitions.values_mut().filter(|p| p.leader == node_id) {
                p.leader = -1;
                led = true;
            }
        }
        if self.controller == Some(node_id) {
            self.controller = None;
            led = true;
        }
        led
    }

    /// The controller (in KRaft: a broker that forwards to the controller quorum).
    pub fn controller(&self) -> Option<i32> {
        self.controller
    }

    /// The cluster id.
    pub fn cluster_id(&self) -> Option<&str> {
        self.cluster_id.as_deref()
    }

    /// Names of every cached topic.
    pub fn topic_names(&self) -> impl Iterator<Item = &str> {
        self.topics.keys().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::messages::metadata::response::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };

    fn resp(leader: i32, epoch: i32) -> MetadataResponse {
        MetadataResponse {
            brokers: vec![MetadataResponseBroker {
                node_id: 1,
                host: "h".into(),
                port: 9092,
                ..Default::default()
            }],
            controller_id: 1,
            topics: vec![MetadataResponseTopic {
                name: Some("t".into()),
                partitions: vec![MetadataResponsePartition {
                    partition_index: 0,
                    leader_id: leader,
                    leader_epoch: epoch,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn leader_epochs_never_move_backwards() {
        let mut m = Metadata::default();
        m.update(&resp(1, 5));
        m.update(&resp(2, 4));
        assert_eq!(m.leader("t", 0), Some(1), "stale answer ignored");
        m.update(&resp(3, 6));
        assert_eq!(m.leader("t", 0), Some(3));
        m.invalidate_broker_leaders(3);
        assert_eq!(m.leader("t", 0), None);
        assert_eq!(m.broker(1).map(|b| b.port), Some(9092));
    }

    fn with_id(mut r: MetadataResponse, id: u8) -> MetadataResponse {
        r.topics[0].topic_id = Uuid::from_bytes([id; 16]);
        r
    }

    #[test]
    fn a_recreated_topic_takes_the_new_leader_despite_a_lower_epoch() {
        let mut m = Metadata::default();
        m.update(&with_id(resp(1, 7), 1));
        // Deleted and re-created: new id, epochs restart.
        m.update(&with_id(resp(2, 0), 2));
        assert_eq!(m.leader("t", 0), Some(2));
        // The same incarnation still never moves backwards.
        m.update(&with_id(resp(1, 0), 2).clone());
        m.update(&with_id(resp(3, 1), 2));
        m.update(&with_id(resp(1, 0), 2));
        assert_eq!(m.leader("t", 0), Some(3));
    }

    #[test]
    fn unknown_topics_are_dropped_and_replicas_kept() {
        let mut m = Metadata::default();
        let mut r = resp(1, 5);
        r.topics[0].partitions[0].replica_nodes = vec![1, 2, 3];
        r.topics[0].partitions[0].isr_nodes = vec![1, 2];
        r.topics[0].partitions[0].offline_replicas = vec![3];
        m.update(&r);
        let p = &m.topic("t").unwrap().partitions[&0];
        assert_eq!(
            (p.replicas.len(), p.isr.len(), p.offline_replicas.clone()),
            (3, 2, vec![3])
        );
        let mut gone = resp(1, 5);
        gone.topics[0].error_code = KafkaCode::UNKNOWN_TOPIC_OR_PARTITION.0;
        gone.topics[0].partitions.clear();
        m.update(&gone);
        assert!(m.topic("t").is_none());
        assert_eq!(m.leader("t", 0), None);
    }

    #[test]
    fn a_failed_controller_is_forgotten() {
        let mut m = Metadata::default();
        m.update(&resp(2, 1));
        assert!(m.invalidate_broker(1), "node 1 was the controller");
        assert_eq!(m.controller(), None);
        assert!(!m.invalidate_broker(7));
    }
}
