//! The workloads (PERF-AND-FAULTS.md A4, numbered as in the project's issue 12) and their
//! sizes in full and quick mode.

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Compression {
    None,
    Lz4,
    Zstd,
}

impl Compression {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) enum Kind {
    Produce {
        compression: Compression,
        /// Fixed open-loop rate (records/s): the latency workload.
        rate: Option<u64>,
        /// Commit every this many records (transactional).
        txn_records: Option<u64>,
    },
    Consume {
        /// The codec the source topic was written with.
        source: Compression,
        /// `None`: assign every partition (no group).
        group: Option<Group>,
    },
    /// A share group (KIP-932) of `members` consumers in one client process draining the
    /// uncompressed source topic, implicit acknowledgement (every record accepted).
    Share { members: u32 },
}

/// The group protocol of a group consume (`group.protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    Classic,
    /// KIP-848 (`group.protocol=consumer`).
    Consumer,
}

impl Protocol {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Protocol::Classic => "classic",
            Protocol::Consumer => "consumer",
        }
    }
}

/// A group consume: how many members (in one client process) and which protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Group {
    pub(crate) members: u32,
    pub(crate) protocol: Protocol,
}

#[derive(Debug, Clone)]
pub(crate) struct Workload {
    pub(crate) id: &'static str,
    pub(crate) title: &'static str,
    pub(crate) records: u64,
    pub(crate) value_bytes: usize,
    pub(crate) kind: Kind,
}

impl Workload {
    pub(crate) fn is_produce(&self) -> bool {
        matches!(self.kind, Kind::Produce { .. })
    }

    /// The source topic's codec of a consume or share workload.
    pub(crate) fn source(&self) -> Option<Compression> {
        match self.kind {
            Kind::Produce { .. } => None,
            Kind::Consume { source, .. } => Some(source),
            Kind::Share { .. } => Some(Compression::None),
        }
    }
}

/// Every workload, in run order. `quick` shrinks them so the whole suite takes minutes.
pub(crate) fn all(quick: bool) -> Vec<Workload> {
    let q = |full: u64, quick_n: u64| if quick { quick_n } else { full };
    let produce = |compression| Kind::Produce {
        compression,
        rate: None,
        txn_records: None,
    };
    let assign = |source| Kind::Consume {
        source,
        group: None,
    };
    let group = |members, protocol| Kind::Consume {
        source: Compression::None,
        group: Some(Group { members, protocol }),
    };
    let (rate, secs) = if quick { (2_000, 2) } else { (10_000, 15) };
    vec![
        Workload {
            id: "W1-none",
            title: "produce 100 B, acks=all, idempotent, linger 5 ms, batch 1 MB, no compression",
            records: q(2_000_000, 100_000),
            value_bytes: 100,
            kind: produce(Compression::None),
        },
        Workload {
            id: "W1-lz4",
            title: "W1 with lz4",
            records: q(2_000_000, 100_000),
            value_bytes: 100,
            kind: produce(Compression::Lz4),
        },
        Workload {
            id: "W1-zstd",
            title: "W1 with zstd",
            records: q(2_000_000, 100_000),
            value_bytes: 100,
            kind: produce(Compression::Zstd),
        },
        Workload {
            id: "W2",
            title: "produce 10 KB records (W1 settings, no compression)",
            records: q(100_000, 5_000),
            value_bytes: 10_000,
            kind: produce(Compression::None),
        },
        Workload {
            id: "W3",
            title: "latency: fixed open-loop rate, 100 B, idempotent, linger 5 ms; send -> ack",
            records: rate * secs,
            value_bytes: 100,
            kind: Kind::Produce {
                compression: Compression::None,
                rate: Some(rate),
                txn_records: None,
            },
        },
        Workload {
            id: "W4",
            title: "transactional produce 100 B, commit every 10,000 records",
            records: q(1_000_000, 50_000),
            value_bytes: 100,
            kind: Kind::Produce {
                compression: Compression::None,
                rate: None,
                txn_records: Some(10_000),
            },
        },
        Workload {
            id: "W5",
            title: "consume 100 B records from earliest, assign (no group)",
            records: q(2_000_000, 100_000),
            value_bytes: 100,
            kind: assign(Compression::None),
        },
        Workload {
            id: "W5-lz4",
            title: "W5 from a topic written with lz4",
            records: q(2_000_000, 100_000),
            value_bytes: 100,
            kind: assign(Compression::Lz4),
        },
        Workload {
            id: "W5-zstd",
            title: "W5 from a topic written with zstd",
            records: q(2_000_000, 100_000),
            value_bytes: 100,
            kind: assign(Compression::Zstd),
        },
        Workload {
            id: "W6",
            title: "consume in a consumer group of one (subscribe, classic protocol), commit at the end",
            records: q(2_000_000, 100_000),
            value_bytes: 100,
            kind: group(1, Protocol::Classic),
        },
        Workload {
            id: "W6-3",
            title: "W6 with three members in one process (classic), each committing on revocation and at the end",
            records: q(2_000_000, 100_000),
            value_bytes: 100,
            kind: group(3, Protocol::Classic),
        },
        Workload {
            id: "W6-848",
            title: "W6 with the KIP-848 protocol (group.protocol=consumer)",
            records: q(2_000_000, 100_000),
            value_bytes: 100,
            kind: group(1, Protocol::Consumer),
        },
        Workload {
            id: "W6-848-3",
            title: "W6-3 with the KIP-848 protocol",
            records: q(2_000_000, 100_000),
            value_bytes: 100,
            kind: group(3, Protocol::Consumer),
        },
        Workload {
            id: "S3",
            title: "share group (KIP-932) of three members in one process draining an uncompressed topic, implicit acknowledgement (each record accepted)",
            records: q(1_000_000, 100_000),
            value_bytes: 100,
            kind: Kind::Share { members: 3 },
        },
    ]
}

/// Quick mode runs Java's `ConsumePeer` (a JVM start, ~5 s here) only where it is the
/// one Java row and covers a path nothing else does: assign (W5) and several members
/// with KIP-848 (W6-848-3, the rebalance listener's commits); `ConsumerPerformance`
/// keeps its one-member group rows. Full mode runs every Java row.
pub(crate) fn java_peer_in_quick(id: &str) -> bool {
    matches!(id, "W5" | "W6-848-3")
}

/// A 7-bit text pool of `lines` JSON-like lines of exactly `len` bytes: every client reads
/// the same file (Java's ProducerPerformance reads it as UTF-8 lines).
pub(crate) fn payload_file(len: usize, lines: usize) -> String {
    const WORDS: [&str; 32] = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra",
        "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu", "kafka", "broker",
        "topic", "offset", "record", "batch",
    ];
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = String::with_capacity((len + 1) * lines);
    for i in 0..lines {
        let mut l = format!(
            "{{\"id\":{i},\"user\":\"user{:05}\",\"active\":{},\"score\":{}.{:02},\"text\":\"",
            next() % 100_000,
            next() & 1 == 0,
            next() % 1000,
            next() % 100
        );
        while l.len() < len.saturating_sub(2) {
            let w = WORDS[(next() % WORDS.len() as u64) as usize];
            l.push_str(w);
            l.push(if next() % 7 == 0 { '-' } else { ' ' });
            if next() % 5 == 0 {
                l.push_str(&(next() % 10_000).to_string());
                l.push(' ');
            }
        }
        l.truncate(len.saturating_sub(2));
        l.push_str("\"}");
        debug_assert_eq!(l.len(), len);
        out.push_str(&l);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn payload_lines_have_the_exact_length_and_are_7_bit() {
        for len in [100, 10_000] {
            let f = super::payload_file(len, 50);
            assert!(f.is_ascii());
            let lines: Vec<&str> = f.lines().collect();
            assert_eq!(lines.len(), 50);
            assert!(lines.iter().all(|l| l.len() == len && !l.contains('\r')));
        }
    }
}
