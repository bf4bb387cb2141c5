//! Consumer group operations: list, describe, delete groups; list, alter, delete group
//! offsets; remove members.

mod describe;
mod fetch;
pub(crate) mod keyed;
mod list;
mod members;
mod offsets;

#[cfg(test)]
pub(crate) mod scripted;
#[cfg(test)]
mod tests;

pub use describe::{
    decode_assignment, ConsumerGroupDescription, DescribeConsumerGroups, MemberDescription,
};
pub use fetch::ListConsumerGroupOffsets;
pub use list::{ConsumerGroupListing, ConsumerGroupListings, ListConsumerGroups};
pub use members::{DeleteConsumerGroups, MemberToRemove, RemoveMembersFromConsumerGroup};
pub use offsets::{
    AlterConsumerGroupOffsets, DeleteConsumerGroupOffsets, GroupOffsets, OffsetAndMetadata,
    PartitionResults,
};

/// The named methods of this group (see [`admin_methods!`](crate::admin_methods)).
#[doc(hidden)]
#[macro_export]
macro_rules! __admin_methods_groups {
    ($mode:ident $run:ident) => {
        $crate::__admin_method_list!($mode $run
            /// Lists consumer groups on every broker; see [`ListConsumerGroups`](kafka_core::admin::ListConsumerGroups).
            fn list_consumer_groups() -> $crate::admin::ConsumerGroupListings
                = $crate::admin::ListConsumerGroups::new();
            /// Describes consumer groups (per-group results); see [`DescribeConsumerGroups`](kafka_core::admin::DescribeConsumerGroups).
            fn describe_consumer_groups(groups: impl IntoIterator<Item = impl Into<String>>)
                -> ::std::collections::BTreeMap<String, Result<$crate::admin::ConsumerGroupDescription, $crate::admin::AdminError>>
                = $crate::admin::DescribeConsumerGroups::new(groups);
            /// Deletes empty consumer groups (per-group results).
            fn delete_consumer_groups(groups: impl IntoIterator<Item = impl Into<String>>)
                -> ::std::collections::BTreeMap<String, Result<(), $crate::admin::AdminError>>
                = $crate::admin::DeleteConsumerGroups::new(groups);
            /// Lists a consumer group's committed offsets (per-partition results).
            fn list_consumer_group_offsets(group: impl Into<String>)
                -> ::std::collections::BTreeMap<String, Result<$crate::admin::GroupOffsets, $crate::admin::AdminError>>
                = $crate::admin::ListConsumerGroupOffsets::new(group);
            /// Sets committed offsets of an empty consumer group (per-partition results).
            fn alter_consumer_group_offsets(group: impl Into<String>,
                offsets: impl IntoIterator<Item = ($crate::admin::TopicPartition, $crate::admin::OffsetAndMetadata)>)
                -> ::std::collections::BTreeMap<$crate::admin::TopicPartition, Result<(), $crate::admin::AdminError>>
                = $crate::admin::AlterConsumerGroupOffsets::new(group, offsets);
            /// Deletes committed offsets of a consumer group (per-partition results).
            fn delete_consumer_group_offsets(group: impl Into<String>,
                partitions: impl IntoIterator<Item = $crate::admin::TopicPartition>)
                -> ::std::collections::BTreeMap<$crate::admin::TopicPartition, Result<(), $crate::admin::AdminError>>
                = $crate::admin::DeleteConsumerGroupOffsets::new(group, partitions);
            /// Removes members from a consumer group (per-member results).
            fn remove_members_from_consumer_group(group: impl Into<String>,
                members: impl IntoIterator<Item = $crate::admin::MemberToRemove>)
                -> ::std::collections::BTreeMap<$crate::admin::MemberToRemove, Result<(), $crate::admin::AdminError>>
                = $crate::admin::RemoveMembersFromConsumerGroup::new(group, members);
        );
    };
}
