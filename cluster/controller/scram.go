package controller

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/sasl"
)

// scramRec is one AlterUserScramCredentials request's changes, applied
// together as Kafka's ScramControlManager applies its
// UserScramCredentialRecord and RemoveUserScramCredentialRecord batch
// (ControllerResult.atomicOf); each credential is the salted password's
// stored and server keys (KIP-554: the password never reaches a broker).
type scramRec struct {
	Upsert []scramUpsert `json:"upsert,omitempty"`
	Delete []scramKey    `json:"delete,omitempty"`
}

type scramKey struct {
	Name      string `json:"name"`
	Mechanism int8   `json:"mechanism"`
}

type scramUpsert struct {
	Name       string          `json:"name"`
	Credential sasl.Credential `json:"credential"`
}

func applyScram(img *Image, r scramRec) applyResult {
	users := make(map[string]map[int8]sasl.Credential, len(img.Scram))
	for u, m := range img.Scram {
		users[u] = maps.Clone(m)
	}
	for _, d := range r.Delete {
		delete(users[d.Name], d.Mechanism)
		if len(users[d.Name]) == 0 {
			delete(users, d.Name)
		}
	}
	for _, u := range r.Upsert {
		if users[u.Name] == nil {
			users[u.Name] = map[int8]sasl.Credential{}
		}
		users[u.Name][u.Credential.Mechanism] = u.Credential
	}
	img.Scram = users
	return applyResult{}
}

// handleAlterUserScram is ScramControlManager.alterCredentials: a user
// named twice in one request is DUPLICATE_RESOURCE, an empty name or too
// few (below the mechanism's 4096) or too many (above 16384) iterations
// UNACCEPTABLE_CREDENTIAL, an unknown mechanism UNSUPPORTED_SASL_MECHANISM,
// deleting a credential that does not exist RESOURCE_NOT_FOUND; the rest is
// one record.
func (c *Controller) handleAlterUserScram(r *kmsg.AlterUserSCRAMCredentialsRequest) *kmsg.AlterUserSCRAMCredentialsResponse {
	img := c.Image()
	seen := map[string]bool{}
	errs := map[string]*scramErr{}
	var rec scramRec
	dup := func(name string) bool {
		if errs[name] != nil {
			return true
		}
		if seen[name] {
			errs[name] = &scramErr{kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request"}
			return true
		}
		seen[name] = true
		return false
	}
	for _, d := range r.Deletions {
		if dup(d.Name) {
			continue
		}
		if e := checkScramName(d.Name, d.Mechanism); e != nil {
			errs[d.Name] = e
		} else if _, ok := img.Scram[d.Name][d.Mechanism]; !ok {
			errs[d.Name] = &scramErr{kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist"}
		} else {
			rec.Delete = append(rec.Delete, scramKey{d.Name, d.Mechanism})
		}
	}
	for _, u := range r.Upsertions {
		if dup(u.Name) {
			continue
		}
		if e := checkScramName(u.Name, u.Mechanism); e != nil {
			errs[u.Name] = e
		} else if u.Iterations < sasl.MinIterations {
			errs[u.Name] = &scramErr{kerr.UnacceptableCredential.Code, "Too few iterations"}
		} else if u.Iterations > sasl.MaxIterations {
			errs[u.Name] = &scramErr{kerr.UnacceptableCredential.Code, "Too many iterations"}
		} else {
			rec.Upsert = append(rec.Upsert, scramUpsert{u.Name, sasl.FromSaltedPassword(u.Mechanism, u.SaltedPassword, u.Salt, u.Iterations)})
		}
	}
	// An error found later for a user (a duplicate) drops its change.
	rec.Delete = slices.DeleteFunc(rec.Delete, func(k scramKey) bool { return errs[k.Name] != nil })
	rec.Upsert = slices.DeleteFunc(rec.Upsert, func(u scramUpsert) bool { return errs[u.Name] != nil })
	resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var code int16
	if len(rec.Delete)+len(rec.Upsert) > 0 {
		res, err := c.propose(record{Policy: c.cfg.policy(), Scram: &rec})
		code = res.Code
		if err != nil {
			code = errCode(err)
		}
	}
	add := func(user string, code int16, msg *string) {
		out := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		out.User, out.ErrorCode, out.ErrorMessage = user, code, msg
		resp.Results = append(resp.Results, out)
	}
	for _, d := range rec.Delete {
		add(d.Name, code, nil)
	}
	for _, u := range rec.Upsert {
		add(u.Name, code, nil)
	}
	for _, name := range slices.Sorted(maps.Keys(errs)) {
		add(name, errs[name].code, kmsg.StringPtr(errs[name].msg))
	}
	return resp
}

type scramErr struct {
	code int16
	msg  string
}

func checkScramName(name string, mech int8) *scramErr {
	if name == "" {
		return &scramErr{kerr.UnacceptableCredential.Code, "Username must not be empty"}
	}
	if sasl.MechanismName(mech) == "" {
		return &scramErr{kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism"}
	}
	return nil
}
