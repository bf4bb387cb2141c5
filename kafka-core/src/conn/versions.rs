//! Version negotiation: what the broker advertises in ApiVersions, and the version each
//! request is sent at (the highest that both sides support).

use crate::protocol::messages::api_versions::ApiVersionsResponse;
use crate::protocol::{ApiKey, VersionRange};

use super::error::RequestError;

/// The broker's advertised version ranges, by API key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiVersionTable {
    ranges: Vec<(i16, VersionRange)>,
    /// Cluster-wide finalized features `(name, max level)`, sorted by name.
    finalized: Vec<(String, i16)>,
    /// The epoch of `finalized` (-1: the broker named none).
    finalized_epoch: i64,
}

impl ApiVersionTable {
    /// Builds the table from an ApiVersions response.
    pub fn from_response(resp: &ApiVersionsResponse) -> Self {
        let mut ranges: Vec<(i16, VersionRange)> = resp
            .api_keys
            .iter()
            .filter(|k| k.min_version <= k.max_version)
            .map(|k| (k.api_key, VersionRange::new(k.min_version, k.max_version)))
            .collect();
        ranges.sort_by_key(|(k, _)| *k);
        let mut finalized: Vec<(String, i16)> = resp
            .finalized_features
            .iter()
            .map(|f| (f.name.clone(), f.max_version_level))
            .collect();
        finalized.sort();
        ApiVersionTable {
            ranges,
            finalized,
            finalized_epoch: resp.finalized_features_epoch,
        }
    }

    /// The finalized (cluster-wide) max level of feature `name`, as this broker knew it
    /// (`None`: not finalized, e.g. `transaction.version` on a cluster without it).
    pub fn finalized_feature(&self, name: &str) -> Option<i16> {
        self.finalized
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .ok()
            .map(|i| self.finalized[i].1)
    }

    /// The epoch of the finalized features (-1 if the broker sent none).
    pub fn finalized_epoch(&self) -> i64 {
        self.finalized_epoch
    }

    /// The broker's range for `api`, if it advertises it.
    pub fn broker_range(&self, api: ApiKey) -> Option<VersionRange> {
        self.ranges
            .binary_search_by_key(&(api as i16), |(k, _)| *k)
            .ok()
            .map(|i| self.ranges[i].1)
    }

    /// The highest version of `api` both sides support, or a typed error naming both ranges.
    ///
    /// Our ranges come from the 4.3.1 schemas, so Produce is never below v3 even though
    /// 4.x brokers advertise 0 (they reject v0-2).
    pub fn negotiate(&self, api: ApiKey) -> Result<i16, RequestError> {
        let ours = api.supported_versions();
        let broker = self.broker_range(api);
        broker
            .and_then(|b| b.intersect(ours))
            .map(|r| r.max)
            .ok_or(RequestError::UnsupportedVersion { api, ours, broker })
    }

    /// Like [`negotiate`](Self::negotiate), but never above `max`.
    pub fn negotiate_at_most(&self, api: ApiKey, max: i16) -> Result<i16, RequestError> {
        let ours = api.supported_versions();
        let capped = VersionRange::new(ours.min, ours.max.min(max));
        let broker = self.broker_range(api);
        broker
            .filter(|_| capped.min <= capped.max)
            .and_then(|b| b.intersect(capped))
            .map(|r| r.max)
            .ok_or(RequestError::UnsupportedVersion {
                api,
                ours: capped,
                broker,
            })
    }

    /// Every advertised `(api key, range)`, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (i16, VersionRange)> + '_ {
        self.ranges.iter().copied()
    }
}

impl ApiKey {
    /// The versions this client sends: every schema version except an unstable top one,
    /// which brokers only accept when `unstable.api.versions.enable` is set.
    pub fn supported_versions(self) -> VersionRange {
        let v = self.versions();
        if self.latest_version_unstable() && v.max > v.min {
            VersionRange::new(v.min, v.max - 1)
        } else {
            v
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::messages::api_versions::response::ApiVersion;

    fn table(entries: &[(i16, i16, i16)]) -> ApiVersionTable {
        let resp = ApiVersionsResponse {
            api_keys: entries
                .iter()
                .map(|&(k, min, max)| ApiVersion {
                    api_key: k,
                    min_version: min,
                    max_version: max,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        ApiVersionTable::from_response(&resp)
    }

    #[test]
    fn picks_highest_common_version_and_clamps_produce() {
        let t = table(&[(0, 0, 13), (1, 4, 12), (3, 0, 20)]);
        assert_eq!(t.negotiate(ApiKey::Produce), Ok(13));
        assert_eq!(t.negotiate(ApiKey::Fetch), Ok(12));
        assert_eq!(t.negotiate(ApiKey::Metadata), Ok(13));
        // An old broker that only offers Produce v0-2: refused locally.
        let old = table(&[(0, 0, 2)]);
        assert_eq!(
            old.negotiate(ApiKey::Produce),
            Err(RequestError::UnsupportedVersion {
                api: ApiKey::Produce,
                ours: VersionRange::new(3, 13),
                broker: Some(VersionRange::new(0, 2))
            })
        );
        assert!(matches!(
            old.negotiate(ApiKey::Fetch),
            Err(RequestError::UnsupportedVersion { broker: None, .. })
        ));
    }

    #[test]
    fn unstable_top_versions_are_not_sent() {
        assert_eq!(
            ApiKey::InitProducerId.supported_versions(),
            VersionRange::new(0, 5)
        );
        let t = table(&[(22, 0, 6)]);
        assert_eq!(t.negotiate(ApiKey::InitProducerId), Ok(5));
    }
}
