//! FenceProducers (KIP-730): InitProducerId for each transactional id on its
//! coordinator, without a producer id or epoch, which bumps the epoch and so fences
//! every live producer of that id (and aborts its open transaction).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::admin::groups::keyed::{coordinator_step, Keyed, Step};
use crate::admin::{AdminError, Call, OpContext, Operation, Timeout};
use crate::cluster::Route;
use crate::protocol::messages::init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
use crate::protocol::KafkaCode;

/// A producer id and the epoch the fence left it at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerIdAndEpoch {
    /// Producer id.
    pub producer_id: i64,
    /// The new epoch: older producers of the id are fenced.
    pub producer_epoch: i16,
}

/// Fences the producers of transactional ids (Java's `fenceProducers`): InitProducerId
/// to each id's transaction coordinator with producer id and epoch -1, as a new producer
/// would send, so the coordinator bumps the epoch; the old producers' next calls fail
/// with PRODUCER_FENCED (or INVALID_PRODUCER_EPOCH) and their open transaction is
/// aborted. Per-id results. A loading, moved or busy coordinator
/// (COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
/// CONCURRENT_TRANSACTIONS while it aborts) is retried until the deadline. The
/// transaction timeout sent is the operation's timeout if set, else `request.timeout.ms`.
#[derive(Debug)]
pub struct FenceProducers {
    ids: Vec<String>,
    limit: Option<Duration>,
    calls: Option<Keyed<String, InitProducerIdRequest, ProducerIdAndEpoch>>,
    timeout: Timeout,
}

impl FenceProducers {
    /// Fences the producers of `transactional_ids`.
    pub fn new(transactional_ids: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut ids: Vec<String> = transactional_ids.into_iter().map(Into::into).collect();
        ids.sort();
        ids.dedup();
        FenceProducers {
            ids,
            limit: None,
            calls: None,
            timeout: Timeout::default(),
        }
    }

    /// Overrides `default.api.timeout.ms` (and the transaction timeout sent).
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.limit = Some(limit);
        self.timeout.set(limit);
        self
    }
}

fn fenced(
    id: &str,
    resp: InitProducerIdResponse,
    cx: &mut OpContext<'_>,
) -> Step<ProducerIdAndEpoch> {
    if let Some(step) = coordinator_step(cx, id, resp.error_code, None) {
        return step;
    }
    let code = KafkaCode(resp.error_code);
    if code == KafkaCode::CONCURRENT_TRANSACTIONS {
        // The coordinator is still aborting the fenced producer's transaction.
        return Step::Retry(AdminError::Kafka {
            code,
            message: None,
        });
    }
    if let Err(e) = AdminError::check(resp.error_code, None) {
        return Step::Done(Err(e));
    }
    Step::Done(Ok(ProducerIdAndEpoch {
        producer_id: resp.producer_id,
        producer_epoch: resp.producer_epoch,
    }))
}

impl Operation for FenceProducers {
    type Output = Result<BTreeMap<String, Result<ProducerIdAndEpoch, AdminError>>, AdminError>;

    fn poll(&mut self, cx: &mut OpContext<'_>) -> Option<Self::Output> {
        let deadline = self.timeout.deadline(cx);
        let txn_timeout = self
            .limit
            .unwrap_or(cx.config().common().request_timeout)
            .as_millis();
        let txn_timeout_ms = i32::try_from(txn_timeout).unwrap_or(i32::MAX);
        let ids = &self.ids;
        let calls = self.calls.get_or_insert_with(|| {
            let mut keyed = Keyed::new();
            for id in ids {
                if id.is_empty() {
                    keyed.settle(
                        id.clone(),
                        Err(AdminError::Invalid("empty transactional id".into())),
                    );
                    continue;
                }
                let request = InitProducerIdRequest {
                    transactional_id: Some(id.clone()),
                    transaction_timeout_ms: txn_timeout_ms,
                    producer_id: -1,
                    producer_epoch: -1,
                    ..Default::default()
                };
                keyed.insert(
                    id.clone(),
                    Call::new(Route::TxnCoordinator(id.clone()), request),
                );
            }
            keyed
        });
        let done = calls.poll(cx, deadline, |id, _, outcome, cx| match outcome {
            Ok(resp) => fenced(id, resp, cx),
            Err(e) => Step::Done(Err(e)),
        });
        done.then(|| Ok(calls.take_results()))
    }
}
