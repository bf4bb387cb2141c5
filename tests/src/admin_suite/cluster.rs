//! Suite: cluster operations.

/// Tests of this group (see [`admin_suite!`](crate::admin_suite)).
#[doc(hidden)]
#[macro_export]
macro_rules! __suite_cluster {
    ($d:ty) => {
        $crate::__suite_tests!($d;);
    };
}
