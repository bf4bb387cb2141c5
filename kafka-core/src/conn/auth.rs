//! The SASL stage of a connection: SaslHandshake v1, then SaslAuthenticate rounds driven
//! by a [`SaslClient`], and re-authentication before the session lifetime the broker
//! returned runs out (KIP-368).

use std::time::{Duration, Instant};

use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::protocol::messages::sasl_authenticate::SaslAuthenticateRequest;
use crate::protocol::messages::sasl_handshake::SaslHandshakeRequest;
use crate::protocol::{read_response, ApiKey, KafkaCode};

use super::error::ConnError;
use super::request::OutboundRequest;
use super::sasl::{Mechanism, SaslClient, SaslCredentials, Step};

/// Where credentials come from: fixed, or asked of the owner at every
/// (re-)authentication (OAUTHBEARER tokens that expire). The core never calls out: it
/// says it needs credentials ([`super::Connection::needs_credentials`]) and waits for
/// [`super::Connection::supply_credentials`].
#[derive(Debug, Clone)]
pub enum CredentialSource {
    /// The same credentials every time.
    Static(SaslCredentials),
    /// Asked for at every authentication.
    Asked,
}

/// What the connection should do after an auth step.
pub(crate) enum AuthOutput {
    /// Send this request.
    Send(Box<dyn OutboundRequest>),
    /// Waiting for the owner to supply credentials.
    NeedCredentials,
    /// Authenticated.
    Done,
    /// Authentication failed.
    Failed(ConnError),
}

/// SASL settings and progress for one connection.
#[derive(Debug)]
pub struct Auth {
    mechanism: Mechanism,
    credentials: CredentialSource,
    entropy: [u8; 32],
    rounds: u64,
    client: Option<SaslClient>,
    reauth_at: Option<Instant>,
    /// Credentials supplied for the next start (asked sources).
    supplied: Option<SaslCredentials>,
}

impl Auth {
    /// SASL with `mechanism`; `entropy` (fresh randomness from the adapter) seeds the SCRAM
    /// nonces of this connection.
    pub fn new(mechanism: Mechanism, credentials: CredentialSource, entropy: [u8; 32]) -> Self {
        Auth {
            mechanism,
            credentials,
            entropy,
            rounds: 0,
            client: None,
            reauth_at: None,
            supplied: None,
        }
    }

    /// Gives the credentials an asked source waits for; the next `start` uses them.
    pub(crate) fn supply(&mut self, credentials: SaslCredentials) {
        self.supplied = Some(credentials);
    }

    /// When the session must be re-authenticated, if the broker set a lifetime.
    pub fn reauth_deadline(&self) -> Option<Instant> {
        self.reauth_at
    }

    pub(crate) fn reauth_due(&self, now: Instant) -> bool {
        self.reauth_at.is_some_and(|t| t <= now)
    }

    /// Starts (or restarts, for re-authentication) the exchange with a SaslHandshake.
    pub(crate) fn start(&mut self, _now: Instant) -> AuthOutput {
        self.reauth_at = None;
        let credentials = match &self.credentials {
            CredentialSource::Static(c) => c.clone(),
            CredentialSource::Asked => match self.supplied.take() {
                Some(c) => c,
                None => return AuthOutput::NeedCredentials,
            },
        };
        match SaslClient::new(self.mechanism, credentials, self.nonce()) {
            Ok(c) => self.client = Some(c),
            Err(e) => return AuthOutput::Failed(ConnError::Sasl(e)),
        }
        AuthOutput::Send(Box::new(SaslHandshakeRequest {
            mechanism: self.mechanism.name().into(),
            ..Default::default()
        }))
    }

    /// A 32-character nonce from the connection's entropy and a round counter.
    fn nonce(&mut self) -> String {
        self.rounds += 1;
        let digest = Sha256::new()
            .chain_update(self.entropy)
            .chain_update(self.rounds.to_be_bytes())
            .finalize();
        digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
    }

    /// Handles the response to a request this stage sent.
    pub(crate) fn handle_response(
        &mut self,
        now: Instant,
        api: ApiKey,
        version: i16,
        frame: Bytes,
    ) -> Result<AuthOutput, ConnError> {
        let mechanism = self.mechanism.name().to_string();
        let decode_err = |source| ConnError::Decode {
            api,
            version,
            source,
        };
        let client = self.client.as_mut().ok_or(ConnError::UnexpectedFrame)?;
        match api {
            ApiKey::SaslHandshake => {
                let (_, resp) =
                    read_response::<SaslHandshakeRequest>(frame, version).map_err(decode_err)?;
                if resp.error_code == KafkaCode::UNSUPPORTED_SASL_MECHANISM.0 {
                    return Ok(AuthOutput::Failed(ConnError::UnsupportedSaslMechanism {
                        mechanism,
                        enabled: resp.mechanisms,
                    }));
                }
                if resp.error_code != 0 {
                    let message = KafkaCode(resp.error_code).to_string();
                    return Ok(AuthOutput::Failed(ConnError::AuthenticationFailed {
                        mechanism,
                        message,
                    }));
                }
                let first = client.initial_response().map_err(ConnError::Sasl)?;
                Ok(AuthOutput::Send(Box::new(SaslAuthenticateRequest {
                    auth_bytes: Bytes::from(first),
                    ..Default::default()
                })))
            }
            ApiKey::SaslAuthenticate => {
                let (_, resp) =
                    read_response::<SaslAuthenticateRequest>(frame, version).map_err(decode_err)?;
                if resp.error_code != 0 {
                    let message = resp
                        .error_message
                        .filter(|m| !m.is_empty())
                        .or_else(|| client.server_error().map(str::to_owned))
                        .unwrap_or_else(|| KafkaCode(resp.error_code).to_string());
                    return Ok(AuthOutput::Failed(ConnError::AuthenticationFailed {
                        mechanism,
                        message,
                    }));
                }
                match client
                    .handle_challenge(&resp.auth_bytes)
                    .map_err(ConnError::Sasl)?
                {
                    Step::Respond(bytes) => {
                        Ok(AuthOutput::Send(Box::new(SaslAuthenticateRequest {
                            auth_bytes: Bytes::from(bytes),
                            ..Default::default()
                        })))
                    }
                    Step::Done => {
                        if resp.session_lifetime_ms > 0 {
                            // Re-authenticate at 85% of the lifetime, as the Java client
                            // does at 85-95%.
                            // Any lifetime the broker sends, up to i64::MAX ms: no
                            // overflow; one past the clock's range means never.
                            let ms =
                                (u128::from(resp.session_lifetime_ms as u64) * 85 / 100) as u64;
                            self.reauth_at = now.checked_add(Duration::from_millis(ms));
                        }
                        Ok(AuthOutput::Done)
                    }
                }
            }
            _ => Err(ConnError::UnexpectedFrame),
        }
    }
}
