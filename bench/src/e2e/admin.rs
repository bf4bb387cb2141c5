//! Topic set-up and the independent checks, through our own admin client
//! (`kafka_blocking::Admin`): create a fresh topic, wait until every partition has a
//! leader, read earliest/latest offsets, log sizes, a group's committed offsets, set a
//! share group's configs and read its lag.

use std::time::{Duration, Instant};

use kafka_blocking::Admin as BlockingAdmin;
use kafka_core::admin::{AlterConfigOp, ConfigResource, NewTopic, OffsetSpec, TopicPartition};
use kafka_core::config::ClientConfig;

pub(crate) struct Admin {
    inner: BlockingAdmin,
}

/// Earliest and latest offset of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Watermarks {
    pub(crate) earliest: i64,
    pub(crate) latest: i64,
}

impl Admin {
    pub(crate) fn connect(bootstrap: &str) -> Result<Admin, String> {
        let cfg = ClientConfig::from_pairs([
            ("bootstrap.servers", bootstrap),
            ("client.id", "kafka-rs-e2e-bench"),
        ])
        .map_err(|e| e.to_string())?;
        let inner = BlockingAdmin::new(cfg).map_err(|e| e.to_string())?;
        let cluster = inner
            .describe_cluster()
            .map_err(|e| format!("describe cluster: {e}"))?;
        if cluster.brokers.is_empty() {
            return Err("the cluster has no brokers".into());
        }
        Ok(Admin { inner })
    }

    /// Creates `name` with `partitions` partitions (RF 1) and waits until each answers
    /// ListOffsets (has a leader).
    pub(crate) fn create_topic(&self, name: &str, partitions: i32) -> Result<(), String> {
        let created = self
            .inner
            .create_topics([NewTopic::new(name, partitions, 1)])
            .map_err(|e| format!("create topic {name}: {e}"))?;
        match created.get(name) {
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(format!("create topic {name}: {e}")),
            None => return Err(format!("create topic {name}: no result")),
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match self.watermarks(name, partitions) {
                Ok(_) => return Ok(()),
                Err(e) if Instant::now() > deadline => {
                    return Err(format!("topic {name} not ready: {e}"))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    pub(crate) fn delete_topic(&self, name: &str) {
        if let Err(e) = self.inner.delete_topics([name.to_string()]) {
            eprintln!("e2e: delete topic {name}: {e}");
        }
    }

    /// Earliest and latest (high watermark) offsets of partitions 0..partitions.
    pub(crate) fn watermarks(
        &self,
        topic: &str,
        partitions: i32,
    ) -> Result<Vec<Watermarks>, String> {
        let tp = |p| TopicPartition::new(topic, p);
        let mut out = Vec::new();
        let spec = |s: fn() -> OffsetSpec| (0..partitions).map(move |p| (tp(p), s()));
        let early = self
            .inner
            .list_offsets(spec(|| OffsetSpec::Earliest))
            .map_err(|e| e.to_string())?;
        let late = self
            .inner
            .list_offsets(spec(|| OffsetSpec::Latest))
            .map_err(|e| e.to_string())?;
        for p in 0..partitions {
            let e = early
                .get(&tp(p))
                .ok_or(format!("{topic}/{p}: no earliest offset"))?;
            let l = late
                .get(&tp(p))
                .ok_or(format!("{topic}/{p}: no latest offset"))?;
            let e = e.as_ref().map_err(|e| format!("{topic}/{p}: {e}"))?;
            let l = l.as_ref().map_err(|e| format!("{topic}/{p}: {e}"))?;
            out.push(Watermarks {
                earliest: e.offset,
                latest: l.offset,
            });
        }
        Ok(out)
    }

    /// Bytes the topic's partitions take in the broker's log dirs.
    pub(crate) fn log_bytes(&self, topic: &str) -> Option<u64> {
        let cluster = self.inner.describe_cluster().ok()?;
        let dirs = self
            .inner
            .describe_log_dirs(cluster.brokers.keys().copied())
            .ok()?;
        let mut total = 0u64;
        for per_broker in dirs.values() {
            for dir in per_broker.as_ref().ok()?.values() {
                for (tp, info) in &dir.replicas {
                    if tp.topic == topic && !info.is_future {
                        total += info.size.max(0) as u64;
                    }
                }
            }
        }
        Some(total)
    }

    /// The group's type as the broker lists it (`classic`, `consumer`); `None` if the
    /// broker does not say (ListGroups before v5) or does not list the group.
    pub(crate) fn group_type(&self, group: &str) -> Result<Option<String>, String> {
        let all = self
            .inner
            .list_consumer_groups()
            .map_err(|e| e.to_string())?;
        Ok(all
            .groups
            .get(group)
            .and_then(|g| g.group_type.clone())
            .map(|t| t.to_lowercase()))
    }

    /// The group's committed offsets for partitions 0..partitions (`None`: nothing committed).
    pub(crate) fn committed(
        &self,
        group: &str,
        topic: &str,
        partitions: i32,
    ) -> Result<Vec<Option<i64>>, String> {
        let all = self
            .inner
            .list_consumer_group_offsets(group)
            .map_err(|e| e.to_string())?;
        let offsets = all
            .get(group)
            .ok_or(format!("group {group}: no result"))?
            .as_ref()
            .map_err(|e| format!("group {group}: {e}"))?;
        Ok((0..partitions)
            .map(|p| match offsets.get(&TopicPartition::new(topic, p)) {
                Some(Ok(Some(o))) => Some(o.offset),
                _ => None,
            })
            .collect())
    }

    /// Sets configs of group `group` (IncrementalAlterConfigs on its group resource), e.g.
    /// a share group's `share.auto.offset.reset`.
    pub(crate) fn set_group_configs(
        &self,
        group: &str,
        pairs: &[(&str, &str)],
    ) -> Result<(), String> {
        let resource = ConfigResource::group(group);
        let ops = pairs
            .iter()
            .map(|(k, v)| AlterConfigOp::set(*k, *v))
            .collect();
        let r = self
            .inner
            .incremental_alter_configs([(resource.clone(), ops)])
            .map_err(|e| format!("alter configs of group {group}: {e}"))?;
        match r.get(&resource) {
            Some(Ok(())) => Ok(()),
            Some(Err(e)) => Err(format!("alter configs of group {group}: {e}")),
            None => Err(format!("alter configs of group {group}: no result")),
        }
    }

    /// A share group's lag in partitions 0..partitions: records from its start offset on
    /// not yet delivered and acknowledged (`None`: no start offset, or the broker does
    /// not say).
    pub(crate) fn share_lag(
        &self,
        group: &str,
        topic: &str,
        partitions: i32,
    ) -> Result<Vec<Option<i64>>, String> {
        let all = self
            .inner
            .list_share_group_offsets(group)
            .map_err(|e| format!("share group {group} offsets: {e}"))?;
        let offsets = all
            .get(group)
            .ok_or(format!("share group {group}: no result"))?
            .as_ref()
            .map_err(|e| format!("share group {group}: {e}"))?;
        Ok((0..partitions)
            .map(|p| match offsets.get(&TopicPartition::new(topic, p)) {
                Some(Ok(Some(o))) => o.lag,
                _ => None,
            })
            .collect())
    }
}
