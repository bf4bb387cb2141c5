//! ApiVersions: every served API from its lowest version to the highest the client
//! sends; `transaction.version` 2 finalized when the world runs transactions v2.

use kafka_core::protocol::messages::api_versions::response::{ApiVersion, FinalizedFeatureKey};
use kafka_core::protocol::messages::api_versions::ApiVersionsResponse;

use super::super::wire::{answer, Frame};
use super::SERVED;

/// The answer to `frame`; `txn_v2`: `transaction.version` 2 is finalized (KIP-890).
pub fn handle(frame: &Frame, txn_v2: bool) -> Vec<u8> {
    let mut body = ApiVersionsResponse {
        api_keys: SERVED
            .iter()
            .map(|k| ApiVersion {
                api_key: *k as i16,
                min_version: k.versions().min,
                max_version: k.supported_versions().max,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    if txn_v2 && frame.version >= 3 {
        body.finalized_features_epoch = 1;
        body.finalized_features = vec![FinalizedFeatureKey {
            name: "transaction.version".into(),
            max_version_level: 2,
            min_version_level: 2,
            ..Default::default()
        }];
    }
    // A client may ask at a version newer than ours; the answer is then at v0, as Kafka
    // does (the client retries at a version it finds in the answer).
    let mut to = frame.clone();
    if !frame.api.versions().contains(frame.version) {
        to.version = 0;
    }
    answer(&to, &body)
}
