//! Suite: security operations (ACLs, SCRAM credentials, client quotas, delegation tokens).
//!
//! ACL tests run on the rig's ACL listener (StandardAuthorizer; the admin user is a super
//! user, `acluser` is not); SCRAM and quota tests on PLAINTEXT (ANONYMOUS is a super
//! user); delegation tokens need an authenticated connection, so they use the SASL
//! listener with the PLAIN user.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kafka_core::admin::{
    AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter, AclOperation,
    AclPermissionType, AdminError, AlterClientQuotas, AlterUserScramCredentials,
    ClientQuotaAlteration, ClientQuotaEntity, ClientQuotaFilter, ClientQuotaFilterComponent,
    CreateAcls, CreateDelegationToken, CreateTopics, DeleteAcls, DescribeAcls,
    DescribeClientQuotas, DescribeCluster, DescribeDelegationToken, DescribeUserScramCredentials,
    ExpireDelegationToken, KafkaPrincipal, NewTopic, PatternType, RawRequest, RenewDelegationToken,
    ResourcePattern, ResourcePatternFilter, ResourceType, ScramCredentialAlteration,
    ScramMechanism,
};
use kafka_core::cluster::Route;
use kafka_core::protocol::messages::metadata::request::MetadataRequestTopic;
use kafka_core::protocol::messages::metadata::MetadataRequest;
use kafka_core::protocol::KafkaCode;

use super::{config, plaintext, unique, var, Driver};

/// Tests of this group (see [`admin_suite!`](crate::admin_suite)).
#[doc(hidden)]
#[macro_export]
macro_rules! __suite_security {
    ($d:ty) => {
        $crate::__suite_tests!($d;
            security::acls_create_describe_delete,
            security::scram_upsert_describe_authenticate_delete,
            security::client_quotas_set_describe_remove,
            security::delegation_tokens_create_describe_renew_expire,
        );
    };
}

/// Polls `check` until it returns `Some` (metadata-log changes reach the broker's caches
/// shortly after the controller commits them), panicking after 20 s.
fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// An admin client authenticated with SASL `mechanism` on the listener at `bootstrap_var`.
fn sasl<D: Driver>(bootstrap_var: &str, mechanism: &str, user: &str, password: &str) -> D {
    D::connect(config(&[
        ("bootstrap.servers", &var(bootstrap_var)),
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", mechanism),
        ("sasl.username", user),
        ("sasl.password", password),
        ("default.api.timeout.ms", "15000"),
    ]))
}

/// The error code of `topic` in a Metadata answer to `client` (0: authorized and present).
fn topic_metadata_code<D: Driver>(client: &D, topic: &str) -> i16 {
    let request = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some(topic.to_string()),
            ..Default::default()
        }]),
        allow_auto_topic_creation: false,
        ..Default::default()
    };
    let resp = client
        .run(RawRequest::new(Route::Any, request))
        .expect("metadata request");
    resp.topics
        .iter()
        .find(|t| t.name.as_deref() == Some(topic))
        .map(|t| t.error_code)
        .expect("topic in metadata response")
}

/// CreateAcls (per-binding results, a local refusal for a filter-only value),
/// DescribeAcls with LITERAL and MATCH filters, the grant's effect on `acluser`, and
/// DeleteAcls listing what it deleted.
pub fn acls_create_describe_delete<D: Driver>() {
    if crate::broker_or_skip("acls_create_describe_delete").is_none() {
        return;
    }
    let admin: D = sasl(
        "KAFKA_ACL_BOOTSTRAP",
        "PLAIN",
        &var("KAFKA_ACL_ADMIN_USERNAME"),
        &var("KAFKA_ACL_ADMIN_PASSWORD"),
    );
    let user = var("KAFKA_ACL_USER_USERNAME");
    let acl_user: D = sasl(
        "KAFKA_ACL_BOOTSTRAP",
        "PLAIN",
        &user,
        &var("KAFKA_ACL_USER_PASSWORD"),
    );
    let principal = format!("User:{user}");
    let topic = unique::<D>("acl-topic");
    let created = admin
        .run(CreateTopics::new([NewTopic::new(&topic, 1, 1)]))
        .expect("create topic");
    assert_eq!(created[&topic].as_ref().err(), None);
    assert_eq!(
        topic_metadata_code(&acl_user, &topic),
        KafkaCode::TOPIC_AUTHORIZATION_FAILED.0,
        "no ACL yet"
    );

    let describe_topic = AclBinding::new(
        ResourcePattern::new(ResourceType::Topic, &topic, PatternType::Literal),
        AccessControlEntry::new(
            &principal,
            "*",
            AclOperation::Describe,
            AclPermissionType::Allow,
        ),
    );
    let read_prefixed = AclBinding::new(
        ResourcePattern::new(
            ResourceType::Topic,
            &topic[..topic.len() - 2],
            PatternType::Prefixed,
        ),
        AccessControlEntry::new(
            &principal,
            "*",
            AclOperation::Read,
            AclPermissionType::Allow,
        ),
    );
    let mut any_op = describe_topic.clone();
    any_op.entry.operation = AclOperation::Any;
    let results = admin
        .run(CreateAcls::new([
            describe_topic.clone(),
            read_prefixed.clone(),
            any_op.clone(),
        ]))
        .expect("create acls");
    assert_eq!(results.len(), 3);
    assert_eq!(results[&describe_topic], Ok(()));
    assert_eq!(results[&read_prefixed], Ok(()));
    assert!(
        matches!(results[&any_op], Err(AdminError::Invalid(_))),
        "{:?}",
        results[&any_op]
    );

    // LITERAL filter: exactly the literal binding; MATCH: every binding that applies.
    let literal = eventually("bindings to be described", || {
        let found = admin
            .run(DescribeAcls::new(describe_topic.to_filter()))
            .expect("describe");
        (!found.is_empty()).then_some(found)
    });
    assert_eq!(literal, vec![describe_topic.clone()]);
    let matching = AclBindingFilter::new(
        ResourcePatternFilter::new(ResourceType::Topic, Some(topic.clone()), PatternType::Match),
        AccessControlEntryFilter::new(
            Some(principal.clone()),
            None,
            AclOperation::Any,
            AclPermissionType::Any,
        ),
    );
    let mut found = admin
        .run(DescribeAcls::new(matching.clone()))
        .expect("describe match");
    found.sort();
    let mut want = vec![describe_topic.clone(), read_prefixed.clone()];
    want.sort();
    assert_eq!(found, want);
    let all = admin
        .run(DescribeAcls::new(AclBindingFilter::ANY))
        .expect("describe all");
    assert!(all.contains(&describe_topic) && all.contains(&read_prefixed));

    // The grant's effect: acluser now sees the topic.
    eventually("acluser to be authorized", || {
        (topic_metadata_code(&acl_user, &topic) == 0).then_some(())
    });

    // Delete: one filter matching both bindings, one matching nothing.
    let nothing = AclBindingFilter::new(
        ResourcePatternFilter::new(
            ResourceType::Group,
            Some(topic.clone()),
            PatternType::Literal,
        ),
        AccessControlEntryFilter::ANY,
    );
    let deleted = admin
        .run(DeleteAcls::new([matching.clone(), nothing.clone()]))
        .expect("delete acls");
    let mut gone: Vec<AclBinding> = deleted[&matching]
        .as_ref()
        .expect("filter result")
        .iter()
        .map(|d| {
            assert_eq!(d.result, Ok(()));
            d.binding.clone()
        })
        .collect();
    gone.sort();
    assert_eq!(gone, want);
    assert_eq!(deleted[&nothing], Ok(Vec::new()));
    eventually("deleted bindings to be gone", || {
        let left = admin
            .run(DescribeAcls::new(matching.clone()))
            .expect("describe after delete");
        left.is_empty().then_some(())
    });
    eventually("acluser to lose access", || {
        (topic_metadata_code(&acl_user, &topic) == KafkaCode::TOPIC_AUTHORIZATION_FAILED.0)
            .then_some(())
    });
}

/// Whether a fresh client authenticates as `user` with SCRAM-SHA-256 and `password`.
fn scram_login<D: Driver>(user: &str, password: &str) -> Result<(), AdminError> {
    let client: D = sasl("KAFKA_SASL_BOOTSTRAP", "SCRAM-SHA-256", user, password);
    client.run(DescribeCluster::new()).map(|_| ())
}

/// AlterUserScramCredentials upserts (salted client-side) and deletes; Describe per user
/// (RESOURCE_NOT_FOUND for unknown users); the new credential authenticates a fresh
/// client over SCRAM-SHA-256 and stops working once deleted.
pub fn scram_upsert_describe_authenticate_delete<D: Driver>() {
    let Some(admin) = plaintext::<D>("scram_upsert_describe_authenticate_delete") else {
        return;
    };
    let user = unique::<D>("scram-user");
    let password = format!("pw-{user}");
    let nobody = unique::<D>("scram-nobody");
    let salt = format!("salt-{user}").into_bytes();
    // KRaft controllers take one alteration per user and request: one call per mechanism.
    let results = admin
        .run(AlterUserScramCredentials::new([
            ScramCredentialAlteration::upsert(
                &user,
                ScramMechanism::ScramSha256,
                4096,
                password.as_str(),
                salt.clone(),
            ),
            ScramCredentialAlteration::upsert("", ScramMechanism::ScramSha256, 4096, "x", *b"salt"),
        ]))
        .expect("alter scram");
    assert_eq!(results[&user], Ok(()));
    assert!(matches!(results[""], Err(AdminError::Invalid(_))));
    let results = admin
        .run(AlterUserScramCredentials::new([
            ScramCredentialAlteration::upsert(
                &user,
                ScramMechanism::ScramSha512,
                8192,
                password.as_str(),
                salt,
            ),
        ]))
        .expect("alter scram");
    assert_eq!(results[&user], Ok(()));

    let want = [
        (ScramMechanism::ScramSha256, 4096),
        (ScramMechanism::ScramSha512, 8192),
    ];
    let described = eventually("both credentials to be described", || {
        let described = admin
            .run(DescribeUserScramCredentials::new([
                user.clone(),
                nobody.clone(),
            ]))
            .expect("describe scram");
        let mut infos: Vec<_> = described[&user]
            .as_ref()
            .map(|list| list.iter().map(|c| (c.mechanism, c.iterations)).collect())
            .unwrap_or_default();
        infos.sort();
        (infos == want).then_some(described)
    });
    let missing = described[&nobody].as_ref().expect_err("unknown user");
    assert_eq!(missing.code(), Some(KafkaCode::RESOURCE_NOT_FOUND));
    let all = admin
        .run(DescribeUserScramCredentials::all())
        .expect("describe all");
    assert!(
        all.get(&user).is_some_and(|r| r.is_ok()),
        "{user} not among all users"
    );

    eventually("SCRAM login with the new credential", || {
        scram_login::<D>(&user, &password).ok()
    });
    assert!(scram_login::<D>(&user, "wrong-password").is_err());

    let results = admin
        .run(AlterUserScramCredentials::new([
            ScramCredentialAlteration::delete(&user, ScramMechanism::ScramSha256),
            ScramCredentialAlteration::delete(&nobody, ScramMechanism::ScramSha256),
        ]))
        .expect("delete scram");
    assert_eq!(results[&user], Ok(()));
    assert_eq!(
        results[&nobody].as_ref().err().and_then(AdminError::code),
        Some(KafkaCode::RESOURCE_NOT_FOUND)
    );
    let results = admin
        .run(AlterUserScramCredentials::new([
            ScramCredentialAlteration::delete(&user, ScramMechanism::ScramSha512),
        ]))
        .expect("delete scram");
    assert_eq!(results[&user], Ok(()));
    eventually("deleted credentials to be gone", || {
        let described = admin
            .run(DescribeUserScramCredentials::new([user.clone()]))
            .expect("describe after delete");
        let code = described[&user].as_ref().err().and_then(AdminError::code);
        (code == Some(KafkaCode::RESOURCE_NOT_FOUND)).then_some(())
    });
    eventually("SCRAM login to fail after deletion", || {
        scram_login::<D>(&user, &password).is_err().then_some(())
    });
}

/// AlterClientQuotas (validate-only, set, remove; per-entity results with one bad
/// entity) and DescribeClientQuotas with exact, default/any and strict filters, on a
/// user and a client-id entity.
pub fn client_quotas_set_describe_remove<D: Driver>() {
    let Some(admin) = plaintext::<D>("client_quotas_set_describe_remove") else {
        return;
    };
    let user = unique::<D>("quota-user");
    let client = unique::<D>("quota-client");
    let user_entity = ClientQuotaEntity::new().user(&user);
    let client_entity = ClientQuotaEntity::new().client_id(&client);
    let bad_entity = ClientQuotaEntity::new().user(format!("{user}-bad"));
    let set = [
        ClientQuotaAlteration::new(user_entity.clone())
            .set("producer_byte_rate", 1024.0)
            .set("consumer_byte_rate", 2048.0),
        ClientQuotaAlteration::new(client_entity.clone()).set("request_percentage", 50.0),
        ClientQuotaAlteration::new(bad_entity.clone()).set("no_such_quota", 1.0),
    ];
    let only_user =
        ClientQuotaFilter::contains_only([ClientQuotaFilterComponent::of_entity("user", &user)]);
    let only_client = ClientQuotaFilter::contains_only([ClientQuotaFilterComponent::of_entity(
        "client-id",
        &client,
    )]);

    let checked = admin
        .run(AlterClientQuotas::new(set.clone()).validate_only(true))
        .expect("validate quotas");
    assert_eq!(checked[&user_entity], Ok(()));
    assert_eq!(checked[&client_entity], Ok(()));
    assert!(
        checked[&bad_entity].is_err(),
        "an unknown quota key is refused"
    );
    assert!(admin
        .run(DescribeClientQuotas::new(only_user.clone()))
        .expect("describe")
        .is_empty());

    let results = admin
        .run(AlterClientQuotas::new(set))
        .expect("alter quotas");
    assert_eq!(results[&user_entity], Ok(()));
    assert_eq!(results[&client_entity], Ok(()));
    assert_eq!(
        results[&bad_entity]
            .as_ref()
            .err()
            .and_then(AdminError::code),
        Some(KafkaCode::INVALID_REQUEST)
    );

    let want_user = BTreeMap::from([
        ("consumer_byte_rate".to_string(), 2048.0),
        ("producer_byte_rate".to_string(), 1024.0),
    ]);
    let quotas = eventually("user quotas", || {
        let q = admin
            .run(DescribeClientQuotas::new(only_user.clone()))
            .expect("describe user");
        (!q.is_empty()).then_some(q)
    });
    assert_eq!(quotas, BTreeMap::from([(user_entity.clone(), want_user)]));
    let quotas = eventually("client quotas", || {
        let q = admin
            .run(DescribeClientQuotas::new(only_client.clone()))
            .expect("describe client");
        (!q.is_empty()).then_some(q)
    });
    assert_eq!(
        quotas,
        BTreeMap::from([(
            client_entity.clone(),
            BTreeMap::from([("request_percentage".to_string(), 50.0)])
        )])
    );
    // Non-strict "any client-id" lists ours among others; the default client-id has none.
    let any_client = admin
        .run(DescribeClientQuotas::new(ClientQuotaFilter::contains([
            ClientQuotaFilterComponent::of_entity_type("client-id"),
        ])))
        .expect("describe any client-id");
    assert!(any_client.contains_key(&client_entity) && !any_client.contains_key(&user_entity));
    let default_client = admin
        .run(DescribeClientQuotas::new(ClientQuotaFilter::contains_only(
            [ClientQuotaFilterComponent::of_default_entity("client-id")],
        )))
        .expect("describe default client-id");
    assert!(!default_client.contains_key(&client_entity));

    let removed = admin
        .run(AlterClientQuotas::new([
            ClientQuotaAlteration::new(user_entity.clone())
                .remove("producer_byte_rate")
                .remove("consumer_byte_rate"),
            ClientQuotaAlteration::new(client_entity.clone()).remove("request_percentage"),
        ]))
        .expect("remove quotas");
    assert_eq!(removed[&user_entity], Ok(()));
    assert_eq!(removed[&client_entity], Ok(()));
    for filter in [only_user, only_client] {
        eventually("quotas to be removed", || {
            admin
                .run(DescribeClientQuotas::new(filter.clone()))
                .expect("describe")
                .is_empty()
                .then_some(())
        });
    }
}

/// CreateDelegationToken (refused on PLAINTEXT), DescribeDelegationToken by owner,
/// RenewDelegationToken (the expiry moves) and ExpireDelegationToken (gone after).
pub fn delegation_tokens_create_describe_renew_expire<D: Driver>() {
    let Some(plain) = plaintext::<D>("delegation_tokens_create_describe_renew_expire") else {
        return;
    };
    let refused = plain
        .run(CreateDelegationToken::new())
        .expect_err("PLAINTEXT cannot create tokens");
    assert_eq!(
        refused.code(),
        Some(KafkaCode::DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    );

    let user = var("KAFKA_SASL_PLAIN_USERNAME");
    let admin: D = sasl(
        "KAFKA_SASL_BOOTSTRAP",
        "PLAIN",
        &user,
        &var("KAFKA_SASL_PLAIN_PASSWORD"),
    );
    let owner = KafkaPrincipal::user(&user);
    let renewer = KafkaPrincipal::user(var("KAFKA_ACL_USER_USERNAME"));
    let token = admin
        .run(
            CreateDelegationToken::new()
                .renewers([renewer.clone()])
                .max_lifetime(Duration::from_secs(3 * 3600)),
        )
        .expect("create token");
    let info = &token.info;
    assert_eq!(info.owner, owner);
    assert_eq!(info.token_requester, owner);
    assert_eq!(info.renewers, std::slice::from_ref(&renewer));
    assert!(!info.token_id.is_empty() && !token.hmac.is_empty());
    assert!(info.issue_timestamp_ms < info.expiry_timestamp_ms);
    assert!(info.expiry_timestamp_ms <= info.max_timestamp_ms);
    assert!(info.max_timestamp_ms <= info.issue_timestamp_ms + 3 * 3600 * 1000);
    assert!(
        !format!("{token:?}").contains(token.hmac.expose()),
        "hmac in Debug output"
    );

    let find = |admin: &D| {
        admin
            .run(DescribeDelegationToken::new().owners([owner.clone()]))
            .expect("describe tokens")
            .into_iter()
            .find(|t| t.info.token_id == info.token_id)
    };
    let listed = eventually("token to be listed", || find(&admin));
    assert_eq!(listed.hmac, token.hmac);
    assert_eq!(listed.info, *info);

    // Renew for one hour: the expiry moves from the default (a day, capped at the max
    // lifetime of three hours) to about an hour from now.
    let renewed = admin
        .run(RenewDelegationToken::new(token.hmac.clone()).renew_period(Duration::from_secs(3600)))
        .expect("renew token");
    assert_ne!(renewed, info.expiry_timestamp_ms);
    assert!(renewed > info.issue_timestamp_ms + 3500 * 1000 && renewed <= info.max_timestamp_ms);
    eventually("renewed expiry to be described", || {
        find(&admin).filter(|t| t.info.expiry_timestamp_ms == renewed)
    });

    admin
        .run(ExpireDelegationToken::new(token.hmac.clone()))
        .expect("expire token");
    eventually("expired token to be gone", || {
        find(&admin).is_none().then_some(())
    });
}
