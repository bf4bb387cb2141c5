//! Consumer group settings: the group and instance ids, the protocol, session, heartbeat
//! and poll-interval timeouts, assignment strategies and auto-commit, with the Java
//! client's names and defaults.

use std::sync::Arc;
use std::time::Duration;

use super::parse;
use super::{ClientConfigBuilder, ConfigError, KeyInfo};
use crate::group::assignor::Assignor;

/// `group.protocol`: which membership protocol a group consumer speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupProtocol {
    /// JoinGroup/SyncGroup/Heartbeat with client-side assignment (the default).
    Classic,
    /// KIP-848 ConsumerGroupHeartbeat with server-side assignment.
    Consumer,
}

impl std::str::FromStr for GroupProtocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "classic" => Ok(GroupProtocol::Classic),
            "consumer" => Ok(GroupProtocol::Consumer),
            _ => Err("expected classic or consumer".into()),
        }
    }
}

/// `share.acknowledgement.mode`: how a share consumer (KIP-932) acknowledges records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ShareAcknowledgementMode {
    /// Every record a poll handed out is accepted at the next poll or commit (the
    /// default, as Java's `implicit`).
    #[default]
    Implicit,
    /// The application acknowledges each record (accept, release, reject) itself.
    Explicit,
}

impl std::str::FromStr for ShareAcknowledgementMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "implicit" => Ok(ShareAcknowledgementMode::Implicit),
            "explicit" => Ok(ShareAcknowledgementMode::Explicit),
            _ => Err("expected implicit or explicit".into()),
        }
    }
}

/// Group settings. Read them from [`ClientConfig::group`](super::ClientConfig::group).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupConfig {
    /// `group.id` (unset by default: no group, assign mode only).
    pub group_id: Option<String>,
    /// `group.instance.id`: a static member's id (KIP-345), unset by default.
    pub group_instance_id: Option<String>,
    /// `group.protocol` (default classic).
    pub group_protocol: GroupProtocol,
    /// `group.remote.assignor`: the server-side assignor under KIP-848 (the broker's
    /// default, `uniform`, when unset).
    pub remote_assignor: Option<String>,
    /// `session.timeout.ms` (default 45 s).
    pub session_timeout: Duration,
    /// `heartbeat.interval.ms` (default 3 s).
    pub heartbeat_interval: Duration,
    /// `max.poll.interval.ms` (default 5 min): also the classic rebalance timeout.
    pub max_poll_interval: Duration,
    /// `partition.assignment.strategy`: assignor names in preference order (default
    /// `range, cooperative-sticky`, as Java).
    pub assignment_strategy: Vec<String>,
    /// `enable.auto.commit` (default true).
    pub enable_auto_commit: bool,
    /// `auto.commit.interval.ms` (default 5 s).
    pub auto_commit_interval: Duration,
    /// `exclude.internal.topics` (default true): a classic pattern subscription never
    /// matches internal topics (`__consumer_offsets`, `__transaction_state`, ...).
    pub exclude_internal_topics: bool,
    /// Partition assignors of the application's own, registered with
    /// [`ClientConfigBuilder::assignor`] or
    /// [`ClientConfig::with_assignor`](super::ClientConfig::with_assignor).
    pub custom_assignors: CustomAssignors,
    /// `share.acknowledgement.mode` (default implicit): a share consumer's
    /// acknowledgements.
    pub share_acknowledgement_mode: ShareAcknowledgementMode,
}

/// The application's own partition assignors (classic protocol), by name. A group
/// consumer offers each in JoinGroup: where `partition.assignment.strategy` names it
/// (its [`Assignor::name`]), else ahead of every strategy listed, in registration order.
/// The group leader runs the one the coordinator chooses. Equal when the names are.
#[derive(Clone, Default)]
pub struct CustomAssignors(Vec<Arc<dyn Assignor>>);

impl CustomAssignors {
    /// The registered assignor called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Assignor>> {
        self.0.iter().find(|a| a.name() == name)
    }

    /// Every registered assignor, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Assignor>> {
        self.0.iter()
    }

    /// Whether none is registered.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Registers `assignor`, replacing one of the same name.
    pub(super) fn add(&mut self, assignor: Arc<dyn Assignor>) {
        self.0.retain(|a| a.name() != assignor.name());
        self.0.push(assignor);
    }
}

impl std::fmt::Debug for CustomAssignors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|a| a.name()))
            .finish()
    }
}

impl PartialEq for CustomAssignors {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(&other.0)
                .all(|(a, b)| a.name() == b.name())
    }
}

impl Eq for CustomAssignors {}

impl Default for GroupConfig {
    fn default() -> Self {
        Self {
            group_id: None,
            group_instance_id: None,
            group_protocol: GroupProtocol::Classic,
            remote_assignor: None,
            session_timeout: Duration::from_secs(45),
            heartbeat_interval: Duration::from_secs(3),
            max_poll_interval: Duration::from_secs(300),
            assignment_strategy: vec!["range".into(), "cooperative-sticky".into()],
            enable_auto_commit: true,
            auto_commit_interval: Duration::from_secs(5),
            exclude_internal_topics: true,
            custom_assignors: CustomAssignors::default(),
            share_acknowledgement_mode: ShareAcknowledgementMode::Implicit,
        }
    }
}

impl GroupConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.heartbeat_interval >= self.session_timeout {
            let value = self.heartbeat_interval.as_millis().to_string();
            let why = "must be lower than session.timeout.ms".into();
            return Err(ConfigError::invalid(
                "heartbeat.interval.ms",
                &value,
                false,
                why,
            ));
        }
        if self.assignment_strategy.is_empty() {
            let why = "names at least one assignor".into();
            return Err(ConfigError::invalid(
                "partition.assignment.strategy",
                "",
                false,
                why,
            ));
        }
        Ok(())
    }
}

/// Typed group setters.
impl ClientConfigBuilder {
    /// `group.id`.
    pub fn group_id(&mut self, id: impl Into<String>) -> &mut Self {
        self.group.group_id = Some(id.into());
        self
    }

    /// `group.instance.id` (static membership).
    pub fn group_instance_id(&mut self, id: impl Into<String>) -> &mut Self {
        self.group.group_instance_id = Some(id.into());
        self
    }

    /// `enable.auto.commit` (default true).
    pub fn enable_auto_commit(&mut self, on: bool) -> &mut Self {
        self.group.enable_auto_commit = on;
        self
    }

    /// Registers a partition assignor of the application's own (classic protocol; see
    /// [`CustomAssignors`]), replacing one registered under the same name.
    pub fn assignor(&mut self, assignor: impl Assignor + 'static) -> &mut Self {
        self.group.custom_assignors.add(Arc::new(assignor));
        self
    }
}

impl super::ClientConfig {
    /// This config with a partition assignor of the application's own registered (see
    /// [`ClientConfigBuilder::assignor`]): for configs made with
    /// [`ClientConfig::from_pairs`](super::ClientConfig::from_pairs).
    pub fn with_assignor(mut self, assignor: impl Assignor + 'static) -> Self {
        self.group.custom_assignors.add(Arc::new(assignor));
        self
    }
}

/// Assignor names as Java spells them (short names or class names), normalised.
fn strategies(value: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for name in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let short = match name.rsplit('.').next().unwrap_or(name) {
            "RangeAssignor" => "range",
            "RoundRobinAssignor" => "roundrobin",
            "StickyAssignor" => "sticky",
            "CooperativeStickyAssignor" => "cooperative-sticky",
            _ if name.contains('.') => return Err(format!("unknown assignor class {name}")),
            other => other,
        };
        out.push(short.to_string());
    }
    if out.is_empty() {
        return Err("names no assignor".into());
    }
    Ok(out)
}

/// String keys of the group section.
pub(super) const KEYS: &[KeyInfo] = &[
    KeyInfo {
        name: "group.id",
        default: None,
        doc: "The consumer group to join (subscribe mode, committed offsets).",
        secret: false,
        apply: |b, v| {
            b.group.group_id = parse::opt_text(v)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "group.instance.id",
        default: None,
        doc: "A static member's id: a restart inside the session timeout keeps its partitions.",
        secret: false,
        apply: |b, v| {
            b.group.group_instance_id = parse::opt_text(v)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "group.protocol",
        default: Some("classic"),
        doc: "classic (JoinGroup/SyncGroup) or consumer (KIP-848).",
        secret: false,
        apply: |b, v| {
            b.group.group_protocol = v.parse()?;
            Ok(())
        },
    },
    KeyInfo {
        name: "share.acknowledgement.mode",
        default: Some("implicit"),
        doc: "Share consumers: implicit (a poll accepts what the last one handed out) or explicit.",
        secret: false,
        apply: |b, v| {
            b.group.share_acknowledgement_mode = v.parse()?;
            Ok(())
        },
    },
    KeyInfo {
        name: "group.remote.assignor",
        default: None,
        doc: "Server-side assignor under group.protocol=consumer (uniform, range).",
        secret: false,
        apply: |b, v| {
            b.group.remote_assignor = parse::opt_text(v)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "session.timeout.ms",
        default: Some("45000"),
        doc: "How long the coordinator waits for a heartbeat before removing the member.",
        secret: false,
        apply: |b, v| {
            b.group.session_timeout = parse::millis_int(v)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "heartbeat.interval.ms",
        default: Some("3000"),
        doc: "Time between heartbeats (below session.timeout.ms).",
        secret: false,
        apply: |b, v| {
            b.group.heartbeat_interval = parse::millis_int(v)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "max.poll.interval.ms",
        default: Some("300000"),
        doc: "Longest gap between polls before the member leaves the group; the rebalance timeout.",
        secret: false,
        apply: |b, v| {
            b.group.max_poll_interval = parse::millis_int(v)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "partition.assignment.strategy",
        default: Some("range,cooperative-sticky"),
        doc: "Assignors in preference order: range, roundrobin, sticky, cooperative-sticky.",
        secret: false,
        apply: |b, v| {
            b.group.assignment_strategy = strategies(v)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "enable.auto.commit",
        default: Some("true"),
        doc: "Commit consumed positions every auto.commit.interval.ms, on revoke and on close.",
        secret: false,
        apply: |b, v| {
            b.group.enable_auto_commit = parse::boolean(v)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "auto.commit.interval.ms",
        default: Some("5000"),
        doc: "Time between automatic commits.",
        secret: false,
        apply: |b, v| {
            b.group.auto_commit_interval = parse::millis_int(v)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "exclude.internal.topics",
        default: Some("true"),
        doc: "Whether a pattern subscription leaves internal topics out.",
        secret: false,
        apply: |b, v| {
            b.group.exclude_internal_topics = parse::boolean(v)?;
            Ok(())
        },
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategies_take_java_class_names_and_short_names() {
        let got = strategies(
            "org.apache.kafka.clients.consumer.RangeAssignor, roundrobin,\
             org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
        )
        .unwrap();
        assert_eq!(got, ["range", "roundrobin", "cooperative-sticky"]);
        assert!(strategies("com.example.Mine").is_err());
        assert!(strategies(" , ").is_err());
    }
}
