//! Request and response headers: which header version an API version uses, and
//! encoding/decoding of framed messages.
//!
//! Rules (from Kafka's generator): a request uses header v2 when its API version is
//! flexible, else v1; a response uses header v1 when flexible, else v0, except that
//! ApiVersions responses always use header v0 so any client can read the broker's answer.

use bytes::Bytes;

use super::messages::request_header::RequestHeader;
use super::messages::response_header::ResponseHeader;
use super::messages::ApiKey;
use super::{Decodable, DecodeError, EncodeError, Message, Request};

/// Appends one framed request (`int32` size, header, body) to `buf`.
///
/// On error `buf` is left as it was.
pub fn write_request<R: Request>(
    buf: &mut Vec<u8>,
    version: i16,
    correlation_id: i32,
    client_id: Option<&str>,
    request: &R,
) -> Result<(), EncodeError> {
    let start = buf.len();
    buf.extend_from_slice(&[0; 4]);
    let header = RequestHeader {
        request_api_key: R::API_KEY as i16,
        request_api_version: version,
        correlation_id,
        client_id: client_id.map(str::to_owned),
        ..Default::default()
    };
    let result = header
        .encode_to(buf, R::API_KEY.request_header_version(version))
        .and_then(|()| request.encode_to(buf, version));
    if let Err(e) = result {
        buf.truncate(start);
        return Err(e);
    }
    let size = buf.len() - start - 4;
    let Ok(size) = i32::try_from(size) else {
        buf.truncate(start);
        return Err(EncodeError::TooLong { length: size });
    };
    buf[start..start + 4].copy_from_slice(&size.to_be_bytes());
    Ok(())
}

/// Reads the correlation id of a response frame (size prefix already removed) without
/// decoding the rest; every response header starts with it.
pub fn peek_correlation_id(frame: &[u8]) -> Result<i32, DecodeError> {
    match frame.get(..4) {
        Some(b) => Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]])),
        None => Err(DecodeError::Truncated {
            needed: 4,
            remaining: frame.len(),
        }),
    }
}

/// Decodes a response frame (size prefix already removed) for request type `R` at
/// `version`: returns the header's correlation id and the body.
pub fn read_response<R: Request>(
    mut frame: Bytes,
    version: i16,
) -> Result<(i32, R::Response), DecodeError> {
    let header_version = R::API_KEY.response_header_version(version);
    let header = ResponseHeader::decode(&mut frame, header_version)?;
    Ok((
        header.correlation_id,
        R::Response::decode_from(frame, version)?,
    ))
}

impl ApiKey {
    /// The request header version used with request `version` of this API.
    pub fn request_header_version(self, version: i16) -> i16 {
        match self.request_flexible_min() {
            Some(min) if version >= min => 2,
            _ => 1,
        }
    }

    /// The response header version used with response `version` of this API.
    pub fn response_header_version(self, version: i16) -> i16 {
        if self == ApiKey::ApiVersions {
            return 0;
        }
        match self.response_flexible_min() {
            Some(min) if version >= min => 1,
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::messages::api_versions::{ApiVersionsRequest, ApiVersionsResponse};

    #[test]
    fn framed_api_versions_request_matches_kafka_layout() {
        let mut buf = vec![0xee];
        let req = ApiVersionsRequest {
            client_software_name: "kafka-rs".into(),
            client_software_version: "0.1".into(),
            ..Default::default()
        };
        write_request(&mut buf, 3, 7, Some("c"), &req).unwrap();
        // size, api key 18, version 3, correlation 7, client id "c" as int16 string,
        // header tags, then the compact body.
        let expected: &[u8] = &[
            0, 0, 0, 26, 0, 18, 0, 3, 0, 0, 0, 7, 0, 1, b'c', 0, 9, b'k', b'a', b'f', b'k', b'a',
            b'-', b'r', b's', 4, b'0', b'.', b'1', 0,
        ];
        assert_eq!(&buf[1..], expected);
    }

    #[test]
    fn api_versions_response_uses_header_v0() {
        let mut body = Vec::new();
        ApiVersionsResponse::default()
            .encode_to(&mut body, 3)
            .unwrap();
        let mut frame = 9i32.to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        let (id, _) = read_response::<ApiVersionsRequest>(Bytes::from(frame.clone()), 3).unwrap();
        assert_eq!(id, 9);
        assert_eq!(peek_correlation_id(&frame).unwrap(), 9);
        assert!(peek_correlation_id(&[1, 2]).is_err());
        let _ = ResponseHeader::decode(&mut Bytes::from(frame), 0).unwrap();
    }

    #[test]
    fn header_versions_follow_flexibility_with_api_versions_exception() {
        assert_eq!(ApiKey::Produce.request_header_version(8), 1);
        assert_eq!(ApiKey::Produce.request_header_version(9), 2);
        assert_eq!(ApiKey::Produce.response_header_version(9), 1);
        assert_eq!(ApiKey::ApiVersions.request_header_version(3), 2);
        assert_eq!(ApiKey::ApiVersions.response_header_version(3), 0);
        assert_eq!(ApiKey::SaslHandshake.request_header_version(1), 1);
        assert_eq!(ApiKey::SaslHandshake.response_header_version(1), 0);
    }
}
