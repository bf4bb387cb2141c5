//! Shared machinery of the group and transaction operations: one [`Call`] per item (a
//! group, a transactional id, a partition), each with its own retries, and fan-out to
//! every broker of the cluster (brokers from the client's own metadata).

use std::collections::BTreeMap;

use crate::admin::{AdminError, Call, Deadline, OpContext};
use crate::cluster::Route;
use crate::conn::RequestError;
use crate::protocol::{KafkaCode, Request};

/// What to do with an item after its call answered.
#[derive(Debug)]
pub(crate) enum Step<T> {
    /// The item is settled.
    Done(Result<T, AdminError>),
    /// Send again after the retry backoff; `Err` with this error once the deadline passed.
    Retry(AdminError),
    /// Send again now (the handler changed the request or its version).
    Resend,
}

/// Whether a group-coordinator error code means "ask (the new) coordinator again".
pub(crate) fn coordinator_retriable(code: KafkaCode) -> bool {
    code == KafkaCode::NOT_COORDINATOR
        || code == KafkaCode::COORDINATOR_NOT_AVAILABLE
        || code == KafkaCode::COORDINATOR_LOAD_IN_PROGRESS
}

/// Handles a coordinator error of `key` (forgetting a moved coordinator): `Some(Retry)`
/// for the retriable ones, `None` for any other code.
pub(crate) fn coordinator_step<T>(
    cx: &mut OpContext<'_>,
    key: &str,
    code: i16,
    message: Option<&str>,
) -> Option<Step<T>> {
    let code = KafkaCode(code);
    if !coordinator_retriable(code) {
        return None;
    }
    if code != KafkaCode::COORDINATOR_LOAD_IN_PROGRESS {
        cx.invalidate_coordinator(key);
    }
    Some(Step::Retry(AdminError::Kafka {
        code,
        message: message.map(str::to_owned),
    }))
}

/// One call per key, each retried on its own; results gathered by key.
#[derive(Debug)]
pub(crate) struct Keyed<K, R: Request, T> {
    calls: BTreeMap<K, Call<R>>,
    results: BTreeMap<K, Result<T, AdminError>>,
}

impl<K, R, T> Keyed<K, R, T>
where
    K: Ord + Clone,
    R: Request + Clone + Send + Sync + 'static,
    R::Response: Send + 'static,
{
    /// No calls yet.
    pub(crate) fn new() -> Self {
        Keyed {
            calls: BTreeMap::new(),
            results: BTreeMap::new(),
        }
    }

    /// Adds the call of `key`.
    pub(crate) fn insert(&mut self, key: K, call: Call<R>) {
        self.calls.insert(key, call);
    }

    /// Settles `key` without a call.
    pub(crate) fn settle(&mut self, key: K, result: Result<T, AdminError>) {
        self.calls.remove(&key);
        self.results.insert(key, result);
    }

    /// Polls every call; `handle` decides about each answer (a response or the call's
    /// failure). True once every key is settled.
    pub(crate) fn poll(
        &mut self,
        cx: &mut OpContext<'_>,
        deadline: Deadline,
        mut handle: impl FnMut(
            &K,
            &mut Call<R>,
            Result<R::Response, AdminError>,
            &mut OpContext<'_>,
        ) -> Step<T>,
    ) -> bool {
        let keys: Vec<K> = self.calls.keys().cloned().collect();
        for key in keys {
            let Some(call) = self.calls.get_mut(&key) else {
                continue;
            };
            // Bounded: a handler that keeps asking to resend is cut off.
            for _ in 0..8 {
                let Some(outcome) = call.poll(cx, deadline) else {
                    break;
                };
                match handle(&key, call, outcome, cx) {
                    Step::Done(result) => {
                        self.calls.remove(&key);
                        self.results.insert(key.clone(), result);
                        break;
                    }
                    Step::Retry(e) if deadline.passed(cx) => {
                        self.calls.remove(&key);
                        self.results.insert(key.clone(), Err(e));
                        break;
                    }
                    Step::Retry(e) => {
                        match e.as_cause() {
                            Some(cause) => call.retry_because(cx, cause),
                            None => call.retry(cx),
                        }
                        break;
                    }
                    Step::Resend => {}
                }
            }
        }
        self.calls.is_empty()
    }

    /// Whether every key is settled.
    pub(crate) fn is_done(&self) -> bool {
        self.calls.is_empty()
    }

    /// The results so far (all of them once [`Keyed::is_done`]).
    pub(crate) fn take_results(&mut self) -> BTreeMap<K, Result<T, AdminError>> {
        std::mem::take(&mut self.results)
    }
}

/// Outcomes by broker node id.
pub(crate) type PerBroker<T> = BTreeMap<i32, Result<T, AdminError>>;

/// The same request to every broker of the cluster, with per-broker outcomes: one
/// broker's failure says nothing about the others.
///
/// The brokers come from the client's own metadata (one metadata path, as in the
/// per-leader fan-out): a client that has metadata keeps it no older than
/// `metadata.max.age.ms`, so its broker list is used as it is and nothing is sent to
/// learn it. A client without metadata yet is asked for a refresh, and the fan-out starts
/// once an answer newer than the ask arrived.
#[derive(Debug)]
pub(crate) struct AllBrokers<R: Request, T> {
    request: R,
    /// The metadata generation when this fan-out asked the client for a refresh.
    asked: Option<u64>,
    brokers: Option<Keyed<i32, R, T>>,
}

impl<R, T> AllBrokers<R, T>
where
    R: Request + Clone + Send + Sync + 'static,
    R::Response: Send + 'static,
{
    /// `request` to every broker.
    pub(crate) fn new(request: R) -> Self {
        AllBrokers {
            request,
            asked: None,
            brokers: None,
        }
    }

    /// The request, to set options before the first poll.
    pub(crate) fn request_mut(&mut self) -> &mut R {
        &mut self.request
    }

    /// `Some` once every broker answered or failed: per-broker results; `Err` if the
    /// brokers could not be listed.
    pub(crate) fn poll(
        &mut self,
        cx: &mut OpContext<'_>,
        deadline: Deadline,
        handle: impl FnMut(
            &i32,
            &mut Call<R>,
            Result<R::Response, AdminError>,
            &mut OpContext<'_>,
        ) -> Step<T>,
    ) -> Option<Result<PerBroker<T>, AdminError>> {
        if self.brokers.is_none() {
            let listed = match self.list_brokers(cx, deadline)? {
                Ok(listed) => listed,
                Err(e) => return Some(Err(e)),
            };
            // Route::Broker waits in the client until its metadata knows the broker.
            let mut keyed = Keyed::new();
            for n in listed {
                keyed.insert(n, Call::new(Route::Broker(n), self.request.clone()));
            }
            self.brokers = Some(keyed);
        }
        let brokers = self.brokers.as_mut()?;
        if brokers.poll(cx, deadline, handle) {
            Some(Ok(brokers.take_results()))
        } else {
            None
        }
    }

    /// The brokers in the client's metadata; `None` while waiting for its first answer.
    fn list_brokers(
        &mut self,
        cx: &mut OpContext<'_>,
        deadline: Deadline,
    ) -> Option<Result<Vec<i32>, AdminError>> {
        let metadata = cx.metadata();
        let answered = match self.asked {
            None => metadata.generation() > 0 && !metadata.brokers().is_empty(),
            Some(asked) => metadata.generation() > asked,
        };
        if answered {
            if metadata.brokers().is_empty() {
                return Some(Err(AdminError::Protocol(
                    "metadata lists no brokers".into(),
                )));
            }
            return Some(Ok(metadata.brokers().keys().copied().collect()));
        }
        if let Some(e) = deadline.fatal(cx) {
            return Some(Err(e));
        }
        if deadline.passed(cx) {
            return Some(Err(deadline.timed_out(cx, None)));
        }
        if self.asked.is_none() {
            self.asked = Some(metadata.generation());
            cx.request_metadata(std::iter::empty());
        }
        // Polled again on the client's MetadataUpdated notice, or at the deadline.
        cx.wake_at(deadline.at);
        None
    }
}

/// Every broker's list merged by key (a later broker's entry wins), and the brokers
/// whose answer is missing, with why.
pub(crate) type Listing<K, T> = (BTreeMap<K, T>, BTreeMap<i32, AdminError>);

impl<R, T> AllBrokers<R, Vec<T>>
where
    R: Request + Clone + Send + Sync + 'static,
    R::Response: Send + 'static,
{
    /// Polls a listing: `absorb` turns one broker's answer into its list, `key` names an
    /// entry. A broker that cannot encode the request (a filter it does not support)
    /// fails with [`AdminError::Invalid`].
    pub(crate) fn poll_listing<K: Ord>(
        &mut self,
        cx: &mut OpContext<'_>,
        deadline: Deadline,
        mut absorb: impl FnMut(i32, R::Response) -> Step<Vec<T>>,
        key: impl Fn(&T) -> K,
    ) -> Option<Result<Listing<K, T>, AdminError>> {
        let per_broker = match self.poll(cx, deadline, |broker, _, outcome, _| match outcome {
            Ok(resp) => absorb(*broker, resp),
            Err(AdminError::Request(RequestError::Encode(e))) => Step::Done(Err(
                AdminError::Invalid(format!("filter not supported by this broker: {e}")),
            )),
            Err(e) => Step::Done(Err(e)),
        })? {
            Ok(m) => m,
            Err(e) => return Some(Err(e)),
        };
        let (mut entries, mut errors) = (BTreeMap::new(), BTreeMap::new());
        for (broker, result) in per_broker {
            match result {
                Ok(list) => entries.extend(list.into_iter().map(|t| (key(&t), t))),
                Err(e) => {
                    errors.insert(broker, e);
                }
            }
        }
        Some(Ok((entries, errors)))
    }
}
