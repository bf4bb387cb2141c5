//! ListConfigResources (KIP-1142; formerly ListClientMetricsResources): the config
//! resources that exist, optionally of some types only, from any broker.

use std::time::Duration;

use super::{ConfigResource, ConfigResourceType};
use crate::admin::{AdminError, Call, OpContext, Operation, Timeout};
use crate::cluster::Route;
use crate::conn::RequestError;
use crate::protocol::messages::list_config_resources::{
    ListConfigResourcesRequest, ListConfigResourcesResponse,
};

/// Lists config resources (ListConfigResources to any broker, like Java's
/// `listConfigResources`): topics, brokers, groups, client-metrics subscriptions... Empty
/// types (the default) ask for every type the broker lists. A broker with only version 0
/// (ListClientMetricsResources, before 4.1) can list client-metrics resources alone; any
/// other type filter fails there with [`AdminError::Invalid`]. The broker's error code
/// fails the call. Resources come sorted by type and name.
#[derive(Debug)]
pub struct ListConfigResources {
    types: Vec<ConfigResourceType>,
    call: Option<Call<ListConfigResourcesRequest>>,
    timeout: Timeout,
}

impl Default for ListConfigResources {
    fn default() -> Self {
        Self::new()
    }
}

impl ListConfigResources {
    /// Lists resources of every type.
    pub fn new() -> Self {
        ListConfigResources {
            types: Vec::new(),
            call: None,
            timeout: Timeout::default(),
        }
    }

    /// Only resources of these types (empty: every type).
    pub fn types(mut self, types: impl IntoIterator<Item = ConfigResourceType>) -> Self {
        self.types = types.into_iter().collect();
        self.types.sort();
        self.types.dedup();
        self
    }

    /// Client-metrics resources only (Java's deprecated `listClientMetricsResources`).
    pub fn client_metrics() -> Self {
        Self::new().types([ConfigResourceType::ClientMetrics])
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }

    fn request(&self) -> ListConfigResourcesRequest {
        // Version 0 lists client metrics only: a filter of just that type is left off
        // the wire so that older brokers can answer it too.
        let only_client_metrics = self.types == [ConfigResourceType::ClientMetrics];
        ListConfigResourcesRequest {
            resource_types: if only_client_metrics {
                Vec::new()
            } else {
                self.types.iter().map(|t| t.id()).collect()
            },
            ..Default::default()
        }
    }
}

/// The resources of an answer, keeping the asked types only (a broker that lists all
/// when asked for client metrics only), sorted.
fn listed(
    types: &[ConfigResourceType],
    resp: ListConfigResourcesResponse,
) -> Result<Vec<ConfigResource>, AdminError> {
    AdminError::check(resp.error_code, None)?;
    let mut out: Vec<ConfigResource> = resp
        .config_resources
        .into_iter()
        .map(|r| {
            ConfigResource::new(
                ConfigResourceType::from_id(r.resource_type),
                r.resource_name,
            )
        })
        .filter(|r| types.is_empty() || types.contains(&r.kind))
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

impl Operation for ListConfigResources {
    type Output = Result<Vec<ConfigResource>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if self.call.is_none() {
            self.call = Some(Call::new(Route::Any, self.request()));
        }
        let outcome = self.call.as_mut()?.poll(cx, deadline)?;
        Some(match outcome {
            Ok(resp) => listed(&self.types, resp),
            Err(AdminError::Request(RequestError::Encode(e))) => Err(AdminError::Invalid(format!(
                "resource type filter not supported by this broker (ListConfigResources v0 lists client metrics only): {e}"
            ))),
            Err(e) => Err(e),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::groups::scripted::{reply, two_brokers, Cluster};
    use crate::protocol::messages::list_config_resources::response::ConfigResource as Wire;
    use crate::protocol::{ApiKey, KafkaCode};

    fn wire(name: &str, kind: i8) -> Wire {
        Wire {
            resource_name: name.into(),
            resource_type: kind,
            ..Default::default()
        }
    }

    #[test]
    fn types_go_on_the_wire_and_resources_come_back_sorted() {
        let mut cluster = Cluster::new();
        let op = ListConfigResources::new()
            .types([ConfigResourceType::Topic, ConfigResourceType::Group]);
        let out = cluster.run(op, |_, seen| match seen.api() {
            ApiKey::Metadata => reply(seen, &two_brokers()),
            ApiKey::ListConfigResources => {
                let req: ListConfigResourcesRequest = seen.decode();
                assert_eq!(req.resource_types, [2, 32]);
                reply(
                    seen,
                    &ListConfigResourcesResponse {
                        config_resources: vec![wire("t2", 2), wire("g", 32), wire("t1", 2)],
                        ..Default::default()
                    },
                )
            }
            other => panic!("unexpected {other:?}"),
        });
        assert_eq!(
            out.unwrap(),
            [
                ConfigResource::topic("t1"),
                ConfigResource::topic("t2"),
                ConfigResource::group("g"),
            ]
        );
    }

    #[test]
    fn client_metrics_only_is_asked_without_a_filter_and_errors_fail_the_call() {
        let op = ListConfigResources::client_metrics();
        assert!(
            op.request().resource_types.is_empty(),
            "readable by v0 brokers"
        );
        let resp = ListConfigResourcesResponse {
            config_resources: vec![wire("cm", 16), wire("t", 2)],
            ..Default::default()
        };
        assert_eq!(
            listed(&op.types, resp).unwrap(),
            [ConfigResource::new(ConfigResourceType::ClientMetrics, "cm")]
        );
        let failed = listed(
            &[],
            ListConfigResourcesResponse {
                error_code: KafkaCode::CLUSTER_AUTHORIZATION_FAILED.0,
                ..Default::default()
            },
        )
        .unwrap_err();
        assert_eq!(failed.code(), Some(KafkaCode::CLUSTER_AUTHORIZATION_FAILED));
    }
}
