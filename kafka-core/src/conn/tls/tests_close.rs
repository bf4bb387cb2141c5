//! A TLS [`Connection`] whose broker ends the session with `close_notify` while a
//! request waits: the request fails at once with the retriable
//! [`ConnError::TlsClosedByPeer`], not at its request timeout (an in-memory rustls
//! server, the test PKI of `testdata/`).

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::{ServerConfig, ServerConnection};

use super::verify::FixedClock;
use super::{TlsConfig, TlsSession};
use crate::conn::{Completion, ConnConfig, ConnError, ConnState, Connection, Token};
use crate::protocol::messages::metadata::MetadataRequest;
use crate::protocol::ApiKey;
use crate::test_support::{broker_versions, origin, parse_requests, response_frame, Seen};

const CA: &[u8] = include_bytes!("testdata/ca.pem");
const SERVER_CERT: &[u8] = include_bytes!("testdata/server.pem");
const SERVER_KEY: &[u8] = include_bytes!("testdata/server.key");

/// 2027-01-01, inside the test certificates' validity.
fn now() -> UnixTime {
    UnixTime::since_unix_epoch(Duration::from_secs(1_798_761_600))
}

fn server() -> ServerConnection {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = CertificateDer::pem_slice_iter(SERVER_CERT)
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(SERVER_KEY).unwrap();
    let config = ServerConfig::builder_with_details(provider, Arc::new(FixedClock(now())))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    ServerConnection::new(Arc::new(config)).unwrap()
}

/// Moves bytes both ways until quiet; returns the requests the server read.
fn pump(conn: &mut Connection, server: &mut ServerConnection, plain: &mut Vec<u8>) -> Vec<Seen> {
    let at = origin();
    for _ in 0..100 {
        let mut out = Vec::new();
        conn.poll_transmit(&mut out);
        let mut data = out.as_slice();
        while !data.is_empty() {
            server.read_tls(&mut data).unwrap();
            server.process_new_packets().unwrap();
        }
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = server.reader().read(&mut buf) {
            plain.extend_from_slice(&buf[..n]);
        }
        let mut back = Vec::new();
        while server.wants_write() {
            server.write_tls(&mut back).unwrap();
        }
        if out.is_empty() && back.is_empty() {
            break;
        }
        if !back.is_empty() {
            conn.handle_received(at, &back);
        }
    }
    parse_requests(std::mem::take(plain))
}

#[test]
fn a_close_notify_fails_waiting_requests_at_once_and_retriably() {
    let at = origin();
    let config = TlsConfig {
        ca_pem: Some(CA.to_vec()),
        ..TlsConfig::default()
    };
    let session = TlsSession::new(&config.build().unwrap(), "localhost", now()).unwrap();
    let cfg = Arc::new(ConnConfig::default());
    let mut conn = Connection::with_tls(at, cfg, None, session);
    let mut server = server();
    let mut plain = Vec::new();
    let seen = pump(&mut conn, &mut server, &mut plain);
    assert_eq!(seen.len(), 1, "the ApiVersions request");
    assert_eq!(seen[0].api(), ApiKey::ApiVersions);
    let answer = response_frame(&seen[0], &broker_versions(), seen[0].version());
    server.writer().write_all(&answer).unwrap();
    let _ = pump(&mut conn, &mut server, &mut plain);
    assert_eq!(conn.state(), &ConnState::Ready);

    conn.submit(at, Token(7), Box::new(MetadataRequest::default()), None);
    let seen = pump(&mut conn, &mut server, &mut plain);
    assert_eq!(seen.len(), 1, "the Metadata request reached the broker");
    server.send_close_notify();
    let _ = pump(&mut conn, &mut server, &mut plain);
    assert_eq!(
        conn.state(),
        &ConnState::Failed(ConnError::TlsClosedByPeer),
        "failed when the close_notify arrived, not at the request timeout"
    );
    assert!(ConnError::TlsClosedByPeer.is_retriable());
    assert!(!ConnError::TlsClosedByPeer.is_protocol_violation());
    assert!(matches!(
        conn.poll_completion(),
        Some(Completion::Failed {
            token: Token(7),
            sent: true,
            ..
        })
    ));
}
