package wire

// DeleteAcls: v1-3 (Kafka 4's range, KIP-896).
//
// Behaviour: as CreateAcls (30_create_acls.go): CLUSTER ALTER here, then
// the active controller, which validates each filter
// (AclControlManager.deleteAcls), answers the bindings each one matches in
// its image and removes all of them by one record of the metadata log. A
// broker stops honouring a removed binding once it has applied that
// record.

func init() { register(31, 1, 3, handleACLChange) }
