//! SASL OAUTHBEARER (RFC 7628) as Kafka's client sends it.
//!
//! Client initial response: `n,,\x01auth=Bearer <token>[\x01key=value...]\x01\x01` (no
//! authzid; extensions, KIP-342, follow the `auth` pair). The server answers an accepted
//! token with empty bytes. A rejected token gets a JSON error challenge instead, which
//! the client must acknowledge with a single `\x01` before the server fails the
//! authentication.

use crate::secret::Secret;

use super::{SaslError, Step};

/// The separator between OAUTHBEARER key/value pairs (RFC 7628 `kvsep`).
const SEP: u8 = 0x01;

/// An OAUTHBEARER exchange with a token the caller obtained.
#[derive(Debug)]
pub struct OAuthBearerClient {
    token: Secret,
    extensions: Vec<(String, String)>,
    server_error: Option<String>,
    state: State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Start,
    ExpectOutcome,
    ExpectFailure,
    Complete,
    Failed,
}

impl OAuthBearerClient {
    /// Prepares an exchange. The token must be an RFC 6750 `b64token` (a JWT is one);
    /// extension keys are ASCII letters other than `auth`, values are non-empty
    /// printable ASCII, space, tab, CR or LF (Kafka's rules).
    pub fn new(token: Secret, extensions: Vec<(String, String)>) -> Result<Self, SaslError> {
        if !is_b64token(token.expose()) {
            return Err(SaslError::InvalidCredentials {
                reason: "OAUTHBEARER token is not an RFC 6750 b64token",
            });
        }
        for (key, value) in &extensions {
            if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(SaslError::InvalidCredentials {
                    reason: "OAUTHBEARER extension key is not ASCII letters",
                });
            }
            if key == "auth" {
                return Err(SaslError::InvalidCredentials {
                    reason: "OAUTHBEARER extension key `auth` is reserved",
                });
            }
            let value_ok = |b: u8| matches!(b, 0x21..=0x7e | b' ' | b'\t' | b'\r' | b'\n');
            if value.is_empty() || !value.bytes().all(value_ok) {
                return Err(SaslError::InvalidCredentials {
                    reason: "OAUTHBEARER extension value has invalid characters",
                });
            }
        }
        Ok(Self {
            token,
            extensions,
            server_error: None,
            state: State::Start,
        })
    }

    /// The client's initial response: GS2 header, `auth=Bearer <token>`, extensions.
    pub fn initial_response(&mut self) -> Result<Vec<u8>, SaslError> {
        if self.state != State::Start {
            return Err(self.fail("initial_response"));
        }
        let mut out = Vec::with_capacity(64 + self.token.expose().len());
        out.extend_from_slice(b"n,,");
        out.push(SEP);
        out.extend_from_slice(b"auth=Bearer ");
        out.extend_from_slice(self.token.expose().as_bytes());
        for (key, value) in &self.extensions {
            out.push(SEP);
            out.extend_from_slice(key.as_bytes());
            out.push(b'=');
            out.extend_from_slice(value.as_bytes());
        }
        out.extend_from_slice(&[SEP, SEP]);
        self.state = State::ExpectOutcome;
        Ok(out)
    }

    /// Takes the server's answer: empty means accepted; anything else is the server's
    /// JSON error, acknowledged with `\x01` (the server then fails the authentication).
    pub fn handle_challenge(&mut self, server_bytes: &[u8]) -> Result<Step, SaslError> {
        match self.state {
            State::ExpectOutcome if server_bytes.is_empty() => {
                self.state = State::Complete;
                Ok(Step::Done)
            }
            State::ExpectOutcome => {
                self.server_error = Some(String::from_utf8_lossy(server_bytes).into_owned());
                self.state = State::ExpectFailure;
                Ok(Step::Respond(vec![SEP]))
            }
            State::ExpectFailure => {
                self.state = State::Failed;
                Err(SaslError::ServerError {
                    message: self.server_error.clone().unwrap_or_default(),
                })
            }
            State::Start | State::Complete | State::Failed => Err(self.fail("handle_challenge")),
        }
    }

    /// Whether the server accepted the token.
    pub fn is_complete(&self) -> bool {
        self.state == State::Complete
    }

    /// The server's error challenge (JSON), once one arrived.
    pub fn server_error(&self) -> Option<&str> {
        self.server_error.as_deref()
    }

    fn fail(&mut self, call: &'static str) -> SaslError {
        let was = std::mem::replace(&mut self.state, State::Failed);
        if was == State::Failed {
            SaslError::Failed
        } else {
            SaslError::OutOfOrder { call }
        }
    }
}

/// RFC 6750 `b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
fn is_b64token(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    const JWT: &str = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.";

    #[test]
    fn initial_response_without_extensions() {
        let mut c = OAuthBearerClient::new(Secret::new(JWT), vec![]).unwrap();
        let expected = format!("n,,\x01auth=Bearer {JWT}\x01\x01");
        assert_eq!(c.initial_response().unwrap(), expected.as_bytes());
        assert_eq!(c.handle_challenge(b"").unwrap(), Step::Done);
        assert!(c.is_complete());
        assert_eq!(c.server_error(), None);
    }

    #[test]
    fn initial_response_with_extensions() {
        let ext = vec![
            ("logicalCluster".to_owned(), "lkc-123".to_owned()),
            ("identityPoolId".to_owned(), "pool 9".to_owned()),
        ];
        let mut c = OAuthBearerClient::new(Secret::new("tok"), ext).unwrap();
        assert_eq!(
            c.initial_response().unwrap(),
            b"n,,\x01auth=Bearer tok\x01logicalCluster=lkc-123\x01identityPoolId=pool 9\x01\x01"
        );
    }

    #[test]
    fn server_error_is_acknowledged_then_surfaced() {
        let mut c = OAuthBearerClient::new(Secret::new("tok"), vec![]).unwrap();
        let _ = c.initial_response().unwrap();
        let json = br#"{"status":"invalid_token"}"#;
        assert_eq!(c.handle_challenge(json).unwrap(), Step::Respond(vec![0x01]));
        assert_eq!(c.server_error(), Some(r#"{"status":"invalid_token"}"#));
        assert!(!c.is_complete());
        assert_eq!(
            c.handle_challenge(b""),
            Err(SaslError::ServerError {
                message: r#"{"status":"invalid_token"}"#.into()
            })
        );
        assert_eq!(c.handle_challenge(b""), Err(SaslError::Failed));
        assert_eq!(c.server_error(), Some(r#"{"status":"invalid_token"}"#));
    }

    #[test]
    fn invalid_token_and_extensions_refused() {
        for token in ["", "a b", "tok\x01", "=", "a=b"] {
            assert!(
                OAuthBearerClient::new(Secret::new(token), vec![]).is_err(),
                "{token:?}"
            );
        }
        assert!(OAuthBearerClient::new(Secret::new("abc=="), vec![]).is_ok());
        for (k, v) in [
            ("auth", "x"),
            ("a1", "x"),
            ("", "x"),
            ("k", ""),
            ("k", "a\x01"),
        ] {
            let ext = vec![(k.to_owned(), v.to_owned())];
            assert!(
                OAuthBearerClient::new(Secret::new("t"), ext).is_err(),
                "{k:?}={v:?}"
            );
        }
    }

    #[test]
    fn debug_hides_token() {
        let mut c = OAuthBearerClient::new(Secret::new("s3cr3t-token"), vec![]).unwrap();
        let _ = c.initial_response().unwrap();
        assert!(!format!("{c:?}").contains("s3cr3t"));
    }
}
