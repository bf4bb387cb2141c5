//! Security tests: SASL credentials, TLS consistency, redaction of secrets.

use std::sync::Arc;

use super::{base, CERT, KEY};
use crate::config::*;
use crate::conn::sasl::Mechanism;
use crate::secret::Secret;

struct FixedToken;

impl TokenProvider for FixedToken {
    fn token(&self) -> Result<OAuthToken, String> {
        Ok(OAuthToken {
            value: Secret::new("eyJ.TOKENVALUE.sig"),
            lifetime_ms: 1_000,
            principal: "alice".into(),
            extensions: vec![("traceId".into(), "1".into())],
        })
    }
}

#[test]
fn debug_never_shows_secrets() {
    let mut b = base();
    b.security_protocol(SecurityProtocol::SaslSsl)
        .sasl_plain("alice", "HUNTER2PASSWORD")
        .ssl_client_cert_pem(CERT, KEY)
        .ssl_key_password("KEYPASSWORD");
    let mut pairs = base();
    pairs
        .set("sasl.username", "alice")
        .and_then(|p| p.set("sasl.password", "HUNTER2PASSWORD"))
        .and_then(|p| p.set("ssl.key.password", "KEYPASSWORD"))
        .unwrap();
    let built = b.build().unwrap();
    for text in [
        format!("{b:?}"),
        format!("{built:?}"),
        format!("{pairs:?}"),
        format!("{b:#?}"),
    ] {
        for secret in ["HUNTER2PASSWORD", "TOPSECRETKEY", "KEYPASSWORD"] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
        assert!(text.contains("alice"));
    }
    let mut o = base();
    o.security_protocol(SecurityProtocol::SaslPlaintext)
        .sasl_oauthbearer(Arc::new(FixedToken));
    let text = format!("{:?}", o.build().unwrap());
    assert!(text.contains("TokenProvider"), "{text}");
    let token = FixedToken.token().unwrap();
    assert!(!format!("{token:?}").contains("TOKENVALUE"));
}

#[test]
fn invalid_values_of_secret_keys_are_redacted() {
    for (key, value) in [
        ("sasl.password", "SECRETPW\0"),
        ("ssl.key.password", "SECRETPW\0"),
        ("ssl.key.pem", "SECRETPW no pem here"),
    ] {
        let err = base().set(key, value).unwrap_err();
        assert!(
            matches!(&err, ConfigError::InvalidValue { value, .. } if value == "***"),
            "{err:?}"
        );
        assert!(!err.to_string().contains("SECRETPW"), "{err}");
        assert!(!format!("{err:?}").contains("SECRETPW"), "{err:?}");
    }
    // Typed secrets are redacted when `build` rejects them too.
    let mut b = base();
    b.ssl_client_cert_pem(CERT, "SECRETPW not a key");
    let err = b.build().unwrap_err();
    assert!(
        matches!(&err, ConfigError::InvalidValue { value, .. } if value == "***"),
        "{err:?}"
    );
    // Non-secret values are shown.
    let err = base().set("retries", "lots").unwrap_err();
    assert!(err.to_string().contains("`lots`"), "{err}");
}

#[test]
fn sasl_protocols_require_credentials() {
    let missing = |b: &ClientConfigBuilder| match b.build() {
        Err(ConfigError::Missing { key }) => key,
        other => panic!("expected Missing, got {other:?}"),
    };
    let mut b = base();
    b.security_protocol(SecurityProtocol::SaslPlaintext);
    assert_eq!(missing(&b), "sasl.username");
    b.set("sasl.username", "alice").unwrap();
    assert_eq!(missing(&b), "sasl.password");
    b.set("sasl.password", "pw").unwrap();
    b.build().unwrap();
    b.set("sasl.mechanism", "OAUTHBEARER").unwrap();
    assert!(missing(&b).contains("sasl_oauthbearer"));
    b.sasl_oauthbearer(Arc::new(FixedToken));
    b.build().unwrap();
    // Credentials are not needed (and are ignored) without SASL.
    base()
        .set("sasl.mechanism", "SCRAM-SHA-256")
        .unwrap()
        .build()
        .unwrap();
}

#[test]
fn sasl_scram_needs_a_scram_mechanism() {
    let mut b = base();
    b.sasl_scram(Mechanism::Plain, "u", "p");
    assert!(matches!(b.build(), Err(ConfigError::Conflict { .. })));
    b.sasl_scram(Mechanism::ScramSha512, "u", "p");
    assert_eq!(
        b.build().unwrap().security().sasl.mechanism,
        Mechanism::ScramSha512
    );
}

#[test]
fn tls_settings_are_checked_for_consistency_and_unused_without_tls() {
    let mut b = base();
    b.ssl_ca_location("/ca.pem").ssl_ca_pem(CERT);
    assert!(matches!(b.build(), Err(ConfigError::Conflict { .. })));
    let mut b = base();
    b.set("ssl.certificate.location", "/c.pem").unwrap();
    assert!(matches!(b.build(), Err(ConfigError::Conflict { .. })));
    b.set("ssl.key.location", "/c.key").unwrap();
    // Allowed with PLAINTEXT (as in Java): stored but unused.
    let c = b.build().unwrap();
    assert!(!c.security().protocol.uses_tls());
    let mut d = base();
    d.danger_accept_invalid_certs(true)
        .security_protocol(SecurityProtocol::Ssl);
    assert!(
        d.build()
            .unwrap()
            .security()
            .ssl
            .danger_accept_invalid_certs
    );
}

#[test]
fn ssl_files_are_loaded_through_the_adapters_reader_and_errors_name_the_key() {
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", "b:9093"),
        ("security.protocol", "SSL"),
        ("ssl.ca.location", "/certs/ca.pem"),
        ("ssl.certificate.location", "/certs/client.pem"),
        ("ssl.key.location", "/certs/client.key"),
    ])
    .unwrap();
    let mut asked = Vec::new();
    let loaded = config
        .clone()
        .with_ssl_files_loaded(|path| {
            asked.push(path.display().to_string());
            Ok(match path.to_str() {
                Some("/certs/client.key") => KEY.as_bytes().to_vec(),
                _ => CERT.as_bytes().to_vec(),
            })
        })
        .unwrap();
    assert_eq!(asked.len(), 3);
    let ssl = &loaded.security().ssl;
    assert!(ssl.ca_location.is_none() && ssl.certificate_location.is_none());
    assert!(ssl.key_location.is_none());
    assert_eq!(ssl.ca_pem.as_deref(), Some(CERT));
    assert_eq!(ssl.certificate_pem.as_deref(), Some(CERT));
    assert_eq!(ssl.key_pem.as_ref().map(|k| k.expose()), Some(KEY));
    assert!(
        !format!("{loaded:?}").contains(KEY.trim()),
        "the key stays redacted"
    );

    let err = config
        .with_ssl_files_loaded(|_| Err(std::io::Error::from(std::io::ErrorKind::NotFound)))
        .unwrap_err();
    assert!(err.to_string().contains("ssl.ca.location"), "{err}");
}

/// A private key pasted into a certificate setting, or a combined certificate-and-key
/// PEM, is never echoed: not by `Debug` of the builder or the config, not by any error.
#[test]
fn a_private_key_in_a_certificate_setting_is_never_echoed() {
    let combined = format!("{CERT}{KEY}");
    let one_line: String = combined.lines().collect();
    let leaks = |text: &str| text.contains("TOPSECRETKEY");

    // Accepted: a combined PEM as the client chain (only its certificates are used).
    for chain in [combined.as_str(), one_line.as_str()] {
        let mut b = base();
        b.security_protocol(SecurityProtocol::Ssl)
            .ssl_ca_pem(CERT)
            .ssl_client_cert_pem(chain, KEY);
        let built = b.build().unwrap();
        let mut pairs = base();
        pairs
            .set("ssl.certificate.pem", chain)
            .and_then(|p| p.set("ssl.key.pem", KEY))
            .unwrap();
        for text in [
            format!("{b:?}"),
            format!("{b:#?}"),
            format!("{built:?}"),
            format!("{:?}", built.security()),
            format!("{pairs:?}"),
        ] {
            assert!(!leaks(&text), "{text}");
            assert!(text.contains("PEM: CERTIFICATE"), "{text}");
        }
    }

    // Refused without echoing: a key where CA certificates go (alone, combined, or on
    // one line) and a key alone as the client chain.
    let refused = [
        ("ssl.ca.pem", KEY),
        ("ssl.ca.pem", combined.as_str()),
        ("ssl.ca.pem", one_line.as_str()),
        ("ssl.certificate.pem", KEY),
    ];
    for (key, value) in refused {
        let err = base().set(key, value).unwrap_err();
        for text in [err.to_string(), format!("{err:?}")] {
            assert!(!leaks(&text), "{key}: {text}");
            assert!(text.contains(key), "{text}");
        }
    }
    // The same through the typed builder, checked by `build`.
    for err in [
        base().ssl_ca_pem(KEY).build().unwrap_err(),
        base().ssl_ca_pem(combined.as_str()).build().unwrap_err(),
        base().ssl_client_cert_pem(KEY, KEY).build().unwrap_err(),
    ] {
        for text in [err.to_string(), format!("{err:?}")] {
            assert!(!leaks(&text), "{text}");
            assert!(text.contains("ssl.ca.pem") || text.contains("ssl.certificate.pem"));
        }
    }
    let err = base().ssl_ca_pem(combined.as_str()).build().unwrap_err();
    assert!(err.to_string().contains("private key"), "{err}");
    // And from a CA file that holds a key: the error names the key and the path only.
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", "b:9093"),
        ("ssl.ca.location", "/certs/ca.pem"),
    ])
    .unwrap();
    let err = config
        .with_ssl_files_loaded(|_| Ok(combined.clone().into_bytes()))
        .unwrap_err();
    let text = format!("{err} {err:?}");
    assert!(!leaks(&text) && text.contains("ssl.ca.location") && text.contains("/certs/ca.pem"));
}
