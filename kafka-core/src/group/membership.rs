//! The member the group consumer drives: classic or KIP-848, behind one interface.

use std::collections::BTreeSet;
use std::time::Instant;

use super::kip848::Kip848;
use super::member::{Classic, MemberEvent, TopicPartition};
use super::offsets::CommitAs;
use super::GroupError;
use crate::client::OpContext;
use crate::config::{ClientConfig, GroupProtocol};

/// OffsetCommit v8 for classic members, v9 (member epochs) for KIP-848 members.
const CLASSIC_COMMIT_VERSION: i16 = 8;
const KIP848_COMMIT_VERSION: i16 = 9;

/// Either membership protocol.
#[derive(Debug)]
pub(crate) enum Member {
    Classic(Classic),
    Kip848(Kip848),
}

macro_rules! each {
    ($self:expr, $m:ident => $body:expr) => {
        match $self {
            Member::Classic($m) => $body,
            Member::Kip848($m) => $body,
        }
    };
}

impl Member {
    /// The member `group.protocol` asks for.
    pub(crate) fn new(config: &ClientConfig) -> Result<Self, GroupError> {
        Ok(match config.group().group_protocol {
            GroupProtocol::Classic => Member::Classic(Classic::new(config)?),
            GroupProtocol::Consumer => Member::Kip848(Kip848::new(config)?),
        })
    }

    pub(crate) fn group(&self) -> &str {
        each!(self, m => m.group())
    }

    pub(crate) fn instance(&self) -> Option<&str> {
        each!(self, m => m.instance())
    }

    pub(crate) fn member_id(&self) -> &str {
        each!(self, m => &m.member_id)
    }

    /// The generation (classic) or member epoch (KIP-848); -1 or 0 while not a member.
    pub(crate) fn generation(&self) -> i32 {
        match self {
            Member::Classic(m) => m.generation,
            Member::Kip848(m) => m.epoch,
        }
    }

    /// Whether it speaks the classic protocol.
    pub(crate) fn is_classic(&self) -> bool {
        matches!(self, Member::Classic(_))
    }

    /// The server-side pattern (KIP-848) the member subscribes with instead of names.
    pub(crate) fn set_pattern(&mut self, pattern: Option<String>) {
        if let Member::Kip848(m) = self {
            m.pattern = pattern;
        }
    }

    /// Whether this member led the last classic generation (KIP-848: never).
    pub(crate) fn is_leader(&self) -> bool {
        matches!(self, Member::Classic(m) if m.leader)
    }

    pub(crate) fn rebalances(&self) -> u64 {
        each!(self, m => m.rebalances)
    }

    pub(crate) fn is_stable(&self) -> bool {
        each!(self, m => m.is_stable())
    }

    pub(crate) fn is_idle(&self) -> bool {
        each!(self, m => m.is_idle())
    }

    pub(crate) fn leaving(&self) -> bool {
        each!(self, m => m.leaving())
    }

    /// Who a commit is sent as, if the member may commit now.
    pub(crate) fn commit_as(&self) -> Option<CommitAs> {
        let (generation, version) = match self {
            Member::Classic(m) => (m.generation, CLASSIC_COMMIT_VERSION),
            Member::Kip848(m) => (
                if m.epoch > 0 { m.epoch } else { -1 },
                KIP848_COMMIT_VERSION,
            ),
        };
        (generation >= 0).then(|| CommitAs {
            group: self.group().to_string(),
            generation,
            member_id: self.member_id().to_string(),
            instance: self.instance().map(str::to_string),
            version,
        })
    }

    /// Joins or rejoins (KIP-848: heartbeats at once).
    pub(crate) fn request_rejoin(&mut self, now: Instant, reason: &str) {
        match self {
            Member::Classic(m) => m.request_rejoin(now, reason),
            Member::Kip848(m) => m.request_rejoin(now),
        }
    }

    /// The eager revocation before a classic join is done.
    pub(crate) fn join_allowed(&mut self) {
        if let Member::Classic(m) = self {
            m.join_allowed();
        }
    }

    pub(crate) fn poll(
        &mut self,
        cx: &mut OpContext<'_>,
        topics: &BTreeSet<String>,
        owned: &BTreeSet<TopicPartition>,
        busy: bool,
        out: &mut Vec<MemberEvent>,
    ) {
        match self {
            Member::Classic(m) => m.poll(cx, topics, owned, out),
            Member::Kip848(m) => m.poll(cx, topics, owned, busy, out),
        }
    }

    pub(crate) fn leave(&mut self, cx: &mut OpContext<'_>, reason: &str) {
        match self {
            Member::Classic(m) => m.leave(cx, reason),
            Member::Kip848(m) => m.leave(cx),
        }
    }
}
