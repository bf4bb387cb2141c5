//! `Call`: one request with retries until a deadline, the building block of operations.

use std::time::{Duration, Instant};

use super::{AdminError, Timeout};
use crate::client::{Cause, OpContext, Operation, RequestId, RequestOptions};
use crate::cluster::Route;
use crate::conn::RequestError;
use crate::protocol::Request;

/// When an operation gives up, and when it started (failures since then explain a
/// timeout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Deadline {
    /// The instant it gives up.
    pub(crate) at: Instant,
    /// Its first poll.
    pub(crate) start: Instant,
}

impl Deadline {
    pub(crate) fn passed(&self, cx: &OpContext<'_>) -> bool {
        cx.now() >= self.at
    }

    /// The time limit.
    pub(crate) fn limit(&self) -> Duration {
        self.at.saturating_duration_since(self.start)
    }

    /// The timeout error: `own` (the last failure the caller retried past), else the
    /// last connection failure since the operation started.
    pub(crate) fn timed_out(&self, cx: &OpContext<'_>, own: Option<Cause>) -> AdminError {
        let last_cause = own.or_else(|| cx.last_failure_since(self.start));
        crate::trace::warn!(
            after_ms = self.limit().as_millis() as u64,
            last_cause = %crate::trace::OrNone(&last_cause),
            "kafka call timed out"
        );
        AdminError::Timeout {
            after: self.limit(),
            last_cause: last_cause.map(Box::new),
        }
    }

    /// The error that ended every waiting call since the operation started (an
    /// authentication failure, the bootstrap rule): an operation waiting on metadata
    /// ends with it instead of at the deadline.
    pub(crate) fn fatal(&self, cx: &OpContext<'_>) -> Option<AdminError> {
        cx.fatal_since(self.start).map(AdminError::Request)
    }
}

/// The better of two causes: the first unless it only says "no route yet" and the
/// second names a failure.
pub(crate) fn better_cause(first: Option<Cause>, second: Option<Cause>) -> Option<Cause> {
    match (first, second) {
        (Some(a), Some(b)) if a.is_no_route() && !b.is_no_route() => Some(b),
        (Some(a), _) => Some(a),
        (None, b) => b,
    }
}

/// Whether a failed request is worth sending again.
pub(super) fn retriable(e: &RequestError) -> bool {
    match e {
        RequestError::Connection(c) => c.is_retriable(),
        RequestError::NoRoute(_) => true,
        _ => false,
    }
}

/// One request to one route, resent after retriable failures (connection lost, no route
/// yet) with the client's retry backoff, until the deadline.
#[derive(Debug)]
pub(crate) struct Call<R: Request> {
    route: Route,
    request: R,
    version: Option<i16>,
    id: Option<RequestId<R>>,
    retry_at: Option<Instant>,
    attempts: u32,
    /// Resend after a retriable failure (else the failure is the outcome).
    resend: bool,
    /// The last failure retried past (for a timeout's message).
    last_cause: Option<Cause>,
}

impl<R> Call<R>
where
    R: Request + Clone + Send + Sync + 'static,
    R::Response: Send + 'static,
{
    pub(crate) fn new(route: Route, request: R) -> Self {
        Call {
            route,
            request,
            version: None,
            id: None,
            retry_at: None,
            attempts: 0,
            resend: true,
            last_cause: None,
        }
    }

    /// A call whose retriable failures are returned instead of resent to the same route:
    /// for a route chosen from metadata (`Route::Broker(leader)`, a known coordinator),
    /// where the caller must look the target up again. A connection to a paused or dead
    /// leader would otherwise be retried until the deadline.
    pub(crate) fn without_resend(mut self) -> Self {
        self.resend = false;
        self
    }

    /// Sends the request if due, collects the response: `Some` once it arrived or the
    /// call failed for good (non-retriable error, or the deadline passed).
    pub(crate) fn poll(
        &mut self,
        cx: &mut OpContext<'_>,
        deadline: Deadline,
    ) -> Option<Result<R::Response, AdminError>> {
        if let Some(id) = self.id {
            match cx.take_response(id) {
                None => {}
                Some(Ok(response)) => {
                    self.id = None;
                    return Some(Ok(response));
                }
                Some(Err(e)) => {
                    self.id = None;
                    if !self.resend || !retriable(&e) || deadline.passed(cx) {
                        return Some(Err(e.into()));
                    }
                    self.retry_because(cx, Cause::from(e));
                }
            }
        }
        if deadline.passed(cx) {
            let pending = self.id.take().and_then(|id| {
                let cause = cx.cause_of(id);
                cx.discard(id);
                cause
            });
            let own = better_cause(pending, self.last_cause.take());
            return Some(Err(deadline.timed_out(cx, own)));
        }
        if self.id.is_none() {
            match self.retry_at {
                Some(at) if at > cx.now() => cx.wake_at(at),
                _ => {
                    self.retry_at = None;
                    let (route, request) = (self.route.clone(), self.request.clone());
                    let mut opts = RequestOptions::default().end_on_repeated_violation();
                    if let Some(v) = self.version {
                        opts = opts.version(v);
                    }
                    if !self.resend {
                        // Neither here nor in the router: the failure goes to the caller.
                        opts = opts.no_router_retry();
                    }
                    self.id = Some(cx.send_with(route, request, opts));
                }
            }
        }
        None
    }

    /// Like [`poll`](Self::poll), but sends again after the backoff while `retriable`
    /// names a cause in the response (a retriable whole-response error code) and the
    /// deadline has not passed.
    pub(crate) fn poll_retrying(
        &mut self,
        cx: &mut OpContext<'_>,
        deadline: Deadline,
        retriable: impl Fn(&R::Response) -> Option<Cause>,
    ) -> Option<Result<R::Response, AdminError>> {
        loop {
            let resp = match self.poll(cx, deadline)? {
                Ok(resp) => resp,
                Err(e) => return Some(Err(e)),
            };
            match retriable(&resp) {
                Some(cause) if !deadline.passed(cx) => {
                    self.retry_because(cx, cause);
                    continue;
                }
                _ => return Some(Ok(resp)),
            }
        }
    }

    /// [`retry`](Self::retry), remembering why (a timeout during the backoff names it).
    pub(crate) fn retry_because(&mut self, cx: &mut OpContext<'_>, cause: Cause) {
        crate::trace::debug!(attempt = self.attempts + 1, %cause, "kafka call retried");
        self.last_cause = Some(cause);
        self.retry(cx);
    }

    /// Sends again after the retry backoff (for a retriable error inside the response).
    pub(crate) fn retry(&mut self, cx: &mut OpContext<'_>) {
        if let Some(id) = self.id.take() {
            cx.discard(id);
        }
        self.attempts += 1;
        let at = cx.now() + cx.retry_backoff(self.attempts);
        self.retry_at = Some(at);
        cx.wake_at(at);
    }

    /// The request, to narrow it before a retry (e.g. to the items that failed).
    pub(crate) fn request_mut(&mut self) -> &mut R {
        &mut self.request
    }

    /// Pins the version of the next attempts (`None`: the highest both sides support),
    /// for requests whose newest versions need data the caller lacks (e.g. topic ids).
    pub(crate) fn set_version(&mut self, version: Option<i16>) {
        self.version = version;
    }
}

/// Any request as an operation: sent to a route, resent after connection failures until
/// the deadline, answered with the raw response (for APIs without a typed operation).
#[derive(Debug)]
pub struct RawRequest<R: Request> {
    call: Call<R>,
    timeout: Timeout,
}

impl<R> RawRequest<R>
where
    R: Request + Clone + Send + Sync + 'static,
    R::Response: Send + 'static,
{
    /// `request` to `route`.
    pub fn new(route: Route, request: R) -> Self {
        RawRequest {
            call: Call::new(route, request),
            timeout: Timeout::default(),
        }
    }

    /// Overrides `default.api.timeout.ms`.
    pub fn timeout(mut self, limit: std::time::Duration) -> Self {
        self.timeout.set(limit);
        self
    }

    /// Sends at this version instead of the highest both sides support.
    pub fn version(mut self, version: i16) -> Self {
        self.call.set_version(Some(version));
        self
    }
}

impl<R> Operation for RawRequest<R>
where
    R: Request + Clone + Send + Sync + std::fmt::Debug + 'static,
    R::Response: Send + 'static,
{
    type Output = Result<R::Response, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        self.call.poll(cx, deadline)
    }
}
