//! The named admin methods, written once and expanded into every adapter's `impl` block
//! by [`admin_methods!`](crate::admin_methods). Each group of operations keeps its list
//! next to its operations (`__admin_methods_<group>!`).

/// Expands to the named admin methods (`create_topics`, `describe_cluster`, ...) inside
/// an adapter's `impl` block, each a one-liner over the adapter's generic runner:
/// `admin_methods!(async run)` for `async fn run<O, T>(&self, op: O) -> Result<T, AdminError>`
/// or `admin_methods!(blocking run)` for the blocking equivalent, where
/// `O: Operation<Output = Result<T, AdminError>>`. Every method builds the operation with
/// default options; use `run` with the operation's builder for the others.
#[macro_export]
macro_rules! admin_methods {
    ($mode:ident $run:ident) => {
        $crate::__admin_methods_topics!($mode $run);
        $crate::__admin_methods_configs!($mode $run);
        $crate::__admin_methods_offsets!($mode $run);
        $crate::__admin_methods_groups!($mode $run);
        $crate::__admin_methods_txns!($mode $run);
        $crate::__admin_methods_security!($mode $run);
        $crate::__admin_methods_replicas!($mode $run);
    };
}

/// Emits one method per `/// doc fn name(args) -> value = constructor;` entry (used by
/// the per-group lists), `async` or `blocking`.
#[doc(hidden)]
#[macro_export]
macro_rules! __admin_method_list {
    (async $run:ident
     $( $(#[doc = $doc:literal])* fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty = $ctor:expr; )*) => {
        $(
            $(#[doc = $doc])*
            pub async fn $name(&self, $($arg: $ty),*) -> ::core::result::Result<$ret, $crate::admin::AdminError> {
                self.$run($ctor).await
            }
        )*
    };
    (blocking $run:ident
     $( $(#[doc = $doc:literal])* fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty = $ctor:expr; )*) => {
        $(
            $(#[doc = $doc])*
            pub fn $name(&self, $($arg: $ty),*) -> ::core::result::Result<$ret, $crate::admin::AdminError> {
                self.$run($ctor)
            }
        )*
    };
}
