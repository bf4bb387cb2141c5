//! Security operations driven through a [`Client`] against scripted broker answers:
//! per-item retries narrow the request, salted passwords go on the wire, bad answers
//! become typed errors.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::*;
use crate::admin::AdminError;
use crate::client::{Client, ConnId, Event, IoCommand};
use crate::config::ClientConfig;
use crate::protocol::messages::alter_user_scram_credentials::response::AlterUserScramCredentialsResult;
use crate::protocol::messages::alter_user_scram_credentials::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
};
use crate::protocol::messages::create_acls::response::AclCreationResult;
use crate::protocol::messages::create_acls::{CreateAclsRequest, CreateAclsResponse};
use crate::protocol::messages::delete_acls::DeleteAclsResponse;
use crate::protocol::messages::describe_user_scram_credentials::response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use crate::protocol::messages::describe_user_scram_credentials::{
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use crate::protocol::{ApiKey, KafkaCode, Message};
use crate::secret::Secret;
use crate::test_support::{broker_versions, origin, parse_requests, response_frame, Seen};

/// A client whose sockets always connect and whose broker always offers every version.
struct Harness {
    client: Client,
    now: Instant,
    open: Vec<ConnId>,
}

impl Harness {
    fn new() -> Self {
        let config = ClientConfig::from_pairs([("bootstrap.servers", "boot:9092")]).unwrap();
        Harness {
            client: Client::new(config, [7; 32]).unwrap(),
            now: origin(),
            open: Vec::new(),
        }
    }

    /// Connects, answers ApiVersions, returns the other requests written.
    fn requests(&mut self) -> Vec<(ConnId, Seen)> {
        let mut rest = Vec::new();
        for _ in 0..4 {
            while let Some(cmd) = self.client.poll_io() {
                if let IoCommand::Connect { conn, .. } = cmd {
                    self.open.push(conn);
                    self.client.handle_connected(self.now, conn);
                }
            }
            for conn in self.open.clone() {
                let mut out = Vec::new();
                self.client.poll_transmit(self.now, conn, &mut out);
                for seen in parse_requests(out) {
                    if seen.api() == ApiKey::ApiVersions {
                        self.reply(conn, &seen, &broker_versions());
                    } else {
                        rest.push((conn, seen));
                    }
                }
            }
        }
        rest
    }

    /// The one request written now.
    fn one(&mut self) -> (ConnId, Seen) {
        let mut all = self.requests();
        assert_eq!(all.len(), 1, "expected one request");
        all.remove(0)
    }

    fn reply<M: Message>(&mut self, conn: ConnId, to: &Seen, body: &M) {
        let frame = response_frame(to, body, to.version());
        self.client.handle_received(self.now, conn, &frame);
    }

    fn advance(&mut self, d: Duration) {
        self.now += d;
        self.client.handle_timeout(self.now);
    }

    fn done(&mut self) -> bool {
        std::iter::from_fn(|| self.client.poll_event())
            .any(|e| matches!(e, Event::OperationDone(_)))
    }
}

fn binding(topic: &str) -> AclBinding {
    AclBinding::new(
        ResourcePattern::new(ResourceType::Topic, topic, PatternType::Literal),
        AccessControlEntry::new("User:a", "*", AclOperation::Read, AclPermissionType::Allow),
    )
}

#[test]
fn create_acls_retries_only_the_retriable_binding() {
    let mut h = Harness::new();
    let (a, b) = (binding("a"), binding("b"));
    let id = h
        .client
        .start_op(h.now, CreateAcls::new([b.clone(), a.clone()]));
    let (conn, seen) = h.one();
    let sent: CreateAclsRequest = seen.decode();
    assert_eq!(sent.creations.len(), 2);
    assert_eq!(sent.creations[0].resource_name, "a");
    assert!(KafkaCode::REQUEST_TIMED_OUT.is_retriable());
    let first = CreateAclsResponse {
        results: vec![
            AclCreationResult::default(),
            AclCreationResult {
                error_code: KafkaCode::REQUEST_TIMED_OUT.0,
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    h.reply(conn, &seen, &first);
    assert!(h.requests().is_empty(), "the retry waits for the backoff");
    h.advance(Duration::from_secs(1));
    let (conn, seen) = h.one();
    let sent: CreateAclsRequest = seen.decode();
    assert_eq!(sent.creations.len(), 1);
    assert_eq!(sent.creations[0].resource_name, "b");
    let second = CreateAclsResponse {
        results: vec![AclCreationResult::default()],
        ..Default::default()
    };
    h.reply(conn, &seen, &second);
    assert!(h.done());
    let out = h.client.take_op_output(id).unwrap().unwrap();
    assert_eq!(out[&a], Ok(()));
    assert_eq!(out[&b], Ok(()));
}

#[test]
fn a_short_delete_acls_answer_is_a_protocol_error_per_filter() {
    let mut h = Harness::new();
    let f = binding("a").to_filter();
    let id = h.client.start_op(h.now, DeleteAcls::new([f.clone()]));
    let (conn, seen) = h.one();
    h.reply(conn, &seen, &DeleteAclsResponse::default());
    assert!(h.done());
    let out = h.client.take_op_output(id).unwrap().unwrap();
    assert!(matches!(out[&f], Err(AdminError::Protocol(_))), "{out:?}");
}

#[test]
fn alter_scram_sends_the_salted_password_and_reports_per_user() {
    let mut h = Harness::new();
    let op = AlterUserScramCredentials::new([
        ScramCredentialAlteration::upsert("u", ScramMechanism::ScramSha512, 4096, "pw", *b"salty"),
        ScramCredentialAlteration::delete("v", ScramMechanism::ScramSha256),
    ]);
    let id = h.client.start_op(h.now, op);
    let (conn, seen) = h.one();
    let sent: AlterUserScramCredentialsRequest = seen.decode();
    let want = scram_salted_password(
        ScramMechanism::ScramSha512,
        &Secret::new("pw"),
        b"salty",
        4096,
    )
    .unwrap();
    assert_eq!(sent.upsertions.len(), 1);
    assert_eq!(sent.upsertions[0].salt.as_ref(), b"salty");
    assert_eq!(sent.upsertions[0].salted_password.as_ref(), want.as_slice());
    assert_eq!(
        (sent.upsertions[0].mechanism, sent.upsertions[0].iterations),
        (2, 4096)
    );
    assert_eq!(
        (sent.deletions[0].name.as_str(), sent.deletions[0].mechanism),
        ("v", 1)
    );
    let resp = AlterUserScramCredentialsResponse {
        results: vec![
            AlterUserScramCredentialsResult {
                user: "u".into(),
                ..Default::default()
            },
            AlterUserScramCredentialsResult {
                user: "v".into(),
                error_code: KafkaCode::RESOURCE_NOT_FOUND.0,
                error_message: Some("no such credential".into()),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    h.reply(conn, &seen, &resp);
    assert!(h.done());
    let out = h.client.take_op_output(id).unwrap().unwrap();
    assert_eq!(out["u"], Ok(()));
    assert_eq!(
        out["v"].as_ref().unwrap_err().code(),
        Some(KafkaCode::RESOURCE_NOT_FOUND)
    );
}

#[test]
fn describe_scram_retries_a_retriable_top_level_error() {
    let mut h = Harness::new();
    let id = h
        .client
        .start_op(h.now, DescribeUserScramCredentials::new(["u", "ghost"]));
    let (conn, seen) = h.one();
    let busy = DescribeUserScramCredentialsResponse {
        error_code: KafkaCode::REQUEST_TIMED_OUT.0,
        ..Default::default()
    };
    h.reply(conn, &seen, &busy);
    h.advance(Duration::from_secs(1));
    let (conn, seen) = h.one();
    let resp = DescribeUserScramCredentialsResponse {
        results: vec![DescribeUserScramCredentialsResult {
            user: "u".into(),
            credential_infos: vec![CredentialInfo {
                mechanism: 1,
                iterations: 8192,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    h.reply(conn, &seen, &resp);
    assert!(h.done());
    let out = h.client.take_op_output(id).unwrap().unwrap();
    let info = ScramCredentialInfo {
        mechanism: ScramMechanism::ScramSha256,
        iterations: 8192,
    };
    assert_eq!(out["u"], Ok(vec![info]));
    assert!(
        matches!(out["ghost"], Err(AdminError::Protocol(_))),
        "{out:?}"
    );
}

#[test]
fn describing_all_users_sends_null_and_finishes_once() {
    let mut h = Harness::new();
    let id = h
        .client
        .start_op(h.now, DescribeUserScramCredentials::all());
    let (conn, seen) = h.one();
    let sent: DescribeUserScramCredentialsRequest = seen.decode();
    assert_eq!(sent.users, None);
    h.reply(
        conn,
        &seen,
        &DescribeUserScramCredentialsResponse::default(),
    );
    assert!(h.done());
    assert_eq!(h.client.take_op_output(id).unwrap(), Ok(Default::default()));
    h.advance(Duration::from_secs(60));
    assert!(
        h.requests().is_empty(),
        "nothing is sent after the operation finished"
    );
}

#[test]
fn describe_scram_for_all_users_is_its_own_call_and_no_names_is_nobody() {
    // An empty list of names finishes at once with nothing, without asking the broker.
    let mut h = Harness::new();
    let id = h.client.start_op(
        h.now,
        DescribeUserScramCredentials::new(Vec::<String>::new()),
    );
    assert!(h.done());
    assert_eq!(h.client.take_op_output(id).unwrap(), Ok(BTreeMap::new()));
    assert!(h.requests().is_empty());

    // `all()` sends the null user list, which the broker reads as "every user".
    let mut h = Harness::new();
    let id = h
        .client
        .start_op(h.now, DescribeUserScramCredentials::all());
    let (conn, seen) = h.one();
    let sent: DescribeUserScramCredentialsRequest = seen.decode();
    assert_eq!(sent.users, None);
    let resp = DescribeUserScramCredentialsResponse {
        results: vec![DescribeUserScramCredentialsResult {
            user: "anyone".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    h.reply(conn, &seen, &resp);
    assert!(h.done());
    let out = h.client.take_op_output(id).unwrap().unwrap();
    assert_eq!(out.keys().collect::<Vec<_>>(), ["anyone"]);

    // Named users are sent by name.
    let mut h = Harness::new();
    let _ = h
        .client
        .start_op(h.now, DescribeUserScramCredentials::new(["u"]));
    let (_, seen) = h.one();
    let sent: DescribeUserScramCredentialsRequest = seen.decode();
    assert_eq!(sent.users.map(|u| u.len()), Some(1));
}

#[test]
fn scram_upserts_outside_kafkas_iteration_bounds_fail_locally() {
    let mut h = Harness::new();
    let op = AlterUserScramCredentials::new([
        ScramCredentialAlteration::upsert("low", ScramMechanism::ScramSha256, 4095, "pw", *b"salt"),
        ScramCredentialAlteration::upsert(
            "high",
            ScramMechanism::ScramSha256,
            16_385,
            "pw",
            *b"salt",
        ),
    ]);
    let id = h.client.start_op(h.now, op);
    assert!(h.done());
    let out = h.client.take_op_output(id).unwrap().unwrap();
    for user in ["low", "high"] {
        let err = out[user].as_ref().unwrap_err().to_string();
        assert!(err.contains("4096..=16384"), "{user}: {err}");
    }
}

#[test]
fn authorized_operations_decode_to_a_typed_set() {
    let bits = (1 << AclOperation::Read.code()) | (1 << AclOperation::Describe.code()) | (1 << 30);
    let ops = crate::admin::acl_operations(bits);
    assert_eq!(
        ops.into_iter().collect::<Vec<_>>(),
        [
            AclOperation::Read,
            AclOperation::Describe,
            AclOperation::Unknown(30)
        ]
    );
    assert!(crate::admin::acl_operations(i32::MIN).is_empty());
}
