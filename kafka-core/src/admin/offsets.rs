//! Offset operations: list offsets (earliest, latest, by timestamp, max timestamp), delete records.

/// The named methods of this group (see [`admin_methods!`](crate::admin_methods)).
#[doc(hidden)]
#[macro_export]
macro_rules! __admin_methods_offsets {
    ($mode:ident $run:ident) => {
        $crate::__admin_method_list!($mode $run);
    };
}
