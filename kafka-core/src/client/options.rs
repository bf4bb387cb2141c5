//! [`RequestOptions`]: how one request is sent and retried, beyond its route.

use std::time::Duration;

use crate::conn::Shape;

/// How one request is sent and retried, beyond its route.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestOptions {
    pub(super) shape: Shape,
    pub(super) no_retry: bool,
    pub(super) violations_end: bool,
}

impl RequestOptions {
    /// Pins the version instead of the highest both sides support.
    pub fn version(mut self, version: i16) -> Self {
        self.shape.version = Some(version);
        self
    }

    /// Uses at most `version` (the highest both sides support below it).
    pub fn max_version(mut self, version: i16) -> Self {
        self.shape.max_version = Some(version);
        self
    }

    /// Waits up to `timeout` for the response once written, and up to `timeout` for a
    /// route, instead of `request.timeout.ms` (JoinGroup up to the rebalance timeout,
    /// long-poll fetches `fetch.max.wait.ms` plus the request timeout).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.shape.timeout = Some(timeout);
        self
    }

    /// The broker sends no response (Produce with acks=0): the request completes with a
    /// default (empty) response as soon as it is handed to the socket.
    pub fn no_response(mut self) -> Self {
        self.shape.no_response = true;
        self
    }

    /// The router never retries or reorders this request on its own: a connection
    /// failure or a moved coordinator is reported to the owner, who decides (the
    /// producer owns its sequencing and retries).
    pub fn no_router_retry(mut self) -> Self {
        self.no_retry = true;
        self
    }

    /// The router ends this request with [`RequestError::RepeatedViolation`](crate::conn::RequestError::RepeatedViolation) once its
    /// attempts broke the Kafka protocol [`REQUEST_VIOLATIONS`](super::REQUEST_VIOLATIONS) times in a row, instead
    /// of retrying until its deadline (admin calls ask for this).
    pub fn end_on_repeated_violation(mut self) -> Self {
        self.violations_end = true;
        self
    }
}
