//! `Items`: one request about many items (topics, partitions, bindings...), narrowed to
//! the items answered with a retriable code and resent until the deadline.

use std::collections::BTreeMap;

use super::{AdminError, Call, Deadline};
use crate::client::{Cause, OpContext};
use crate::cluster::Route;
use crate::protocol::{KafkaCode, Request};

/// Per-item results, as every batch operation outputs them.
pub(crate) type ItemResults<K, V> = BTreeMap<K, Result<V, AdminError>>;

/// What a response said about the batch as a whole.
#[derive(Debug, PartialEq)]
pub(crate) enum Absorbed<K> {
    /// Send the same request again after the backoff (a retriable whole-response error).
    Again,
    /// Send these items again (the others are settled, or missing from the response).
    Retry(Vec<K>),
    /// The whole call failed.
    Failed(AdminError),
}

/// A response to absorb: the items it answers, and where their results go.
pub(crate) struct Batch<'a, K, V> {
    /// The items of the request that was answered.
    pub(crate) pending: &'a [K],
    /// Results so far; absorbing adds the settled items.
    pub(crate) results: &'a mut ItemResults<K, V>,
    /// Whether the deadline has passed (no retry any more).
    pub(crate) expired: bool,
    /// Why items are sent again (the last retriable code), for a timeout's message.
    pub(crate) cause: &'a mut Option<Cause>,
}

/// The retry machinery of a batch operation: the call, the items still in flight and
/// the settled results. Items still retriable at the deadline get [`AdminError::Timeout`],
/// items missing from a response get [`AdminError::Protocol`]; a failed request fails the
/// whole call unless some items are already settled (then it stands for the others).
#[derive(Debug)]
pub(crate) struct Items<R: Request, K, V> {
    call: Option<Call<R>>,
    pending: Vec<K>,
    results: ItemResults<K, V>,
    what: &'static str,
}

impl<R, K, V> Items<R, K, V>
where
    R: Request + Clone + Send + Sync + 'static,
    R::Response: Send + 'static,
    K: Ord + Clone,
{
    /// No call yet; `what` names an item in errors ("topic missing from response").
    pub(crate) fn new(what: &'static str) -> Self {
        Items {
            call: None,
            pending: Vec::new(),
            results: BTreeMap::new(),
            what,
        }
    }

    /// Whether [`start`](Self::start) was called.
    pub(crate) fn started(&self) -> bool {
        self.call.is_some()
    }

    /// Settles an item before (or instead of) sending it.
    pub(crate) fn settle(&mut self, key: K, result: Result<V, AdminError>) {
        self.results.insert(key, result);
    }

    /// The items in flight.
    pub(crate) fn pending(&self) -> &[K] {
        &self.pending
    }

    /// The settled items.
    pub(crate) fn results(&self) -> &ItemResults<K, V> {
        &self.results
    }

    /// Sends `request` about `pending` to `route`.
    pub(crate) fn start(&mut self, route: Route, request: R, pending: Vec<K>) {
        self.pending = pending;
        self.call = Some(Call::new(route, request));
    }

    /// Drives the call: `absorb` records a response's per-item results, `narrow` cuts the
    /// request down to the items to send again. Without a started call, the output is
    /// the settled items.
    pub(crate) fn poll(
        &mut self,
        cx: &mut OpContext<'_>,
        deadline: Deadline,
        mut absorb: impl FnMut(Batch<'_, K, V>, R::Response) -> Absorbed<K>,
        mut narrow: impl FnMut(&mut R, &[K]),
    ) -> Option<Result<ItemResults<K, V>, AdminError>> {
        loop {
            let Some(call) = self.call.as_mut() else {
                return Some(Ok(self.finish()));
            };
            let resp = match call.poll(cx, deadline)? {
                Ok(resp) => resp,
                // Nothing answered: a whole-call failure unless some items are settled.
                Err(e) if self.results.is_empty() => return Some(Err(e)),
                Err(e) => {
                    for key in &self.pending {
                        self.results.entry(key.clone()).or_insert(Err(e.clone()));
                    }
                    return Some(Ok(self.finish()));
                }
            };
            let mut cause = None;
            let batch = Batch {
                pending: &self.pending,
                results: &mut self.results,
                expired: deadline.passed(cx),
                cause: &mut cause,
            };
            let retry = match absorb(batch, resp) {
                Absorbed::Again => {
                    call.retry(cx);
                    continue;
                }
                Absorbed::Failed(e) => return Some(Err(e)),
                Absorbed::Retry(retry) => retry,
            };
            if !retry.is_empty() && !deadline.passed(cx) {
                let answered = std::mem::replace(&mut self.pending, retry);
                let gone = answered.iter().filter(|k| !self.pending.contains(k));
                fill_missing(&mut self.results, gone, self.what);
                narrow(call.request_mut(), &self.pending);
                match cause {
                    Some(cause) => call.retry_because(cx, cause),
                    None => call.retry(cx),
                }
                continue;
            }
            for key in retry {
                self.results
                    .insert(key, Err(deadline.timed_out(cx, cause.clone())));
            }
            return Some(Ok(self.finish()));
        }
    }

    /// Absorbs `resp` about `pending` as [`poll`](Self::poll) would, then finishes (as
    /// at the deadline): unit tests of an operation's absorbing.
    #[cfg(test)]
    pub(crate) fn absorb_then_finish(
        &mut self,
        pending: Vec<K>,
        resp: R::Response,
        absorb: impl FnOnce(Batch<'_, K, V>, R::Response) -> Absorbed<K>,
    ) -> (Absorbed<K>, ItemResults<K, V>) {
        self.pending = pending;
        let mut cause = None;
        let batch = Batch {
            pending: &self.pending,
            results: &mut self.results,
            expired: false,
            cause: &mut cause,
        };
        let absorbed = absorb(batch, resp);
        (absorbed, self.finish())
    }

    fn finish(&mut self) -> ItemResults<K, V> {
        fill_missing(&mut self.results, self.pending.iter(), self.what);
        self.pending.clear();
        std::mem::take(&mut self.results)
    }
}

/// Gives the unsettled `keys` a "missing from response" error.
fn fill_missing<'k, K: Ord + Clone + 'k, V>(
    results: &mut ItemResults<K, V>,
    keys: impl Iterator<Item = &'k K>,
    what: &str,
) {
    for key in keys {
        results
            .entry(key.clone())
            .or_insert_with(|| Err(AdminError::missing(what)));
    }
}

impl<K: Ord + Clone, V> Batch<'_, K, V> {
    /// Absorbs answers that come in the request's order (one per pending item): items
    /// with a retriable code are sent again before the deadline, the others settled with
    /// `result`. A count mismatch fails every pending item (`what`: the items, plural).
    pub(crate) fn in_order<A>(
        self,
        answers: Vec<A>,
        what: &str,
        code: impl Fn(&A) -> i16,
        result: impl Fn(A) -> Result<V, AdminError>,
    ) -> Absorbed<K> {
        if answers.len() != self.pending.len() {
            let e = AdminError::Protocol(format!(
                "{} results for {} {what}",
                answers.len(),
                self.pending.len()
            ));
            for key in self.pending {
                self.results.insert(key.clone(), Err(e.clone()));
            }
            return Absorbed::Retry(Vec::new());
        }
        let mut retry = Vec::new();
        for (key, answer) in self.pending.iter().zip(answers) {
            let c = code(&answer);
            if KafkaCode(c).is_retriable() && !self.expired {
                *self.cause = Some(Cause::code(c, None));
                retry.push(key.clone());
            } else {
                self.results.insert(key.clone(), result(answer));
            }
        }
        Absorbed::Retry(retry)
    }
}
