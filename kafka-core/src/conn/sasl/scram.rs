//! SCRAM-SHA-256 and SCRAM-SHA-512 clients (RFC 5802, RFC 7677), as Kafka runs them:
//! no channel binding (`n,,`), no authzid, the password used as UTF-8 without SASLprep
//! (like Kafka's Java client), and an iteration count within Kafka's 4096..=16384.
//!
//! ```text
//! client-first  n,,n=<user>,r=<client nonce>
//! server-first  r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>
//! client-final  c=biws,r=<nonce>,p=<base64 ClientProof>
//! server-final  v=<base64 ServerSignature>   or   e=<error>
//! ```

use crate::protocol::types::base64_standard;
use crate::secret::{ct_eq, Secret};

use super::crypto::{base64_decode, xor_into, ScramHash};
use super::{utf8, Mechanism, SaslError, Step};

/// A SCRAM client exchange. The client nonce comes from the caller: the core has no
/// randomness of its own.
#[derive(Debug)]
pub struct ScramClient {
    mechanism: Mechanism,
    hash: ScramHash,
    username: String,
    password: Secret,
    client_nonce: String,
    max_iterations: u32,
    state: State,
}

/// The exchange's states, each named for what it awaits.
#[derive(Debug)]
enum State {
    Start,
    ExpectServerFirst { client_first_bare: String },
    ExpectServerFinal { server_signature: Vec<u8> },
    Complete,
    Failed,
}

impl ScramClient {
    /// Kafka's minimum iteration count (`ScramMechanism.minIterations`); the Java client
    /// refuses a server-first message asking for fewer.
    pub const MIN_ITERATIONS: u32 = 4096;
    /// The default largest iteration count accepted from a server: Kafka's own maximum
    /// (`ScramMechanism.maxIterations`, 16,384), above which a Kafka broker refuses to
    /// store a SCRAM credential, so no honest broker asks for more. Each iteration is
    /// one HMAC per PBKDF2 block: measured in the test profile, 16,384 costs ~35 ms and
    /// 1,000,000 costs ~0.9 s (SHA-256) to ~2.4 s (SHA-512) of CPU per connection
    /// attempt, which a hostile server could otherwise demand.
    pub const DEFAULT_MAX_ITERATIONS: u32 = 16_384;

    /// Prepares an exchange for `mechanism` (a SCRAM one). `client_nonce` must be fresh
    /// caller randomness in printable ASCII without `,` (for example 32 base64 or hex
    /// characters).
    pub fn new(
        mechanism: Mechanism,
        username: impl Into<String>,
        password: Secret,
        client_nonce: String,
    ) -> Result<Self, SaslError> {
        let hash = match mechanism {
            Mechanism::ScramSha256 => ScramHash::Sha256,
            Mechanism::ScramSha512 => ScramHash::Sha512,
            Mechanism::Plain | Mechanism::OAuthBearer => {
                return Err(SaslError::CredentialsMismatch { mechanism })
            }
        };
        let username = username.into();
        if username.is_empty() || username.contains('\0') {
            return Err(SaslError::InvalidCredentials {
                reason: "SCRAM username is empty or contains NUL",
            });
        }
        if client_nonce.is_empty() || !client_nonce.bytes().all(is_nonce_char) {
            return Err(SaslError::InvalidNonce);
        }
        Ok(Self {
            mechanism,
            hash,
            username,
            password,
            client_nonce,
            max_iterations: Self::DEFAULT_MAX_ITERATIONS,
            state: State::Start,
        })
    }

    /// Sets the largest iteration count accepted from the server (default
    /// [`Self::DEFAULT_MAX_ITERATIONS`]). Only for servers that are not Kafka brokers:
    /// raising it lets the server decide how much CPU each authentication costs.
    pub fn with_max_iterations(mut self, max_iterations: u32) -> Self {
        self.max_iterations = max_iterations;
        self
    }

    /// The mechanism this client runs.
    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
    }

    /// The client-first message `n,,n=<escaped user>,r=<client nonce>`.
    pub fn initial_response(&mut self) -> Result<Vec<u8>, SaslError> {
        match std::mem::replace(&mut self.state, State::Failed) {
            State::Start => {
                let bare = format!(
                    "n={},r={}",
                    escape_username(&self.username),
                    self.client_nonce
                );
                let message = format!("n,,{bare}").into_bytes();
                self.state = State::ExpectServerFirst {
                    client_first_bare: bare,
                };
                Ok(message)
            }
            State::Failed => Err(SaslError::Failed),
            _ => Err(SaslError::OutOfOrder {
                call: "initial_response",
            }),
        }
    }

    /// Takes the server-first message (answers with client-final) or the server-final
    /// message (verifies the server signature, then [`Step::Done`]).
    pub fn handle_challenge(&mut self, server_bytes: &[u8]) -> Result<Step, SaslError> {
        match std::mem::replace(&mut self.state, State::Failed) {
            State::ExpectServerFirst { client_first_bare } => {
                let (client_final, server_signature) =
                    self.handle_server_first(&client_first_bare, server_bytes)?;
                self.state = State::ExpectServerFinal { server_signature };
                Ok(Step::Respond(client_final.into_bytes()))
            }
            State::ExpectServerFinal { server_signature } => {
                handle_server_final(&server_signature, server_bytes)?;
                self.state = State::Complete;
                Ok(Step::Done)
            }
            State::Failed => Err(SaslError::Failed),
            State::Start | State::Complete => Err(SaslError::OutOfOrder {
                call: "handle_challenge",
            }),
        }
    }

    /// Whether the server proved it knows the password and accepted ours.
    pub fn is_complete(&self) -> bool {
        matches!(self.state, State::Complete)
    }

    /// Checks server-first and computes the client-final message and the server
    /// signature to expect.
    fn handle_server_first(
        &self,
        client_first_bare: &str,
        server_bytes: &[u8],
    ) -> Result<(String, Vec<u8>), SaslError> {
        let server_first = utf8(server_bytes)?;
        if let Some(message) = server_first.strip_prefix("e=") {
            return Err(server_error(message));
        }
        let mut attrs = server_first.split(',');
        let first = attrs.next().unwrap_or_default();
        if first.starts_with("m=") {
            return Err(SaslError::UnsupportedMandatoryExtension);
        }
        let nonce = attribute(first, "r=")?;
        let salt = attribute(attrs.next().unwrap_or_default(), "s=")?;
        let iterations = attribute(attrs.next().unwrap_or_default(), "i=")?;
        // Later attributes are extensions, which a client may ignore.

        if !nonce.bytes().all(is_nonce_char) {
            return Err(bad("server nonce has invalid characters"));
        }
        if nonce.len() <= self.client_nonce.len() || !nonce.starts_with(&self.client_nonce) {
            return Err(SaslError::NonceMismatch);
        }
        let salt = base64_decode(salt).ok_or_else(|| bad("salt is not base64"))?;
        if salt.is_empty() {
            return Err(bad("salt is empty"));
        }
        let iterations = self.check_iterations(iterations)?;

        let hash = self.hash;
        let salted = hash.pbkdf2(self.password.expose().as_bytes(), &salt, iterations)?;
        let mut client_proof = hash.hmac(&salted, b"Client Key")?;
        let stored_key = hash.digest(&client_proof);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
        let client_signature = hash.hmac(&stored_key, auth_message.as_bytes())?;
        xor_into(&mut client_proof, &client_signature);
        let server_key = hash.hmac(&salted, b"Server Key")?;
        let server_signature = hash.hmac(&server_key, auth_message.as_bytes())?;
        let client_final = format!("{without_proof},p={}", base64_standard(&client_proof));
        Ok((client_final, server_signature))
    }

    fn check_iterations(&self, text: &str) -> Result<u32, SaslError> {
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad("iteration count is not a number"));
        }
        let iterations = text.parse::<u64>().unwrap_or(u64::MAX);
        let (min, max) = (Self::MIN_ITERATIONS, self.max_iterations);
        match u32::try_from(iterations) {
            Ok(i) if (min..=max).contains(&i) => Ok(i),
            _ => Err(SaslError::IterationCountOutOfRange {
                iterations,
                min,
                max,
            }),
        }
    }
}

/// Checks server-final: `v=` must carry the expected signature; `e=` is an error.
fn handle_server_final(expected: &[u8], server_bytes: &[u8]) -> Result<(), SaslError> {
    let server_final = utf8(server_bytes)?;
    if let Some(message) = server_final.strip_prefix("e=") {
        return Err(server_error(message));
    }
    let first = server_final.split(',').next().unwrap_or_default();
    let signature = attribute(first, "v=")?;
    let signature = base64_decode(signature).ok_or_else(|| bad("signature is not base64"))?;
    if ct_eq(&signature, expected) {
        Ok(())
    } else {
        Err(SaslError::ServerSignatureMismatch)
    }
}

/// The value of attribute `name` (`"r="`), which must be the whole of `attr`'s key.
fn attribute<'a>(attr: &'a str, name: &'static str) -> Result<&'a str, SaslError> {
    attr.strip_prefix(name).ok_or(SaslError::BadServerMessage {
        reason: match name {
            "r=" => "expected nonce attribute r=",
            "s=" => "expected salt attribute s=",
            "i=" => "expected iteration attribute i=",
            _ => "expected verifier attribute v=",
        },
    })
}

/// An `e=` error; the value ends at the next `,` (extensions may follow).
fn server_error(value: &str) -> SaslError {
    let message = value.split(',').next().unwrap_or_default();
    SaslError::ServerError {
        message: message.to_owned(),
    }
}

fn bad(reason: &'static str) -> SaslError {
    SaslError::BadServerMessage { reason }
}

/// RFC 5802 `printable`: `%x21-2B / %x2D-7E` (visible ASCII except `,`).
fn is_nonce_char(b: u8) -> bool {
    matches!(b, 0x21..=0x2b | 0x2d..=0x7e)
}

/// RFC 5802 `saslname`: `=` becomes `=3D` and `,` becomes `=2C`.
fn escape_username(username: &str) -> String {
    let mut out = String::with_capacity(username.len());
    for c in username.chars() {
        match c {
            '=' => out.push_str("=3D"),
            ',' => out.push_str("=2C"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
