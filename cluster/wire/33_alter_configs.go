package wire

// AlterConfigs: v0-2.
//
// Behaviour: with the authorizer, checked first (authz_admin.go); then
// forwarded to the active controller (KIP-590), which validates against
// the replicated metadata and applies the change as one record of the
// metadata log (cluster/controller, handle_admin.go and records_admin.go);
// every broker learns the result from the log.

func init() { register(33, 0, 2, handleAlterConfigs) }
