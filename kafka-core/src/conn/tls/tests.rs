//! In-memory handshakes: a `TlsSession` against a rustls `ServerConnection`, bytes
//! pumped between them by hand. The test PKI is in `testdata/` (see its README).

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, ServerConnection};

use super::verify::FixedClock;
use super::*;
use crate::secret::Secret;

const CA: &[u8] = include_bytes!("testdata/ca.pem");
const OTHER_CA: &[u8] = include_bytes!("testdata/other-ca.pem");
const SERVER_CERT: &[u8] = include_bytes!("testdata/server.pem");
const SERVER_KEY: &[u8] = include_bytes!("testdata/server.key");
const CLIENT_CERT: &[u8] = include_bytes!("testdata/client.pem");
const CLIENT_KEY: &str = include_str!("testdata/client.key");

/// 2027-01-01T00:00:00Z, inside the test certificates' validity (2026-11-29 .. 2126).
const NOW_SECS: u64 = 1_798_761_600;

fn at(secs: u64) -> UnixTime {
    UnixTime::since_unix_epoch(Duration::from_secs(secs))
}

fn now() -> UnixTime {
    at(NOW_SECS)
}

fn trusting(ca: &[u8]) -> TlsConfig {
    TlsConfig {
        ca_pem: Some(ca.to_vec()),
        ..TlsConfig::default()
    }
}

fn with_client_cert(mut config: TlsConfig) -> TlsConfig {
    config.client_cert_pem = Some(CLIENT_CERT.to_vec());
    config.client_key_pem = Some(Secret::new(CLIENT_KEY));
    config
}

#[derive(Clone, Copy)]
enum ServerAuth {
    NoClientAuth,
    RequireClientCert,
}

fn server_config(auth: ServerAuth, tls12_only: bool) -> Arc<ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_details(provider.clone(), Arc::new(FixedClock(now())));
    let builder = if tls12_only {
        builder.with_protocol_versions(&[&rustls::version::TLS12])
    } else {
        builder.with_safe_default_protocol_versions()
    }
    .unwrap();
    let builder = match auth {
        ServerAuth::NoClientAuth => builder.with_no_client_auth(),
        ServerAuth::RequireClientCert => {
            let mut roots = RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(CA) {
                roots.add(cert.unwrap()).unwrap();
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
    };
    let chain = CertificateDer::pem_slice_iter(SERVER_CERT)
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(SERVER_KEY).unwrap();
    Arc::new(builder.with_single_cert(chain, key).unwrap())
}

/// A client session and an in-memory server, with the bytes between them moved by
/// [`Pair::drive`].
struct Pair {
    client: TlsSession,
    server: ServerConnection,
    client_err: Option<TlsError>,
    server_err: Option<rustls::Error>,
    /// Plaintext the server received.
    server_plain: Vec<u8>,
    /// Size of the pieces server→client ciphertext is fed to the client in.
    chunk: usize,
}

impl Pair {
    fn new(config: &TlsConfig, host: &str, auth: ServerAuth) -> Self {
        Self::with_server(config, host, server_config(auth, false))
    }

    fn with_server(config: &TlsConfig, host: &str, server: Arc<ServerConfig>) -> Self {
        let client = TlsSession::new(&config.build().unwrap(), host, now()).unwrap();
        let mut server = ServerConnection::new(server).unwrap();
        server.set_buffer_limit(None);
        Self {
            client,
            server,
            client_err: None,
            server_err: None,
            server_plain: Vec::new(),
            chunk: usize::MAX,
        }
    }

    /// Moves bytes both ways until neither side has anything to send.
    fn drive(&mut self) {
        for _ in 0..10_000 {
            let mut moved = false;
            let mut c2s = Vec::new();
            self.client.poll_ciphertext(&mut c2s);
            if !c2s.is_empty() && self.server_err.is_none() {
                moved = true;
                self.feed_server(&c2s);
            }
            let mut s2c = Vec::new();
            while self.server.wants_write() {
                self.server.write_tls(&mut s2c).unwrap();
            }
            if !s2c.is_empty() && self.client_err.is_none() {
                moved = true;
                for piece in s2c.chunks(self.chunk.min(s2c.len())) {
                    if let Err(e) = self.client.handle_ciphertext(piece) {
                        self.client_err = Some(e);
                        break;
                    }
                }
            }
            if !moved {
                return;
            }
        }
        panic!("the pair never went quiet");
    }

    fn feed_server(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let n = self.server.read_tls(&mut data).unwrap();
            assert!(n > 0);
            if let Err(e) = self.server.process_new_packets() {
                self.server_err = Some(e);
                return;
            }
            let mut buf = [0u8; 4096];
            loop {
                match self.server.reader().read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => self.server_plain.extend_from_slice(&buf[..n]),
                }
            }
        }
    }

    fn client_plain(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        self.client.read_plaintext(&mut out).unwrap();
        out
    }

    fn assert_connected(&self) {
        assert_eq!(self.client_err, None);
        assert_eq!(self.server_err, None);
        assert!(!self.client.is_handshaking());
        assert!(!self.server.is_handshaking());
    }
}

/// Deterministic pseudo-random bytes (xorshift64*).
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

fn exchange_both_ways(pair: &mut Pair) {
    let request = noise(7, 100_000);
    pair.client.write_plaintext(&request).unwrap();
    pair.drive();
    assert_eq!(pair.server_plain, request);

    let response = noise(8, 100_000);
    pair.server.writer().write_all(&response).unwrap();
    pair.drive();
    assert_eq!(pair.client_plain(), response);
}

#[test]
fn handshake_then_plaintext_both_ways() {
    let mut pair = Pair::new(&trusting(CA), "localhost", ServerAuth::NoClientAuth);
    // Written before the handshake: held, then sent once it completes.
    pair.client
        .write_plaintext(b"\x00\x00\x00\x10hello broker")
        .unwrap();
    assert!(pair.client.is_handshaking());
    pair.drive();
    pair.assert_connected();
    assert_eq!(pair.server_plain, b"\x00\x00\x00\x10hello broker");
    pair.server_plain.clear();

    pair.server.writer().write_all(b"hello client").unwrap();
    pair.drive();
    assert_eq!(pair.client_plain(), b"hello client");

    // More than rustls' 16 KiB received-plaintext buffer in one go, both ways.
    exchange_both_ways(&mut pair);
    assert_eq!(
        pair.server.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_3)
    );
}

#[test]
fn tls12_handshake_works() {
    let server = server_config(ServerAuth::NoClientAuth, true);
    let mut pair = Pair::with_server(&trusting(CA), "localhost", server);
    pair.drive();
    pair.assert_connected();
    assert_eq!(
        pair.server.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_2)
    );
    exchange_both_ways(&mut pair);
}

#[test]
fn ip_literal_host_is_verified_against_ip_san() {
    let mut pair = Pair::new(&trusting(CA), "127.0.0.1", ServerAuth::NoClientAuth);
    pair.drive();
    pair.assert_connected();
    // No SNI for IP addresses.
    assert_eq!(pair.server.server_name(), None);
}

#[test]
fn sni_carries_the_host_name() {
    let mut pair = Pair::new(&trusting(CA), "localhost", ServerAuth::NoClientAuth);
    pair.drive();
    assert_eq!(pair.server.server_name(), Some("localhost"));
}

#[test]
fn wrong_host_name_is_rejected_and_the_error_is_sticky() {
    let mut pair = Pair::new(&trusting(CA), "kafka.example.com", ServerAuth::NoClientAuth);
    pair.drive();
    let Some(TlsError::Certificate(reason)) = &pair.client_err else {
        panic!("expected a certificate error, got {:?}", pair.client_err);
    };
    assert!(reason.contains("kafka.example.com"), "{reason}");
    // The client told the server why.
    assert!(matches!(
        pair.server_err,
        Some(rustls::Error::AlertReceived(_))
    ));
    let err = pair.client_err.clone().unwrap();
    assert_eq!(pair.client.handle_ciphertext(b"more").unwrap_err(), err);
    assert_eq!(pair.client.write_plaintext(b"x").unwrap_err(), err);
    assert_eq!(
        pair.client.read_plaintext(&mut Vec::new()).unwrap_err(),
        err
    );
    assert_eq!(pair.client.error(), Some(&err));
}

#[test]
fn server_name_override_is_used_for_verification() {
    let config = TlsConfig {
        server_name_override: Some("localhost".into()),
        ..trusting(CA)
    };
    let mut pair = Pair::new(&config, "broker-7.internal", ServerAuth::NoClientAuth);
    pair.drive();
    pair.assert_connected();
    assert_eq!(pair.server.server_name(), Some("localhost"));
}

#[test]
fn unknown_ca_is_rejected() {
    let mut pair = Pair::new(&trusting(OTHER_CA), "localhost", ServerAuth::NoClientAuth);
    pair.drive();
    let Some(TlsError::Certificate(reason)) = &pair.client_err else {
        panic!("expected a certificate error, got {:?}", pair.client_err);
    };
    assert!(reason.to_lowercase().contains("issuer"), "{reason}");
}

#[test]
fn without_endpoint_identification_a_wrong_name_is_accepted() {
    let config = TlsConfig {
        endpoint_identification: false,
        ..trusting(CA)
    };
    let mut pair = Pair::new(&config, "kafka.example.com", ServerAuth::NoClientAuth);
    pair.drive();
    pair.assert_connected();
    exchange_both_ways(&mut pair);
}

#[test]
fn without_endpoint_identification_an_unknown_ca_is_still_rejected() {
    let config = TlsConfig {
        endpoint_identification: false,
        ..trusting(OTHER_CA)
    };
    let mut pair = Pair::new(&config, "kafka.example.com", ServerAuth::NoClientAuth);
    pair.drive();
    assert!(
        matches!(&pair.client_err, Some(TlsError::Certificate(r)) if r.to_lowercase().contains("issuer")),
        "{:?}",
        pair.client_err
    );
}

#[test]
fn danger_accept_invalid_certs_accepts_anything() {
    for ca in [None, Some(OTHER_CA.to_vec())] {
        let config = TlsConfig {
            ca_pem: ca,
            danger_accept_invalid_certs: true,
            ..TlsConfig::default()
        };
        let mut pair = Pair::new(&config, "kafka.example.com", ServerAuth::NoClientAuth);
        pair.drive();
        pair.assert_connected();
    }
    // Even outside the validity period.
    let config = TlsConfig {
        danger_accept_invalid_certs: true,
        ..TlsConfig::default()
    };
    let built = config.build().unwrap();
    let mut pair = Pair::new(&config, "localhost", ServerAuth::NoClientAuth);
    pair.client = TlsSession::new(&built, "localhost", at(0)).unwrap();
    pair.drive();
    pair.assert_connected();
}

#[test]
fn certificate_validity_uses_the_time_passed_in() {
    // 2200-01-01: after the certificates expire.
    let built = trusting(CA).build().unwrap();
    let mut pair = Pair::new(&trusting(CA), "localhost", ServerAuth::NoClientAuth);
    pair.client = TlsSession::new(&built, "localhost", at(7_258_118_400)).unwrap();
    pair.drive();
    assert!(
        matches!(&pair.client_err, Some(TlsError::Certificate(r)) if r.to_lowercase().contains("expired")),
        "{:?}",
        pair.client_err
    );
    // 2020-01-01: before they were issued.
    let mut pair = Pair::new(&trusting(CA), "localhost", ServerAuth::NoClientAuth);
    pair.client = TlsSession::new(&built, "localhost", at(1_577_836_800)).unwrap();
    pair.drive();
    assert!(
        matches!(&pair.client_err, Some(TlsError::Certificate(r)) if r.to_lowercase().contains("not valid yet")),
        "{:?}",
        pair.client_err
    );
}

#[test]
fn mtls_with_client_certificate_succeeds() {
    let config = with_client_cert(trusting(CA));
    let mut pair = Pair::new(&config, "localhost", ServerAuth::RequireClientCert);
    pair.drive();
    pair.assert_connected();
    let certs = pair.server.peer_certificates().expect("client certificate");
    let client_der = CertificateDer::from_pem_slice(CLIENT_CERT).unwrap();
    assert_eq!(certs[0], client_der);
    exchange_both_ways(&mut pair);
}

#[test]
fn mtls_without_client_certificate_fails() {
    let mut pair = Pair::new(&trusting(CA), "localhost", ServerAuth::RequireClientCert);
    pair.drive();
    assert!(pair.server_err.is_some());
    // TLS 1.3: the client finishes first, then gets the server's alert.
    assert_eq!(
        pair.client_err,
        Some(TlsError::AlertReceived(
            AlertDescription::CertificateRequired
        ))
    );
}

#[test]
fn ciphertext_delivered_one_byte_at_a_time() {
    let config = with_client_cert(trusting(CA));
    let mut pair = Pair::new(&config, "localhost", ServerAuth::RequireClientCert);
    pair.chunk = 1;
    pair.client.write_plaintext(b"early").unwrap();
    pair.drive();
    pair.assert_connected();
    assert_eq!(pair.server_plain, b"early");
    pair.server.writer().write_all(&noise(3, 40_000)).unwrap();
    pair.drive();
    assert_eq!(pair.client_plain(), noise(3, 40_000));
}

#[test]
fn plaintext_kafka_bytes_are_a_typed_error() {
    let built = trusting(CA).build().unwrap();
    let mut client = TlsSession::new(&built, "localhost", now()).unwrap();
    let mut hello = Vec::new();
    assert!(client.poll_ciphertext(&mut hello) > 0);
    // A plaintext listener's ApiVersions response: size 16, correlation id, ...
    let kafka = [0, 0, 0, 16, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    let err = client.handle_ciphertext(&kafka).unwrap_err();
    assert!(matches!(err, TlsError::Malformed(_)), "{err:?}");
    assert_eq!(client.handle_ciphertext(&kafka).unwrap_err(), err);
    // An alert for the peer is queued, not a panic.
    let mut out = Vec::new();
    client.poll_ciphertext(&mut out);
}

#[test]
fn random_bytes_are_a_typed_error() {
    let built = trusting(CA).build().unwrap();
    for seed in 1..200 {
        for chunk in [1, 7, 4096, usize::MAX] {
            let mut client = TlsSession::new(&built, "localhost", now()).unwrap();
            client.poll_ciphertext(&mut Vec::new());
            let data = noise(seed, 70_000);
            let result = data
                .chunks(chunk.min(data.len()))
                .try_for_each(|piece| client.handle_ciphertext(piece));
            let err = result.expect_err("random bytes accepted");
            assert!(client.error().is_some(), "{err:?}");
            let mut plain = Vec::new();
            assert_eq!(client.read_plaintext(&mut plain).unwrap_err(), err);
            assert!(plain.is_empty());
        }
    }
}

#[test]
fn debug_never_shows_the_private_key() {
    let config = with_client_cert(trusting(CA));
    let debug = format!("{config:?}");
    assert!(debug.contains("***"), "{debug}");
    assert!(!debug.contains("PRIVATE KEY"), "{debug}");
    let body = CLIENT_KEY.lines().nth(1).unwrap();
    assert!(!debug.contains(body), "{debug}");
    assert!(!debug.contains(&body[..12]), "{debug}");
    let built = format!("{:?}", config.build().unwrap());
    assert!(!built.contains(body) && !built.contains("PRIVATE KEY"));
}

#[test]
fn config_errors_are_typed() {
    assert_eq!(
        TlsConfig::default().build().unwrap_err(),
        TlsError::NoTrustAnchors
    );
    assert_eq!(
        trusting(b"not pem at all").build().unwrap_err(),
        TlsError::NoCertificates { what: "ca_pem" }
    );
    assert!(matches!(
        trusting(b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n")
            .build()
            .unwrap_err(),
        TlsError::Pem { what: "ca_pem", .. }
    ));
    let mut config = trusting(CA);
    config.client_cert_pem = Some(CLIENT_CERT.to_vec());
    assert_eq!(config.build().unwrap_err(), TlsError::IncompleteClientAuth);
    config.client_key_pem = Some(Secret::new("no key here"));
    assert!(matches!(
        config.build().unwrap_err(),
        TlsError::PrivateKey(_)
    ));
    // A valid key that does not belong to the certificate.
    config.client_key_pem = Some(Secret::new(include_str!("testdata/server.key")));
    assert!(matches!(
        config.build().unwrap_err(),
        TlsError::PrivateKey(_)
    ));

    let built = trusting(CA).build().unwrap();
    assert_eq!(
        TlsSession::new(&built, "bad host!", now()).unwrap_err(),
        TlsError::InvalidServerName("bad host!".into())
    );
    assert!(TlsSession::new(&built, "[::1]", now()).is_ok());
}

#[test]
fn plaintext_before_the_handshake_is_bounded() {
    let built = trusting(CA).build().unwrap();
    let mut client = TlsSession::new(&built, "localhost", now()).unwrap();
    client
        .write_plaintext(&[1; HANDSHAKE_PLAINTEXT_LIMIT - 10])
        .unwrap();
    assert_eq!(
        client.write_plaintext(&[2; 11]).unwrap_err(),
        TlsError::HandshakeBufferFull {
            limit: HANDSHAKE_PLAINTEXT_LIMIT
        }
    );
    // Not sticky, and nothing of the refused write was queued.
    client.write_plaintext(&[3; 10]).unwrap();
    assert!(client.error().is_none());
}

#[test]
fn close_notify_both_ways() {
    let mut pair = Pair::new(&trusting(CA), "localhost", ServerAuth::NoClientAuth);
    pair.drive();
    pair.server.writer().write_all(b"last words").unwrap();
    pair.server.send_close_notify();
    pair.drive();
    assert!(pair.client.peer_closed());
    assert_eq!(pair.client_plain(), b"last words");
    // Bytes after close_notify are ignored.
    pair.client.handle_ciphertext(b"trailing").unwrap();

    pair.client.send_close_notify();
    assert!(pair.client.wants_write());
    pair.drive();
    assert!(pair.server.process_new_packets().unwrap().peer_has_closed());
    assert_eq!(
        pair.client.write_plaintext(b"x").unwrap_err(),
        TlsError::Closed
    );
}

/// The base64 lines of the test client key: none may appear in any error text.
fn client_key_material() -> Vec<String> {
    let mut out: Vec<String> = CLIENT_KEY
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .map(|l| l[..16].to_owned())
        .collect();
    // The key joined onto one line, as pasted into an environment variable.
    out.push(
        CLIENT_KEY
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect(),
    );
    out
}

fn assert_no_key_material(text: &str) {
    for piece in client_key_material() {
        assert!(!text.contains(&piece), "key material {piece:?} in {text}");
        // Also as a `Debug` byte list (`[77, 73, 71, ...`), the form rustls' PEM errors
        // quote a line in.
        let bytes = format!("{:?}", &piece.as_bytes()[..16]);
        let bytes = bytes.trim_start_matches('[').trim_end_matches(']');
        assert!(!text.contains(bytes), "key material [{bytes}] in {text}");
    }
}

#[test]
fn pem_errors_never_quote_a_private_key() {
    let one_line = |pem: &str| pem.lines().collect::<String>();
    let key_line = one_line(CLIENT_KEY);
    let cert = std::str::from_utf8(CLIENT_CERT).unwrap();
    let combined = format!("{cert}{CLIENT_KEY}");
    let ca = std::str::from_utf8(CA).unwrap();
    let cases: Vec<(&str, TlsConfig)> = vec![
        // The key pasted on one line where the CA certificates go (rustls' own message
        // would quote the line, key and all).
        ("ca_pem = one-line key", trusting(key_line.as_bytes())),
        (
            "ca_pem = CA + one-line key",
            trusting(format!("{ca}{key_line}\n").as_bytes()),
        ),
        ("ca_pem = key", trusting(CLIENT_KEY.as_bytes())),
        (
            "client_cert_pem = one-line cert + key",
            TlsConfig {
                client_cert_pem: Some(one_line(&combined).into_bytes()),
                client_key_pem: Some(Secret::new(CLIENT_KEY)),
                ..trusting(CA)
            },
        ),
        (
            "client_key_pem = one-line key",
            TlsConfig {
                client_cert_pem: Some(CLIENT_CERT.to_vec()),
                client_key_pem: Some(Secret::new(key_line.clone())),
                ..trusting(CA)
            },
        ),
        (
            "client_key_pem = key with its END line joined on",
            TlsConfig {
                client_cert_pem: Some(CLIENT_CERT.to_vec()),
                client_key_pem: Some(Secret::new(CLIENT_KEY.replace("\n-----END", "-----END"))),
                ..trusting(CA)
            },
        ),
        (
            "client_key_pem = key with a broken END line",
            TlsConfig {
                client_cert_pem: Some(CLIENT_CERT.to_vec()),
                client_key_pem: Some(Secret::new(CLIENT_KEY.replace("-----END", "--END"))),
                ..trusting(CA)
            },
        ),
    ];
    for (what, config) in cases {
        assert_no_key_material(&format!("{config:?}"));
        let err = config.build().expect_err(what);
        assert_no_key_material(&format!("{what}: {err} / {err:?}"));
    }
    // A combined certificate-and-key PEM as the client chain works: only its
    // certificates are used, and nothing shows the key.
    let config = TlsConfig {
        client_cert_pem: Some(combined.into_bytes()),
        client_key_pem: Some(Secret::new(CLIENT_KEY)),
        ..trusting(CA)
    };
    assert_no_key_material(&format!("{config:?}"));
    let built = config.build().unwrap();
    assert_no_key_material(&format!("{built:?}"));
}
