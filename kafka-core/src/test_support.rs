//! Test helpers shared by module tests: a scripted broker that reads the frames the
//! core writes and builds encoded responses.

use std::time::Instant;

use bytes::Bytes;

use crate::protocol::messages::api_versions::response::ApiVersion;
use crate::protocol::messages::api_versions::ApiVersionsResponse;
use crate::protocol::messages::request_header::RequestHeader;
use crate::protocol::messages::response_header::ResponseHeader;
use crate::protocol::{ApiKey, Decodable, Encodable, Message};

/// A request as the scripted broker sees it.
pub(crate) struct Seen {
    pub(crate) header: RequestHeader,
    pub(crate) body: Bytes,
}

impl Seen {
    pub(crate) fn api(&self) -> ApiKey {
        ApiKey::from_i16(self.header.request_api_key).expect("known api")
    }
    pub(crate) fn version(&self) -> i16 {
        self.header.request_api_version
    }
    /// Decodes the request body as `M`.
    pub(crate) fn decode<M: Message>(&self) -> M {
        M::decode_from(self.body.clone(), self.version()).expect("request decodes")
    }
}

/// Splits bytes the core wrote into requests.
pub(crate) fn parse_requests(out: Vec<u8>) -> Vec<Seen> {
    let mut b = Bytes::from(out);
    let mut seen = Vec::new();
    while !b.is_empty() {
        let size = i32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let mut frame = b.slice(4..4 + size);
        b = b.slice(4 + size..);
        let key = ApiKey::from_i16(i16::from_be_bytes([frame[0], frame[1]])).expect("known api");
        let version = i16::from_be_bytes([frame[2], frame[3]]);
        let header =
            RequestHeader::decode(&mut frame, key.request_header_version(version)).expect("header");
        seen.push(Seen {
            header,
            body: frame,
        });
    }
    seen
}

/// A framed response to `to` with `body` encoded at `body_version`.
pub(crate) fn response_frame<M: Message>(to: &Seen, body: &M, body_version: i16) -> Vec<u8> {
    let header = ResponseHeader {
        correlation_id: to.header.correlation_id,
        ..Default::default()
    };
    let mut frame = vec![0; 4];
    header
        .encode(&mut frame, to.api().response_header_version(to.version()))
        .expect("header");
    body.encode(&mut frame, body_version).expect("body");
    let size = (frame.len() - 4) as i32;
    frame[..4].copy_from_slice(&size.to_be_bytes());
    frame
}

/// An ApiVersions answer offering every version this crate sends.
pub(crate) fn broker_versions() -> ApiVersionsResponse {
    ApiVersionsResponse {
        api_keys: ApiKey::ALL
            .iter()
            .map(|k| ApiVersion {
                api_key: *k as i16,
                min_version: k.versions().min,
                max_version: k.supported_versions().max,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// The origin of a test's virtual clock; time then only moves by hand.
#[allow(clippy::disallowed_methods)]
pub(crate) fn origin() -> Instant {
    Instant::now() // virtual clock origin, tests only
}
