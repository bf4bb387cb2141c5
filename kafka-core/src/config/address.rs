//! Broker addresses (`bootstrap.servers`) and the DNS policy (`client.dns.lookup`).
//!
//! The core never resolves names: it hands host and port to the adapter in its connect
//! requests, and the adapter resolves them following [`ClientDnsLookup`].

use std::fmt;
use std::str::FromStr;

/// One `host:port` entry of `bootstrap.servers`.
///
/// IPv6 literals are written in brackets (`[::1]:9092`) and stored without them. A
/// `PLAINTEXT://`-style prefix, accepted by both the Java client and librdkafka, is
/// dropped when parsing. The adapter resolves the host name; the core never does.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BrokerAddress {
    /// Host name or IP literal (IPv6 without brackets).
    pub host: String,
    /// TCP port, never 0.
    pub port: u16,
}

impl BrokerAddress {
    /// A broker address from its parts (no validation; used for typed construction).
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        Self {
            host: host.into(),
            port,
        }
    }
}

impl fmt::Display for BrokerAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// Parses a comma-separated `host:port` list, as the Java client does: entries are
/// trimmed, empty entries skipped, and at least one entry is required.
pub(crate) fn broker_list(value: &str) -> Result<Vec<BrokerAddress>, String> {
    let mut out = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        out.push(broker_address(entry).map_err(|why| format!("`{entry}`: {why}"))?);
    }
    if out.is_empty() {
        return Err("expected at least one host:port".into());
    }
    Ok(out)
}

fn broker_address(entry: &str) -> Result<BrokerAddress, String> {
    let entry = match entry.find("://") {
        Some(i) => &entry[i + 3..],
        None => entry,
    };
    let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or("unterminated `[` in IPv6 address")?;
        let port = after
            .strip_prefix(':')
            .ok_or("expected `:port` after `]`")?;
        if !host.contains(':') {
            return Err("brackets are only for IPv6 addresses".into());
        }
        (host, port)
    } else {
        let (host, port) = entry.rsplit_once(':').ok_or("expected host:port")?;
        if host.contains(':') {
            return Err("IPv6 addresses must be in brackets, e.g. [::1]:9092".into());
        }
        (host, port)
    };
    if host.is_empty() {
        return Err("empty host".into());
    }
    let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ':' | '%');
    if let Some(c) = host.chars().find(|&c| !valid(c)) {
        return Err(format!("invalid character {c:?} in host"));
    }
    let port: u16 = port
        .parse()
        .map_err(|_| format!("invalid port `{port}` (expected 1..=65535)"))?;
    if port == 0 {
        return Err("port 0 is not a valid broker port".into());
    }
    Ok(BrokerAddress::new(host, port))
}

/// `client.dns.lookup`: which addresses of a broker host name the adapter tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ClientDnsLookup {
    /// `use_all_dns_ips` (default): try every resolved address in turn until one connects.
    #[default]
    UseAllDnsIps,
    /// `resolve_canonical_bootstrap_servers_only`: expand each bootstrap host to its
    /// canonical names first (then as `use_all_dns_ips`).
    ResolveCanonicalBootstrapServersOnly,
}

impl ClientDnsLookup {
    /// The Java client's name for the value.
    pub const fn name(self) -> &'static str {
        match self {
            ClientDnsLookup::UseAllDnsIps => "use_all_dns_ips",
            ClientDnsLookup::ResolveCanonicalBootstrapServersOnly => {
                "resolve_canonical_bootstrap_servers_only"
            }
        }
    }
}

impl FromStr for ClientDnsLookup {
    type Err = String;

    /// Parses the Java name, case-insensitively (as the Java client does).
    fn from_str(s: &str) -> Result<Self, String> {
        [
            ClientDnsLookup::UseAllDnsIps,
            ClientDnsLookup::ResolveCanonicalBootstrapServersOnly,
        ]
        .into_iter()
        .find(|v| v.name().eq_ignore_ascii_case(s.trim()))
        .ok_or_else(|| {
            "expected `use_all_dns_ips` or `resolve_canonical_bootstrap_servers_only`".into()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_list_forms() {
        let got = broker_list(" a:1 ,, PLAINTEXT://b.example:9092,[::1]:9093").unwrap();
        assert_eq!(
            got,
            vec![
                BrokerAddress::new("a", 1),
                BrokerAddress::new("b.example", 9092),
                BrokerAddress::new("::1", 9093),
            ]
        );
        assert_eq!(got[2].to_string(), "[::1]:9093");
        for bad in [
            "",
            " , ",
            "a",
            "a:",
            "a:0",
            "a:65536",
            "a:x",
            ":9092",
            "::1:9092",
            "[::1]",
            "[::1:9092",
            "[a]:1",
            "a b:1",
        ] {
            assert!(broker_list(bad).is_err(), "{bad:?} accepted");
        }
    }
}
