//! Pattern subscriptions: [`TopicPattern`] and, for the classic protocol, the topics it
//! matches in the all-topics metadata (Java's `subscribe(Pattern)`: whole-name matches,
//! internal topics left out with `exclude.internal.topics`). Under KIP-848 the pattern
//! goes to the coordinator as is (`SubscribedTopicRegex`, RE2J) and is matched there.

use std::collections::BTreeSet;

use regex::Regex;

use super::GroupError;
use crate::cluster::Metadata;
use crate::config::GroupProtocol;

/// Compiled programs above this size are refused (bounds a hostile pattern's memory).
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A topic pattern to subscribe to, checked for the protocol it will be used with.
#[derive(Debug, Clone)]
pub struct TopicPattern {
    source: String,
    /// The anchored regex (classic); `None` under KIP-848, where the broker compiles it.
    regex: Option<Regex>,
}

impl TopicPattern {
    /// A pattern for `protocol`. Classic: compiled here with the `regex` crate, anchored
    /// so that it must match a whole topic name (an invalid one is an error now).
    /// KIP-848: passed to the coordinator, which checks it (RE2J syntax); only an empty
    /// pattern is refused here.
    pub fn new(pattern: &str, protocol: GroupProtocol) -> Result<Self, GroupError> {
        let invalid = |reason: String| GroupError::InvalidPattern {
            pattern: pattern.to_string(),
            reason,
        };
        if pattern.is_empty() {
            return Err(invalid("the pattern is empty".into()));
        }
        let regex = match protocol {
            GroupProtocol::Classic => Some(
                regex::RegexBuilder::new(&format!("^(?:{pattern})$"))
                    .size_limit(REGEX_SIZE_LIMIT)
                    .build()
                    .map_err(|e| invalid(e.to_string()))?,
            ),
            GroupProtocol::Consumer => None,
        };
        Ok(TopicPattern {
            source: pattern.to_string(),
            regex,
        })
    }

    /// The pattern as given.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether `topic` matches as a whole (classic patterns; KIP-848 ones never here).
    pub fn matches(&self, topic: &str) -> bool {
        self.regex.as_ref().is_some_and(|r| r.is_match(topic))
    }

    pub(crate) fn is_compiled(&self) -> bool {
        self.regex.is_some()
    }
}

impl PartialEq for TopicPattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source && self.regex.is_some() == other.regex.is_some()
    }
}

/// A classic pattern subscription: which topics of the all-topics metadata it matches.
#[derive(Debug)]
pub(crate) struct Matcher {
    pub(crate) pattern: TopicPattern,
    exclude_internal: bool,
    /// The complete metadata generation last matched against (starts at the one current
    /// at subscribe time, so the first match waits for a fresh answer).
    seen: u64,
    /// No fresh answer matched yet since subscribing.
    pub(crate) first: bool,
}

impl Matcher {
    pub(crate) fn new(pattern: TopicPattern, exclude_internal: bool, md: &Metadata) -> Self {
        Matcher {
            pattern,
            exclude_internal,
            seen: md.complete_generation(),
            first: true,
        }
    }

    /// The matching topics, once per all-topics answer newer than the last look.
    pub(crate) fn refresh(&mut self, md: &Metadata) -> Option<BTreeSet<String>> {
        let generation = md.complete_generation();
        if generation == self.seen {
            return None;
        }
        self.seen = generation;
        let matched = md
            .topic_names()
            .filter(|t| self.pattern.matches(t))
            .filter(|t| !(self.exclude_internal && md.topic(t).is_some_and(|i| i.internal)))
            .map(str::to_string)
            .collect();
        Some(matched)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classic_patterns_match_whole_names_and_bad_ones_are_refused() {
        let p = TopicPattern::new("pat-.*", GroupProtocol::Classic).unwrap();
        assert!(p.matches("pat-1"));
        assert!(!p.matches("xpat-1"), "anchored at the start");
        let p = TopicPattern::new("a|b", GroupProtocol::Classic).unwrap();
        assert!(p.matches("a") && p.matches("b") && !p.matches("ab"));
        let e = TopicPattern::new("pat-(", GroupProtocol::Classic).unwrap_err();
        assert!(matches!(e, GroupError::InvalidPattern { ref pattern, .. } if pattern == "pat-("));
        assert!(TopicPattern::new("", GroupProtocol::Classic).is_err());
        // KIP-848: the broker judges it.
        let p = TopicPattern::new("pat-(", GroupProtocol::Consumer).unwrap();
        assert_eq!(p.as_str(), "pat-(");
        assert!(TopicPattern::new("", GroupProtocol::Consumer).is_err());
    }
}
