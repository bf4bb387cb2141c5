//! Replica operations: log dirs, replica log dir moves, leader elections, partition
//! reassignments, features.
//!
//! - [`DescribeLogDirs`] / [`AlterReplicaLogDirs`] / [`DescribeReplicaLogDirs`]: one
//!   request per broker (`Route::Broker`).
//! - [`ElectLeaders`], [`AlterPartitionReassignments`], [`ListPartitionReassignments`],
//!   [`UpdateFeatures`]: to the controller, retried on `NOT_CONTROLLER`.
//! - [`DescribeFeatures`]: an ApiVersions request to any broker.
//! - [`DescribeMetadataQuorum`], [`UnregisterBroker`], [`AddRaftVoter`],
//!   [`RemoveRaftVoter`]: to any broker, which forwards them to the active controller.

mod elections;
mod features;
mod log_dirs;
mod quorum;
mod reassignments;
mod replica_dirs;

pub use elections::{ElectLeaders, ElectionType};
pub use features::{
    DescribeFeatures, FeatureMetadata, FeatureUpdate, FinalizedVersionRange, SupportedVersionRange,
    UpdateFeatures, UpgradeType,
};
pub use log_dirs::{
    AlterReplicaLogDirs, BrokerLogDirs, DescribeLogDirs, LogDirDescription, ReplicaInfo,
    TopicPartitionReplica,
};
pub use quorum::{
    AddRaftVoter, DescribeMetadataQuorum, QuorumInfo, QuorumReplica, RaftVoterEndpoint,
    RemoveRaftVoter, UnregisterBroker,
};
pub use reassignments::{
    AlterPartitionReassignments, ListPartitionReassignments, PartitionReassignment,
};
pub use replica_dirs::{DescribeReplicaLogDirs, ReplicaLogDirInfo};

/// The named methods of this group (see [`admin_methods!`](crate::admin_methods)).
#[doc(hidden)]
#[macro_export]
macro_rules! __admin_methods_replicas {
    ($mode:ident $run:ident) => {
        $crate::__admin_method_list!($mode $run
            /// Describes the log dirs of each broker (per-broker results); see
            /// [`DescribeLogDirs`](kafka_core::admin::DescribeLogDirs).
            fn describe_log_dirs(brokers: impl IntoIterator<Item = i32>)
                -> ::std::collections::BTreeMap<i32, Result<
                    ::std::collections::BTreeMap<String, $crate::admin::LogDirDescription>,
                    $crate::admin::AdminError>>
                = $crate::admin::DescribeLogDirs::new(brokers);
            /// Describes where replicas live (per-replica results); see
            /// [`DescribeReplicaLogDirs`](kafka_core::admin::DescribeReplicaLogDirs).
            fn describe_replica_log_dirs(
                replicas: impl IntoIterator<Item = $crate::admin::TopicPartitionReplica>)
                -> ::std::collections::BTreeMap<$crate::admin::TopicPartitionReplica, Result<$crate::admin::ReplicaLogDirInfo, $crate::admin::AdminError>>
                = $crate::admin::DescribeReplicaLogDirs::new(replicas);
            /// Moves replicas to other log dirs of their brokers (per-replica results); see
            /// [`AlterReplicaLogDirs`](kafka_core::admin::AlterReplicaLogDirs).
            fn alter_replica_log_dirs(
                assignments: impl IntoIterator<Item = ($crate::admin::TopicPartitionReplica, String)>)
                -> ::std::collections::BTreeMap<$crate::admin::TopicPartitionReplica, Result<(), $crate::admin::AdminError>>
                = $crate::admin::AlterReplicaLogDirs::new(assignments);
            /// Elects leaders for the given partitions (per-partition results); see
            /// [`ElectLeaders`](kafka_core::admin::ElectLeaders).
            fn elect_leaders(
                election_type: $crate::admin::ElectionType,
                partitions: impl IntoIterator<Item = $crate::admin::TopicPartition>)
                -> ::std::collections::BTreeMap<$crate::admin::TopicPartition, Result<(), $crate::admin::AdminError>>
                = $crate::admin::ElectLeaders::new(election_type, partitions);
            /// Elects leaders for every partition that needs an election; see
            /// [`ElectLeaders::all`](kafka_core::admin::ElectLeaders::all).
            fn elect_all_leaders(election_type: $crate::admin::ElectionType)
                -> ::std::collections::BTreeMap<$crate::admin::TopicPartition, Result<(), $crate::admin::AdminError>>
                = $crate::admin::ElectLeaders::all(election_type);
            /// Starts (`Some(replicas)`) or cancels (`None`) partition reassignments
            /// (per-partition results); see
            /// [`AlterPartitionReassignments`](kafka_core::admin::AlterPartitionReassignments).
            fn alter_partition_reassignments(
                reassignments: impl IntoIterator<Item = ($crate::admin::TopicPartition, Option<Vec<i32>>)>)
                -> ::std::collections::BTreeMap<$crate::admin::TopicPartition, Result<(), $crate::admin::AdminError>>
                = $crate::admin::AlterPartitionReassignments::new(reassignments);
            /// Lists every ongoing partition reassignment; see
            /// [`ListPartitionReassignments`](kafka_core::admin::ListPartitionReassignments).
            fn list_partition_reassignments()
                -> ::std::collections::BTreeMap<$crate::admin::TopicPartition, $crate::admin::PartitionReassignment>
                = $crate::admin::ListPartitionReassignments::all();
            /// Describes the cluster's finalized and supported features; see
            /// [`DescribeFeatures`](kafka_core::admin::DescribeFeatures).
            fn describe_features() -> $crate::admin::FeatureMetadata
                = $crate::admin::DescribeFeatures::new();
            /// Upgrades or downgrades features (per-feature results); see
            /// [`UpdateFeatures`](kafka_core::admin::UpdateFeatures).
            fn update_features(
                updates: impl IntoIterator<Item = (impl Into<String>, $crate::admin::FeatureUpdate)>)
                -> ::std::collections::BTreeMap<String, Result<(), $crate::admin::AdminError>>
                = $crate::admin::UpdateFeatures::new(updates);
            /// Describes the KRaft metadata quorum (leader, voters, observers); see
            /// [`DescribeMetadataQuorum`](kafka_core::admin::DescribeMetadataQuorum).
            fn describe_metadata_quorum() -> $crate::admin::QuorumInfo
                = $crate::admin::DescribeMetadataQuorum::new();
            /// Removes a departed broker's registration; see
            /// [`UnregisterBroker`](kafka_core::admin::UnregisterBroker).
            fn unregister_broker(broker_id: i32) -> ()
                = $crate::admin::UnregisterBroker::new(broker_id);
            /// Adds a controller to the KRaft voter set; see
            /// [`AddRaftVoter`](kafka_core::admin::AddRaftVoter).
            fn add_raft_voter(voter_id: i32, directory_id: $crate::protocol::Uuid,
                endpoints: impl IntoIterator<Item = $crate::admin::RaftVoterEndpoint>) -> ()
                = $crate::admin::AddRaftVoter::new(voter_id, directory_id, endpoints);
            /// Removes a controller from the KRaft voter set; see
            /// [`RemoveRaftVoter`](kafka_core::admin::RemoveRaftVoter).
            fn remove_raft_voter(voter_id: i32, directory_id: $crate::protocol::Uuid) -> ()
                = $crate::admin::RemoveRaftVoter::new(voter_id, directory_id);
        );
    };
}
