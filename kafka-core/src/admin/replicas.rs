//! Replica operations: log dirs, replica log dir moves, leader elections, partition reassignments, features.

/// The named methods of this group (see [`admin_methods!`](crate::admin_methods)).
#[doc(hidden)]
#[macro_export]
macro_rules! __admin_methods_replicas {
    ($mode:ident $run:ident) => {
        $crate::__admin_method_list!($mode $run);
    };
}
