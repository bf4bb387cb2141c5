//! Group operations: list, describe, delete consumer groups; list, alter, delete group
//! offsets; remove members; list groups of every type (KIP-1043); describe classic groups; share groups
//! (KIP-932: describe, list/alter/delete offsets, delete); describe streams groups (KIP-1071).

mod classic;
mod describe;
mod fetch;
pub(crate) mod keyed;
mod list;
mod members;
mod offsets;
mod share;
mod share_offsets;
mod streams;

#[cfg(test)]
pub(crate) mod scripted;
#[cfg(test)]
mod tests;

pub use classic::{ClassicGroupDescription, DescribeClassicGroups};
pub use describe::{
    decode_assignment, ConsumerGroupDescription, DescribeConsumerGroups, MemberDescription,
};
pub use fetch::ListConsumerGroupOffsets;
pub use list::{
    ConsumerGroupListing, ConsumerGroupListings, GroupListing, GroupListings, ListConsumerGroups,
    ListGroups,
};
pub use members::{DeleteConsumerGroups, MemberToRemove, RemoveMembersFromConsumerGroup};
pub use offsets::{
    AlterConsumerGroupOffsets, DeleteConsumerGroupOffsets, GroupOffsets, OffsetAndMetadata,
    PartitionResults,
};
pub use share::{
    DeleteShareGroups, DescribeShareGroups, ShareGroupDescription, ShareMemberDescription,
};
pub use share_offsets::{
    AlterShareGroupOffsets, DeleteShareGroupOffsets, ListShareGroupOffsets, ShareGroupOffsets,
    SharePartitionOffsetInfo,
};
pub use streams::{
    DescribeStreamsGroups, StreamsGroupDescription, StreamsMemberAssignment,
    StreamsMemberDescription, StreamsSubtopologyDescription, StreamsTasks, StreamsTopicInfo,
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
            /// Describes classic groups of any protocol type (per-group results); see
            /// [`DescribeClassicGroups`](kafka_core::admin::DescribeClassicGroups).
            fn describe_classic_groups(groups: impl IntoIterator<Item = impl Into<String>>)
                -> ::std::collections::BTreeMap<String, Result<$crate::admin::ClassicGroupDescription, $crate::admin::AdminError>>
                = $crate::admin::DescribeClassicGroups::new(groups);
            /// Deletes empty consumer groups (per-group results).
            fn delete_consumer_groups(groups: impl IntoIterator<Item = impl Into<String>>)
                -> ::std::collections::BTreeMap<String, Result<(), $crate::admin::AdminError>>
                = $crate::admin::DeleteConsumerGroups::new(groups);
            /// Lists a consumer group's committed offsets (per-partition results).
            fn list_consumer_group_offsets(group: impl Into<String>)
                -> ::std::collections::BTreeMap<String, Result<$crate::admin::GroupOffsets, $crate::admin::AdminError>>
                = $crate::admin::ListConsumerGroupOffsets::new(group);
            /// Lists the committed offsets of several consumer groups, each with all its
            /// offsets (`None`) or the given partitions, batched per coordinator (KIP-709;
            /// per-group results); see [`ListConsumerGroupOffsets::groups`](kafka_core::admin::ListConsumerGroupOffsets::groups).
            fn list_consumer_groups_offsets(
                specs: impl IntoIterator<Item = (impl Into<String>, Option<Vec<$crate::admin::TopicPartition>>)>)
                -> ::std::collections::BTreeMap<String, Result<$crate::admin::GroupOffsets, $crate::admin::AdminError>>
                = $crate::admin::ListConsumerGroupOffsets::groups(specs);
            /// Lists groups of every type (classic, consumer, share, streams) on every
            /// broker (KIP-1043); see [`ListGroups`](kafka_core::admin::ListGroups).
            fn list_groups() -> $crate::admin::GroupListings
                = $crate::admin::ListGroups::new();
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
            /// Describes share groups (per-group results); see
            /// [`DescribeShareGroups`](kafka_core::admin::DescribeShareGroups).
            fn describe_share_groups(groups: impl IntoIterator<Item = impl Into<String>>)
                -> ::std::collections::BTreeMap<String, Result<$crate::admin::ShareGroupDescription, $crate::admin::AdminError>>
                = $crate::admin::DescribeShareGroups::new(groups);
            /// Lists a share group's start offsets (per-partition results); see
            /// [`ListShareGroupOffsets`](kafka_core::admin::ListShareGroupOffsets).
            fn list_share_group_offsets(group: impl Into<String>)
                -> ::std::collections::BTreeMap<String, Result<$crate::admin::ShareGroupOffsets, $crate::admin::AdminError>>
                = $crate::admin::ListShareGroupOffsets::new(group);
            /// Sets the start offsets of an empty share group (per-partition results).
            fn alter_share_group_offsets(group: impl Into<String>,
                offsets: impl IntoIterator<Item = ($crate::admin::TopicPartition, i64)>)
                -> ::std::collections::BTreeMap<$crate::admin::TopicPartition, Result<(), $crate::admin::AdminError>>
                = $crate::admin::AlterShareGroupOffsets::new(group, offsets);
            /// Deletes a share group's offsets of whole topics (per-topic results).
            fn delete_share_group_offsets(group: impl Into<String>,
                topics: impl IntoIterator<Item = impl Into<String>>)
                -> ::std::collections::BTreeMap<String, Result<(), $crate::admin::AdminError>>
                = $crate::admin::DeleteShareGroupOffsets::new(group, topics);
            /// Deletes empty share groups (per-group results).
            fn delete_share_groups(groups: impl IntoIterator<Item = impl Into<String>>)
                -> ::std::collections::BTreeMap<String, Result<(), $crate::admin::AdminError>>
                = $crate::admin::DeleteShareGroups::new(groups);
            /// Describes streams groups (per-group results); see
            /// [`DescribeStreamsGroups`](kafka_core::admin::DescribeStreamsGroups).
            fn describe_streams_groups(groups: impl IntoIterator<Item = impl Into<String>>)
                -> ::std::collections::BTreeMap<String, Result<$crate::admin::StreamsGroupDescription, $crate::admin::AdminError>>
                = $crate::admin::DescribeStreamsGroups::new(groups);
        );
    };
}
