//! ACL operations: CreateAcls, DescribeAcls, DeleteAcls.

use std::collections::BTreeSet;
use std::time::Duration;

use super::{
    AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, AclPermissionType, PatternType,
    ResourcePattern, ResourceType, Single, TopLevelError,
};
use crate::admin::{AdminError, Batch, ItemResults, Items, OpContext, Operation, Timeout};
use crate::cluster::Route;
use crate::protocol::messages::create_acls::{CreateAclsRequest, CreateAclsResponse};
use crate::protocol::messages::delete_acls::response::DeleteAclsFilterResult;
use crate::protocol::messages::delete_acls::{DeleteAclsRequest, DeleteAclsResponse};
use crate::protocol::messages::describe_acls::{DescribeAclsRequest, DescribeAclsResponse};

/// Creates ACL bindings (CreateAcls to any broker). Bindings with filter-only or
/// unknown values fail locally; retriable per-binding errors are retried until the
/// deadline.
#[derive(Debug)]
pub struct CreateAcls {
    items: Items<CreateAclsRequest, AclBinding, ()>,
    /// The valid bindings, to send.
    bindings: Vec<AclBinding>,
    timeout: Timeout,
}

impl CreateAcls {
    /// Creates `bindings` (duplicates are sent once).
    pub fn new(bindings: impl IntoIterator<Item = AclBinding>) -> Self {
        let mut items = Items::new("binding");
        let mut valid = Vec::new();
        for b in bindings.into_iter().collect::<BTreeSet<_>>() {
            match b.invalid() {
                Some(why) => items.settle(b, Err(AdminError::Invalid(why))),
                None => valid.push(b),
            }
        }
        CreateAcls {
            items,
            bindings: valid,
            timeout: Timeout::default(),
        }
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

impl Operation for CreateAcls {
    type Output = Result<ItemResults<AclBinding, ()>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if !self.items.started() && !self.bindings.is_empty() {
            let request = CreateAclsRequest {
                creations: self.bindings.iter().map(AclBinding::to_wire).collect(),
                ..Default::default()
            };
            self.items.start(Route::Any, request, self.bindings.clone());
        }
        let absorb = |batch: Batch<'_, AclBinding, ()>, resp: CreateAclsResponse| {
            batch.in_order(
                resp.results,
                "bindings",
                |r| r.error_code,
                |r| AdminError::check(r.error_code, r.error_message.as_deref()),
            )
        };
        self.items.poll(cx, deadline, absorb, |request, retry| {
            request.creations = retry.iter().map(AclBinding::to_wire).collect();
        })
    }
}

impl TopLevelError for DescribeAclsResponse {
    fn top_level_error(&self) -> (i16, Option<&str>) {
        (self.error_code, self.error_message.as_deref())
    }
}

/// Lists the ACL bindings that match a filter (DescribeAcls to any broker).
#[derive(Debug)]
pub struct DescribeAcls {
    single: Single<DescribeAclsRequest>,
    invalid: Option<AdminError>,
}

impl DescribeAcls {
    /// The bindings matching `filter` ([`AclBindingFilter::ANY`] for all).
    pub fn new(filter: AclBindingFilter) -> Self {
        let request = DescribeAclsRequest {
            resource_type_filter: filter.pattern.resource_type.code(),
            resource_name_filter: filter.pattern.name.clone(),
            pattern_type_filter: filter.pattern.pattern_type.code(),
            principal_filter: filter.entry.principal.clone(),
            host_filter: filter.entry.host.clone(),
            operation: filter.entry.operation.code(),
            permission_type: filter.entry.permission.code(),
            ..Default::default()
        };
        DescribeAcls {
            single: Single::new(request),
            invalid: filter.invalid(),
        }
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.single.set_timeout(limit);
        self
    }
}

impl Operation for DescribeAcls {
    type Output = Result<Vec<AclBinding>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        if let Some(e) = self.invalid.take() {
            return Some(Err(e));
        }
        let resp = match self.single.poll(cx)? {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let mut out = Vec::new();
        for r in resp.resources {
            let pattern = ResourcePattern {
                resource_type: ResourceType::from_code(r.resource_type),
                name: r.resource_name,
                pattern_type: PatternType::from_code(r.pattern_type),
            };
            for a in r.acls {
                out.push(AclBinding {
                    pattern: pattern.clone(),
                    entry: AccessControlEntry {
                        principal: a.principal,
                        host: a.host,
                        operation: AclOperation::from_code(a.operation),
                        permission: AclPermissionType::from_code(a.permission_type),
                    },
                });
            }
        }
        Some(Ok(out))
    }
}

/// A binding that a DeleteAcls filter matched, and whether deleting it worked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletedAcl {
    /// The matched binding.
    pub binding: AclBinding,
    /// Whether it was deleted.
    pub result: Result<(), AdminError>,
}

/// Deletes the ACL bindings that match each filter (DeleteAcls to any broker): per
/// filter, the bindings it matched. Retriable per-filter errors are retried until the
/// deadline.
#[derive(Debug)]
pub struct DeleteAcls {
    items: Items<DeleteAclsRequest, AclBindingFilter, Vec<DeletedAcl>>,
    /// The valid filters, to send.
    filters: Vec<AclBindingFilter>,
    timeout: Timeout,
}

impl DeleteAcls {
    /// Deletes what `filters` match (duplicate filters are sent once).
    pub fn new(filters: impl IntoIterator<Item = AclBindingFilter>) -> Self {
        let mut items = Items::new("filter");
        let mut valid = Vec::new();
        for f in filters.into_iter().collect::<BTreeSet<_>>() {
            match f.invalid() {
                Some(e) => items.settle(f, Err(e)),
                None => valid.push(f),
            }
        }
        DeleteAcls {
            items,
            filters: valid,
            timeout: Timeout::default(),
        }
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

fn deleted(r: DeleteAclsFilterResult) -> Result<Vec<DeletedAcl>, AdminError> {
    AdminError::check(r.error_code, r.error_message.as_deref())?;
    Ok(r.matching_acls
        .into_iter()
        .map(|m| DeletedAcl {
            result: AdminError::check(m.error_code, m.error_message.as_deref()),
            binding: AclBinding {
                pattern: ResourcePattern {
                    resource_type: ResourceType::from_code(m.resource_type),
                    name: m.resource_name,
                    pattern_type: PatternType::from_code(m.pattern_type),
                },
                entry: AccessControlEntry {
                    principal: m.principal,
                    host: m.host,
                    operation: AclOperation::from_code(m.operation),
                    permission: AclPermissionType::from_code(m.permission_type),
                },
            },
        })
        .collect())
}

impl Operation for DeleteAcls {
    type Output = Result<ItemResults<AclBindingFilter, Vec<DeletedAcl>>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if !self.items.started() && !self.filters.is_empty() {
            let request = DeleteAclsRequest {
                filters: self
                    .filters
                    .iter()
                    .map(AclBindingFilter::to_delete_wire)
                    .collect(),
                ..Default::default()
            };
            self.items.start(Route::Any, request, self.filters.clone());
        }
        let absorb = |batch: Batch<'_, AclBindingFilter, Vec<DeletedAcl>>,
                      resp: DeleteAclsResponse| {
            batch.in_order(resp.filter_results, "filters", |r| r.error_code, deleted)
        };
        self.items.poll(cx, deadline, absorb, |request, retry| {
            request.filters = retry.iter().map(AclBindingFilter::to_delete_wire).collect();
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_only_values_are_refused_locally() {
        let good = AclBinding::new(
            ResourcePattern::new(ResourceType::Topic, "t", PatternType::Literal),
            AccessControlEntry::new("User:a", "*", AclOperation::Read, AclPermissionType::Allow),
        );
        assert_eq!(good.invalid(), None);
        let mut bad = good.clone();
        bad.pattern.pattern_type = PatternType::Match;
        let op = CreateAcls::new([good.clone(), good.clone(), bad.clone()]);
        assert_eq!(op.bindings, vec![good.clone()]);
        assert!(matches!(
            op.items.results().get(&bad),
            Some(Err(AdminError::Invalid(_)))
        ));
        let f = good.to_filter();
        assert_eq!(f.invalid(), None);
        assert_eq!(f.pattern.name.as_deref(), Some("t"));
        let mut unknown = AclBindingFilter::ANY;
        unknown.entry.operation = AclOperation::Unknown(0);
        assert!(unknown.invalid().is_some());
    }
}
