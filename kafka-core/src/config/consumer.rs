//! Consumer settings: fetch sizes and waits, the fetch buffer budget, the offset reset
//! policy and the isolation level, with the Java client's names and defaults.

use std::time::Duration;

use super::parse;
use super::{ClientConfigBuilder, ConfigError, KeyInfo};

/// `auto.offset.reset`: where a partition without a valid position starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OffsetReset {
    /// The log start.
    Earliest,
    /// The log end (only records written from now on).
    Latest,
    /// Fail with a typed error instead.
    None,
    /// `by_duration:PnDTnHnMn.nS` (KIP-1106): the first record whose timestamp is at most
    /// this long before the reset (ListOffsets by timestamp); the log end when no record
    /// is that recent.
    ByDuration(Duration),
}

impl std::str::FromStr for OffsetReset {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "earliest" => Ok(OffsetReset::Earliest),
            "latest" => Ok(OffsetReset::Latest),
            "none" => Ok(OffsetReset::None),
            "by_duration" => Err("by_duration needs a duration: by_duration:PnDTnHnMn.nS".into()),
            other => match other.strip_prefix("by_duration:") {
                Some(iso) => iso_duration(iso).map(OffsetReset::ByDuration),
                None => Err("expected earliest, latest, none or by_duration:PnDTnHnMn.nS".into()),
            },
        }
    }
}

/// An ISO-8601 duration as Java's `Duration.parse` reads it (`PnDTnHnMn.nS`, any part
/// left out, case-insensitive), not negative.
fn iso_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not a duration of the form PnDTnHnMn.nS");
    if text.contains('-') {
        return Err(format!("{text:?}: negative durations are not supported"));
    }
    let upper = text.trim_start_matches('+').to_ascii_uppercase();
    let body = upper.strip_prefix('P').ok_or_else(bad)?;
    let (days, time) = match body.split_once('T') {
        Some((days, time)) if !time.is_empty() => (days, Some(time)),
        Some(_) => return Err(bad()),
        None => (body, None),
    };
    let mut total = Duration::ZERO;
    let mut parts = 0;
    if !days.is_empty() {
        let n = days.strip_suffix('D').ok_or_else(bad)?;
        total += whole(n, 86_400).ok_or_else(bad)?;
        parts += 1;
    }
    let mut rest = time.unwrap_or("");
    for (unit, secs) in [('H', 3_600), ('M', 60)] {
        if let Some((n, tail)) = rest.split_once(unit) {
            total += whole(n, secs).ok_or_else(bad)?;
            rest = tail;
            parts += 1;
        }
    }
    if !rest.is_empty() {
        let n = rest.strip_suffix('S').ok_or_else(bad)?;
        let (int, frac) = n.split_once(['.', ',']).unwrap_or((n, ""));
        total += whole(int, 1).ok_or_else(bad)?;
        if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let nanos: u32 = format!("{frac:0<9}").parse().map_err(|_| bad())?;
        total += Duration::from_nanos(u64::from(nanos));
        parts += 1;
    }
    if parts == 0 {
        return Err(bad());
    }
    Ok(total)
}

/// `n` units of `secs` seconds, `n` a plain decimal number.
fn whole(n: &str, secs: u64) -> Option<Duration> {
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = n.parse().ok()?;
    Some(Duration::from_secs(n.checked_mul(secs)?))
}

/// `isolation.level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IsolationLevel {
    /// Every record, transactional or not, up to the high watermark.
    ReadUncommitted,
    /// Records up to the last stable offset, without those of aborted transactions.
    ReadCommitted,
}

impl IsolationLevel {
    /// The Fetch / ListOffsets field value.
    pub fn wire(self) -> i8 {
        match self {
            IsolationLevel::ReadUncommitted => 0,
            IsolationLevel::ReadCommitted => 1,
        }
    }
}

impl std::str::FromStr for IsolationLevel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "read_uncommitted" => Ok(IsolationLevel::ReadUncommitted),
            "read_committed" => Ok(IsolationLevel::ReadCommitted),
            _ => Err("expected read_uncommitted or read_committed".into()),
        }
    }
}

/// Consumer settings. Read them from [`ClientConfig::consumer`](super::ClientConfig::consumer).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConsumerConfig {
    /// `auto.offset.reset` (default latest).
    pub auto_offset_reset: OffsetReset,
    /// `fetch.min.bytes` (default 1).
    pub fetch_min_bytes: i32,
    /// `fetch.max.bytes`: most bytes one Fetch answer may carry (default 50 MiB).
    pub fetch_max_bytes: i32,
    /// `fetch.max.wait.ms`: how long the broker may hold a Fetch (default 500 ms).
    pub fetch_max_wait: Duration,
    /// `max.partition.fetch.bytes` (default 1 MiB).
    pub max_partition_fetch_bytes: i32,
    /// `max.poll.records`: most records one poll hands out (default 500).
    pub max_poll_records: usize,
    /// `isolation.level` (default read_uncommitted).
    pub isolation_level: IsolationLevel,
    /// `queued.max.messages.kbytes` (librdkafka's name; Java has none): the budget of
    /// fetched bytes waiting for the application, in KiB. A partition is not fetched
    /// while the buffer is over it (default 65536 = 64 MiB).
    pub queued_max_kbytes: usize,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        Self {
            auto_offset_reset: OffsetReset::Latest,
            fetch_min_bytes: 1,
            fetch_max_bytes: 52_428_800,
            fetch_max_wait: Duration::from_millis(500),
            max_partition_fetch_bytes: 1_048_576,
            max_poll_records: 500,
            isolation_level: IsolationLevel::ReadUncommitted,
            queued_max_kbytes: 65_536,
        }
    }
}

impl ConsumerConfig {
    /// Most bytes one fetched batch may decompress to: the larger of `fetch.max.bytes`
    /// and `max.partition.fetch.bytes` (at least 1). A batch that would inflate past it
    /// (a decompression bomb) is `RecordError::DecompressedTooLarge`, and its output
    /// stops growing at this cap.
    pub fn max_decompressed_bytes(&self) -> usize {
        let most = self
            .fetch_max_bytes
            .max(self.max_partition_fetch_bytes)
            .max(1);
        usize::try_from(most).unwrap_or(1)
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.max_poll_records == 0 {
            let why = "must be at least 1".into();
            return Err(ConfigError::invalid("max.poll.records", "0", false, why));
        }
        Ok(())
    }
}

/// Typed consumer setters.
impl ClientConfigBuilder {
    /// `auto.offset.reset` (default [`OffsetReset::Latest`]).
    pub fn auto_offset_reset(&mut self, reset: OffsetReset) -> &mut Self {
        self.consumer.auto_offset_reset = reset;
        self
    }

    /// `isolation.level` (default read_uncommitted).
    pub fn isolation_level(&mut self, level: IsolationLevel) -> &mut Self {
        self.consumer.isolation_level = level;
        self
    }

    /// `max.poll.records` (default 500).
    pub fn max_poll_records(&mut self, n: usize) -> &mut Self {
        self.consumer.max_poll_records = n;
        self
    }
}

fn int_bytes(value: &str, min: i64) -> Result<i32, String> {
    Ok(parse::int(value, min, i64::from(i32::MAX))? as i32)
}

/// String keys of the consumer section.
pub(super) const KEYS: &[KeyInfo] = &[
    KeyInfo {
        name: "auto.offset.reset",
        default: Some("latest"),
        doc: "Where a partition without a valid position starts: earliest, latest, none.",
        secret: false,
        apply: |b, v| {
            b.consumer.auto_offset_reset = v.parse()?;
            Ok(())
        },
    },
    KeyInfo {
        name: "fetch.min.bytes",
        default: Some("1"),
        doc: "Bytes a Fetch waits for (up to fetch.max.wait.ms).",
        secret: false,
        apply: |b, v| {
            b.consumer.fetch_min_bytes = int_bytes(v, 0)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "fetch.max.bytes",
        default: Some("52428800"),
        doc: "Most bytes of one Fetch answer.",
        secret: false,
        apply: |b, v| {
            b.consumer.fetch_max_bytes = int_bytes(v, 0)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "fetch.max.wait.ms",
        default: Some("500"),
        doc: "How long the broker may hold a Fetch for fetch.min.bytes.",
        secret: false,
        apply: |b, v| {
            b.consumer.fetch_max_wait = parse::millis_int(v)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "max.partition.fetch.bytes",
        default: Some("1048576"),
        doc: "Most bytes per partition in one Fetch answer.",
        secret: false,
        apply: |b, v| {
            b.consumer.max_partition_fetch_bytes = int_bytes(v, 0)?;
            Ok(())
        },
    },
    KeyInfo {
        name: "max.poll.records",
        default: Some("500"),
        doc: "Most records one poll returns.",
        secret: false,
        apply: |b, v| {
            b.consumer.max_poll_records = parse::uint(v, 1, i32::MAX.unsigned_abs())? as usize;
            Ok(())
        },
    },
    KeyInfo {
        name: "isolation.level",
        default: Some("read_uncommitted"),
        doc: "read_uncommitted or read_committed.",
        secret: false,
        apply: |b, v| {
            b.consumer.isolation_level = v.parse()?;
            Ok(())
        },
    },
    KeyInfo {
        name: "queued.max.messages.kbytes",
        default: Some("65536"),
        doc: "Budget (KiB) of fetched bytes waiting for the application (librdkafka's name).",
        secret: false,
        apply: |b, v| {
            b.consumer.queued_max_kbytes = parse::uint(v, 1, 2_097_151)? as usize;
            Ok(())
        },
    },
];
