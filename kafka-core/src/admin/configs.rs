//! Config operations: describe, alter and incremental-alter configs of topics and brokers;
//! list config resources (`resources`).
//!
//! A broker's own configs (and loggers) are only known to that broker, so requests about
//! them go to it (`Route::Broker(id)`); the other resources go together to any broker.

mod resources;
mod routed;
mod types;

use std::collections::BTreeMap;
use std::time::Duration;

pub use self::resources::ListConfigResources;
use self::routed::{ConfigApi, Routed};
pub use self::types::{
    AlterConfigOp, AlterOpType, ConfigEntry, ConfigResource, ConfigResourceType, ConfigSource,
    ConfigSynonym, ConfigType,
};
use super::{AdminError, OpContext, Operation, Timeout};
use crate::protocol::messages::alter_configs::request::{AlterConfigsResource, AlterableConfig};
use crate::protocol::messages::alter_configs::{AlterConfigsRequest, AlterConfigsResponse};
use crate::protocol::messages::describe_configs::request::DescribeConfigsResource;
use crate::protocol::messages::describe_configs::response::DescribeConfigsResult;
use crate::protocol::messages::describe_configs::{
    DescribeConfigsRequest, DescribeConfigsResponse,
};
use crate::protocol::messages::incremental_alter_configs::request as incremental;
use crate::protocol::messages::incremental_alter_configs::{
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};

/// The configs of one resource, by name: what
/// [`DescribeConfigs`](crate::admin::DescribeConfigs) returns per resource.
///
/// A plain map from the config name (`retention.ms`) to its [`ConfigEntry`]: the value
/// (`None` when the broker hides it, [`ConfigEntry::sensitive`], or it has none), where
/// it comes from ([`ConfigEntry::source`]), and synonyms and documentation when asked
/// for. Every config the broker reported is there, defaults included; filter on
/// `source` for the ones set on the resource itself.
///
/// ```
/// use kafka_core::admin::{Config, ConfigSource};
///
/// /// `retention.ms` as a number, if the broker showed it.
/// fn retention_ms(config: &Config) -> Option<i64> {
///     config.get("retention.ms")?.value.as_deref()?.parse().ok()
/// }
///
/// /// The configs set on the topic itself (not broker defaults), as `name=value`.
/// fn topic_overrides(config: &Config) -> Vec<String> {
///     config
///         .values()
///         .filter(|e| e.source == ConfigSource::DynamicTopicConfig)
///         .map(|e| format!("{}={}", e.name, e.value.as_deref().unwrap_or("<hidden>")))
///         .collect()
/// }
/// # let _ = (retention_ms as fn(&Config) -> _, topic_overrides as fn(&Config) -> _);
/// ```
pub type Config = BTreeMap<String, ConfigEntry>;

/// The DescribeConfigs side of the routing.
#[derive(Debug, Default)]
struct DescribeApi {
    synonyms: bool,
    documentation: bool,
}

impl ConfigApi for DescribeApi {
    type Arg = ();
    type Request = DescribeConfigsRequest;
    type Response = DescribeConfigsResponse;
    type Value = Config;

    fn request(&self, resources: &[(&ConfigResource, &())]) -> DescribeConfigsRequest {
        DescribeConfigsRequest {
            resources: resources
                .iter()
                .map(|(r, ())| DescribeConfigsResource {
                    resource_type: r.kind.id(),
                    resource_name: r.name.clone(),
                    configuration_keys: None,
                    ..Default::default()
                })
                .collect(),
            include_synonyms: self.synonyms,
            include_documentation: self.documentation,
            ..Default::default()
        }
    }

    fn answers(resp: DescribeConfigsResponse) -> Vec<(ConfigResource, Result<Config, AdminError>)> {
        resp.results.into_iter().map(described).collect()
    }
}

/// One resource of a DescribeConfigs answer.
fn described(r: DescribeConfigsResult) -> (ConfigResource, Result<Config, AdminError>) {
    let resource = ConfigResource::new(
        ConfigResourceType::from_id(r.resource_type),
        r.resource_name,
    );
    let result = AdminError::check(r.error_code, r.error_message.as_deref()).map(|()| {
        r.configs
            .into_iter()
            .map(|c| {
                let entry = ConfigEntry {
                    name: c.name.clone(),
                    value: c.value,
                    source: ConfigSource::from_id(c.config_source),
                    sensitive: c.is_sensitive,
                    read_only: c.read_only,
                    synonyms: c
                        .synonyms
                        .into_iter()
                        .map(|s| ConfigSynonym {
                            name: s.name,
                            value: s.value,
                            source: ConfigSource::from_id(s.source),
                        })
                        .collect(),
                    config_type: ConfigType::from_id(c.config_type),
                    documentation: c.documentation,
                };
                (c.name, entry)
            })
            .collect()
    });
    (resource, result)
}

/// Describes the configs of topics, brokers and other resources (DescribeConfigs), with
/// per-resource results. A broker's configs are asked from that broker.
#[derive(Debug)]
pub struct DescribeConfigs {
    api: DescribeApi,
    routed: Routed<DescribeApi>,
    timeout: Timeout,
}

impl DescribeConfigs {
    /// Describes every config of each resource.
    pub fn new(resources: impl IntoIterator<Item = ConfigResource>) -> Self {
        DescribeConfigs {
            api: DescribeApi::default(),
            routed: Routed::new(resources.into_iter().map(|r| (r, ()))),
            timeout: Timeout::default(),
        }
    }

    /// Also reports each config's synonyms, in order of precedence.
    pub fn include_synonyms(mut self, yes: bool) -> Self {
        self.api.synonyms = yes;
        self
    }

    /// Also reports each config's documentation.
    pub fn include_documentation(mut self, yes: bool) -> Self {
        self.api.documentation = yes;
        self
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

impl Operation for DescribeConfigs {
    type Output = routed::Outcome<Config>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        self.routed.poll(&self.api, cx, deadline)
    }
}

/// Per-resource results of the alter APIs (which answer with the same fields).
fn altered(
    kind: i8,
    name: String,
    code: i16,
    message: Option<String>,
) -> (ConfigResource, Result<(), AdminError>) {
    let resource = ConfigResource::new(ConfigResourceType::from_id(kind), name);
    (resource, AdminError::check(code, message.as_deref()))
}

/// The AlterConfigs side of the routing.
#[derive(Debug, Default)]
struct AlterApi {
    validate_only: bool,
}

impl ConfigApi for AlterApi {
    type Arg = BTreeMap<String, String>;
    type Request = AlterConfigsRequest;
    type Response = AlterConfigsResponse;
    type Value = ();

    fn request(&self, resources: &[(&ConfigResource, &Self::Arg)]) -> AlterConfigsRequest {
        AlterConfigsRequest {
            resources: resources
                .iter()
                .map(|(r, configs)| AlterConfigsResource {
                    resource_type: r.kind.id(),
                    resource_name: r.name.clone(),
                    configs: configs
                        .iter()
                        .map(|(k, v)| AlterableConfig {
                            name: k.clone(),
                            value: Some(v.clone()),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            validate_only: self.validate_only,
            ..Default::default()
        }
    }

    fn answers(resp: AlterConfigsResponse) -> Vec<(ConfigResource, Result<(), AdminError>)> {
        resp.responses
            .into_iter()
            .map(|r| {
                altered(
                    r.resource_type,
                    r.resource_name,
                    r.error_code,
                    r.error_message,
                )
            })
            .collect()
    }
}

/// Replaces the whole dynamic config of each resource (the legacy AlterConfigs: configs
/// left out revert to their defaults; prefer [`IncrementalAlterConfigs`]).
#[derive(Debug)]
pub struct AlterConfigs {
    api: AlterApi,
    routed: Routed<AlterApi>,
    timeout: Timeout,
}

impl AlterConfigs {
    /// Sets each resource's dynamic configs to exactly the given name → value map.
    pub fn new(
        resources: impl IntoIterator<Item = (ConfigResource, BTreeMap<String, String>)>,
    ) -> Self {
        AlterConfigs {
            api: AlterApi::default(),
            routed: Routed::new(resources),
            timeout: Timeout::default(),
        }
    }

    /// Only checks that the configs could be set.
    pub fn validate_only(mut self, yes: bool) -> Self {
        self.api.validate_only = yes;
        self
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

impl Operation for AlterConfigs {
    type Output = routed::Outcome<()>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        self.routed.poll(&self.api, cx, deadline)
    }
}

/// The IncrementalAlterConfigs side of the routing.
#[derive(Debug, Default)]
struct IncrementalApi {
    validate_only: bool,
}

impl ConfigApi for IncrementalApi {
    type Arg = Vec<AlterConfigOp>;
    type Request = IncrementalAlterConfigsRequest;
    type Response = IncrementalAlterConfigsResponse;
    type Value = ();

    fn request(&self, resources: &[(&ConfigResource, &Self::Arg)]) -> Self::Request {
        IncrementalAlterConfigsRequest {
            resources: resources
                .iter()
                .map(|(r, ops)| incremental::AlterConfigsResource {
                    resource_type: r.kind.id(),
                    resource_name: r.name.clone(),
                    configs: ops
                        .iter()
                        .map(|op| incremental::AlterableConfig {
                            name: op.name.clone(),
                            config_operation: op.op.id(),
                            value: op.value.clone(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            validate_only: self.validate_only,
            ..Default::default()
        }
    }

    fn answers(resp: Self::Response) -> Vec<(ConfigResource, Result<(), AdminError>)> {
        resp.responses
            .into_iter()
            .map(|r| {
                altered(
                    r.resource_type,
                    r.resource_name,
                    r.error_code,
                    r.error_message,
                )
            })
            .collect()
    }
}

/// Changes single configs of each resource (IncrementalAlterConfigs: set, delete,
/// append to or subtract from a list), leaving the others as they are.
#[derive(Debug)]
pub struct IncrementalAlterConfigs {
    api: IncrementalApi,
    routed: Routed<IncrementalApi>,
    timeout: Timeout,
}

impl IncrementalAlterConfigs {
    /// Applies the changes to each resource.
    pub fn new(resources: impl IntoIterator<Item = (ConfigResource, Vec<AlterConfigOp>)>) -> Self {
        IncrementalAlterConfigs {
            api: IncrementalApi::default(),
            routed: Routed::new(resources),
            timeout: Timeout::default(),
        }
    }

    /// Only checks that the changes could be applied.
    pub fn validate_only(mut self, yes: bool) -> Self {
        self.api.validate_only = yes;
        self
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

impl Operation for IncrementalAlterConfigs {
    type Output = routed::Outcome<()>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        self.routed.poll(&self.api, cx, deadline)
    }
}

/// The named methods of this group (see [`admin_methods!`](crate::admin_methods)).
#[doc(hidden)]
#[macro_export]
macro_rules! __admin_methods_configs {
    ($mode:ident $run:ident) => {
        $crate::__admin_method_list!($mode $run
            /// Describes the configs of resources (per-resource results); see [`DescribeConfigs`](kafka_core::admin::DescribeConfigs).
            fn describe_configs(resources: impl IntoIterator<Item = $crate::admin::ConfigResource>)
                -> ::std::collections::BTreeMap<$crate::admin::ConfigResource, Result<$crate::admin::Config, $crate::admin::AdminError>>
                = $crate::admin::DescribeConfigs::new(resources);
            /// Replaces the dynamic configs of resources (legacy AlterConfigs).
            fn alter_configs(resources: impl IntoIterator<Item = ($crate::admin::ConfigResource, ::std::collections::BTreeMap<String, String>)>)
                -> ::std::collections::BTreeMap<$crate::admin::ConfigResource, Result<(), $crate::admin::AdminError>>
                = $crate::admin::AlterConfigs::new(resources);
            /// Sets, deletes, appends to or subtracts from single configs of resources.
            fn incremental_alter_configs(resources: impl IntoIterator<Item = ($crate::admin::ConfigResource, Vec<$crate::admin::AlterConfigOp>)>)
                -> ::std::collections::BTreeMap<$crate::admin::ConfigResource, Result<(), $crate::admin::AdminError>>
                = $crate::admin::IncrementalAlterConfigs::new(resources);
            /// Lists the config resources of every type (topics, brokers, groups, client
            /// metrics, ...); see [`ListConfigResources`](kafka_core::admin::ListConfigResources).
            fn list_config_resources() -> Vec<$crate::admin::ConfigResource>
                = $crate::admin::ListConfigResources::new();
        );
    };
}

#[cfg(test)]
mod tests;
