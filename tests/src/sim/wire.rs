//! The simulated brokers speak the real wire format: requests are cut out of the bytes
//! the client wrote and decoded with the generated codecs; answers are encoded the same
//! way, so the client under test runs byte for byte as in production.

use bytes::Bytes;
use kafka_core::protocol::messages::request_header::RequestHeader;
use kafka_core::protocol::messages::response_header::ResponseHeader;
use kafka_core::protocol::{ApiKey, Decodable, Encodable, Message};

/// One request as a simulated broker reads it.
#[derive(Debug, Clone)]
pub struct Frame {
    /// The API.
    pub api: ApiKey,
    /// Its version.
    pub version: i16,
    /// The request header (correlation id, client id).
    pub header: RequestHeader,
    /// The undecoded body.
    pub body: Bytes,
}

impl Frame {
    /// The body decoded as `M`, or why not.
    pub fn decode<M: Message>(&self) -> Result<M, String> {
        M::decode_from(self.body.clone(), self.version).map_err(|e| format!("{:?}: {e}", self.api))
    }
}

/// Why bytes written by the client are not a request (the broker then drops the
/// connection, as Kafka does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadFrame(pub String);

/// Takes every complete frame off the front of `buf`; a partial frame stays.
pub fn take_frames(buf: &mut Vec<u8>) -> Result<Vec<Frame>, BadFrame> {
    let mut frames = Vec::new();
    let mut at = 0;
    while buf.len() - at >= 4 {
        let size = i32::from_be_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
        let size = usize::try_from(size).map_err(|_| BadFrame(format!("size {size}")))?;
        if !(8..=64 << 20).contains(&size) {
            return Err(BadFrame(format!("frame size {size}")));
        }
        if buf.len() - at - 4 < size {
            break;
        }
        let mut frame = Bytes::copy_from_slice(&buf[at + 4..at + 4 + size]);
        at += 4 + size;
        let key = i16::from_be_bytes([frame[0], frame[1]]);
        let api = ApiKey::from_i16(key).ok_or_else(|| BadFrame(format!("api key {key}")))?;
        let version = i16::from_be_bytes([frame[2], frame[3]]);
        let header = RequestHeader::decode(&mut frame, api.request_header_version(version))
            .map_err(|e| BadFrame(format!("header: {e}")))?;
        frames.push(Frame {
            api,
            version,
            header,
            body: frame,
        });
    }
    buf.drain(..at);
    Ok(frames)
}

/// The framed answer to `to` carrying `body`.
pub fn answer<M: Message>(to: &Frame, body: &M) -> Vec<u8> {
    let header = ResponseHeader {
        correlation_id: to.header.correlation_id,
        ..Default::default()
    };
    let mut frame = vec![0; 4];
    header
        .encode(&mut frame, to.api.response_header_version(to.version))
        .expect("a response header always encodes");
    body.encode(&mut frame, to.version)
        .expect("simulated answers are built to encode at the asked version");
    let size = (frame.len() - 4) as i32;
    frame[..4].copy_from_slice(&size.to_be_bytes());
    frame
}
