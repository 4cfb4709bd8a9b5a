package wire

// DescribeUserScramCredentials: v0.
//
// Behaviour: answered from this broker's metadata image (the
// UserScramCredentialRecords of the metadata log), as Kafka's
// ControllerApis/KafkaApis do: no users named (null or empty) describes
// every user with credentials; a named user without any is
// RESOURCE_NOT_FOUND, a user named twice DUPLICATE_RESOURCE (Kafka's
// messages). Only mechanisms and iterations are described, never salts or
// keys. The brokers' bootstrap credentials (their own user, from their
// configuration) are not records and are not described.

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(50, 0, 0, handleDescribeUserScram) }

func handleDescribeUserScram(s *Server, _ context.Context, _ header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	creds := s.b.Image().Scram
	var names []string
	for _, u := range req.Users {
		names = append(names, u.Name)
	}
	all := len(names) == 0
	if all {
		names = slices.Sorted(maps.Keys(creds))
	}
	count := map[string]int{}
	for _, n := range names {
		count[n]++
	}
	done := map[string]bool{}
	for _, n := range names {
		if done[n] {
			continue
		}
		done[n] = true
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = n
		switch byMech := creds[n]; {
		case count[n] > 1:
			r.ErrorCode = kerr.DuplicateResource.Code
			r.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + n)
		case len(byMech) == 0:
			r.ErrorCode = kerr.ResourceNotFound.Code
			r.ErrorMessage = kmsg.StringPtr("Attempt to describe a user credential that does not exist: " + n)
		default:
			for _, m := range slices.Sorted(maps.Keys(byMech)) {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = m, byMech[m].Iterations
				r.CredentialInfos = append(r.CredentialInfos, ci)
			}
		}
		resp.Results = append(resp.Results, r)
	}
	return now(resp)
}
