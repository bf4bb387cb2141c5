//! ApiVersions: every served API from its lowest version to the highest the client
//! sends.

use kafka_core::protocol::messages::api_versions::response::ApiVersion;
use kafka_core::protocol::messages::api_versions::ApiVersionsResponse;

use super::super::wire::{answer, Frame};
use super::SERVED;

/// The answer to `frame`.
pub fn handle(frame: &Frame) -> Vec<u8> {
    let body = ApiVersionsResponse {
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
    // A client may ask at a version newer than ours; the answer is then at v0, as Kafka
    // does (the client retries at a version it finds in the answer).
    let mut to = frame.clone();
    if !frame.api.versions().contains(frame.version) {
        to.version = 0;
    }
    answer(&to, &body)
}
