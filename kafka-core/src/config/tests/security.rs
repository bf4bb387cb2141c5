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
        .ssl_client_cert_pem(CERT, KEY);
    let mut with_password = b.clone();
    with_password.ssl_key_password("KEYPASSWORD");
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
        format!("{with_password:?}"),
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

const CLIENT_CERT: &str = include_str!("../../conn/tls/testdata/client.pem");
const CLIENT_KEY: &str = include_str!("../../conn/tls/testdata/client.key");
const ENCRYPTED_KEY: &str = include_str!("../../conn/tls/testdata/client-encrypted.key");
#[cfg(feature = "tls")]
const ENCRYPTED_KEY_SHA1: &str = include_str!("../../conn/tls/testdata/client-encrypted-sha1.key");
const KEY_PASSWORD: &str = "kafka-rs-test";

/// The DER inside a PEM private key, for comparing keys whatever their PEM layout.
#[cfg(feature = "tls")]
fn key_der(pem: &str) -> Vec<u8> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::PrivateKeyDer::from_pem_slice(pem.as_bytes())
        .unwrap()
        .secret_der()
        .to_vec()
}

#[cfg(feature = "tls")]
#[test]
fn ssl_key_password_decrypts_an_encrypted_pkcs8_key() {
    let plain_der = key_der(CLIENT_KEY);
    for encrypted in [ENCRYPTED_KEY, ENCRYPTED_KEY_SHA1] {
        // Inline, through the string keys.
        let config = ClientConfig::from_pairs([
            ("bootstrap.servers", "b:9093"),
            ("security.protocol", "SSL"),
            ("ssl.certificate.pem", CLIENT_CERT),
            ("ssl.key.pem", encrypted),
            ("ssl.key.password", KEY_PASSWORD),
        ])
        .unwrap();
        let key = config.security().ssl.key_pem.as_ref().unwrap();
        assert!(key.expose().starts_with("-----BEGIN PRIVATE KEY-----"));
        assert_eq!(key_der(key.expose()), plain_der);
        let debug = format!("{config:?}");
        assert!(!debug.contains(KEY_PASSWORD) && !debug.contains(&CLIENT_KEY[28..60]));
        // The TLS layer takes it: it matches the client certificate.
        let tls = crate::conn::tls::TlsConfig {
            client_cert_pem: Some(CLIENT_CERT.as_bytes().to_vec()),
            client_key_pem: Some(key.clone()),
            danger_accept_invalid_certs: true,
            ..crate::conn::tls::TlsConfig::default()
        };
        tls.build().unwrap();

        // From a file: decrypted when loaded.
        let config = ClientConfig::from_pairs([
            ("bootstrap.servers", "b:9093"),
            ("ssl.certificate.location", "/certs/client.pem"),
            ("ssl.key.location", "/certs/client.key"),
            ("ssl.key.password", KEY_PASSWORD),
        ])
        .unwrap();
        let loaded = config
            .with_ssl_files_loaded(|path| {
                Ok(match path.to_str() {
                    Some("/certs/client.key") => encrypted.as_bytes().to_vec(),
                    _ => CLIENT_CERT.as_bytes().to_vec(),
                })
            })
            .unwrap();
        let key = loaded.security().ssl.key_pem.as_ref().unwrap();
        assert_eq!(key_der(key.expose()), plain_der);
    }
}

#[test]
fn ssl_key_password_mistakes_are_named_and_never_shown() {
    let build = |key: &str, password: Option<&str>| {
        let mut b = base();
        b.ssl_client_cert_pem(CLIENT_CERT, key);
        if let Some(p) = password {
            b.ssl_key_password(p);
        }
        b.build()
    };
    let check = |err: ConfigError, names: &str, says: &str| {
        let text = format!("{err} / {err:?}");
        assert!(text.contains(names) && text.contains(says), "{text}");
        assert!(
            !text.contains("WRONGPASSWORD") && !text.contains(KEY_PASSWORD),
            "{text}"
        );
        assert!(!text.contains(&ENCRYPTED_KEY[40..80]), "{text}");
        assert!(!text.contains(&CLIENT_KEY[28..60]), "{text}");
    };
    if cfg!(feature = "tls") {
        check(
            build(ENCRYPTED_KEY, Some("WRONGPASSWORD")).unwrap_err(),
            "ssl.key.password",
            "wrong password",
        );
    }
    check(
        build(ENCRYPTED_KEY, None).unwrap_err(),
        "ssl.key.password",
        "encrypted PKCS#8",
    );
    check(
        build(CLIENT_KEY, Some("WRONGPASSWORD")).unwrap_err(),
        "ssl.key.password",
        "not encrypted",
    );
    let legacy = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\
                  DEK-Info: AES-256-CBC,00112233445566778899AABBCCDDEEFF\n\nAAAA\n\
                  -----END RSA PRIVATE KEY-----\n";
    check(
        build(legacy, Some(KEY_PASSWORD)).unwrap_err(),
        "ssl.key.pem",
        "openssl pkcs8 -topk8",
    );
    // A password with no key at all.
    let mut b = base();
    b.ssl_key_password(KEY_PASSWORD);
    check(b.build().unwrap_err(), "ssl.key.password", "no private key");
    // An encrypted key file without the password.
    let config = ClientConfig::from_pairs([
        ("bootstrap.servers", "b:9093"),
        ("ssl.certificate.location", "/c.pem"),
        ("ssl.key.location", "/c.key"),
    ])
    .unwrap();
    let err = config
        .with_ssl_files_loaded(|_| Ok(ENCRYPTED_KEY.as_bytes().to_vec()))
        .unwrap_err();
    check(err, "ssl.key.location", "ssl.key.password");
}
