// Package share is KIP-932's share groups (Kafka 4.2's queues) for the
// embedded cluster, in the three roles Kafka splits them into:
//
//   - the share-group coordinator (Groups, groups.go): membership by
//     ShareGroupHeartbeat and the server-side assignment, on the broker that
//     leads the group's __consumer_offsets partition, as Kafka's
//     GroupMetadataManager runs share groups beside consumer groups;
//   - the share-partition leader (Manager, manager.go; SharePartition,
//     partition.go): on the leader of each topic partition, the in-flight
//     records of each group on it, their acquisition locks
//     (share.record.lock.duration.ms), delivery counts
//     (group.share.delivery.count.limit) and acknowledgements (accept,
//     release, reject), served by ShareFetch and ShareAcknowledge through
//     share sessions, as Kafka's SharePartitionManager and SharePartition;
//   - the share coordinator (StateCoordinator, state.go): the durable state
//     of each share partition (start offset, in-flight batches with their
//     state and delivery counts) in the replicated __share_group_state
//     topic, as Kafka's ShareCoordinatorShard, written by the partition
//     leader before an acknowledgement is answered (WriteShareGroupState)
//     and read back by a new leader after a failover (ReadShareGroupState).
//
// The roles talk over the Kafka protocol (the cluster's glue sends the
// state RPCs to the share coordinator's broker), so a leader and its
// state's coordinator fail independently, as in Kafka.
//
// Where this differs from Kafka (each said again where it is done):
// membership is kept in memory, not in __consumer_offsets (after the group
// coordinator moves, members get UNKNOWN_MEMBER_ID and join again, their
// records' locks lapsing as a crashed consumer's would); a share partition is
// initialized from share.auto.offset.reset at its first fetch, not at its
// first assignment; a state write carries the share partition's whole
// in-flight state rather than the changed batches.
package share
