//! The named admin methods, written once and expanded into every adapter's `impl` block
//! by [`admin_methods!`](crate::admin_methods). Each group of operations keeps its list
//! next to its operations (`__admin_methods_<group>!`).

/// Expands to the named admin methods (`create_topics`, `describe_cluster`, ...) inside
/// an adapter's `impl` block, each a one-liner over the adapter's generic runner, where
/// `O: Operation<Output = Result<T, AdminError>>`:
///
/// - `admin_methods!(async run)` for `fn run<O, T>(&self, op: O) -> F` that starts the
///   operation and returns `F: Future<Output = Result<T, AdminError>> + Send + 'static`
///   (such as `kafka_driver::front::Call`). Each method builds its operation and starts
///   it before returning, so the future holds neither `&self` nor the arguments: it can
///   be spawned, and outlive the admin handle. Dropping it cancels the operation.
/// - `admin_methods!(blocking run)` for `fn run<O, T>(&self, op: O) -> Result<T, AdminError>`.
///
/// Every method builds the operation with default options; use `run` with the
/// operation's builder for the others.
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
            pub fn $name(&self, $($arg: $ty),*)
                -> impl ::core::future::Future<Output = ::core::result::Result<$ret, $crate::admin::AdminError>>
                    + ::core::marker::Send + 'static
            {
                self.$run($ctor)
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
