//! SCRAM credentials: DescribeUserScramCredentials, AlterUserScramCredentials.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use bytes::Bytes;

use super::{Single, TopLevelError};
use crate::admin::{
    Absorbed, AdminError, Batch, ItemResults, Items, OpContext, Operation, Timeout,
};
use crate::cluster::Route;
use crate::conn::sasl::crypto::ScramHash;
use crate::protocol::messages::alter_user_scram_credentials::request::{
    ScramCredentialDeletion, ScramCredentialUpsertion as WireUpsertion,
};
use crate::protocol::messages::alter_user_scram_credentials::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
};
use crate::protocol::messages::describe_user_scram_credentials::request::UserName;
use crate::protocol::messages::describe_user_scram_credentials::{
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use crate::protocol::KafkaCode;
use crate::secret::Secret;

/// A SCRAM mechanism as the credential APIs number it (Java's `ScramMechanism`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScramMechanism {
    /// SCRAM-SHA-256.
    ScramSha256,
    /// SCRAM-SHA-512.
    ScramSha512,
    /// A code this client does not know (0 is `UNKNOWN`), kept as sent.
    Unknown(i8),
}

impl ScramMechanism {
    /// The wire code.
    pub fn code(self) -> i8 {
        match self {
            ScramMechanism::ScramSha256 => 1,
            ScramMechanism::ScramSha512 => 2,
            ScramMechanism::Unknown(code) => code,
        }
    }

    /// The mechanism of a wire code.
    pub fn from_code(code: i8) -> Self {
        match code {
            1 => ScramMechanism::ScramSha256,
            2 => ScramMechanism::ScramSha512,
            other => ScramMechanism::Unknown(other),
        }
    }

    /// The SASL name (`SCRAM-SHA-256`, `SCRAM-SHA-512`, `UNKNOWN`).
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::ScramSha256 => "SCRAM-SHA-256",
            ScramMechanism::ScramSha512 => "SCRAM-SHA-512",
            ScramMechanism::Unknown(_) => "UNKNOWN",
        }
    }

    fn hash(self) -> Option<ScramHash> {
        match self {
            ScramMechanism::ScramSha256 => Some(ScramHash::Sha256),
            ScramMechanism::ScramSha512 => Some(ScramHash::Sha512),
            ScramMechanism::Unknown(_) => None,
        }
    }
}

impl fmt::Display for ScramMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `SaltedPassword` of RFC 5802 as Java's `ScramFormatter.hi` computes it: PBKDF2 over
/// the mechanism's HMAC of the UTF-8 password, one output block.
pub fn scram_salted_password(
    mechanism: ScramMechanism,
    password: &Secret,
    salt: &[u8],
    iterations: u32,
) -> Result<Vec<u8>, AdminError> {
    let hash = mechanism.hash().ok_or_else(|| {
        AdminError::Invalid(format!("unknown SCRAM mechanism {}", mechanism.code()))
    })?;
    if iterations == 0 {
        return Err(AdminError::Invalid(
            "SCRAM iterations must be positive".into(),
        ));
    }
    hash.pbkdf2(password.expose().as_bytes(), salt, iterations)
        .map_err(|e| AdminError::Invalid(format!("cannot salt the password: {e}")))
}

/// One SCRAM credential of a user: mechanism and iteration count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScramCredentialInfo {
    /// Mechanism.
    pub mechanism: ScramMechanism,
    /// Iterations.
    pub iterations: i32,
}

impl TopLevelError for DescribeUserScramCredentialsResponse {
    fn top_level_error(&self) -> (i16, Option<&str>) {
        (self.error_code, self.error_message.as_deref())
    }
}

/// Describes users' SCRAM credentials (DescribeUserScramCredentials to any broker):
/// per user, the mechanisms and iteration counts. Unknown users get
/// RESOURCE_NOT_FOUND. [`DescribeUserScramCredentials::all`] lists every user that has
/// credentials; an empty list of names describes nobody (no request is sent), so a
/// filtered-down list can never turn into "everyone".
#[derive(Debug)]
pub struct DescribeUserScramCredentials {
    single: Single<DescribeUserScramCredentialsRequest>,
    users: BTreeSet<String>,
    /// Named users, none of them: the answer is the empty map.
    nobody: bool,
}

impl DescribeUserScramCredentials {
    /// Describes `users` (duplicates are asked once). An empty list describes nobody:
    /// use [`Self::all`] for every user.
    pub fn new(users: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let users: BTreeSet<String> = users.into_iter().map(Into::into).collect();
        let request = DescribeUserScramCredentialsRequest {
            users: Some(
                users
                    .iter()
                    .map(|u| UserName {
                        name: u.clone(),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        };
        DescribeUserScramCredentials {
            single: Single::new(request),
            nobody: users.is_empty(),
            users,
        }
    }

    /// Describes every user that has SCRAM credentials (the request's null user list).
    pub fn all() -> Self {
        let request = DescribeUserScramCredentialsRequest {
            users: None,
            ..Default::default()
        };
        DescribeUserScramCredentials {
            single: Single::new(request),
            users: BTreeSet::new(),
            nobody: false,
        }
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.single.set_timeout(limit);
        self
    }
}

impl Operation for DescribeUserScramCredentials {
    type Output =
        Result<BTreeMap<String, Result<Vec<ScramCredentialInfo>, AdminError>>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        if self.nobody {
            return Some(Ok(BTreeMap::new()));
        }
        let resp = match self.single.poll(cx)? {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let mut out: BTreeMap<_, _> = resp
            .results
            .into_iter()
            .map(|r| {
                let result =
                    AdminError::check(r.error_code, r.error_message.as_deref()).map(|()| {
                        r.credential_infos
                            .iter()
                            .map(|c| ScramCredentialInfo {
                                mechanism: ScramMechanism::from_code(c.mechanism),
                                iterations: c.iterations,
                            })
                            .collect()
                    });
                (r.user, result)
            })
            .collect();
        for u in &self.users {
            out.entry(u.clone())
                .or_insert_with(|| Err(AdminError::missing("user")));
        }
        Some(Ok(out))
    }
}

/// Adds or replaces a user's credential for one mechanism. The salted password is
/// computed client-side from `password`, `salt` and `iterations`; the core has no
/// randomness, so the caller provides the salt (use a fresh random one, at least 16
/// bytes, as Java's 32-byte `SecureRandom` salt).
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredentialUpsertion {
    /// User name.
    pub user: String,
    /// Mechanism.
    pub mechanism: ScramMechanism,
    /// Iterations (the broker accepts 4096 to 16384).
    pub iterations: i32,
    /// The password.
    pub password: Secret,
    /// The salt.
    pub salt: Vec<u8>,
}

impl fmt::Debug for ScramCredentialUpsertion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramCredentialUpsertion")
            .field("user", &self.user)
            .field("mechanism", &self.mechanism)
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

/// A change to SCRAM credentials: upsert or delete one user's credential for one mechanism.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScramCredentialAlteration {
    /// Adds or replaces a credential.
    Upsert(ScramCredentialUpsertion),
    /// Deletes a credential.
    Delete {
        /// User name.
        user: String,
        /// Mechanism.
        mechanism: ScramMechanism,
    },
}

impl ScramCredentialAlteration {
    /// Upserts `user`'s `mechanism` credential for `password` with `salt` and `iterations`.
    pub fn upsert(
        user: impl Into<String>,
        mechanism: ScramMechanism,
        iterations: i32,
        password: impl Into<Secret>,
        salt: impl Into<Vec<u8>>,
    ) -> Self {
        ScramCredentialAlteration::Upsert(ScramCredentialUpsertion {
            user: user.into(),
            mechanism,
            iterations,
            password: password.into(),
            salt: salt.into(),
        })
    }

    /// Deletes `user`'s `mechanism` credential.
    pub fn delete(user: impl Into<String>, mechanism: ScramMechanism) -> Self {
        ScramCredentialAlteration::Delete {
            user: user.into(),
            mechanism,
        }
    }

    /// The user it changes.
    pub fn user(&self) -> &str {
        match self {
            ScramCredentialAlteration::Upsert(u) => &u.user,
            ScramCredentialAlteration::Delete { user, .. } => user,
        }
    }
}

/// Upserts and deletes SCRAM credentials (AlterUserScramCredentials to any broker): one
/// result per user. Like Java, a user with an alteration that cannot be sent (empty
/// name, unknown mechanism, bad iteration count) fails locally with all of its
/// alterations; retriable per-user errors are retried until the deadline. KRaft
/// controllers take at most one alteration per user in a request (a second one, even
/// for another mechanism, fails that user with DUPLICATE_RESOURCE): change several
/// mechanisms of one user in separate operations.
pub struct AlterUserScramCredentials {
    alterations: Vec<ScramCredentialAlteration>,
    items: Items<AlterUserScramCredentialsRequest, String, ()>,
    timeout: Timeout,
}

impl fmt::Debug for AlterUserScramCredentials {
    // The request holds salted passwords: show only who is pending.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlterUserScramCredentials")
            .field("pending", &self.items.pending())
            .field("results", self.items.results())
            .finish_non_exhaustive()
    }
}

impl AlterUserScramCredentials {
    /// Applies `alterations`.
    pub fn new(alterations: impl IntoIterator<Item = ScramCredentialAlteration>) -> Self {
        AlterUserScramCredentials {
            alterations: alterations.into_iter().collect(),
            items: Items::new("user"),
            timeout: Timeout::default(),
        }
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout.set(limit);
        self
    }

    /// The request for the alterations of users that pass local checks, and those users;
    /// the others get their result now. Salting happens here, once.
    fn build(&mut self) -> (AlterUserScramCredentialsRequest, Vec<String>) {
        let mut request = AlterUserScramCredentialsRequest::default();
        let mut pending = BTreeSet::new();
        for a in std::mem::take(&mut self.alterations) {
            let user = a.user().to_string();
            if self.items.results().contains_key(&user) {
                continue; // an earlier alteration of this user already failed
            }
            match wire(a) {
                Ok(WireItem::Upsert(u)) => request.upsertions.push(u),
                Ok(WireItem::Delete(d)) => request.deletions.push(d),
                Err(e) => {
                    self.items.settle(user, Err(e));
                    continue;
                }
            }
            pending.insert(user);
        }
        for user in self.items.results().keys() {
            pending.remove(user);
        }
        request.upsertions.retain(|u| pending.contains(&u.name));
        request.deletions.retain(|d| pending.contains(&d.name));
        (request, pending.into_iter().collect())
    }
}

enum WireItem {
    Upsert(WireUpsertion),
    Delete(ScramCredentialDeletion),
}

/// Checks one alteration and turns it into its wire form (salting the password).
fn wire(a: ScramCredentialAlteration) -> Result<WireItem, AdminError> {
    if a.user().is_empty() {
        return Err(AdminError::Invalid("user name must not be empty".into()));
    }
    match a {
        ScramCredentialAlteration::Delete { user, mechanism } => {
            if mechanism.hash().is_none() {
                return Err(AdminError::Invalid("unknown SCRAM mechanism".into()));
            }
            Ok(WireItem::Delete(ScramCredentialDeletion {
                name: user,
                mechanism: mechanism.code(),
                ..Default::default()
            }))
        }
        ScramCredentialAlteration::Upsert(u) => {
            // Kafka's ScramMechanism bounds: the broker refuses other counts, so say so
            // before spending the PBKDF2 time on them.
            let (min, max) = (
                crate::conn::sasl::ScramClient::MIN_ITERATIONS,
                crate::conn::sasl::ScramClient::DEFAULT_MAX_ITERATIONS,
            );
            let iterations = u32::try_from(u.iterations)
                .ok()
                .filter(|i| (min..=max).contains(i))
                .ok_or_else(|| {
                    AdminError::Invalid(format!(
                        "SCRAM iterations {} outside Kafka's {min}..={max}",
                        u.iterations
                    ))
                })?;
            let salted = scram_salted_password(u.mechanism, &u.password, &u.salt, iterations)?;
            Ok(WireItem::Upsert(WireUpsertion {
                name: u.user,
                mechanism: u.mechanism.code(),
                iterations: u.iterations,
                salt: Bytes::from(u.salt),
                salted_password: Bytes::from(salted),
                ..Default::default()
            }))
        }
    }
}

/// Records the per-user answers; returns the users to send again.
fn absorb_altered(
    batch: Batch<'_, String, ()>,
    resp: AlterUserScramCredentialsResponse,
) -> Absorbed<String> {
    let mut unanswered: BTreeSet<&String> = batch.pending.iter().collect();
    let mut retry = Vec::new();
    for r in resp.results {
        if !unanswered.remove(&r.user) {
            continue; // not asked (or answered twice)
        }
        if KafkaCode(r.error_code).is_retriable() && !batch.expired {
            retry.push(r.user);
        } else {
            let result = AdminError::check(r.error_code, r.error_message.as_deref());
            batch.results.insert(r.user, result);
        }
    }
    Absorbed::Retry(retry)
}

impl Operation for AlterUserScramCredentials {
    type Output = Result<ItemResults<String, ()>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        if !self.items.started() {
            let (request, pending) = self.build();
            if !pending.is_empty() {
                self.items.start(Route::Any, request, pending);
            }
        }
        self.items
            .poll(cx, deadline, absorb_altered, |request, retry| {
                request.upsertions.retain(|u| retry.contains(&u.name));
                request.deletions.retain(|d| retry.contains(&d.name));
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn salted_password_matches_known_vectors() {
        // RFC 7677's SCRAM-SHA-256 example: SaltedPassword = Hi("pencil", salt, 4096).
        let salt = crate::conn::sasl::crypto::base64_decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let pw = Secret::new("pencil");
        let salted = scram_salted_password(ScramMechanism::ScramSha256, &pw, &salt, 4096).unwrap();
        assert_eq!(
            hex(&salted),
            "c4a49510323ab4f952cac1fa99441939e78ea74d6be81ddf7096e87513dc615d"
        );
        // PBKDF2-HMAC-SHA-512, one block (RFC 6070-style inputs, well-known answer).
        let salted = scram_salted_password(
            ScramMechanism::ScramSha512,
            &Secret::new("password"),
            b"salt",
            1,
        )
        .unwrap();
        assert_eq!(
            hex(&salted),
            "867f70cf1ade02cff3752599a3a53dc4af34c7a669815ae5d513554e1c8cf252\
             c02d470a285a0501bad999bfe943c08f050235d7d68b1da55e63f73b60a57fce"
        );
        assert!(scram_salted_password(ScramMechanism::Unknown(0), &pw, &salt, 4096).is_err());
        assert!(scram_salted_password(ScramMechanism::ScramSha256, &pw, &salt, 0).is_err());
    }

    #[test]
    fn mechanism_codes_round_trip() {
        for code in -1..5i8 {
            assert_eq!(ScramMechanism::from_code(code).code(), code);
        }
        assert_eq!(ScramMechanism::from_code(2), ScramMechanism::ScramSha512);
        assert_eq!(ScramMechanism::ScramSha256.to_string(), "SCRAM-SHA-256");
    }

    #[test]
    fn bad_alterations_fail_their_user_locally_and_secrets_stay_hidden() {
        let mut op = AlterUserScramCredentials::new([
            ScramCredentialAlteration::upsert(
                "ok",
                ScramMechanism::ScramSha256,
                4096,
                "hunter2",
                *b"0123456789abcdef",
            ),
            ScramCredentialAlteration::upsert("bad", ScramMechanism::ScramSha256, -1, "pw", *b"s"),
            ScramCredentialAlteration::delete("bad", ScramMechanism::ScramSha512),
            ScramCredentialAlteration::delete("", ScramMechanism::ScramSha512),
            ScramCredentialAlteration::delete("gone", ScramMechanism::Unknown(7)),
        ]);
        let (request, pending) = op.build();
        assert_eq!(request.upsertions.len(), 1);
        assert_eq!(request.upsertions[0].name, "ok");
        assert_eq!(request.upsertions[0].salted_password.len(), 32);
        assert!(request.deletions.is_empty());
        assert_eq!(pending, ["ok"]);
        for user in ["bad", "", "gone"] {
            assert!(
                matches!(
                    op.items.results().get(user),
                    Some(Err(AdminError::Invalid(_)))
                ),
                "{user}"
            );
        }
        let upsert = ScramCredentialAlteration::upsert(
            "u",
            ScramMechanism::ScramSha512,
            4096,
            "hunter2",
            *b"salt",
        );
        let shown = format!("{upsert:?} {op:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}
