package controller

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/acl"
)

// aclRec is one CreateAcls or DeleteAcls request's changes, applied
// together as Kafka's AclControlManager writes its
// AccessControlEntryRecord and RemoveAccessControlEntryRecord batch
// (ControllerResult.atomicOf): the bindings to add and the exact bindings
// to remove (a DeleteAcls filter is resolved against the controller's
// image when the request is handled, as AclControlManager.deleteAcls
// resolves it to the ids it removes).
type aclRec struct {
	Create []acl.Binding `json:"create,omitempty"`
	Delete []acl.Binding `json:"delete,omitempty"`
}

// applyACLs replaces the image's list (a published image is never
// modified): deletions of bindings no longer there and creations of
// bindings already there are no-ops, so a record applied twice changes
// nothing more.
func applyACLs(img *Image, r aclRec) applyResult {
	out := slices.DeleteFunc(slices.Clone(img.ACLs), func(b acl.Binding) bool { return slices.Contains(r.Delete, b) })
	for _, b := range r.Create {
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	img.ACLs = out
	return applyResult{}
}

// handleCreateACLs is AclControlManager.createAcls: each creation is
// validated on its own (INVALID_REQUEST with Kafka's message); an ACL that
// already exists is a success that writes nothing; the rest is one record.
func (c *Controller) handleCreateACLs(r *kmsg.CreateACLsRequest) *kmsg.CreateACLsResponse {
	resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
	img := c.Image()
	var rec aclRec
	errs := make([]*acl.Error, len(r.Creations))
	for i, cr := range r.Creations {
		b := acl.Binding{ResourceType: cr.ResourceType, ResourceName: cr.ResourceName, PatternType: cr.ResourcePatternType,
			Principal: cr.Principal, Host: cr.Host, Operation: cr.Operation, Permission: cr.PermissionType}
		if errs[i] = b.Validate(); errs[i] == nil && !slices.Contains(img.ACLs, b) && !slices.Contains(rec.Create, b) {
			rec.Create = append(rec.Create, b)
		}
	}
	code := c.proposeACLs(rec)
	for i := range r.Creations {
		out := kmsg.NewCreateACLsResponseResult()
		if e := errs[i]; e != nil {
			out.ErrorCode, out.ErrorMessage = e.Code, kmsg.StringPtr(e.Msg)
		} else {
			out.ErrorCode = code
		}
		resp.Results = append(resp.Results, out)
	}
	return resp
}

// handleDeleteACLs is AclControlManager.deleteAcls: each filter is
// validated, then answered with the bindings it matches; every binding
// any filter matched is removed by one record.
func (c *Controller) handleDeleteACLs(r *kmsg.DeleteACLsRequest) *kmsg.DeleteACLsResponse {
	resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
	img := c.Image()
	var rec aclRec
	matched := make([][]acl.Binding, len(r.Filters))
	errs := make([]*acl.Error, len(r.Filters))
	for i, f := range r.Filters {
		filter := acl.Filter{ResourceType: f.ResourceType, ResourceName: f.ResourceName, PatternType: f.ResourcePatternType,
			Principal: f.Principal, Host: f.Host, Operation: f.Operation, Permission: f.PermissionType}
		if errs[i] = filter.Validate(); errs[i] != nil {
			continue
		}
		for _, b := range img.ACLs {
			if filter.Matches(b) {
				matched[i] = append(matched[i], b)
				if !slices.Contains(rec.Delete, b) {
					rec.Delete = append(rec.Delete, b)
				}
			}
		}
	}
	code := c.proposeACLs(rec)
	for i := range r.Filters {
		out := kmsg.NewDeleteACLsResponseResult()
		switch {
		case errs[i] != nil:
			out.ErrorCode, out.ErrorMessage = errs[i].Code, kmsg.StringPtr(errs[i].Msg)
		case code != 0:
			out.ErrorCode = code
		default:
			for _, b := range matched[i] {
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ResourceType, m.ResourceName, m.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
				m.Principal, m.Host, m.Operation, m.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
				out.MatchingACLs = append(out.MatchingACLs, m)
			}
		}
		resp.Results = append(resp.Results, out)
	}
	return resp
}

// proposeACLs writes rec (nothing when it is empty) and answers its code.
func (c *Controller) proposeACLs(rec aclRec) int16 {
	if len(rec.Create)+len(rec.Delete) == 0 {
		return 0
	}
	res, err := c.propose(record{Policy: c.cfg.policy(), ACLs: &rec})
	if err != nil {
		return errCode(err)
	}
	return res.Code
}

// aclNotController reports whether an ACL response says NOT_CONTROLLER.
func aclNotController(resp kmsg.Response) bool {
	nc := kerr.NotController.Code
	switch r := resp.(type) {
	case *kmsg.CreateACLsResponse:
		return slices.ContainsFunc(r.Results, func(x kmsg.CreateACLsResponseResult) bool { return x.ErrorCode == nc })
	case *kmsg.DeleteACLsResponse:
		return slices.ContainsFunc(r.Results, func(x kmsg.DeleteACLsResponseResult) bool { return x.ErrorCode == nc })
	}
	return false
}
