package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every admin request a broker forwards has a NOT_CONTROLLER answer
// (ErrorResponse) that the client recognises and retries elsewhere
// (notController): AlterUserScramCredentials was answered but not retried.
func TestNotControllerAnswersAreRetried(t *testing.T) {
	ac := kmsg.NewPtrAlterConfigsRequest()
	ac.Resources = append(ac.Resources, kmsg.NewAlterConfigsRequestResource())
	iac := kmsg.NewPtrIncrementalAlterConfigsRequest()
	iac.Resources = append(iac.Resources, kmsg.NewIncrementalAlterConfigsRequestResource())
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.Topics = append(cp.Topics, kmsg.NewCreatePartitionsRequestTopic())
	scram := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	scram.Upsertions = append(scram.Upsertions, kmsg.AlterUserSCRAMCredentialsRequestUpsertion{Name: "alice"})
	ca := kmsg.NewPtrCreateACLsRequest()
	ca.Creations = append(ca.Creations, kmsg.NewCreateACLsRequestCreation())
	da := kmsg.NewPtrDeleteACLsRequest()
	da.Filters = append(da.Filters, kmsg.NewDeleteACLsRequestFilter())
	for _, req := range []kmsg.Request{ac, iac, cp, kmsg.NewPtrElectLeadersRequest(), kmsg.NewPtrAlterPartitionAssignmentsRequest(), scram, ca, da} {
		resp := ErrorResponse(req, kerr.NotController.Code, "")
		if resp == nil {
			t.Errorf("%T: no NOT_CONTROLLER answer", req)
			continue
		}
		if !notController(resp) {
			t.Errorf("%T: its NOT_CONTROLLER answer is not retried", resp)
		}
	}
}
