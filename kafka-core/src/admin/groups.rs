//! Consumer group operations: list, describe, delete groups; list, alter, delete group offsets; remove members.

/// The named methods of this group (see [`admin_methods!`](crate::admin_methods)).
#[doc(hidden)]
#[macro_export]
macro_rules! __admin_methods_groups {
    ($mode:ident $run:ident) => {
        $crate::__admin_method_list!($mode $run);
    };
}
