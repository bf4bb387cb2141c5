//! Security operations: ACLs, SCRAM credentials, client quotas, delegation tokens.

/// The named methods of this group (see [`admin_methods!`](crate::admin_methods)).
#[doc(hidden)]
#[macro_export]
macro_rules! __admin_methods_security {
    ($mode:ident $run:ident) => {
        $crate::__admin_method_list!($mode $run);
    };
}
