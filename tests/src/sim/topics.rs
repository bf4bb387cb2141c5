//! Topics that go missing (F18): a topic hidden from the cluster is absent from every
//! answer — Metadata says UNKNOWN_TOPIC_OR_PARTITION, Produce, Fetch and ListOffsets
//! refuse it (UNKNOWN_TOPIC_OR_PARTITION, or UNKNOWN_TOPIC_ID by id) — as when a broker's
//! metadata lags or a topic is deleted and recreated, while its log is kept; shown
//! again it is back as it was. A deleted topic is gone for good, log and all.

use super::cluster::SimCluster;

impl SimCluster {
    /// Hides `name` (its log kept); false if it is not there.
    pub fn hide_topic(&mut self, name: &str) -> bool {
        match self.topics.remove(name) {
            Some(t) => {
                self.hidden.insert(name.to_string(), t);
                self.counters.topics_hidden += 1;
                true
            }
            None => false,
        }
    }

    /// Brings a hidden `name` back, as it was; false if it was not hidden.
    pub fn show_topic(&mut self, name: &str) -> bool {
        match self.hidden.remove(name) {
            Some(t) => {
                self.topics.insert(name.to_string(), t);
                true
            }
            None => false,
        }
    }

    /// Deletes `name` for good (hidden or not); false if it did not exist.
    pub fn delete_topic(&mut self, name: &str) -> bool {
        let gone = self.topics.remove(name).is_some() | self.hidden.remove(name).is_some();
        if gone {
            self.counters.topics_deleted += 1;
        }
        gone
    }
}
