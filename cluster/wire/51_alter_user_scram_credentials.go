package wire

// AlterUserScramCredentials: v0.
//
// Behaviour: with the authorizer, checked first (authz_admin.go); then
// forwarded to the active controller (KIP-590), which checks each user as
// Kafka's ScramControlManager.alterCredentials does and writes the changes
// as one record of the metadata log (cluster/controller, scram.go); every
// broker authenticates with the result once it has applied it. A single
// broker (no quorum) answers INVALID_REQUEST naming the fix.

func init() { register(51, 0, 0, handleAlterUserScramCredentials) }
