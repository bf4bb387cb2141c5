//! Security operations: ACLs, SCRAM credentials, client quotas, delegation tokens.
//!
//! Like the Java Admin client, every one of them goes to any broker (the least loaded
//! one); in KRaft mode the broker forwards the changes to the controller.

mod acl_types;
mod acls;
mod quotas;
mod scram;
mod tokens;

#[cfg(test)]
mod tests;

pub use acl_types::*;
pub use acls::*;
pub use quotas::*;
pub use scram::*;
pub use tokens::*;

use super::{AdminError, Call, OpContext, Timeout};
use crate::cluster::Route;
use crate::protocol::{KafkaCode, Request};

/// A response that carries one top-level error code (and maybe a message).
pub(crate) trait TopLevelError {
    /// The error code and the broker's message.
    fn top_level_error(&self) -> (i16, Option<&str>);
}

/// One request to any broker whose answer has a single error code: resent after
/// connection failures and retriable codes until the deadline.
#[derive(Debug)]
pub(crate) struct Single<R: Request> {
    call: Call<R>,
    timeout: Timeout,
}

impl<R> Single<R>
where
    R: Request + Clone + Send + Sync + 'static,
    R::Response: TopLevelError + Send + 'static,
{
    /// `request` to any broker.
    pub(crate) fn new(request: R) -> Self {
        Single {
            call: Call::new(Route::Any, request),
            timeout: Timeout::default(),
        }
    }

    /// Overrides `default.api.timeout.ms`.
    pub(crate) fn set_timeout(&mut self, limit: std::time::Duration) {
        self.timeout.set(limit);
    }

    /// The request, to fill in before the first poll.
    pub(crate) fn request_mut(&mut self) -> &mut R {
        self.call.request_mut()
    }

    /// The response once it arrived without an error code, or the error.
    pub(crate) fn poll(
        &mut self,
        cx: &mut OpContext<'_>,
    ) -> Option<Result<R::Response, AdminError>> {
        let deadline = self.timeout.deadline(cx);
        let retriable = |r: &R::Response| {
            let (code, message) = r.top_level_error();
            KafkaCode(code)
                .is_retriable()
                .then(|| crate::client::Cause::code(code, message))
        };
        let resp = match self.call.poll_retrying(cx, deadline, retriable)? {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let (code, message) = resp.top_level_error();
        Some(AdminError::check(code, message).map(|()| resp))
    }
}

/// The named methods of this group (see [`admin_methods!`](crate::admin_methods)).
#[doc(hidden)]
#[macro_export]
macro_rules! __admin_methods_security {
    ($mode:ident $run:ident) => {
        $crate::__admin_method_list!($mode $run
            /// Creates ACL bindings (per-binding results); see
            /// [`CreateAcls`](kafka_core::admin::CreateAcls).
            fn create_acls(bindings: impl IntoIterator<Item = $crate::admin::AclBinding>)
                -> ::std::collections::BTreeMap<$crate::admin::AclBinding, Result<(), $crate::admin::AdminError>>
                = $crate::admin::CreateAcls::new(bindings);
            /// Lists the ACL bindings that match a filter.
            fn describe_acls(filter: $crate::admin::AclBindingFilter)
                -> Vec<$crate::admin::AclBinding>
                = $crate::admin::DescribeAcls::new(filter);
            /// Deletes the ACL bindings that match each filter (per-filter results).
            fn delete_acls(filters: impl IntoIterator<Item = $crate::admin::AclBindingFilter>)
                -> ::std::collections::BTreeMap<
                    $crate::admin::AclBindingFilter,
                    Result<Vec<$crate::admin::DeletedAcl>, $crate::admin::AdminError>,
                >
                = $crate::admin::DeleteAcls::new(filters);
            /// Describes the SCRAM credentials of the named users (an empty list describes
            /// nobody; see `describe_all_user_scram_credentials`).
            fn describe_user_scram_credentials(users: impl IntoIterator<Item = impl Into<String>>)
                -> ::std::collections::BTreeMap<String, Result<Vec<$crate::admin::ScramCredentialInfo>, $crate::admin::AdminError>>
                = $crate::admin::DescribeUserScramCredentials::new(users);
            /// Describes the SCRAM credentials of every user that has any.
            fn describe_all_user_scram_credentials()
                -> ::std::collections::BTreeMap<String, Result<Vec<$crate::admin::ScramCredentialInfo>, $crate::admin::AdminError>>
                = $crate::admin::DescribeUserScramCredentials::all();
            /// Upserts and deletes SCRAM credentials (per-user results).
            fn alter_user_scram_credentials(
                alterations: impl IntoIterator<Item = $crate::admin::ScramCredentialAlteration>
            )
                -> ::std::collections::BTreeMap<String, Result<(), $crate::admin::AdminError>>
                = $crate::admin::AlterUserScramCredentials::new(alterations);
            /// Describes the client quotas that match a filter.
            fn describe_client_quotas(filter: $crate::admin::ClientQuotaFilter)
                -> ::std::collections::BTreeMap<$crate::admin::ClientQuotaEntity, ::std::collections::BTreeMap<String, f64>>
                = $crate::admin::DescribeClientQuotas::new(filter);
            /// Sets and removes client quotas (per-entity results).
            fn alter_client_quotas(
                alterations: impl IntoIterator<Item = $crate::admin::ClientQuotaAlteration>
            )
                -> ::std::collections::BTreeMap<$crate::admin::ClientQuotaEntity, Result<(), $crate::admin::AdminError>>
                = $crate::admin::AlterClientQuotas::new(alterations);
            /// Creates a delegation token owned by the caller (needs a SASL or TLS connection).
            fn create_delegation_token() -> $crate::admin::DelegationToken
                = $crate::admin::CreateDelegationToken::new();
            /// Renews a delegation token by the broker's default period; returns the new
            /// expiry (ms since the epoch).
            fn renew_delegation_token(hmac: $crate::secret::Secret) -> i64
                = $crate::admin::RenewDelegationToken::new(hmac);
            /// Expires a delegation token now; returns its expiry (ms since the epoch).
            fn expire_delegation_token(hmac: $crate::secret::Secret) -> i64
                = $crate::admin::ExpireDelegationToken::new(hmac);
            /// Lists the delegation tokens the caller may see.
            fn describe_delegation_token() -> Vec<$crate::admin::DelegationToken>
                = $crate::admin::DescribeDelegationToken::new();
        );
    };
}
