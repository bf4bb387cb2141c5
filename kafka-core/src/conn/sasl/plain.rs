//! SASL PLAIN (RFC 4616): `authzid NUL authcid NUL passwd`, with an empty authzid.

use crate::secret::Secret;

use super::{SaslError, Step};

/// A PLAIN exchange: one client message, then the server's empty success answer.
#[derive(Debug)]
pub struct PlainClient {
    username: String,
    password: Secret,
    state: State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Start,
    ExpectOutcome,
    Complete,
    Failed,
}

impl PlainClient {
    /// Prepares a PLAIN exchange. Neither value may contain a NUL byte, and the
    /// username may not be empty.
    pub fn new(username: impl Into<String>, password: Secret) -> Result<Self, SaslError> {
        let username = username.into();
        if username.is_empty() {
            return Err(SaslError::InvalidCredentials {
                reason: "PLAIN username is empty",
            });
        }
        if username.contains('\0') || password.expose().contains('\0') {
            return Err(SaslError::InvalidCredentials {
                reason: "PLAIN username or password contains NUL",
            });
        }
        Ok(Self {
            username,
            password,
            state: State::Start,
        })
    }

    /// The client's only message: `\0username\0password`.
    pub fn initial_response(&mut self) -> Result<Vec<u8>, SaslError> {
        if self.state != State::Start {
            return Err(self.fail("initial_response"));
        }
        let (user, pass) = (self.username.as_bytes(), self.password.expose().as_bytes());
        let mut out = Vec::with_capacity(2 + user.len() + pass.len());
        out.push(0);
        out.extend_from_slice(user);
        out.push(0);
        out.extend_from_slice(pass);
        self.state = State::ExpectOutcome;
        Ok(out)
    }

    /// Takes the server's answer, which is empty on success.
    pub fn handle_challenge(&mut self, server_bytes: &[u8]) -> Result<Step, SaslError> {
        if self.state != State::ExpectOutcome {
            return Err(self.fail("handle_challenge"));
        }
        if !server_bytes.is_empty() {
            self.state = State::Failed;
            return Err(SaslError::BadServerMessage {
                reason: "PLAIN server answer is not empty",
            });
        }
        self.state = State::Complete;
        Ok(Step::Done)
    }

    /// Whether the server accepted the credentials.
    pub fn is_complete(&self) -> bool {
        self.state == State::Complete
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_bytes() {
        let mut c = PlainClient::new("alice", Secret::new("wonder land")).unwrap();
        assert_eq!(c.initial_response().unwrap(), b"\0alice\0wonder land");
        assert_eq!(c.handle_challenge(b"").unwrap(), Step::Done);
        assert!(c.is_complete());
    }

    #[test]
    fn plain_rejects_nul_and_empty_user() {
        assert!(PlainClient::new("a\0b", Secret::new("p")).is_err());
        assert!(PlainClient::new("a", Secret::new("p\0")).is_err());
        assert!(PlainClient::new("", Secret::new("p")).is_err());
    }

    #[test]
    fn plain_misuse_is_sticky() {
        let mut c = PlainClient::new("a", Secret::new("p")).unwrap();
        assert_eq!(
            c.handle_challenge(b""),
            Err(SaslError::OutOfOrder {
                call: "handle_challenge"
            })
        );
        assert_eq!(c.initial_response(), Err(SaslError::Failed));
        let mut c = PlainClient::new("a", Secret::new("p")).unwrap();
        let _ = c.initial_response().unwrap();
        assert!(c.handle_challenge(b"x").is_err());
        assert!(!c.is_complete());
        assert_eq!(c.handle_challenge(b""), Err(SaslError::Failed));
    }

    #[test]
    fn plain_debug_hides_password() {
        let c = PlainClient::new("alice", Secret::new("pw-secret")).unwrap();
        assert!(!format!("{c:?}").contains("pw-secret"));
    }
}
