//! DescribeFeatures (from ApiVersions) and UpdateFeatures (by the controller).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::admin::topics::controller_retriable;
use crate::admin::{AdminError, Call, OpContext, Operation, Timeout};
use crate::cluster::Route;
use crate::protocol::messages::api_versions::{ApiVersionsRequest, ApiVersionsResponse};
use crate::protocol::messages::update_features::request::FeatureUpdateKey;
use crate::protocol::messages::update_features::{UpdateFeaturesRequest, UpdateFeaturesResponse};

/// The cluster-wide finalized range of a feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FinalizedVersionRange {
    /// Finalized minimum version level.
    pub min_version_level: i16,
    /// Finalized maximum version level (the level in force).
    pub max_version_level: i16,
}

/// The range of versions of a feature that a broker supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SupportedVersionRange {
    /// Minimum supported version.
    pub min_version: i16,
    /// Maximum supported version.
    pub max_version: i16,
}

/// Features as a broker reports them (Java's `FeatureMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureMetadata {
    /// Cluster-wide finalized features (e.g. `metadata.version`), by name.
    pub finalized_features: BTreeMap<String, FinalizedVersionRange>,
    /// Epoch of the finalized features (`None` if the broker did not know it).
    pub finalized_features_epoch: Option<i64>,
    /// Features the answering broker supports, by name.
    pub supported_features: BTreeMap<String, SupportedVersionRange>,
}

/// Describes the cluster's features: an ApiVersions request to any broker, whose answer
/// carries the finalized and supported features.
#[derive(Debug)]
pub struct DescribeFeatures {
    call: Option<Call<ApiVersionsRequest>>,
    timeout: Timeout,
}

impl Default for DescribeFeatures {
    fn default() -> Self {
        Self::new()
    }
}

impl DescribeFeatures {
    /// Describes the features.
    pub fn new() -> Self {
        DescribeFeatures {
            call: None,
            timeout: Timeout::default(),
        }
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }
}

fn feature_metadata(resp: ApiVersionsResponse) -> Result<FeatureMetadata, AdminError> {
    AdminError::check(resp.error_code, None)?;
    Ok(FeatureMetadata {
        finalized_features: resp
            .finalized_features
            .into_iter()
            .map(|f| {
                let range = FinalizedVersionRange {
                    min_version_level: f.min_version_level,
                    max_version_level: f.max_version_level,
                };
                (f.name, range)
            })
            .collect(),
        finalized_features_epoch: (resp.finalized_features_epoch >= 0)
            .then_some(resp.finalized_features_epoch),
        supported_features: resp
            .supported_features
            .into_iter()
            .map(|f| {
                let range = SupportedVersionRange {
                    min_version: f.min_version,
                    max_version: f.max_version,
                };
                (f.name, range)
            })
            .collect(),
    })
}

impl Operation for DescribeFeatures {
    type Output = Result<FeatureMetadata, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if self.call.is_none() {
            // Brokers refuse (INVALID_REQUEST) v3+ requests without a valid software name.
            let common = cx.config().common();
            let request = ApiVersionsRequest {
                client_software_name: common.client_software_name.clone(),
                client_software_version: common.client_software_version.clone(),
                ..Default::default()
            };
            self.call = Some(Call::new(Route::Any, request));
        }
        let outcome = self.call.as_mut()?.poll(cx, deadline)?;
        Some(outcome.and_then(feature_metadata))
    }
}

/// How a feature update may move the finalized level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UpgradeType {
    /// Only upgrades.
    Upgrade,
    /// Downgrades that lose no metadata.
    SafeDowngrade,
    /// Downgrades that may lose metadata.
    UnsafeDowngrade,
}

impl UpgradeType {
    /// The protocol value (request version 1+).
    pub fn code(self) -> i8 {
        match self {
            UpgradeType::Upgrade => 1,
            UpgradeType::SafeDowngrade => 2,
            UpgradeType::UnsafeDowngrade => 3,
        }
    }
}

/// A new finalized level for a feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureUpdate {
    /// The new maximum version level; below 1 deletes the feature (a downgrade).
    pub max_version_level: i16,
    /// Whether the update may upgrade or downgrade.
    pub upgrade_type: UpgradeType,
}

impl FeatureUpdate {
    /// Sets the feature's level to `max_version_level`, moving it as `upgrade_type` allows.
    pub fn new(max_version_level: i16, upgrade_type: UpgradeType) -> Self {
        FeatureUpdate {
            max_version_level,
            upgrade_type,
        }
    }
}

/// Upgrades or downgrades finalized features (UpdateFeatures, sent to the controller).
///
/// Results are per feature. Since request version 2 the controller answers all-or-nothing
/// with one top-level error, which then stands for every feature (as in the Java client).
/// `NOT_CONTROLLER` is retried until the deadline. An empty update list, an empty feature
/// name, or an upgrade to a level below 1 fail the call with [`AdminError::Invalid`].
#[derive(Debug)]
pub struct UpdateFeatures {
    updates: BTreeMap<String, FeatureUpdate>,
    validate_only: bool,
    call: Option<Call<UpdateFeaturesRequest>>,
    timeout: Timeout,
}

impl UpdateFeatures {
    /// Applies `updates` (feature name → new level).
    pub fn new(updates: impl IntoIterator<Item = (impl Into<String>, FeatureUpdate)>) -> Self {
        UpdateFeatures {
            updates: updates.into_iter().map(|(k, v)| (k.into(), v)).collect(),
            validate_only: false,
            call: None,
            timeout: Timeout::default(),
        }
    }

    /// Only checks that the updates could be applied.
    pub fn validate_only(mut self, yes: bool) -> Self {
        self.validate_only = yes;
        self
    }

    /// Overrides `default.api.timeout.ms` (also sent as the broker-side timeout).
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }

    fn check(&self) -> Result<(), AdminError> {
        if self.updates.is_empty() {
            return Err(AdminError::Invalid("no feature updates".into()));
        }
        for (name, update) in &self.updates {
            if name.trim().is_empty() {
                return Err(AdminError::Invalid("empty feature name".into()));
            }
            if update.max_version_level < 1 && update.upgrade_type == UpgradeType::Upgrade {
                return Err(AdminError::Invalid(format!(
                    "feature {name}: level {} needs a downgrade type",
                    update.max_version_level
                )));
            }
        }
        Ok(())
    }

    fn request(&self, timeout_ms: i32) -> UpdateFeaturesRequest {
        UpdateFeaturesRequest {
            timeout_ms,
            feature_updates: self
                .updates
                .iter()
                .map(|(name, update)| FeatureUpdateKey {
                    feature: name.clone(),
                    max_version_level: update.max_version_level,
                    // v1+ carries the type. AllowDowngrade is v0's only field for it and
                    // may not be set in a v1+ request, so v0-only brokers (before 3.3)
                    // get upgrades only.
                    upgrade_type: update.upgrade_type.code(),
                    ..Default::default()
                })
                .collect(),
            validate_only: self.validate_only,
            ..Default::default()
        }
    }

    fn results(&self, resp: UpdateFeaturesResponse) -> BTreeMap<String, Result<(), AdminError>> {
        if let Err(e) = AdminError::check(resp.error_code, resp.error_message.as_deref()) {
            return self
                .updates
                .keys()
                .map(|name| (name.clone(), Err(e.clone())))
                .collect();
        }
        // Version 2+: success is only the top-level code.
        if resp.results.is_empty() {
            return self
                .updates
                .keys()
                .map(|name| (name.clone(), Ok(())))
                .collect();
        }
        let mut results: BTreeMap<String, Result<(), AdminError>> = resp
            .results
            .into_iter()
            .filter(|r| self.updates.contains_key(&r.feature))
            .map(|r| {
                let result = AdminError::check(r.error_code, r.error_message.as_deref());
                (r.feature, result)
            })
            .collect();
        for name in self.updates.keys() {
            results
                .entry(name.clone())
                .or_insert_with(|| Err(AdminError::missing("feature")));
        }
        results
    }
}

impl Operation for UpdateFeatures {
    type Output = Result<BTreeMap<String, Result<(), AdminError>>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if self.call.is_none() {
            if let Err(e) = self.check() {
                return Some(Err(e));
            }
            let request = self.request(self.timeout.as_ms(cx));
            self.call = Some(Call::new(Route::Controller, request));
        }
        let call = self.call.as_mut()?;
        let outcome = call.poll_retrying(cx, deadline, |r| {
            controller_retriable(r.error_code)
                .then(|| crate::client::Cause::code(r.error_code, None))
        })?;
        Some(outcome.map(|resp| self.results(resp)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::messages::api_versions::response::{
        FinalizedFeatureKey, SupportedFeatureKey,
    };
    use crate::protocol::messages::update_features::response::UpdatableFeatureResult;
    use crate::protocol::KafkaCode;

    #[test]
    fn features_come_from_api_versions() {
        let resp = ApiVersionsResponse {
            finalized_features_epoch: 7,
            finalized_features: vec![FinalizedFeatureKey {
                name: "metadata.version".into(),
                min_version_level: 1,
                max_version_level: 27,
                ..Default::default()
            }],
            supported_features: vec![SupportedFeatureKey {
                name: "metadata.version".into(),
                min_version: 7,
                max_version: 28,
                ..Default::default()
            }],
            ..Default::default()
        };
        let meta = feature_metadata(resp).unwrap();
        assert_eq!(meta.finalized_features_epoch, Some(7));
        assert_eq!(
            meta.finalized_features["metadata.version"].max_version_level,
            27
        );
        assert_eq!(meta.supported_features["metadata.version"].min_version, 7);
        let unknown = feature_metadata(ApiVersionsResponse {
            finalized_features_epoch: -1,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(unknown.finalized_features_epoch, None);
    }

    fn update(names: &[&str]) -> UpdateFeatures {
        UpdateFeatures::new(names.iter().map(|n| {
            (
                n.to_string(),
                FeatureUpdate::new(2, UpgradeType::SafeDowngrade),
            )
        }))
    }

    #[test]
    fn bad_updates_fail_the_call_before_sending() {
        assert!(matches!(update(&[]).check(), Err(AdminError::Invalid(_))));
        assert!(matches!(
            update(&[" "]).check(),
            Err(AdminError::Invalid(_))
        ));
        let delete =
            UpdateFeatures::new([("f".to_string(), FeatureUpdate::new(0, UpgradeType::Upgrade))]);
        assert!(matches!(delete.check(), Err(AdminError::Invalid(_))));
        let req = update(&["f"]).validate_only(true).request(10);
        let key = &req.feature_updates[0];
        assert_eq!((key.upgrade_type, key.allow_downgrade), (2, false));
        assert!(req.validate_only);
    }

    #[test]
    fn top_level_answer_stands_for_every_feature() {
        let op = update(&["a", "b"]);
        let ok = op.results(UpdateFeaturesResponse::default());
        assert!(ok.values().all(Result::is_ok), "{ok:?}");
        let failed = op.results(UpdateFeaturesResponse {
            error_code: KafkaCode::INVALID_UPDATE_VERSION.0,
            error_message: Some("nope".into()),
            ..Default::default()
        });
        assert!(failed
            .values()
            .all(|r| r.as_ref().unwrap_err().code() == Some(KafkaCode::INVALID_UPDATE_VERSION)));
        let per_feature = op.results(UpdateFeaturesResponse {
            results: vec![UpdatableFeatureResult {
                feature: "a".into(),
                error_code: KafkaCode::FEATURE_UPDATE_FAILED.0,
                ..Default::default()
            }],
            ..Default::default()
        });
        assert_eq!(
            per_feature["a"].as_ref().unwrap_err().code(),
            Some(KafkaCode::FEATURE_UPDATE_FAILED)
        );
        assert!(matches!(per_feature["b"], Err(AdminError::Protocol(_))));
    }
}
