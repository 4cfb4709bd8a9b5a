package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/acl"
)

// ACL records apply as AclControlManager's: a creation of an existing
// binding and a removal of an absent one change nothing, a removal takes
// only its exact binding, and the published list is never modified.
func TestApplyACLs(t *testing.T) {
	b := func(principal string, op kmsg.ACLOperation) acl.Binding {
		return acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t", PatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: principal, Host: "*", Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
	}
	aw, ar, bw := b("User:a", kmsg.ACLOperationWrite), b("User:a", kmsg.ACLOperationRead), b("User:b", kmsg.ACLOperationWrite)
	img := emptyImage()
	rec := record{ACLs: &aclRec{Create: []acl.Binding{aw, ar, aw}}}
	enc, err := rec.encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeRecord(enc)
	if err != nil || back.ACLs == nil {
		t.Fatalf("the record does not round-trip: %v %+v", err, back)
	}
	applyRecord(img, back, 1)
	if len(img.ACLs) != 2 {
		t.Fatalf("after creating a twice and r once: %v", img.ACLs)
	}
	before := img.clone()
	applyRecord(img, record{ACLs: &aclRec{Create: []acl.Binding{bw}, Delete: []acl.Binding{aw, b("User:c", kmsg.ACLOperationRead)}}}, 2)
	if len(img.ACLs) != 2 || img.ACLs[0] != ar || img.ACLs[1] != bw {
		t.Fatalf("after removing a's WRITE and adding b's: %v", img.ACLs)
	}
	if len(before.ACLs) != 2 || before.ACLs[0] != aw {
		t.Fatalf("the earlier image changed: %v", before.ACLs)
	}
}
