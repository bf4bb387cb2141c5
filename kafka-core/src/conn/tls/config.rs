//! [`TlsConfig`] (what the user configures) and [`TlsClientConfig`] (the built form).

use std::fmt;
use std::sync::Arc;

use rustls::client::danger::ServerCertVerifier;
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore};

use super::verify::{AcceptAnyServerCert, NoClock, SkipNameCheck};
use super::TlsError;
use crate::secret::Secret;

/// TLS settings for broker connections (Kafka's `security.protocol=SSL`/`SASL_SSL`).
///
/// All inputs are bytes: the core reads no files. The adapter loads `ssl.truststore`,
/// the client certificate and key, or the operating system's roots, and passes them as
/// PEM. `Debug` never shows the private key.
#[derive(Clone, PartialEq, Eq)]
pub struct TlsConfig {
    /// CA certificates (one or more PEM `CERTIFICATE` blocks) the broker's certificate
    /// must chain to. `None` means no roots at all: [`TlsConfig::build`] then fails with
    /// [`TlsError::NoTrustAnchors`] unless `danger_accept_invalid_certs` is set. To trust
    /// the system roots, the adapter reads them and supplies them here as PEM.
    pub ca_pem: Option<Vec<u8>>,
    /// Client certificate chain as PEM (leaf first) for mutual TLS; needs
    /// `client_key_pem`.
    pub client_cert_pem: Option<Vec<u8>>,
    /// The client certificate's private key as PEM (PKCS#8, PKCS#1 or SEC1), held in a
    /// redacting [`Secret`]; needs `client_cert_pem`.
    pub client_key_pem: Option<Secret>,
    /// Name used for SNI and certificate verification instead of the broker's host (for
    /// brokers reached through an address their certificate does not name).
    pub server_name_override: Option<String>,
    /// Check that the broker's certificate is valid for its host name (Java's
    /// `ssl.endpoint.identification.algorithm=https`). Default `true`. When `false` the
    /// certificate must still chain to `ca_pem`; only the name check is skipped.
    pub endpoint_identification: bool,
    /// Accept any server certificate: no chain, name or validity check. The handshake
    /// signatures are still verified, but anyone on the path can impersonate the broker.
    /// For tests only. Default `false`.
    pub danger_accept_invalid_certs: bool,
}

impl Default for TlsConfig {
    fn default() -> Self {
        Self {
            ca_pem: None,
            client_cert_pem: None,
            client_key_pem: None,
            server_name_override: None,
            endpoint_identification: true,
            danger_accept_invalid_certs: false,
        }
    }
}

impl TlsConfig {
    /// Parses the PEM inputs and builds the rustls client config shared by all
    /// connections (ring provider, TLS 1.3 and 1.2).
    pub fn build(&self) -> Result<TlsClientConfig, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = self.verifier(&provider)?;
        let builder = ClientConfig::builder_with_details(provider, Arc::new(NoClock))
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let config = match (&self.client_cert_pem, &self.client_key_pem) {
            (None, None) => builder.with_no_client_auth(),
            (Some(chain), Some(key)) => {
                let chain = parse_certs(chain, "client_cert_pem")?;
                let key = PrivateKeyDer::from_pem_slice(key.expose().as_bytes())
                    .map_err(|e| TlsError::PrivateKey(pem_error(&e)))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| TlsError::PrivateKey(e.to_string()))?
            }
            _ => return Err(TlsError::IncompleteClientAuth),
        };
        Ok(TlsClientConfig {
            rustls: Arc::new(config),
            server_name_override: self.server_name_override.as_deref().map(Arc::from),
        })
    }

    /// The server certificate verifier these settings call for.
    fn verifier(
        &self,
        provider: &Arc<CryptoProvider>,
    ) -> Result<Arc<dyn ServerCertVerifier>, TlsError> {
        if self.danger_accept_invalid_certs {
            return Ok(Arc::new(AcceptAnyServerCert::new(provider.clone())));
        }
        let pem = self.ca_pem.as_deref().ok_or(TlsError::NoTrustAnchors)?;
        let mut roots = RootCertStore::empty();
        for cert in parse_certs(pem, "ca_pem")? {
            roots.add(cert).map_err(|e| TlsError::Pem {
                what: "ca_pem",
                reason: format!("unusable CA certificate: {e}"),
            })?;
        }
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| TlsError::Rustls(rustls::Error::General(e.to_string())))?;
        Ok(if self.endpoint_identification {
            webpki
        } else {
            Arc::new(SkipNameCheck::new(webpki))
        })
    }
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len = |pem: &Option<Vec<u8>>| pem.as_ref().map(|p| format!("<{} bytes>", p.len()));
        f.debug_struct("TlsConfig")
            .field("ca_pem", &len(&self.ca_pem))
            .field("client_cert_pem", &len(&self.client_cert_pem))
            .field("client_key_pem", &self.client_key_pem)
            .field("server_name_override", &self.server_name_override)
            .field("endpoint_identification", &self.endpoint_identification)
            .field(
                "danger_accept_invalid_certs",
                &self.danger_accept_invalid_certs,
            )
            .finish()
    }
}

/// A built [`TlsConfig`], shared by every connection of a client; cloning is cheap.
///
/// Pass it to [`TlsSession::new`](super::TlsSession::new) once per connection.
#[derive(Clone, Debug)]
pub struct TlsClientConfig {
    /// The rustls config; its time provider reports no time (see the module docs).
    pub(super) rustls: Arc<ClientConfig>,
    /// Name for SNI and verification instead of the host, if configured.
    pub(super) server_name_override: Option<Arc<str>>,
}

/// All certificates in `pem`; at least one.
fn parse_certs(pem: &[u8], what: &'static str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            what,
            reason: pem_error(&e),
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificates { what });
    }
    Ok(certs)
}

/// What is wrong with a PEM input, in words that never quote it: rustls' own message
/// for a malformed `-----BEGIN` line quotes the whole line, and a PEM pasted on one
/// line (a certificate followed by its private key, say) would put the key into the
/// error text.
fn pem_error(e: &rustls::pki_types::pem::Error) -> String {
    use rustls::pki_types::pem::Error;
    match e {
        Error::MissingSectionEnd { .. } => "a PEM block has no matching END line".into(),
        Error::IllegalSectionStart { .. } => {
            "malformed `-----BEGIN` line (for example PEM text joined onto one line); \
             the line is not shown"
                .into()
        }
        Error::Base64Decode(_) => "invalid base64 inside a PEM block".into(),
        Error::NoItemsFound => "no PEM block of the expected type".into(),
        Error::SectionTooLarge => "PEM block larger than 256 MB".into(),
        _ => "unreadable PEM".into(),
    }
}
