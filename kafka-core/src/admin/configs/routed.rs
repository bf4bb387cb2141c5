//! Config requests split by route: a broker's own resources go to that broker, the
//! rest together to any broker; per-resource results from every request.

use std::collections::BTreeMap;

use super::types::ConfigResource;
use crate::admin::{AdminError, Call, Deadline, OpContext};
use crate::cluster::Route;
use crate::protocol::Request;

/// A config API: its request for some resources and the per-resource answers.
pub(crate) trait ConfigApi {
    /// The per-resource argument (nothing, a config map, a list of changes).
    type Arg;
    /// The request.
    type Request: Request<Response = Self::Response>
        + Clone
        + Send
        + Sync
        + std::fmt::Debug
        + 'static;
    /// Its response.
    type Response: Send + 'static;
    /// The per-resource result.
    type Value;

    /// The request for `resources`, all going to one route.
    fn request(&self, resources: &[(&ConfigResource, &Self::Arg)]) -> Self::Request;

    /// The per-resource answers of a response.
    fn answers(resp: Self::Response) -> Vec<(ConfigResource, Result<Self::Value, AdminError>)>;
}

/// One request and the resources it carries.
type Sent<R> = (Vec<ConfigResource>, Call<R>);

/// The requests of one config operation, one per route.
pub(crate) struct Routed<A: ConfigApi> {
    items: BTreeMap<ConfigResource, A::Arg>,
    calls: Option<Vec<Sent<A::Request>>>,
    results: BTreeMap<ConfigResource, Result<A::Value, AdminError>>,
    answered: bool,
    failure: Option<AdminError>,
}

impl<A: ConfigApi> std::fmt::Debug for Routed<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Routed")
            .field("resources", &self.items.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Per-resource results, or the error of the whole call when no request was answered.
pub(crate) type Outcome<V> = Result<BTreeMap<ConfigResource, Result<V, AdminError>>, AdminError>;

impl<A: ConfigApi> Routed<A> {
    pub(crate) fn new(items: impl IntoIterator<Item = (ConfigResource, A::Arg)>) -> Self {
        Routed {
            items: items.into_iter().collect(),
            calls: None,
            results: BTreeMap::new(),
            answered: false,
            failure: None,
        }
    }

    /// Sends the requests on first use, collects the answers; `Some` when all are in.
    pub(crate) fn poll(
        &mut self,
        api: &A,
        cx: &mut OpContext<'_>,
        deadline: Deadline,
    ) -> Option<Outcome<A::Value>> {
        if self.calls.is_none() {
            self.calls = Some(self.start(api));
        }
        let calls = self.calls.as_mut()?;
        let mut i = 0;
        while i < calls.len() {
            let Some(outcome) = calls[i].1.poll(cx, deadline) else {
                i += 1;
                continue;
            };
            let (sent, _) = calls.swap_remove(i);
            match outcome {
                Ok(resp) => {
                    self.answered = true;
                    for (resource, result) in A::answers(resp) {
                        if sent.contains(&resource) {
                            self.results.insert(resource, result);
                        }
                    }
                    for resource in sent {
                        self.results
                            .entry(resource)
                            .or_insert_with(|| Err(AdminError::missing("resource")));
                    }
                }
                Err(e) => {
                    for resource in sent {
                        self.results.insert(resource, Err(e.clone()));
                    }
                    self.failure.get_or_insert(e);
                }
            }
        }
        if !calls.is_empty() {
            return None;
        }
        match self.failure.take() {
            Some(e) if !self.answered => Some(Err(e)),
            _ => Some(Ok(std::mem::take(&mut self.results))),
        }
    }

    /// Groups the resources by route, one request per group; unroutable ones fail alone.
    fn start(&mut self, api: &A) -> Vec<Sent<A::Request>> {
        let mut groups: BTreeMap<Option<i32>, Vec<(&ConfigResource, &A::Arg)>> = BTreeMap::new();
        for (resource, arg) in &self.items {
            match resource.route() {
                Ok(Route::Broker(id)) => groups.entry(Some(id)).or_default().push((resource, arg)),
                Ok(_) => groups.entry(None).or_default().push((resource, arg)),
                Err(e) => {
                    self.results.insert(resource.clone(), Err(e));
                }
            }
        }
        groups
            .into_iter()
            .map(|(broker, items)| {
                let route = broker.map_or(Route::Any, Route::Broker);
                let request = api.request(&items);
                let names = items.into_iter().map(|(r, _)| r.clone()).collect();
                (names, Call::new(route, request))
            })
            .collect()
    }
}
