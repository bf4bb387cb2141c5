//! Delegation tokens: create, renew, expire, describe.
//!
//! The broker only handles them on authenticated (SASL or TLS) connections that were not
//! themselves authenticated with a token, and only with `delegation.token.secret.key`
//! set. A token's HMAC is its password: it is held as a [`Secret`] (standard base64, as
//! SCRAM takes it), so `Debug` never shows it.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use bytes::Bytes;

use super::{Single, TopLevelError};
use crate::admin::{AdminError, OpContext, Operation};
use crate::conn::sasl::crypto::base64_decode;
use crate::protocol::messages::create_delegation_token::request::CreatableRenewers;
use crate::protocol::messages::create_delegation_token::{
    CreateDelegationTokenRequest, CreateDelegationTokenResponse,
};
use crate::protocol::messages::describe_delegation_token::request::DescribeDelegationTokenOwner;
use crate::protocol::messages::describe_delegation_token::{
    DescribeDelegationTokenRequest, DescribeDelegationTokenResponse,
};
use crate::protocol::messages::expire_delegation_token::{
    ExpireDelegationTokenRequest, ExpireDelegationTokenResponse,
};
use crate::protocol::messages::renew_delegation_token::{
    RenewDelegationTokenRequest, RenewDelegationTokenResponse,
};
use crate::secret::Secret;

/// A principal: type and name (`User:alice`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KafkaPrincipal {
    /// Principal type (`User`).
    pub principal_type: String,
    /// Name.
    pub name: String,
}

impl KafkaPrincipal {
    /// A principal of `principal_type` named `name`.
    pub fn new(principal_type: impl Into<String>, name: impl Into<String>) -> Self {
        KafkaPrincipal {
            principal_type: principal_type.into(),
            name: name.into(),
        }
    }

    /// `User:name`.
    pub fn user(name: impl Into<String>) -> Self {
        Self::new("User", name)
    }
}

impl fmt::Display for KafkaPrincipal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.principal_type, self.name)
    }
}

impl FromStr for KafkaPrincipal {
    type Err = AdminError;

    /// Parses `Type:name`.
    fn from_str(s: &str) -> Result<Self, AdminError> {
        match s.split_once(':') {
            Some((t, n)) if !t.is_empty() => Ok(KafkaPrincipal::new(t, n)),
            _ => Err(AdminError::Invalid(format!(
                "principal {s:?} is not Type:name"
            ))),
        }
    }
}

/// What the broker knows about a delegation token (all times in ms since the epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenInformation {
    /// Token id (the SCRAM user name when authenticating with the token).
    pub token_id: String,
    /// Owner.
    pub owner: KafkaPrincipal,
    /// Who asked for the token.
    pub token_requester: KafkaPrincipal,
    /// Principals that may renew it (besides the owner).
    pub renewers: Vec<KafkaPrincipal>,
    /// When it was issued.
    pub issue_timestamp_ms: i64,
    /// When it expires unless renewed.
    pub expiry_timestamp_ms: i64,
    /// The latest it can be renewed to.
    pub max_timestamp_ms: i64,
}

/// A delegation token: its information and its HMAC (the password; redacted in `Debug`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelegationToken {
    /// The token's information.
    pub info: TokenInformation,
    /// The HMAC in standard base64 (the SCRAM password when authenticating with the token).
    pub hmac: Secret,
}

/// Standard, padded base64 (for the token HMAC).
fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn hmac_bytes(hmac: &Secret) -> Result<Bytes, AdminError> {
    base64_decode(hmac.expose())
        .map(Bytes::from)
        .ok_or_else(|| AdminError::Invalid("the token HMAC is not base64".into()))
}

impl TopLevelError for CreateDelegationTokenResponse {
    fn top_level_error(&self) -> (i16, Option<&str>) {
        (self.error_code, None)
    }
}

/// Creates a delegation token (CreateDelegationToken to any broker), owned by the
/// caller unless [`owner`](Self::owner) says otherwise.
#[derive(Debug)]
pub struct CreateDelegationToken {
    single: Single<CreateDelegationTokenRequest>,
    renewers: Vec<KafkaPrincipal>,
}

impl Default for CreateDelegationToken {
    fn default() -> Self {
        Self::new()
    }
}

impl CreateDelegationToken {
    /// A token for the caller, with the broker's maximum lifetime and no other renewers.
    pub fn new() -> Self {
        let request = CreateDelegationTokenRequest {
            max_lifetime_ms: -1,
            ..Default::default()
        };
        CreateDelegationToken {
            single: Single::new(request),
            renewers: Vec::new(),
        }
    }

    /// Principals that may renew the token.
    pub fn renewers(mut self, renewers: impl IntoIterator<Item = KafkaPrincipal>) -> Self {
        self.renewers = renewers.into_iter().collect();
        self.single.request_mut().renewers = self
            .renewers
            .iter()
            .map(|p| CreatableRenewers {
                principal_type: p.principal_type.clone(),
                principal_name: p.name.clone(),
                ..Default::default()
            })
            .collect();
        self
    }

    /// Creates the token for another principal (the caller needs CREATE_TOKENS on it).
    pub fn owner(mut self, owner: KafkaPrincipal) -> Self {
        let request = self.single.request_mut();
        request.owner_principal_type = Some(owner.principal_type);
        request.owner_principal_name = Some(owner.name);
        self
    }

    /// The token's maximum lifetime (capped by the broker's `delegation.token.max.lifetime.ms`).
    pub fn max_lifetime(mut self, limit: Duration) -> Self {
        self.single.request_mut().max_lifetime_ms =
            i64::try_from(limit.as_millis()).unwrap_or(i64::MAX);
        self
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.single.set_timeout(limit);
        self
    }
}

impl Operation for CreateDelegationToken {
    type Output = Result<DelegationToken, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let r = match self.single.poll(cx)? {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(DelegationToken {
            info: TokenInformation {
                token_id: r.token_id,
                owner: KafkaPrincipal::new(r.principal_type, r.principal_name),
                token_requester: KafkaPrincipal::new(
                    r.token_requester_principal_type,
                    r.token_requester_principal_name,
                ),
                renewers: self.renewers.clone(),
                issue_timestamp_ms: r.issue_timestamp_ms,
                expiry_timestamp_ms: r.expiry_timestamp_ms,
                max_timestamp_ms: r.max_timestamp_ms,
            },
            hmac: Secret::new(base64_encode(&r.hmac)),
        }))
    }
}

impl TopLevelError for RenewDelegationTokenResponse {
    fn top_level_error(&self) -> (i16, Option<&str>) {
        (self.error_code, None)
    }
}

impl TopLevelError for ExpireDelegationTokenResponse {
    fn top_level_error(&self) -> (i16, Option<&str>) {
        (self.error_code, None)
    }
}

/// Renews a delegation token (RenewDelegationToken to any broker): answers the new
/// expiry in ms since the epoch.
pub struct RenewDelegationToken {
    single: Single<RenewDelegationTokenRequest>,
    invalid: Option<AdminError>,
}

impl fmt::Debug for RenewDelegationToken {
    // The request holds the HMAC.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RenewDelegationToken")
            .finish_non_exhaustive()
    }
}

impl RenewDelegationToken {
    /// Renews the token with HMAC `hmac` (base64) by the broker's default renew period.
    pub fn new(hmac: Secret) -> Self {
        let (hmac, invalid) = match hmac_bytes(&hmac) {
            Ok(b) => (b, None),
            Err(e) => (Bytes::new(), Some(e)),
        };
        let request = RenewDelegationTokenRequest {
            hmac,
            renew_period_ms: -1,
            ..Default::default()
        };
        RenewDelegationToken {
            single: Single::new(request),
            invalid,
        }
    }

    /// Renews by `period` from now instead (capped by the token's maximum).
    pub fn renew_period(mut self, period: Duration) -> Self {
        self.single.request_mut().renew_period_ms =
            i64::try_from(period.as_millis()).unwrap_or(i64::MAX);
        self
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.single.set_timeout(limit);
        self
    }
}

impl Operation for RenewDelegationToken {
    type Output = Result<i64, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        if let Some(e) = self.invalid.take() {
            return Some(Err(e));
        }
        Some(self.single.poll(cx)?.map(|r| r.expiry_timestamp_ms))
    }
}

/// Expires a delegation token (ExpireDelegationToken to any broker): answers its expiry
/// in ms since the epoch. By default it expires at once; a token past its expiry is
/// gone.
pub struct ExpireDelegationToken {
    single: Single<ExpireDelegationTokenRequest>,
    invalid: Option<AdminError>,
}

impl fmt::Debug for ExpireDelegationToken {
    // The request holds the HMAC.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExpireDelegationToken")
            .finish_non_exhaustive()
    }
}

impl ExpireDelegationToken {
    /// Expires the token with HMAC `hmac` (base64) now.
    pub fn new(hmac: Secret) -> Self {
        let (hmac, invalid) = match hmac_bytes(&hmac) {
            Ok(b) => (b, None),
            Err(e) => (Bytes::new(), Some(e)),
        };
        let request = ExpireDelegationTokenRequest {
            hmac,
            expiry_time_period_ms: -1,
            ..Default::default()
        };
        ExpireDelegationToken {
            single: Single::new(request),
            invalid,
        }
    }

    /// Expires `period` from now instead of at once.
    pub fn expiry_time_period(mut self, period: Duration) -> Self {
        self.single.request_mut().expiry_time_period_ms =
            i64::try_from(period.as_millis()).unwrap_or(i64::MAX);
        self
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.single.set_timeout(limit);
        self
    }
}

impl Operation for ExpireDelegationToken {
    type Output = Result<i64, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        if let Some(e) = self.invalid.take() {
            return Some(Err(e));
        }
        Some(self.single.poll(cx)?.map(|r| r.expiry_timestamp_ms))
    }
}

impl TopLevelError for DescribeDelegationTokenResponse {
    fn top_level_error(&self) -> (i16, Option<&str>) {
        (self.error_code, None)
    }
}

/// Lists delegation tokens (DescribeDelegationToken to any broker): those of the given
/// owners, or all, limited to the tokens the caller may describe.
#[derive(Debug)]
pub struct DescribeDelegationToken {
    single: Single<DescribeDelegationTokenRequest>,
}

impl Default for DescribeDelegationToken {
    fn default() -> Self {
        Self::new()
    }
}

impl DescribeDelegationToken {
    /// Every token the caller may describe.
    pub fn new() -> Self {
        DescribeDelegationToken {
            single: Single::new(DescribeDelegationTokenRequest {
                owners: None,
                ..Default::default()
            }),
        }
    }

    /// Only the tokens of `owners`.
    pub fn owners(mut self, owners: impl IntoIterator<Item = KafkaPrincipal>) -> Self {
        self.single.request_mut().owners = Some(
            owners
                .into_iter()
                .map(|p| DescribeDelegationTokenOwner {
                    principal_type: p.principal_type,
                    principal_name: p.name,
                    ..Default::default()
                })
                .collect(),
        );
        self
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.single.set_timeout(limit);
        self
    }
}

impl Operation for DescribeDelegationToken {
    type Output = Result<Vec<DelegationToken>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let resp = match self.single.poll(cx)? {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let tokens = resp
            .tokens
            .into_iter()
            .map(|t| DelegationToken {
                info: TokenInformation {
                    token_id: t.token_id,
                    owner: KafkaPrincipal::new(t.principal_type, t.principal_name),
                    token_requester: KafkaPrincipal::new(
                        t.token_requester_principal_type,
                        t.token_requester_principal_name,
                    ),
                    renewers: t
                        .renewers
                        .into_iter()
                        .map(|r| KafkaPrincipal::new(r.principal_type, r.principal_name))
                        .collect(),
                    issue_timestamp_ms: t.issue_timestamp,
                    expiry_timestamp_ms: t.expiry_timestamp,
                    max_timestamp_ms: t.max_timestamp,
                },
                hmac: Secret::new(base64_encode(&t.hmac)),
            })
            .collect();
        Some(Ok(tokens))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_through_the_decoder() {
        assert_eq!(base64_encode(b""), "");
        assert_eq!(base64_encode(b"f"), "Zg==");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
        assert_eq!(base64_encode(b"foo"), "Zm9v");
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
        let bytes: Vec<u8> = (0..=255u8).collect();
        for n in 0..bytes.len() {
            assert_eq!(
                base64_decode(&base64_encode(&bytes[..n])).as_deref(),
                Some(&bytes[..n])
            );
        }
    }

    #[test]
    fn hmac_never_shows_in_debug() {
        let token = DelegationToken {
            info: TokenInformation {
                token_id: "id".into(),
                owner: KafkaPrincipal::user("a"),
                token_requester: "User:a".parse().unwrap(),
                renewers: vec![],
                issue_timestamp_ms: 0,
                expiry_timestamp_ms: 0,
                max_timestamp_ms: 0,
            },
            hmac: Secret::new("c2VjcmV0LWhtYWM="),
        };
        let renew = RenewDelegationToken::new(token.hmac.clone());
        let expire = ExpireDelegationToken::new(token.hmac.clone());
        let shown = format!("{token:?} {renew:?} {expire:?}");
        assert!(
            !shown.contains("c2VjcmV0LWhtYWM") && !shown.contains("115, 101, 99"),
            "{shown}"
        );
        assert!(RenewDelegationToken::new(Secret::new("not base64!"))
            .invalid
            .is_some());
        assert!("nocolon".parse::<KafkaPrincipal>().is_err());
        assert_eq!(KafkaPrincipal::user("bob").to_string(), "User:bob");
    }
}
