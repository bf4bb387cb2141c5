//! The "all topics" metadata want of pattern subscriptions, beside the per-topic wants
//! (`wanted_topics`, which expire after `metadata.max.idle.ms` either way).
//!
//! Bounded: the want belongs to the machines that asked for it and ends with them; when
//! the last one goes, every cached topic no per-topic want names is dropped, so the cache
//! shrinks back to what is wanted.

use std::time::Instant;

use super::Client;
use crate::protocol::messages::metadata::MetadataResponse;

impl Client {
    /// Machine `op` wants (or no longer wants) every topic's metadata.
    pub(crate) fn want_all_topics(&mut self, now: Instant, op: u64, on: bool) {
        if on {
            if self.all_topics_wanted.insert(op) {
                self.request_metadata(now, []);
            }
        } else {
            self.drop_all_topics_want(op);
        }
    }

    /// Ends `op`'s all-topics want, if it had one.
    pub(super) fn drop_all_topics_want(&mut self, op: u64) {
        if self.all_topics_wanted.remove(&op) && self.all_topics_wanted.is_empty() {
            self.forget_unwanted_topics();
        }
    }

    /// Applies a Metadata answer: an all-topics one also drops the topics it omits.
    pub(super) fn apply_metadata(&mut self, resp: &MetadataResponse) {
        if std::mem::take(&mut self.metadata_all_in_flight) {
            self.metadata.update_complete(resp);
            if self.all_topics_wanted.is_empty() {
                // The want ended while the answer was in flight.
                self.forget_unwanted_topics();
            }
        } else {
            self.metadata.update(resp);
        }
    }

    fn forget_unwanted_topics(&mut self) {
        let wanted = &self.wanted_topics;
        self.metadata.retain_topics(|t| wanted.contains_key(t));
    }

    /// Whether a machine wants every topic (tests).
    #[cfg(test)]
    pub(crate) fn wants_all_topics(&self) -> bool {
        !self.all_topics_wanted.is_empty()
    }
}
