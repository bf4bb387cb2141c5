//! Client quotas: DescribeClientQuotas, AlterClientQuotas.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::{Single, TopLevelError};
use crate::admin::{
    Absorbed, AdminError, Batch, ItemResults, Items, OpContext, Operation, Timeout,
};
use crate::cluster::Route;
use crate::protocol::messages::alter_client_quotas::request::{EntityData, EntryData, OpData};
use crate::protocol::messages::alter_client_quotas::{
    AlterClientQuotasRequest, AlterClientQuotasResponse,
};
use crate::protocol::messages::describe_client_quotas::request::ComponentData;
use crate::protocol::messages::describe_client_quotas::{
    DescribeClientQuotasRequest, DescribeClientQuotasResponse,
};
use crate::protocol::KafkaCode;

/// What a quota applies to: entity type → name, where `None` is the type's default
/// entity (Java's `ClientQuotaEntity`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ClientQuotaEntity(pub BTreeMap<String, Option<String>>);

impl ClientQuotaEntity {
    /// The `user` entity type.
    pub const USER: &'static str = "user";
    /// The `client-id` entity type.
    pub const CLIENT_ID: &'static str = "client-id";
    /// The `ip` entity type.
    pub const IP: &'static str = "ip";

    /// An entity with no parts yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a part: `entity_type` named `name` (`None`: the default entity).
    pub fn with(mut self, entity_type: impl Into<String>, name: Option<String>) -> Self {
        self.0.insert(entity_type.into(), name);
        self
    }

    /// Adds the user `name`.
    pub fn user(self, name: impl Into<String>) -> Self {
        self.with(Self::USER, Some(name.into()))
    }

    /// Adds the client id `name`.
    pub fn client_id(self, name: impl Into<String>) -> Self {
        self.with(Self::CLIENT_ID, Some(name.into()))
    }

    /// Adds the IP address `name`.
    pub fn ip(self, name: impl Into<String>) -> Self {
        self.with(Self::IP, Some(name.into()))
    }

    fn to_wire(&self) -> Vec<EntityData> {
        self.0
            .iter()
            .map(|(t, n)| EntityData {
                entity_type: t.clone(),
                entity_name: n.clone(),
                ..Default::default()
            })
            .collect()
    }
}

/// How a filter component matches names of its entity type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum QuotaMatch {
    /// Exactly this name.
    Exact(String),
    /// The default entity.
    Default,
    /// Any name, the default included.
    Any,
}

/// One part of a [`ClientQuotaFilter`]: an entity type and how to match its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientQuotaFilterComponent {
    /// Entity type (`user`, `client-id`, `ip`).
    pub entity_type: String,
    /// How names match.
    pub matching: QuotaMatch,
}

impl ClientQuotaFilterComponent {
    /// Entities of `entity_type` named `name` exactly.
    pub fn of_entity(entity_type: impl Into<String>, name: impl Into<String>) -> Self {
        Self::new(entity_type, QuotaMatch::Exact(name.into()))
    }

    /// The default entity of `entity_type`.
    pub fn of_default_entity(entity_type: impl Into<String>) -> Self {
        Self::new(entity_type, QuotaMatch::Default)
    }

    /// Any entity of `entity_type`.
    pub fn of_entity_type(entity_type: impl Into<String>) -> Self {
        Self::new(entity_type, QuotaMatch::Any)
    }

    /// A component of `entity_type` matched by `matching`.
    pub fn new(entity_type: impl Into<String>, matching: QuotaMatch) -> Self {
        ClientQuotaFilterComponent {
            entity_type: entity_type.into(),
            matching,
        }
    }

    fn to_wire(&self) -> ComponentData {
        let (match_type, match_) = match &self.matching {
            QuotaMatch::Exact(name) => (0, Some(name.clone())),
            QuotaMatch::Default => (1, None),
            QuotaMatch::Any => (2, None),
        };
        ComponentData {
            entity_type: self.entity_type.clone(),
            match_type,
            match_,
            ..Default::default()
        }
    }
}

/// Which quota entities to describe: every component must match; `strict` also
/// excludes entities with parts of other types.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ClientQuotaFilter {
    /// The components.
    pub components: Vec<ClientQuotaFilterComponent>,
    /// Only entities with exactly these entity types.
    pub strict: bool,
}

impl ClientQuotaFilter {
    /// Entities that match `components` and may have parts of other types.
    pub fn contains(components: impl IntoIterator<Item = ClientQuotaFilterComponent>) -> Self {
        ClientQuotaFilter {
            components: components.into_iter().collect(),
            strict: false,
        }
    }

    /// Entities that match `components` and have no other parts.
    pub fn contains_only(components: impl IntoIterator<Item = ClientQuotaFilterComponent>) -> Self {
        ClientQuotaFilter {
            strict: true,
            ..Self::contains(components)
        }
    }

    /// Every entity that has quotas.
    pub fn all() -> Self {
        Self::default()
    }
}

impl TopLevelError for DescribeClientQuotasResponse {
    fn top_level_error(&self) -> (i16, Option<&str>) {
        (self.error_code, self.error_message.as_deref())
    }
}

/// Describes client quotas (DescribeClientQuotas to any broker): per matching entity,
/// its quota values by key (`producer_byte_rate`, `consumer_byte_rate`, ...).
#[derive(Debug)]
pub struct DescribeClientQuotas {
    single: Single<DescribeClientQuotasRequest>,
}

impl DescribeClientQuotas {
    /// Describes the entities `filter` matches.
    pub fn new(filter: ClientQuotaFilter) -> Self {
        let request = DescribeClientQuotasRequest {
            components: filter
                .components
                .iter()
                .map(ClientQuotaFilterComponent::to_wire)
                .collect(),
            strict: filter.strict,
            ..Default::default()
        };
        DescribeClientQuotas {
            single: Single::new(request),
        }
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.single.set_timeout(limit);
        self
    }
}

/// Quota values by entity.
pub type ClientQuotas = BTreeMap<ClientQuotaEntity, BTreeMap<String, f64>>;

impl Operation for DescribeClientQuotas {
    type Output = Result<ClientQuotas, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let resp = match self.single.poll(cx)? {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let entries = resp.entries.unwrap_or_default();
        let out = entries
            .into_iter()
            .map(|e| {
                let entity = ClientQuotaEntity(
                    e.entity
                        .into_iter()
                        .map(|p| (p.entity_type, p.entity_name))
                        .collect(),
                );
                let values = e.values.into_iter().map(|v| (v.key, v.value)).collect();
                (entity, values)
            })
            .collect();
        Some(Ok(out))
    }
}

/// Changes to one entity's quotas: key → new value, `None` to remove the quota.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientQuotaAlteration {
    /// The entity.
    pub entity: ClientQuotaEntity,
    /// Quota key → value (`None`: remove).
    pub ops: BTreeMap<String, Option<f64>>,
}

impl ClientQuotaAlteration {
    /// No changes to `entity` yet.
    pub fn new(entity: ClientQuotaEntity) -> Self {
        ClientQuotaAlteration {
            entity,
            ops: BTreeMap::new(),
        }
    }

    /// Sets quota `key` to `value`.
    pub fn set(mut self, key: impl Into<String>, value: f64) -> Self {
        self.ops.insert(key.into(), Some(value));
        self
    }

    /// Removes quota `key`.
    pub fn remove(mut self, key: impl Into<String>) -> Self {
        self.ops.insert(key.into(), None);
        self
    }

    fn to_wire(&self) -> EntryData {
        EntryData {
            entity: self.entity.to_wire(),
            ops: self
                .ops
                .iter()
                .map(|(k, v)| OpData {
                    key: k.clone(),
                    value: v.unwrap_or(0.0),
                    remove: v.is_none(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }
}

/// Sets and removes client quotas (AlterClientQuotas to any broker): one result per
/// entity. Retriable per-entity errors are retried until the deadline.
#[derive(Debug)]
pub struct AlterClientQuotas {
    items: Items<AlterClientQuotasRequest, ClientQuotaEntity, ()>,
    alterations: Vec<ClientQuotaAlteration>,
    validate_only: bool,
    timeout: Timeout,
}

impl AlterClientQuotas {
    /// Applies `alterations` (one per entity: a later one for the same entity wins).
    pub fn new(alterations: impl IntoIterator<Item = ClientQuotaAlteration>) -> Self {
        let by_entity: BTreeMap<_, _> = alterations
            .into_iter()
            .map(|a| (a.entity.clone(), a))
            .collect();
        AlterClientQuotas {
            items: Items::new("entity"),
            alterations: by_entity.into_values().collect(),
            validate_only: false,
            timeout: Timeout::default(),
        }
    }

    /// Only checks that the changes could be made (`validateOnly`).
    pub fn validate_only(mut self, yes: bool) -> Self {
        self.validate_only = yes;
        self
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

/// Records the per-entity answers; returns the entities to send again.
fn absorb_altered(
    batch: Batch<'_, ClientQuotaEntity, ()>,
    resp: AlterClientQuotasResponse,
) -> Absorbed<ClientQuotaEntity> {
    let mut unanswered: BTreeSet<&ClientQuotaEntity> = batch.pending.iter().collect();
    let mut retry = Vec::new();
    for r in resp.entries {
        let entity = ClientQuotaEntity(
            r.entity
                .into_iter()
                .map(|p| (p.entity_type, p.entity_name))
                .collect(),
        );
        if !unanswered.remove(&entity) {
            continue; // not asked (or answered twice)
        }
        if KafkaCode(r.error_code).is_retriable() && !batch.expired {
            retry.push(entity);
        } else {
            let result = AdminError::check(r.error_code, r.error_message.as_deref());
            batch.results.insert(entity, result);
        }
    }
    Absorbed::Retry(retry)
}

impl Operation for AlterClientQuotas {
    type Output = Result<ItemResults<ClientQuotaEntity, ()>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if !self.items.started() && !self.alterations.is_empty() {
            let request = AlterClientQuotasRequest {
                entries: self
                    .alterations
                    .iter()
                    .map(ClientQuotaAlteration::to_wire)
                    .collect(),
                validate_only: self.validate_only,
                ..Default::default()
            };
            let entities = self.alterations.iter().map(|a| a.entity.clone()).collect();
            self.items.start(Route::Any, request, entities);
        }
        let alterations = &mut self.alterations;
        self.items
            .poll(cx, deadline, absorb_altered, |request, retry| {
                alterations.retain(|a| retry.contains(&a.entity));
                request.entries = alterations
                    .iter()
                    .map(ClientQuotaAlteration::to_wire)
                    .collect();
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_components_and_ops_on_the_wire() {
        let c = ClientQuotaFilterComponent::of_entity("user", "alice").to_wire();
        assert_eq!((c.match_type, c.match_.as_deref()), (0, Some("alice")));
        let c = ClientQuotaFilterComponent::of_default_entity("user").to_wire();
        assert_eq!((c.match_type, c.match_), (1, None));
        let c = ClientQuotaFilterComponent::of_entity_type("client-id").to_wire();
        assert_eq!((c.match_type, c.match_), (2, None));
        let entity = ClientQuotaEntity::new()
            .user("alice")
            .with("client-id", None);
        let wire = ClientQuotaAlteration::new(entity)
            .set("producer_byte_rate", 1024.0)
            .remove("consumer_byte_rate")
            .to_wire();
        assert_eq!(wire.entity.len(), 2);
        assert_eq!(wire.entity[0].entity_name, None); // client-id default sorts first
        assert!(wire.ops[0].remove && wire.ops[0].key == "consumer_byte_rate");
        assert!(!wire.ops[1].remove && wire.ops[1].value == 1024.0);
    }
}
