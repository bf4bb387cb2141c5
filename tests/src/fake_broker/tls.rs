//! [`Mode::TlsBreak`](super::Mode::TlsBreak): a TLS listener (the core's test PKI:
//! `kafka-core/src/conn/tls/testdata`, server certificate for `127.0.0.1` signed by
//! `ca.pem`) that completes the handshake, answers ApiVersions, then breaks the TLS
//! stream on the next request.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, OnceLock};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection, StreamOwned};

use super::{api_versions_answer, read_request, Mode, LIFETIME};
use kafka_core::protocol::ApiKey;

const SERVER_CERT: &[u8] = include_bytes!("../../../kafka-core/src/conn/tls/testdata/server.pem");
const SERVER_KEY: &[u8] = include_bytes!("../../../kafka-core/src/conn/tls/testdata/server.key");

/// The CA that signed the fake broker's certificate (`ssl.ca.location`).
pub fn ca_path() -> String {
    format!(
        "{}/../kafka-core/src/conn/tls/testdata/ca.pem",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// How the TLS stream breaks after ApiVersions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsBreak {
    /// A fatal alert record (unexpected_message) written in the clear inside the
    /// encrypted stream, then close.
    FatalAlert,
    /// A proper close_notify, then plaintext garbage on the socket.
    CloseNotifyThenGarbage,
}

fn config() -> Arc<ServerConfig> {
    static CONFIG: OnceLock<Arc<ServerConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let chain = CertificateDer::pem_slice_iter(SERVER_CERT)
                .collect::<Result<Vec<_>, _>>()
                .expect("test certificate");
            let key = PrivateKeyDer::from_pem_slice(SERVER_KEY).expect("test key");
            let config = ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("protocol versions")
                .with_no_client_auth()
                .with_single_cert(chain, key)
                .expect("server config");
            Arc::new(config)
        })
        .clone()
}

/// Serves one TLS connection: handshake, ApiVersions answers, then `how` on the first
/// other request.
pub(super) fn serve(socket: TcpStream, how: TlsBreak) {
    let _ = socket.set_read_timeout(Some(LIFETIME));
    let Ok(conn) = ServerConnection::new(config()) else {
        return;
    };
    let mut tls = StreamOwned::new(conn, socket);
    while let Some(h) = read_request(&mut tls) {
        if h.api_key == ApiKey::ApiVersions as i16 {
            let answer = api_versions_answer(&h, Mode::Ignore);
            if tls.write_all(&answer).and_then(|()| tls.flush()).is_err() {
                return;
            }
            continue;
        }
        match how {
            TlsBreak::FatalAlert => {
                // Content type alert (21), TLS 1.2 record version, fatal unexpected_message.
                let _ = tls.sock.write_all(&[21, 3, 3, 0, 2, 2, 10]);
            }
            TlsBreak::CloseNotifyThenGarbage => {
                tls.conn.send_close_notify();
                let _ = tls.flush();
                let _ = tls.sock.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
            }
        }
        // Let the client read what was written before the socket closes.
        let mut rest = [0u8; 256];
        let _ = tls
            .sock
            .set_read_timeout(Some(std::time::Duration::from_secs(2)));
        let _ = tls.sock.read(&mut rest);
        return;
    }
}
