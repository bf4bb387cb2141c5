//! Metadata change summaries for `tracing` (feature `tracing`; nothing without it): which
//! brokers came or went, whether the controller moved, how many partitions changed
//! leader. A summary per answer, never a line per partition.

use crate::cluster::Metadata;
use crate::protocol::messages::metadata::MetadataResponse;

/// What the metadata said before an answer was applied (brokers, controller, the leaders
/// of the partitions the answer names).
pub(super) struct Before {
    #[cfg(feature = "tracing")]
    brokers: Vec<i32>,
    #[cfg(feature = "tracing")]
    controller: Option<i32>,
    #[cfg(feature = "tracing")]
    leaders: Vec<Option<i32>>,
}

impl Before {
    pub(super) fn of(metadata: &Metadata, resp: &MetadataResponse) -> Before {
        #[cfg(feature = "tracing")]
        {
            Before {
                brokers: metadata.brokers().keys().copied().collect(),
                controller: metadata.controller(),
                leaders: leaders(metadata, resp),
            }
        }
        #[cfg(not(feature = "tracing"))]
        {
            let _ = (metadata, resp);
            Before {}
        }
    }

    /// Logs what changed with `resp` applied to `metadata` (nothing when nothing did).
    pub(super) fn log_changes(self, metadata: &Metadata, resp: &MetadataResponse) {
        #[cfg(feature = "tracing")]
        {
            let brokers: Vec<i32> = metadata.brokers().keys().copied().collect();
            let added: Vec<i32> = brokers
                .iter()
                .filter(|b| !self.brokers.contains(b))
                .copied()
                .collect();
            let removed: Vec<i32> = self
                .brokers
                .iter()
                .filter(|b| !brokers.contains(b))
                .copied()
                .collect();
            let controller = metadata.controller();
            let moved = leaders(metadata, resp)
                .iter()
                .zip(&self.leaders)
                .filter(|(now, was)| now != was)
                .count();
            if !added.is_empty() || !removed.is_empty() || controller != self.controller {
                crate::trace::info!(
                    brokers = brokers.len(),
                    ?added,
                    ?removed,
                    ?controller,
                    "kafka cluster brokers changed"
                );
            }
            if moved > 0 {
                crate::trace::info!(partitions = moved, "kafka partition leaders changed");
            }
            crate::trace::debug!(
                brokers = brokers.len(),
                topics = resp.topics.len(),
                "kafka metadata answer applied"
            );
        }
        #[cfg(not(feature = "tracing"))]
        {
            let _ = (self, metadata, resp);
        }
    }
}

/// The known leader of every partition `resp` names, in its order.
#[cfg(feature = "tracing")]
fn leaders(metadata: &Metadata, resp: &MetadataResponse) -> Vec<Option<i32>> {
    resp.topics
        .iter()
        .filter_map(|t| Some((t.name.as_deref()?, &t.partitions)))
        .flat_map(|(name, parts)| {
            parts
                .iter()
                .map(move |p| metadata.leader(name, p.partition_index))
        })
        .collect()
}
