//! Config operations: describe, alter and incremental-alter configs of topics and brokers.

/// The named methods of this group (see [`admin_methods!`](crate::admin_methods)).
#[doc(hidden)]
#[macro_export]
macro_rules! __admin_methods_configs {
    ($mode:ident $run:ident) => {
        $crate::__admin_method_list!($mode $run);
    };
}
