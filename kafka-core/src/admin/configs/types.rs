//! Config resources and entries, mirroring Java's `ConfigResource` and `ConfigEntry`.

use crate::admin::AdminError;
use crate::cluster::Route;

/// The kind of a config resource (Java's `ConfigResource.Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ConfigResourceType {
    /// A topic.
    Topic,
    /// A broker (name: its node id; empty: the cluster-wide default).
    Broker,
    /// A broker's log4j loggers (name: its node id).
    BrokerLogger,
    /// Client metrics subscriptions.
    ClientMetrics,
    /// A group.
    Group,
    /// A type this client does not know (the wire value).
    Unknown(i8),
}

impl ConfigResourceType {
    /// The wire value.
    pub fn id(self) -> i8 {
        match self {
            ConfigResourceType::Topic => 2,
            ConfigResourceType::Broker => 4,
            ConfigResourceType::BrokerLogger => 8,
            ConfigResourceType::ClientMetrics => 16,
            ConfigResourceType::Group => 32,
            ConfigResourceType::Unknown(id) => id,
        }
    }

    /// From the wire value.
    pub fn from_id(id: i8) -> Self {
        match id {
            2 => ConfigResourceType::Topic,
            4 => ConfigResourceType::Broker,
            8 => ConfigResourceType::BrokerLogger,
            16 => ConfigResourceType::ClientMetrics,
            32 => ConfigResourceType::Group,
            other => ConfigResourceType::Unknown(other),
        }
    }
}

/// Something that has configs: a topic, a broker, ...
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConfigResource {
    /// Its kind.
    pub kind: ConfigResourceType,
    /// Its name (a topic name, a broker id as text, ...).
    pub name: String,
}

impl ConfigResource {
    /// A resource of `kind` named `name`.
    pub fn new(kind: ConfigResourceType, name: impl Into<String>) -> Self {
        ConfigResource {
            kind,
            name: name.into(),
        }
    }

    /// The topic `name`.
    pub fn topic(name: impl Into<String>) -> Self {
        Self::new(ConfigResourceType::Topic, name)
    }

    /// The broker with node id `id`.
    pub fn broker(id: i32) -> Self {
        Self::new(ConfigResourceType::Broker, id.to_string())
    }

    /// The cluster-wide default broker configs.
    pub fn broker_default() -> Self {
        Self::new(ConfigResourceType::Broker, "")
    }

    /// The loggers of the broker with node id `id`.
    pub fn broker_logger(id: i32) -> Self {
        Self::new(ConfigResourceType::BrokerLogger, id.to_string())
    }

    /// The group `name`.
    pub fn group(name: impl Into<String>) -> Self {
        Self::new(ConfigResourceType::Group, name)
    }

    /// Where requests about this resource go: a broker's own configs and loggers to that
    /// broker, everything else (and the cluster-wide broker default) to any broker.
    pub(crate) fn route(&self) -> Result<Route, AdminError> {
        match self.kind {
            ConfigResourceType::Broker | ConfigResourceType::BrokerLogger
                if !self.name.is_empty() =>
            {
                self.name.parse::<i32>().map(Route::Broker).map_err(|_| {
                    AdminError::Invalid(format!("broker id {:?} is not a number", self.name))
                })
            }
            _ => Ok(Route::Any),
        }
    }
}

/// Where a config value comes from (Java's `ConfigEntry.ConfigSource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigSource {
    /// A dynamic topic config (set on the topic).
    DynamicTopicConfig,
    /// A dynamic config of one broker.
    DynamicBrokerConfig,
    /// A dynamic cluster-wide default broker config.
    DynamicDefaultBrokerConfig,
    /// From the broker's `server.properties`.
    StaticBrokerConfig,
    /// The built-in default.
    DefaultConfig,
    /// A dynamic broker logger level.
    DynamicBrokerLoggerConfig,
    /// A client metrics subscription config.
    DynamicClientMetricsConfig,
    /// A dynamic group config.
    DynamicGroupConfig,
    /// Not reported, or a source this client does not know.
    Unknown,
}

impl ConfigSource {
    /// From the wire value.
    pub fn from_id(id: i8) -> Self {
        match id {
            1 => ConfigSource::DynamicTopicConfig,
            2 => ConfigSource::DynamicBrokerConfig,
            3 => ConfigSource::DynamicDefaultBrokerConfig,
            4 => ConfigSource::StaticBrokerConfig,
            5 => ConfigSource::DefaultConfig,
            6 => ConfigSource::DynamicBrokerLoggerConfig,
            7 => ConfigSource::DynamicClientMetricsConfig,
            8 => ConfigSource::DynamicGroupConfig,
            _ => ConfigSource::Unknown,
        }
    }
}

/// The data type of a config (Java's `ConfigEntry.ConfigType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigType {
    /// `true` / `false`.
    Boolean,
    /// Text.
    String,
    /// 32-bit integer.
    Int,
    /// 16-bit integer.
    Short,
    /// 64-bit integer.
    Long,
    /// Floating point.
    Double,
    /// Comma-separated list.
    List,
    /// Java class name.
    Class,
    /// Password (sensitive).
    Password,
    /// Not reported (older brokers) or unknown.
    Unknown,
}

impl ConfigType {
    /// From the wire value.
    pub fn from_id(id: i8) -> Self {
        match id {
            1 => ConfigType::Boolean,
            2 => ConfigType::String,
            3 => ConfigType::Int,
            4 => ConfigType::Short,
            5 => ConfigType::Long,
            6 => ConfigType::Double,
            7 => ConfigType::List,
            8 => ConfigType::Class,
            9 => ConfigType::Password,
            _ => ConfigType::Unknown,
        }
    }
}

/// Another config that sets the same value (e.g. `log.retention.hours` for
/// `log.retention.ms`), in order of precedence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSynonym {
    /// Its name.
    pub name: String,
    /// Its value (`None` if sensitive or unset).
    pub value: Option<String>,
    /// Where it is set.
    pub source: ConfigSource,
}

/// One config of a resource as DescribeConfigs reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    /// Config name.
    pub name: String,
    /// Its value (`None` if sensitive or unset).
    pub value: Option<String>,
    /// Where the value comes from.
    pub source: ConfigSource,
    /// Whether the value is sensitive (then not reported).
    pub sensitive: bool,
    /// Whether it cannot be changed dynamically.
    pub read_only: bool,
    /// Synonyms, when asked for (the entry itself first).
    pub synonyms: Vec<ConfigSynonym>,
    /// Data type (when the broker reports it).
    pub config_type: ConfigType,
    /// Documentation, when asked for.
    pub documentation: Option<String>,
}

/// How IncrementalAlterConfigs changes one config (Java's `AlterConfigOp.OpType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlterOpType {
    /// Sets the value.
    Set,
    /// Reverts to the default.
    Delete,
    /// Adds to a list config.
    Append,
    /// Removes from a list config.
    Subtract,
}

impl AlterOpType {
    pub(crate) fn id(self) -> i8 {
        match self {
            AlterOpType::Set => 0,
            AlterOpType::Delete => 1,
            AlterOpType::Append => 2,
            AlterOpType::Subtract => 3,
        }
    }
}

/// One change of IncrementalAlterConfigs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterConfigOp {
    /// Config name.
    pub name: String,
    /// What to do.
    pub op: AlterOpType,
    /// The value (`None` for [`AlterOpType::Delete`]).
    pub value: Option<String>,
}

impl AlterConfigOp {
    /// Sets `name` to `value`.
    pub fn set(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self::with(name, AlterOpType::Set, Some(value.into()))
    }

    /// Reverts `name` to its default.
    pub fn delete(name: impl Into<String>) -> Self {
        Self::with(name, AlterOpType::Delete, None)
    }

    /// Adds `value` (one or more comma-separated items) to the list config `name`.
    pub fn append(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self::with(name, AlterOpType::Append, Some(value.into()))
    }

    /// Removes `value` (one or more comma-separated items) from the list config `name`.
    pub fn subtract(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self::with(name, AlterOpType::Subtract, Some(value.into()))
    }

    fn with(name: impl Into<String>, op: AlterOpType, value: Option<String>) -> Self {
        AlterConfigOp {
            name: name.into(),
            op,
            value,
        }
    }
}
