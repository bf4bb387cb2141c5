//! Requests with their type erased for the router, and typed handles for the caller.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use bytes::Bytes;

use crate::conn::OutboundRequest;
use crate::protocol::{read_response, ApiKey, DecodeError, EncodeError, Message, Request};

/// A decoded response whose type the caller knows from its [`RequestId`].
pub(crate) struct Decoded {
    pub(crate) value: Box<dyn Any + Send>,
    pub(crate) throttle_ms: Option<i32>,
    pub(crate) error_code: Option<i16>,
}

/// A request the router can encode, resend and decode without knowing its type.
pub(crate) trait ErasedRequest: Send + Sync {
    fn api_key(&self) -> ApiKey;
    fn write_frame(
        &self,
        buf: &mut Vec<u8>,
        version: i16,
        correlation_id: i32,
        client_id: Option<&str>,
    ) -> Result<(), EncodeError>;
    fn decode(&self, frame: Bytes, version: i16) -> Result<Decoded, DecodeError>;
    /// The (default) response given to a request that expects none (acks=0).
    fn empty_response(&self) -> Box<dyn Any + Send>;
}

impl<R> ErasedRequest for R
where
    R: Request + Send + Sync + 'static,
    R::Response: Send + 'static,
{
    fn api_key(&self) -> ApiKey {
        R::API_KEY
    }

    fn write_frame(
        &self,
        buf: &mut Vec<u8>,
        version: i16,
        correlation_id: i32,
        client_id: Option<&str>,
    ) -> Result<(), EncodeError> {
        OutboundRequest::write_frame(self, buf, version, correlation_id, client_id)
    }

    fn decode(&self, frame: Bytes, version: i16) -> Result<Decoded, DecodeError> {
        let (_, resp) = read_response::<R>(frame, version)?;
        Ok(Decoded {
            throttle_ms: resp.throttle_time_ms(version),
            error_code: resp.top_level_error_code(version),
            value: Box::new(resp),
        })
    }

    fn empty_response(&self) -> Box<dyn Any + Send> {
        Box::new(R::Response::default())
    }
}

/// A shared handle to an erased request, handed to a connection (cheap to resend).
#[derive(Clone)]
pub(crate) struct Shared(pub(crate) Arc<dyn ErasedRequest>);

impl OutboundRequest for Shared {
    fn api_key(&self) -> ApiKey {
        self.0.api_key()
    }

    fn write_frame(
        &self,
        buf: &mut Vec<u8>,
        version: i16,
        correlation_id: i32,
        client_id: Option<&str>,
    ) -> Result<(), EncodeError> {
        self.0.write_frame(buf, version, correlation_id, client_id)
    }
}

/// The handle of a request sent with [`super::Client::send`]; it remembers the request
/// type so [`super::Client::take_response`] returns the matching response type.
pub struct RequestId<R> {
    pub(crate) raw: u64,
    _type: PhantomData<fn() -> R>,
}

impl<R> RequestId<R> {
    pub(crate) fn new(raw: u64) -> Self {
        RequestId {
            raw,
            _type: PhantomData,
        }
    }
}

/// Names a finished application request in [`super::Event::Response`]; compare it with
/// the [`RequestId`] the send returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ResponseReady(pub(crate) u64);

impl ResponseReady {
    /// Whether this is the completion of `id`.
    pub fn is<R>(&self, id: RequestId<R>) -> bool {
        self.0 == id.raw
    }
}

impl<R> Clone for RequestId<R> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<R> Copy for RequestId<R> {}
impl<R> PartialEq for RequestId<R> {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}
impl<R> Eq for RequestId<R> {}
impl<R> std::fmt::Debug for RequestId<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RequestId({})", self.raw)
    }
}

/// FindCoordinator for a batch of keys of one type, written in the shape of whatever
/// version is negotiated: `CoordinatorKeys` from v4 (KIP-699), a single `Key` up to v3
/// (a multi-key lookup then fails to encode and the router splits it).
pub(crate) struct CoordinatorLookup {
    pub(crate) key_type: i8,
    pub(crate) keys: Vec<String>,
}

impl CoordinatorLookup {
    fn request(
        &self,
        version: i16,
    ) -> Result<crate::protocol::messages::find_coordinator::FindCoordinatorRequest, EncodeError>
    {
        let mut r = crate::protocol::messages::find_coordinator::FindCoordinatorRequest {
            key_type: self.key_type,
            ..Default::default()
        };
        if version >= 4 {
            r.coordinator_keys.clone_from(&self.keys);
        } else {
            match self.keys.as_slice() {
                [one] => r.key.clone_from(one),
                _ => {
                    return Err(EncodeError::FieldNotInVersion {
                        field: "CoordinatorKeys",
                        version,
                    })
                }
            }
        }
        Ok(r)
    }
}

impl ErasedRequest for CoordinatorLookup {
    fn api_key(&self) -> ApiKey {
        ApiKey::FindCoordinator
    }

    fn write_frame(
        &self,
        buf: &mut Vec<u8>,
        version: i16,
        correlation_id: i32,
        client_id: Option<&str>,
    ) -> Result<(), EncodeError> {
        OutboundRequest::write_frame(
            &self.request(version)?,
            buf,
            version,
            correlation_id,
            client_id,
        )
    }

    fn decode(&self, frame: Bytes, version: i16) -> Result<Decoded, DecodeError> {
        ErasedRequest::decode(
            &crate::protocol::messages::find_coordinator::FindCoordinatorRequest::default(),
            frame,
            version,
        )
    }

    fn empty_response(&self) -> Box<dyn Any + Send> {
        Box::new(crate::protocol::messages::find_coordinator::FindCoordinatorResponse::default())
    }
}
