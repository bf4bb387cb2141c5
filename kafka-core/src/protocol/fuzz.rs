//! Entry points for the protocol fuzz targets (`fuzz/`) and their corpus replay test.
//!
//! Input layout: byte 0 picks the API key (index into [`ApiKey::ALL`]), byte 1 the version
//! within the key's range, the rest is the message body. A successful decode must
//! re-encode, and the re-encoding must decode and re-encode to the same bytes.

use bytes::Bytes;

use super::{visit_message, ApiKey, Direction, Message, MessageVisitor};

/// Decodes `data` as a request of the chosen API key and version; panics only on a
/// violated invariant (a panic is a finding).
pub fn decode_request(data: &[u8]) {
    decode(Direction::Request, data);
}

/// Like [`decode_request`], for responses.
pub fn decode_response(data: &[u8]) {
    decode(Direction::Response, data);
}

/// Builds a fuzz input for `key`/`version` around a message body (for seed corpora).
pub fn seed(key: ApiKey, version: i16, body: &[u8]) -> Vec<u8> {
    let index = ApiKey::ALL.iter().position(|k| *k == key).unwrap_or(0) as u8;
    let mut out = vec![index, (version - key.versions().min) as u8];
    out.extend_from_slice(body);
    out
}

fn decode(direction: Direction, data: &[u8]) {
    let [k, v, body @ ..] = data else { return };
    let key = ApiKey::ALL[*k as usize % ApiKey::ALL.len()];
    let range = key.versions();
    let span = (range.max - range.min + 1) as u8;
    let version = range.min + i16::from(*v % span);
    visit_message(
        key,
        direction,
        RoundTrip {
            body: Bytes::copy_from_slice(body),
            version,
        },
    );
}

struct RoundTrip {
    body: Bytes,
    version: i16,
}

impl MessageVisitor for RoundTrip {
    type Output = ();

    fn visit<M: Message>(self) {
        let Ok(msg) = M::decode_from(self.body, self.version) else {
            return;
        };
        let mut first = Vec::new();
        if let Err(e) = msg.encode_to(&mut first, self.version) {
            panic!(
                "{} v{}: a decoded message failed to encode: {e}",
                M::NAME,
                self.version
            );
        }
        let again = M::decode_from(Bytes::from(first.clone()), self.version).unwrap_or_else(|e| {
            panic!(
                "{} v{}: our own encoding failed to decode: {e}",
                M::NAME,
                self.version
            )
        });
        let mut second = Vec::new();
        again
            .encode_to(&mut second, self.version)
            .expect("re-encode");
        assert_eq!(
            first,
            second,
            "{} v{}: encoding is not stable",
            M::NAME,
            self.version
        );
    }
}
