//! [`Mode::SaslStall`](super::Mode::SaslStall): a broker that accepts SaslHandshake and
//! then never lets the exchange finish.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use kafka_core::protocol::messages::sasl_authenticate::{
    SaslAuthenticateRequest, SaslAuthenticateResponse,
};
use kafka_core::protocol::messages::sasl_handshake::{SaslHandshakeRequest, SaslHandshakeResponse};
use kafka_core::protocol::{ApiKey, Message};

use super::{answer_frame, request_body, Header, State};

/// How a SASL exchange is kept from finishing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaslStall {
    /// SaslHandshake is accepted; SaslAuthenticate is read and never answered.
    NoAuthenticateAnswer,
    /// SCRAM: every SaslAuthenticate is answered with a server-first challenge (a valid
    /// one for the client's nonce), so the exchange never concludes.
    EndlessChallenges,
}

/// The answer to a SaslHandshake or SaslAuthenticate request (`None`: none).
pub(super) fn answer(h: &Header, stall: SaslStall, st: &State) -> Option<Vec<u8>> {
    let (key, body) = request_body(h)?;
    match key {
        ApiKey::SaslHandshake => {
            let req = SaslHandshakeRequest::decode_from(body, h.version).ok()?;
            let resp = SaslHandshakeResponse {
                mechanisms: vec![req.mechanism],
                ..Default::default()
            };
            Some(answer_frame(h, key, &resp))
        }
        ApiKey::SaslAuthenticate => {
            st.sasl_authenticates.fetch_add(1, Ordering::SeqCst);
            if stall == SaslStall::NoAuthenticateAnswer {
                return None;
            }
            let req = SaslAuthenticateRequest::decode_from(body, h.version).ok()?;
            let text = String::from_utf8_lossy(&req.auth_bytes);
            // The client's nonce from a client-first message; a later message repeats
            // the combined nonce after `r=`.
            let nonce = text
                .split(',')
                .find_map(|f| f.strip_prefix("r="))
                .unwrap_or("x")
                .to_string();
            let challenge = format!("r={nonce}fake,s=c2FsdHNhbHQ=,i=4096");
            let resp = SaslAuthenticateResponse {
                auth_bytes: Bytes::from(challenge.into_bytes()),
                ..Default::default()
            };
            Some(answer_frame(h, key, &resp))
        }
        _ => None,
    }
}
