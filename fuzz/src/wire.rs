//! The peer's side of the wire: requests cut out of the bytes the core wrote, response
//! frames built with the generated codecs.

use bytes::{Bytes, BytesMut};
use kafka_core::protocol::messages::request_header::RequestHeader;
use kafka_core::protocol::messages::response_header::ResponseHeader;
use kafka_core::protocol::{visit_message, ApiKey, Decodable, Direction, Message, MessageVisitor};

/// One request the core wrote, as the broker reads it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The API.
    pub api: ApiKey,
    /// The version it was written at.
    pub version: i16,
    /// Its correlation id.
    pub correlation_id: i32,
    /// The body after the header.
    pub body: Bytes,
}

impl Seen {
    /// The body decoded as `M` (the request type of `self.api`).
    pub fn decode<M: Message>(&self) -> Option<M> {
        M::decode_from(self.body.clone(), self.version).ok()
    }
}

/// Bytes the core wrote on one connection, cut into requests as they complete.
#[derive(Debug, Default)]
pub struct Inbound {
    buf: BytesMut,
}

impl Inbound {
    /// Takes what the core wrote; returns the requests completed by it. A frame the
    /// broker cannot read is a finding: the core only writes what its codecs encode.
    pub fn push(&mut self, data: &[u8]) -> Vec<Seen> {
        self.buf.extend_from_slice(data);
        let mut seen = Vec::new();
        while self.buf.len() >= 4 {
            let size = i32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
            assert!(size >= 8, "the core wrote a frame of size {size}");
            let size = size as usize;
            if self.buf.len() < 4 + size {
                break;
            }
            let _ = self.buf.split_to(4);
            let mut frame = self.buf.split_to(size).freeze();
            let key = i16::from_be_bytes([frame[0], frame[1]]);
            let version = i16::from_be_bytes([frame[2], frame[3]]);
            let api = ApiKey::from_i16(key).expect("the core wrote a known API key");
            let header = RequestHeader::decode(&mut frame, api.request_header_version(version))
                .expect("the core wrote a readable request header");
            seen.push(Seen {
                api,
                version,
                correlation_id: header.correlation_id,
                body: frame,
            });
        }
        seen
    }
}

/// A response frame (size, header, body) for `to` with `body` encoded at its version.
pub fn frame<M: Message>(to: &Seen, body: &M) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoded = Vec::new();
    if let Err(e) = body.encode_to(&mut encoded, to.version) {
        // A value the version cannot carry: the default message instead.
        if std::env::var_os("FUZZ_TRACE").is_some() {
            eprintln!(
                "{} v{}: {e}; answered with the default",
                M::NAME,
                to.version
            );
        }
        encoded.clear();
        let _ = M::default().encode_to(&mut encoded, to.version);
    }
    raw_frame(to, &encoded, &mut out);
    out
}

/// A response frame for `to` around `body` bytes as given.
pub fn raw_frame(to: &Seen, body: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    let header = ResponseHeader {
        correlation_id: to.correlation_id,
        ..Default::default()
    };
    header
        .encode_to(out, to.api.response_header_version(to.version))
        .expect("response header encodes");
    out.extend_from_slice(body);
    let size = (out.len() - start - 4) as i32;
    out[start..start + 4].copy_from_slice(&size.to_be_bytes());
}

/// The default response body of any API at `to`'s version (no error, nothing in it):
/// the answer for APIs without a builder.
pub fn default_body(to: &Seen) -> Vec<u8> {
    struct Empty {
        version: i16,
    }
    impl MessageVisitor for Empty {
        type Output = Vec<u8>;
        fn visit<M: Message>(self) -> Vec<u8> {
            let mut out = Vec::new();
            let _ = M::default().encode_to(&mut out, self.version);
            out
        }
    }
    visit_message(
        to.api,
        Direction::Response,
        Empty {
            version: to.version,
        },
    )
}

/// The `throttle_time_ms` a response body carries, if it decodes and has one.
pub fn throttle_of(api: ApiKey, version: i16, body: &[u8]) -> Option<i32> {
    struct Throttle {
        version: i16,
        body: Bytes,
    }
    impl MessageVisitor for Throttle {
        type Output = Option<i32>;
        fn visit<M: Message>(self) -> Option<i32> {
            M::decode_from(self.body, self.version)
                .ok()?
                .throttle_time_ms(self.version)
        }
    }
    visit_message(
        api,
        Direction::Response,
        Throttle {
            version,
            body: Bytes::copy_from_slice(body),
        },
    )
}

/// The body of a response frame (after size and header), for `throttle_of`.
pub fn body_of(frame: &[u8], api: ApiKey, version: i16) -> Option<&[u8]> {
    let mut rest = Bytes::copy_from_slice(frame.get(4..)?);
    let len = rest.len();
    ResponseHeader::decode(&mut rest, api.response_header_version(version)).ok()?;
    frame.get(4 + (len - rest.len())..)
}
