//! Shared helpers for the integration suites: finding the real broker started by the rig
//! (`tests/broker/rig`), and a minimal blocking request/response client over our codecs
//! used until the sans-IO connection core and its blocking adapter exist.

pub mod admin_suite;
pub mod chaos;
pub mod child;
pub mod consumer_suite;
pub mod event_log;
pub mod fake_broker;
pub mod fault_proxy;
pub mod group_suite;
pub mod producer_suite;
pub mod sim;
pub mod txn_suite;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use kafka_core::protocol::messages::api_versions::{ApiVersionsRequest, ApiVersionsResponse};
use kafka_core::protocol::{read_response, write_request, ApiKey, Request, VersionRange};

/// Settings of the running rig: `KAFKA_*` variables from the environment, else from the
/// rig's env file (`$RIG_DIR/env`, default `<repo>/.rig/env`).
pub fn rig_var(name: &str) -> Option<String> {
    if let Ok(v) = std::env::var(name) {
        return Some(v);
    }
    let dir = std::env::var("RIG_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.rig"));
    let text = std::fs::read_to_string(dir.join("env")).ok()?;
    text.lines()
        .filter_map(|l| l.split_once('='))
        .find(|(k, _)| k.trim() == name)
        .map(|(_, v)| v.trim().trim_matches('"').to_string())
}

/// The PLAINTEXT bootstrap address, or `None` (with a visible message) when no broker is
/// available. `scripts/test-broker` sets `KAFKA_REQUIRE_BROKER=1` after starting the rig:
/// then a missing broker is a test failure, never a skip.
pub fn broker_or_skip(test: &str) -> Option<String> {
    required_or_skip(test, "KAFKA_BOOTSTRAP_SERVERS", "KAFKA_REQUIRE_BROKER")
}

/// Like [`broker_or_skip`] for the 3-node cluster (`KAFKA_REQUIRE_CLUSTER=1` makes it required).
pub fn cluster_or_skip(test: &str) -> Option<String> {
    required_or_skip(test, "KAFKA_CLUSTER_BOOTSTRAP", "KAFKA_REQUIRE_CLUSTER")
}

fn required_or_skip(test: &str, var: &str, require: &str) -> Option<String> {
    match rig_var(var) {
        Some(addr) => Some(addr.split(',').next().unwrap_or_default().to_string()),
        None if std::env::var(require).is_ok_and(|v| v == "1") => {
            panic!("{test}: {require}=1 but {var} is not set: the rig did not start")
        }
        None => {
            eprintln!(
                "SKIPPED {test}: no {var} (run tests/broker/rig up / cluster-up, or scripts/test)"
            );
            record_skip(test, var);
            None
        }
    }
}

/// Appends `suite<TAB>test<TAB>var` to `$KAFKA_TEST_SKIP_LOG` (set by `scripts/test`), so
/// the summary can report a test that returned early for want of a broker as skipped,
/// not as passed (libtest has no runtime skip: such a test reports "ok").
fn record_skip(test: &str, var: &str) {
    use std::io::Write as _;
    let Some(path) = std::env::var_os("KAFKA_TEST_SKIP_LOG") else {
        return;
    };
    // The test binary is `<suite>-<hash>`: the suite is the name before the hash.
    let suite = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .map(|s| match s.rsplit_once('-') {
            Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_string(),
            _ => s,
        })
        .unwrap_or_else(|| "?".into());
    // One write per line with O_APPEND: lines from parallel tests do not interleave.
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = f.write_all(format!("{suite}\t{test}\t{var}\n").as_bytes());
    }
}

/// A blocking, one-request-at-a-time Kafka connection over our codecs (test helper only).
pub struct RawClient {
    stream: TcpStream,
    correlation_id: i32,
    /// The broker's version range per API key, from its ApiVersions response.
    pub broker_versions: Vec<(i16, VersionRange)>,
}

impl RawClient {
    /// Connects and runs the ApiVersions exchange (v4, falling back to v0 if refused).
    pub fn connect(addr: &str) -> std::io::Result<RawClient> {
        let stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        let mut c = RawClient {
            stream,
            correlation_id: 0,
            broker_versions: Vec::new(),
        };
        let req = ApiVersionsRequest {
            client_software_name: "kafka-rs-tests".into(),
            client_software_version: env!("CARGO_PKG_VERSION").into(),
            ..Default::default()
        };
        let resp: ApiVersionsResponse = c.call(ApiKey::ApiVersions.versions().max, &req)?;
        c.broker_versions = resp
            .api_keys
            .iter()
            .map(|k| (k.api_key, VersionRange::new(k.min_version, k.max_version)))
            .collect();
        Ok(c)
    }

    /// The broker's range for `key`, if it advertises the API.
    pub fn broker_range(&self, key: ApiKey) -> Option<VersionRange> {
        self.broker_versions
            .iter()
            .find(|(k, _)| *k == key as i16)
            .map(|(_, r)| *r)
    }

    /// The highest version both sides support.
    pub fn negotiated(&self, key: ApiKey) -> Option<i16> {
        self.broker_range(key)?
            .intersect(key.versions())
            .map(|r| r.max)
    }

    /// Sends `request` at `version` and waits for its response.
    pub fn call<R: Request>(&mut self, version: i16, request: &R) -> std::io::Result<R::Response> {
        let bad = |e: String| std::io::Error::new(std::io::ErrorKind::InvalidData, e);
        self.correlation_id += 1;
        let mut buf = Vec::new();
        write_request(
            &mut buf,
            version,
            self.correlation_id,
            Some("kafka-rs-tests"),
            request,
        )
        .map_err(|e| bad(e.to_string()))?;
        self.stream.write_all(&buf)?;
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size)?;
        let size = i32::from_be_bytes(size);
        if !(0..=100 << 20).contains(&size) {
            return Err(bad(format!("bad frame size {size}")));
        }
        let mut frame = vec![0u8; size as usize];
        self.stream.read_exact(&mut frame)?;
        let (id, resp) = read_response::<R>(Bytes::from(frame), version)
            .map_err(|e| bad(format!("{} v{version}: {e}", R::API_KEY.name())))?;
        if id != self.correlation_id {
            return Err(bad(format!(
                "correlation id {id}, expected {}",
                self.correlation_id
            )));
        }
        Ok(resp)
    }
}

/// The README's Rust snippets, compiled as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
