//! TLS settings (`ssl.*`): trust anchors, client certificate and key, host name
//! verification. Paths are stored as paths: the core never opens files, the adapter
//! loads them and hands the PEM to the core.

use std::path::PathBuf;
use std::str::FromStr;

use super::parse;
use super::{ClientConfigBuilder, ConfigError, KeyInfo};
use crate::secret::Secret;

/// TLS settings, used when [`SecurityProtocol::uses_tls`]. `Debug` shows no PEM
/// contents at all (only sizes and block labels, so a private key pasted into
/// `ca_pem` or a combined certificate-and-key PEM in `certificate_pem` stays hidden),
/// and neither the private key nor its password.
///
/// With no CA set, the adapter supplies the system roots. Each PEM source may
/// be given as a file (`*.location`) or inline (`*.pem`), not both. A client certificate
/// needs its key and vice versa. These consistency rules are checked by `build` even when
/// the protocol does not use TLS, although the settings are then ignored.
///
/// [`SecurityProtocol::uses_tls`]: super::SecurityProtocol::uses_tls
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SslConfig {
    /// `ssl.ca.location`: PEM file of trusted CA certificates.
    pub ca_location: Option<PathBuf>,
    /// `ssl.ca.pem`: trusted CA certificates as inline PEM (librdkafka's key). A private
    /// key block in it is refused.
    pub ca_pem: Option<String>,
    /// `ssl.certificate.location`: PEM file of the client certificate chain.
    pub certificate_location: Option<PathBuf>,
    /// `ssl.certificate.pem`: the client certificate chain as inline PEM. Other blocks
    /// (a combined certificate-and-key file, say) are ignored by the TLS layer.
    pub certificate_pem: Option<String>,
    /// `ssl.key.location`: PEM file of the client private key.
    pub key_location: Option<PathBuf>,
    /// `ssl.key.pem`: the client private key as inline PEM.
    pub key_pem: Option<Secret>,
    /// `ssl.key.password`: password of an encrypted PKCS#8 private key
    /// (`-----BEGIN ENCRYPTED PRIVATE KEY-----`, PBES2 with PBKDF2 or scrypt and
    /// AES-CBC, as `openssl pkcs8 -topk8 -v2 aes-256-cbc` writes). The key is decrypted
    /// when the config is built (`ssl.key.pem`) or loaded
    /// ([`ClientConfig::with_ssl_files_loaded`], `ssl.key.location`), so `key_pem` then
    /// holds the unencrypted PKCS#8 key. A password with an unencrypted key, an
    /// encrypted key without one, and the legacy OpenSSL `Proc-Type: 4,ENCRYPTED`
    /// form are configuration errors.
    ///
    /// [`ClientConfig::with_ssl_files_loaded`]: super::ClientConfig::with_ssl_files_loaded
    pub key_password: Option<Secret>,
    /// `ssl.endpoint.identification.algorithm`: whether the broker's certificate must
    /// match its host name.
    pub endpoint_identification: EndpointIdentification,
    /// Accept any server certificate (typed builder only:
    /// [`ClientConfigBuilder::danger_accept_invalid_certs`]).
    pub danger_accept_invalid_certs: bool,
}

impl SslConfig {
    /// Source conflicts, certificate/key pairing and the shape of typed PEM values.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let pairs = [
            (
                "ssl.ca.location",
                "ssl.ca.pem",
                self.ca_location.is_some(),
                self.ca_pem.is_some(),
            ),
            (
                "ssl.certificate.location",
                "ssl.certificate.pem",
                self.certificate_location.is_some(),
                self.certificate_pem.is_some(),
            ),
            (
                "ssl.key.location",
                "ssl.key.pem",
                self.key_location.is_some(),
                self.key_pem.is_some(),
            ),
        ];
        for (a, b, has_a, has_b) in pairs {
            if has_a && has_b {
                return Err(ConfigError::conflict(format!(
                    "`{a}` and `{b}` are both set"
                )));
            }
        }
        let has_cert = self.certificate_location.is_some() || self.certificate_pem.is_some();
        let has_key = self.key_location.is_some() || self.key_pem.is_some();
        if has_cert != has_key {
            return Err(ConfigError::conflict(
                "a client certificate (`ssl.certificate.*`) needs its key (`ssl.key.*`) and \
                 vice versa",
            ));
        }
        let paths = [
            ("ssl.ca.location", &self.ca_location),
            ("ssl.certificate.location", &self.certificate_location),
            ("ssl.key.location", &self.key_location),
        ];
        for (key, path) in paths {
            if let Some(p) = path.as_ref().and_then(|p| p.to_str()) {
                parse::path(p).map_err(|why| ConfigError::invalid(key, p, false, why))?;
            }
        }
        for (key, pem) in [
            ("ssl.ca.pem", &self.ca_pem),
            ("ssl.certificate.pem", &self.certificate_pem),
        ] {
            if let Some(pem) = pem {
                parse::pem(pem, "CERTIFICATE")
                    .map_err(|why| ConfigError::invalid(key, pem, false, why))?;
            }
        }
        if let Some(pem) = &self.ca_pem {
            ca_without_key(pem)
                .map_err(|why| ConfigError::invalid("ssl.ca.pem", pem, false, why))?;
        }
        if let Some(key) = &self.key_pem {
            parse::pem(key.expose(), "PRIVATE KEY")
                .map_err(|why| ConfigError::invalid("ssl.key.pem", "", true, why))?;
        }
        Ok(())
    }
}

impl std::fmt::Debug for SslConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pem = |p: &Option<String>| p.as_deref().map(parse::pem_summary);
        f.debug_struct("SslConfig")
            .field("ca_location", &self.ca_location)
            .field("ca_pem", &pem(&self.ca_pem))
            .field("certificate_location", &self.certificate_location)
            .field("certificate_pem", &pem(&self.certificate_pem))
            .field("key_location", &self.key_location)
            .field("key_pem", &self.key_pem)
            .field("key_password", &self.key_password)
            .field("endpoint_identification", &self.endpoint_identification)
            .field(
                "danger_accept_invalid_certs",
                &self.danger_accept_invalid_certs,
            )
            .finish()
    }
}

impl SslConfig {
    /// Applies `ssl.key.password` to an inline key (`build`); a key still to be loaded
    /// from `ssl.key.location` is decrypted by `with_ssl_files_loaded` instead.
    pub(super) fn apply_key_password(&mut self) -> Result<(), ConfigError> {
        match &self.key_pem {
            Some(key) => {
                if let Some(plain) = decrypt_key(key, self.key_password.as_ref(), KEY_PEM)? {
                    self.key_pem = Some(plain);
                }
                Ok(())
            }
            None if self.key_password.is_some() && self.key_location.is_none() => {
                Err(ConfigError::conflict(
                    "`ssl.key.password` is set but there is no private key (`ssl.key.pem` or \
                     `ssl.key.location`)",
                ))
            }
            None => Ok(()),
        }
    }
}

const KEY_PEM: &str = "ssl.key.pem";
const KEY_PASSWORD: &str = "ssl.key.password";

/// The key `source` (`ssl.key.pem` or `ssl.key.location`) with `ssl.key.password`
/// applied: `Some` unencrypted PKCS#8 PEM when it was an encrypted PKCS#8 key, `None`
/// when it needs nothing. Errors never show the key or the password.
pub(super) fn decrypt_key(
    key: &Secret,
    password: Option<&Secret>,
    source: &str,
) -> Result<Option<Secret>, ConfigError> {
    let text = key.expose();
    let encrypted = parse::pem_labels(text).contains(&"ENCRYPTED PRIVATE KEY");
    if !encrypted && text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(ConfigError::invalid(
            source,
            "",
            true,
            "legacy OpenSSL key encryption (`Proc-Type: 4,ENCRYPTED`) is not supported; \
             convert the key with `openssl pkcs8 -topk8 -v2 aes-256-cbc`"
                .into(),
        ));
    }
    match (encrypted, password) {
        (false, None) => Ok(None),
        (false, Some(_)) => Err(ConfigError::conflict(format!(
            "`{KEY_PASSWORD}` is set but the key in `{source}` is not encrypted (expected \
             `-----BEGIN ENCRYPTED PRIVATE KEY-----`)"
        ))),
        (true, None) => Err(ConfigError::conflict(format!(
            "the key in `{source}` is an encrypted PKCS#8 key: set `{KEY_PASSWORD}`"
        ))),
        (true, Some(password)) => decrypt_pkcs8(text, password).map(Some).map_err(|why| {
            ConfigError::invalid(
                KEY_PASSWORD,
                "",
                true,
                format!("cannot decrypt `{source}`: {why}"),
            )
        }),
    }
}

/// Decrypts the `ENCRYPTED PRIVATE KEY` block of `pem` into a `PRIVATE KEY` PEM.
#[cfg(feature = "tls")]
fn decrypt_pkcs8(pem: &str, password: &Secret) -> Result<Secret, String> {
    use pkcs8::der::pem::{decode_vec, LineEnding};
    use pkcs8::pkcs5;

    const BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
    const END: &str = "-----END ENCRYPTED PRIVATE KEY-----";
    let block = pem
        .find(BEGIN)
        .and_then(|at| {
            pem[at..]
                .find(END)
                .map(|len| &pem[at..at + len + END.len()])
        })
        .ok_or("the `ENCRYPTED PRIVATE KEY` block has no END line")?;
    let (_, der) = decode_vec(block.as_bytes())
        .map_err(|_| "the `ENCRYPTED PRIVATE KEY` block is not valid PEM")?;
    let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice())
        .map_err(|_| "malformed encrypted PKCS#8 structure")?;
    let wrong = "wrong password, or the key is damaged";
    let doc = info.decrypt(password.expose()).map_err(|e| match e {
        pkcs8::Error::EncryptedPrivateKey(pkcs5::Error::UnsupportedAlgorithm { oid }) => format!(
            "unsupported encryption algorithm {oid} (supported: PBES2 with PBKDF2 or scrypt, \
             AES-128/192/256-CBC)"
        ),
        pkcs8::Error::EncryptedPrivateKey(pkcs5::Error::NoPbes1CryptSupport) => {
            "PBES1 encryption (`openssl pkcs8 -v1 ...`) is not supported; re-encrypt with \
             `openssl pkcs8 -topk8 -v2 aes-256-cbc`"
                .into()
        }
        pkcs8::Error::EncryptedPrivateKey(pkcs5::Error::AlgorithmParametersInvalid { .. }) => {
            "invalid encryption parameters".into()
        }
        _ => wrong.into(),
    })?;
    // A wrong password can still pass the padding check by chance: the result must be
    // a PKCS#8 PrivateKeyInfo.
    pkcs8::PrivateKeyInfo::try_from(doc.as_bytes()).map_err(|_| wrong)?;
    let pem = doc
        .to_pem("PRIVATE KEY", LineEnding::LF)
        .map_err(|_| "cannot re-encode the decrypted key")?;
    Ok(Secret::new(pem.as_str()))
}

/// Without TLS there is nothing to decrypt for.
#[cfg(not(feature = "tls"))]
fn decrypt_pkcs8(_pem: &str, _password: &Secret) -> Result<Secret, String> {
    Err("decrypting a private key needs kafka-core's `tls` feature".into())
}

/// CA certificates are public: a private key among them is a pasting mistake, refused
/// before it travels any further.
pub(super) fn ca_without_key(pem: &str) -> Result<(), String> {
    if parse::has_private_key(pem) {
        return Err(
            "holds a private key block; CA certificates need none (the client key \
                    belongs in `ssl.key.pem` or `ssl.key.location`)"
                .into(),
        );
    }
    Ok(())
}

/// `ssl.endpoint.identification.algorithm`: host name verification of the broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum EndpointIdentification {
    /// `https` (default): the certificate must match the broker's host name.
    #[default]
    Https,
    /// The empty string (as in Java; librdkafka's `none` is also accepted): no host name
    /// check. The certificate chain is still verified.
    None,
}

impl FromStr for EndpointIdentification {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            s if s.eq_ignore_ascii_case("https") => Ok(EndpointIdentification::Https),
            s if s.is_empty() || s.eq_ignore_ascii_case("none") => Ok(EndpointIdentification::None),
            _ => Err("expected `https` or the empty string (no host name check)".into()),
        }
    }
}

/// Typed setters for TLS.
impl ClientConfigBuilder {
    /// `ssl.ca.location`: PEM file of trusted CA certificates (loaded by the adapter).
    pub fn ssl_ca_location(&mut self, path: impl Into<PathBuf>) -> &mut Self {
        self.security.ssl.ca_location = Some(path.into());
        self
    }

    /// `ssl.ca.pem`: trusted CA certificates as inline PEM.
    pub fn ssl_ca_pem(&mut self, pem: impl Into<String>) -> &mut Self {
        self.security.ssl.ca_pem = Some(pem.into());
        self
    }

    /// `ssl.certificate.location` and `ssl.key.location`: client certificate chain and
    /// private key files (loaded by the adapter).
    pub fn ssl_client_cert_location(
        &mut self,
        certificate: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> &mut Self {
        self.security.ssl.certificate_location = Some(certificate.into());
        self.security.ssl.key_location = Some(key.into());
        self
    }

    /// `ssl.certificate.pem` and `ssl.key.pem`: client certificate chain and private key
    /// as inline PEM.
    pub fn ssl_client_cert_pem(
        &mut self,
        certificate: impl Into<String>,
        key: impl Into<String>,
    ) -> &mut Self {
        self.security.ssl.certificate_pem = Some(certificate.into());
        self.security.ssl.key_pem = Some(Secret::new(key));
        self
    }

    /// `ssl.key.password`: password of an encrypted PKCS#8 key (see
    /// [`SslConfig::key_password`]).
    pub fn ssl_key_password(&mut self, password: impl Into<String>) -> &mut Self {
        self.security.ssl.key_password = Some(Secret::new(password));
        self
    }

    /// `ssl.endpoint.identification.algorithm` (default [`EndpointIdentification::Https`]).
    pub fn ssl_endpoint_identification(&mut self, check: EndpointIdentification) -> &mut Self {
        self.security.ssl.endpoint_identification = check;
        self
    }

    /// Dangerous: accept any broker certificate, unverified chain and host name included,
    /// so anyone on the path can impersonate the broker. For tests only. Default `false`;
    /// no string key sets it.
    pub fn danger_accept_invalid_certs(&mut self, accept: bool) -> &mut Self {
        self.security.ssl.danger_accept_invalid_certs = accept;
        self
    }
}

/// String keys of the TLS section.
pub(super) const KEYS: &[KeyInfo] = &[
    KeyInfo {
        name: "ssl.ca.location",
        default: None,
        doc: "PEM file of trusted CA certificates (read by the adapter).",
        secret: false,
        apply: |b, v| {
            b.security.ssl.ca_location = Some(parse::path(v)?);
            Ok(())
        },
    },
    KeyInfo {
        name: "ssl.ca.pem",
        default: None,
        doc: "Trusted CA certificates as inline PEM (a private key in it is refused).",
        secret: false,
        apply: |b, v| {
            let pem = parse::pem(v, "CERTIFICATE")?;
            ca_without_key(&pem)?;
            b.security.ssl.ca_pem = Some(pem);
            Ok(())
        },
    },
    KeyInfo {
        name: "ssl.certificate.location",
        default: None,
        doc: "PEM file of the client certificate chain (read by the adapter).",
        secret: false,
        apply: |b, v| {
            b.security.ssl.certificate_location = Some(parse::path(v)?);
            Ok(())
        },
    },
    KeyInfo {
        name: "ssl.certificate.pem",
        default: None,
        doc: "Client certificate chain as inline PEM.",
        secret: false,
        apply: |b, v| {
            b.security.ssl.certificate_pem = Some(parse::pem(v, "CERTIFICATE")?);
            Ok(())
        },
    },
    KeyInfo {
        name: "ssl.key.location",
        default: None,
        doc: "PEM file of the client private key (read by the adapter).",
        secret: false,
        apply: |b, v| {
            b.security.ssl.key_location = Some(parse::path(v)?);
            Ok(())
        },
    },
    KeyInfo {
        name: "ssl.key.pem",
        default: None,
        doc: "Client private key as inline PEM (secret).",
        secret: true,
        apply: |b, v| {
            b.security.ssl.key_pem = Some(Secret::new(parse::pem(v, "PRIVATE KEY")?));
            Ok(())
        },
    },
    KeyInfo {
        name: "ssl.key.password",
        default: None,
        doc:
            "Password of an encrypted PKCS#8 private key (secret); decrypted when built or loaded.",
        secret: true,
        apply: |b, v| {
            b.security.ssl.key_password = Some(Secret::new(parse::password(v)?));
            Ok(())
        },
    },
    KeyInfo {
        name: "ssl.endpoint.identification.algorithm",
        default: Some("https"),
        doc: "`https` verifies the broker host name; the empty string turns that off.",
        secret: false,
        apply: |b, v| {
            b.security.ssl.endpoint_identification = v.parse()?;
            Ok(())
        },
    },
];
