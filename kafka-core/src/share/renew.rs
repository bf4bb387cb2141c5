//! Acquisition-lock renewals (KIP-1222): records acknowledged with
//! [`AcknowledgeType::Renew`] stay acquired by this member; once the broker confirms the
//! renewal they are handed out again by a later poll, and still need a final
//! acknowledgement.
//!
//! In explicit mode every handed-out record is kept (a copy sharing the fetched buffer)
//! until it is acknowledged, so a renewed one can be handed out again; this is bounded by
//! one poll's records, since explicit mode refuses a poll while any await an
//! acknowledgement.

use std::collections::{BTreeMap, VecDeque};

use super::acks::{AckRange, AcknowledgeType};
use super::{ShareError, ShareRecord};
use crate::group::TopicPartition;

/// Handed-out records kept for renewal, renewals under way and renewed records waiting
/// to be handed out again.
#[derive(Debug, Default)]
pub(crate) struct Renewals {
    /// Handed out and not acknowledged yet (explicit mode).
    handed: BTreeMap<(TopicPartition, i64), ShareRecord>,
    /// Acknowledged with `Renew`, the renewal not answered yet.
    renewing: BTreeMap<(TopicPartition, i64), ShareRecord>,
    /// Renewed: handed out again by the next poll.
    ready: VecDeque<ShareRecord>,
}

impl Renewals {
    /// A record was handed out (explicit mode).
    pub(crate) fn hand_out(&mut self, tp: &TopicPartition, record: &ShareRecord) {
        self.handed
            .insert((tp.clone(), record.offset), record.clone());
    }

    /// A handed-out record was acknowledged with `kind`.
    pub(crate) fn acknowledged(&mut self, tp: &TopicPartition, offset: i64, kind: AcknowledgeType) {
        let key = (tp.clone(), offset);
        if let Some(r) = self.handed.remove(&key) {
            if kind == AcknowledgeType::Renew {
                self.renewing.insert(key, r);
            }
        }
    }

    /// Every handed-out record was settled at once (close, implicit acceptance).
    pub(crate) fn forget_handed(&mut self) {
        self.handed.clear();
    }

    /// A renewal completed: renewed records are handed out again; if the broker was
    /// never asked (`RenewUnsupported`) they are too, since the member still holds them;
    /// any other failure means the acquisition is gone (or unknown), so they are
    /// dropped (they return to the group when their locks expire).
    pub(crate) fn completed(
        &mut self,
        tp: &TopicPartition,
        ranges: &[AckRange],
        result: &Result<(), ShareError>,
    ) {
        let again = matches!(result, Ok(()) | Err(ShareError::RenewUnsupported { .. }));
        for r in ranges.iter().filter(|r| r.kind == AcknowledgeType::Renew) {
            let keys: Vec<(TopicPartition, i64)> = self
                .renewing
                .range((tp.clone(), r.first)..=(tp.clone(), r.last))
                .map(|(k, _)| k.clone())
                .collect();
            for k in keys {
                let record = self.renewing.remove(&k).expect("renewing");
                if again {
                    self.ready.push_back(record);
                }
            }
        }
    }

    /// Takes up to `max` renewed records to hand out again.
    pub(crate) fn take_ready(&mut self, max: usize) -> Vec<ShareRecord> {
        let n = max.min(self.ready.len());
        self.ready.drain(..n).collect()
    }

    /// Renewed records waiting to be handed out again (released at close).
    pub(crate) fn take_all_ready(&mut self) -> Vec<ShareRecord> {
        self.ready.drain(..).collect()
    }

    /// Whether renewed records wait to be handed out.
    pub(crate) fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// How many renewals are under way (acknowledged with `Renew`, not answered).
    pub(crate) fn in_progress(&self) -> usize {
        self.renewing.len()
    }

    /// Forgets everything (fenced: the member's acquisitions are gone).
    pub(crate) fn clear(&mut self) {
        self.handed.clear();
        self.renewing.clear();
        self.ready.clear();
    }
}
