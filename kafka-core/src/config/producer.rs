//! Producer settings: batching, acks, idempotence, delivery timeout, buffer budget,
//! compression and partitioning, with the Java client's names, defaults and cross-key
//! rules.

use std::time::Duration;

use super::parse;
use super::{ClientConfigBuilder, CommonConfig, ConfigError, KeyInfo};
use crate::record::Compression;

/// `acks`: how many replicas must have a batch before the broker answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Acks {
    /// `0`: no response at all; a written request counts as delivered (offsets unknown).
    None,
    /// `1`: the leader wrote it.
    Leader,
    /// `all` (`-1`): every in-sync replica has it.
    All,
}

impl Acks {
    /// The value of the Produce request's `acks` field.
    pub fn wire(self) -> i16 {
        match self {
            Acks::None => 0,
            Acks::Leader => 1,
            Acks::All => -1,
        }
    }
}

impl std::str::FromStr for Acks {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "0" => Ok(Acks::None),
            "1" => Ok(Acks::Leader),
            "all" | "-1" => Ok(Acks::All),
            _ => Err("expected all, -1, 0 or 1".into()),
        }
    }
}

/// Producer settings. Read them from [`ClientConfig::producer`](super::ClientConfig::producer).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProducerConfig {
    /// `acks` (default all).
    pub acks: Acks,
    /// `batch.size`: most bytes per partition batch before it is sealed (default 16384).
    pub batch_size: usize,
    /// `linger.ms`: how long a batch waits for more records (default 5 ms).
    pub linger: Duration,
    /// `buffer.memory`: the budget for records not yet acknowledged (default 32 MiB).
    /// A record that does not fit is refused at once, never buffered past it.
    pub buffer_memory: usize,
    /// `compression.type` (default none).
    pub compression: Compression,
    /// `compression.gzip.level` (`None`: the codec's default).
    pub gzip_level: Option<i32>,
    /// `compression.lz4.level` (`None`: Kafka's default, 9).
    pub lz4_level: Option<i32>,
    /// `compression.zstd.level` (`None`: Kafka's default, 3).
    pub zstd_level: Option<i32>,
    /// `max.request.size`: most bytes of one record (and of one Produce request).
    pub max_request_size: usize,
    /// `enable.idempotence`; `None` is Java's default: on, unless another setting
    /// conflicts with it (then off, silently, as in Java).
    pub enable_idempotence: Option<bool>,
    /// `delivery.timeout.ms`: the limit on a record's whole life, from send to outcome
    /// (default 120 s; at least `linger.ms` + `request.timeout.ms`).
    pub delivery_timeout: Duration,
    /// `max.block.ms`: how long an adapter's `send` waits for metadata or buffer space.
    pub max_block: Duration,
    /// `partitioner.ignore.keys`: keyed records are spread like keyless ones.
    pub partitioner_ignore_keys: bool,
    /// `transactional.id`: makes the producer transactional (unset by default). It
    /// implies idempotence and must be the same across restarts of one logical producer.
    pub transactional_id: Option<String>,
    /// `transaction.timeout.ms`: how long the coordinator lets a transaction stay open
    /// before it aborts it (default 60 s).
    pub transaction_timeout: Duration,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        Self {
            acks: Acks::All,
            batch_size: 16_384,
            linger: Duration::from_millis(5),
            buffer_memory: 32 * 1024 * 1024,
            compression: Compression::None,
            gzip_level: None,
            lz4_level: None,
            zstd_level: None,
            max_request_size: 1_048_576,
            enable_idempotence: None,
            delivery_timeout: Duration::from_millis(120_000),
            max_block: Duration::from_millis(60_000),
            partitioner_ignore_keys: false,
            transactional_id: None,
            transaction_timeout: Duration::from_millis(60_000),
        }
    }
}

impl ProducerConfig {
    /// Whether the producer is idempotent, given the other settings (Java's rule: on by
    /// default, off when `acks`, `retries` or the in-flight limit conflict and
    /// idempotence was not asked for explicitly).
    pub fn idempotent(&self, common: &CommonConfig) -> bool {
        match self.enable_idempotence {
            Some(on) => on,
            None => self.transactional_id.is_some() || conflict(self, common).is_none(),
        }
    }

    /// The codec level for the configured codec.
    pub fn compression_level(&self) -> Option<i32> {
        match self.compression {
            Compression::Gzip => self.gzip_level,
            Compression::Lz4 => self.lz4_level,
            Compression::Zstd => self.zstd_level,
            _ => None,
        }
    }

    pub(super) fn validate(&self, common: &CommonConfig) -> Result<(), ConfigError> {
        let bad = |key: &str, value: &dyn ToString, why: String| {
            ConfigError::invalid(key, &value.to_string(), false, why)
        };
        if let Some(id) = &self.transactional_id {
            if self.enable_idempotence == Some(false) {
                let why = "a transactional.id needs enable.idempotence=true".into();
                return Err(bad("enable.idempotence", &"false", why));
            }
            if id.is_empty() {
                return Err(bad("transactional.id", &"", "must not be empty".into()));
            }
        }
        if self.enable_idempotence == Some(true) || self.transactional_id.is_some() {
            if let Some((key, value, why)) = conflict(self, common) {
                return Err(bad(key, &value, why.into()));
            }
        }
        if !self.compression.is_enabled() {
            let why = "this build lacks the codec's cargo feature".into();
            return Err(bad("compression.type", &self.compression.name(), why));
        }
        let floor = self.linger + common.request_timeout;
        if self.delivery_timeout < floor {
            let why = format!(
                "must be at least linger.ms + request.timeout.ms ({} ms)",
                floor.as_millis()
            );
            return Err(bad(
                "delivery.timeout.ms",
                &self.delivery_timeout.as_millis(),
                why,
            ));
        }
        if self.batch_size > i32::MAX as usize {
            return Err(bad(
                "batch.size",
                &self.batch_size,
                "must fit a Java int".into(),
            ));
        }
        if self.max_request_size == 0 || self.max_request_size > i32::MAX as usize {
            let why = "expected 1..=2147483647".into();
            return Err(bad("max.request.size", &self.max_request_size, why));
        }
        if self.buffer_memory < self.max_request_size.min(self.batch_size.max(1)) {
            let why = "smaller than one batch".into();
            return Err(bad("buffer.memory", &self.buffer_memory, why));
        }
        Ok(())
    }
}

/// The first setting that rules idempotence out, with why.
fn conflict(p: &ProducerConfig, c: &CommonConfig) -> Option<(&'static str, String, &'static str)> {
    if p.acks != Acks::All {
        let value = format!("{}", p.acks.wire());
        return Some(("acks", value, "idempotence needs acks=all"));
    }
    if c.retries == 0 {
        return Some(("retries", "0".into(), "idempotence needs retries > 0"));
    }
    if c.max_in_flight_requests_per_connection > 5 {
        let value = c.max_in_flight_requests_per_connection.to_string();
        let why = "idempotence needs at most 5 in-flight requests per connection";
        return Some(("max.in.flight.requests.per.connection", value, why));
    }
    None
}

/// Typed producer setters.
impl ClientConfigBuilder {
    /// `acks` (default [`Acks::All`]).
    pub fn acks(&mut self, acks: Acks) -> &mut Self {
        self.producer.acks = acks;
        self
    }

    /// `batch.size` in bytes (default 16384).
    pub fn batch_size(&mut self, bytes: usize) -> &mut Self {
        self.producer.batch_size = bytes;
        self
    }

    /// `linger.ms` (default 5 ms).
    pub fn linger(&mut self, linger: Duration) -> &mut Self {
        self.producer.linger = linger;
        self
    }

    /// `buffer.memory` in bytes (default 32 MiB).
    pub fn buffer_memory(&mut self, bytes: usize) -> &mut Self {
        self.producer.buffer_memory = bytes;
        self
    }

    /// `compression.type` and its level (`None`: the codec's Kafka default).
    pub fn compression(&mut self, codec: Compression, level: Option<i32>) -> &mut Self {
        self.producer.compression = codec;
        match codec {
            Compression::Gzip => self.producer.gzip_level = level,
            Compression::Lz4 => self.producer.lz4_level = level,
            Compression::Zstd => self.producer.zstd_level = level,
            _ => {}
        }
        self
    }

    /// `max.request.size` in bytes (default 1 MiB).
    pub fn max_request_size(&mut self, bytes: usize) -> &mut Self {
        self.producer.max_request_size = bytes;
        self
    }

    /// `enable.idempotence` (default: on unless another setting conflicts).
    pub fn enable_idempotence(&mut self, on: bool) -> &mut Self {
        self.producer.enable_idempotence = Some(on);
        self
    }

    /// `delivery.timeout.ms` (default 120 s).
    pub fn delivery_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.producer.delivery_timeout = timeout;
        self
    }

    /// `max.block.ms` (default 60 s).
    pub fn max_block(&mut self, timeout: Duration) -> &mut Self {
        self.producer.max_block = timeout;
        self
    }

    /// `partitioner.ignore.keys` (default false).
    pub fn partitioner_ignore_keys(&mut self, ignore: bool) -> &mut Self {
        self.producer.partitioner_ignore_keys = ignore;
        self
    }

    /// `transactional.id`: makes the producer transactional.
    pub fn transactional_id(&mut self, id: impl Into<String>) -> &mut Self {
        self.producer.transactional_id = Some(id.into());
        self
    }

    /// `transaction.timeout.ms` (default 60 s).
    pub fn transaction_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.producer.transaction_timeout = timeout;
        self
    }
}

fn level(value: &str, min: i64, max: i64) -> Result<Option<i32>, String> {
    Ok(Some(parse::int(value, min, max)? as i32))
}

fn bytes(value: &str, min: u32) -> Result<usize, String> {
    Ok(parse::uint(value, min, i32::MAX.unsigned_abs())? as usize)
}

/// String keys of the producer section.
pub(super) const KEYS: &[KeyInfo] = &[
    KeyInfo {
        name: "acks",
        default: Some("all"),
        doc: "Replicas that must have a batch before it is acknowledged: all, 1 or 0.",
        secret: false,
        apply: |b, v| {
            b.producer.acks = v.parse()?;
            Ok(())
        },
    },
    KeyInfo {
        name: "batch.size",
        default: Some("16384"),
        doc: "Most bytes of one partition batch.",
        secret: false,
        apply: |b, v| {
            b.producer.batch_size = bytes(v, 0)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "linger.ms",
        default: Some("5"),
        doc: "How long a batch waits for more records.",
        secret: false,
        apply: |b, v| {
            b.producer.linger = parse::millis_int(v)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "buffer.memory",
        default: Some("33554432"),
        doc: "Budget in bytes for records not yet acknowledged.",
        secret: false,
        apply: |b, v| {
            b.producer.buffer_memory = parse::int(v, 0, i64::MAX)? as usize;
            Ok(())
        },
    },
    KeyInfo {
        name: "compression.type",
        default: Some("none"),
        doc: "none, gzip, snappy, lz4 or zstd.",
        secret: false,
        apply: |b, v| {
            b.producer.compression = Compression::from_name(v.trim())
                .ok_or("expected none, gzip, snappy, lz4 or zstd")?;
            Ok(())
        },
    },
    KeyInfo {
        name: "compression.gzip.level",
        default: Some("-1"),
        doc: "gzip level 1-9, or -1 for the default.",
        secret: false,
        apply: |b, v| {
            let l = parse::int(v, -1, 9)?;
            if l == 0 {
                return Err("expected 1..=9 or -1".into());
            }
            b.producer.gzip_level = (l > 0).then_some(l as i32);
            Ok(())
        },
    },
    KeyInfo {
        name: "compression.lz4.level",
        default: Some("9"),
        doc: "lz4 level 1-17.",
        secret: false,
        apply: |b, v| {
            b.producer.lz4_level = level(v, 1, 17)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "compression.zstd.level",
        default: Some("3"),
        doc: "zstd level -131072..=22.",
        secret: false,
        apply: |b, v| {
            b.producer.zstd_level = level(v, -131_072, 22)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "max.request.size",
        default: Some("1048576"),
        doc: "Most bytes of one record and of one Produce request.",
        secret: false,
        apply: |b, v| {
            b.producer.max_request_size = bytes(v, 1)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "enable.idempotence",
        default: Some("true"),
        doc: "Exactly-once per partition: producer id and sequence numbers.",
        secret: false,
        apply: |b, v| {
            b.producer.enable_idempotence = Some(parse::boolean(v)?);
            Ok(())
        },
    },
    KeyInfo {
        name: "delivery.timeout.ms",
        default: Some("120000"),
        doc: "Limit on a record's life from send to outcome, retries included.",
        secret: false,
        apply: |b, v| {
            b.producer.delivery_timeout = parse::millis_int(v)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "max.block.ms",
        default: Some("60000"),
        doc: "How long send waits for metadata or buffer space (adapters).",
        secret: false,
        apply: |b, v| {
            b.producer.max_block = parse::millis_long(v)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "partitioner.ignore.keys",
        default: Some("false"),
        doc: "Spread keyed records like keyless ones.",
        secret: false,
        apply: |b, v| {
            b.producer.partitioner_ignore_keys = parse::boolean(v)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "transactional.id",
        default: None,
        doc: "Makes the producer transactional; stable across restarts.",
        secret: false,
        apply: |b, v| {
            b.producer.transactional_id = parse::opt_text(v)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "transaction.timeout.ms",
        default: Some("60000"),
        doc: "How long the coordinator keeps a transaction open before aborting it.",
        secret: false,
        apply: |b, v| {
            b.producer.transaction_timeout = parse::millis_int(v)?;
            Ok(())
        },
    },
];
