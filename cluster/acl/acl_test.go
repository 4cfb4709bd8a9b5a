package acl

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	topic   = kmsg.ACLResourceTypeTopic
	group   = kmsg.ACLResourceTypeGroup
	literal = kmsg.ACLResourcePatternTypeLiteral
	prefix  = kmsg.ACLResourcePatternTypePrefixed
	allow   = kmsg.ACLPermissionTypeAllow
	deny    = kmsg.ACLPermissionTypeDeny
	read    = kmsg.ACLOperationRead
	write   = kmsg.ACLOperationWrite
	descr   = kmsg.ACLOperationDescribe
)

func bind(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: Wildcard, Operation: op, Permission: perm}
}

// TestAuthorizeStandardSemantics walks StandardAuthorizerData's rules one
// by one; each case fails if one rule is dropped.
func TestAuthorizeStandardSemantics(t *testing.T) {
	alice := "User:alice"
	cases := []struct {
		name    string
		acls    []Binding
		s       Settings
		act     Action
		allowed bool
	}{
		{"no acl, default deny", nil, Settings{}, Action{alice, "h", write, topic, "t"}, false},
		{"no acl, allow everyone", nil, Settings{AllowEveryoneIfNoACL: true}, Action{alice, "h", write, topic, "t"}, true},
		{"allow everyone only when the resource has no acl at all",
			[]Binding{bind(topic, "t", literal, "User:bob", write, allow)}, Settings{AllowEveryoneIfNoACL: true}, Action{alice, "h", write, topic, "t"}, false},
		{"literal allow", []Binding{bind(topic, "t", literal, alice, write, allow)}, Settings{}, Action{alice, "h", write, topic, "t"}, true},
		{"literal is exact", []Binding{bind(topic, "t", literal, alice, write, allow)}, Settings{}, Action{alice, "h", write, topic, "t2"}, false},
		{"other operation", []Binding{bind(topic, "t", literal, alice, write, allow)}, Settings{}, Action{alice, "h", read, topic, "t"}, false},
		{"other resource type", []Binding{bind(group, "t", literal, alice, read, allow)}, Settings{}, Action{alice, "h", read, topic, "t"}, false},
		{"prefixed", []Binding{bind(topic, "orders-", prefix, alice, write, allow)}, Settings{}, Action{alice, "h", write, topic, "orders-eu"}, true},
		{"prefixed needs the prefix", []Binding{bind(topic, "orders-", prefix, alice, write, allow)}, Settings{}, Action{alice, "h", write, topic, "order"}, false},
		{"wildcard resource", []Binding{bind(topic, "*", literal, alice, write, allow)}, Settings{}, Action{alice, "h", write, topic, "x"}, true},
		{"wildcard principal", []Binding{bind(topic, "t", literal, WildcardPrincipal, write, allow)}, Settings{}, Action{alice, "h", write, topic, "t"}, true},
		{"deny over allow", []Binding{bind(topic, "t", literal, alice, write, allow), bind(topic, "*", literal, alice, write, deny)}, Settings{}, Action{alice, "h", write, topic, "t"}, false},
		{"deny all", []Binding{bind(topic, "t", literal, alice, write, allow), bind(topic, "t", prefix, WildcardPrincipal, kmsg.ACLOperationAll, deny)}, Settings{}, Action{alice, "h", write, topic, "t"}, false},
		{"allow all", []Binding{bind(topic, "t", literal, alice, kmsg.ACLOperationAll, allow)}, Settings{}, Action{alice, "h", kmsg.ACLOperationDelete, topic, "t"}, true},
		{"write implies describe", []Binding{bind(topic, "t", literal, alice, write, allow)}, Settings{}, Action{alice, "h", descr, topic, "t"}, true},
		{"create does not imply describe", []Binding{bind(topic, "t", literal, alice, kmsg.ACLOperationCreate, allow)}, Settings{}, Action{alice, "h", descr, topic, "t"}, false},
		{"deny read does not deny describe", []Binding{bind(topic, "t", literal, alice, write, allow), bind(topic, "t", literal, alice, read, deny)}, Settings{}, Action{alice, "h", descr, topic, "t"}, true},
		{"alter configs implies describe configs", []Binding{bind(topic, "t", literal, alice, kmsg.ACLOperationAlterConfigs, allow)}, Settings{}, Action{alice, "h", kmsg.ACLOperationDescribeConfigs, topic, "t"}, true},
		{"describe does not imply read", []Binding{bind(topic, "t", literal, alice, descr, allow)}, Settings{}, Action{alice, "h", read, topic, "t"}, false},
		{"host must match", []Binding{{topic, "t", literal, alice, "10.0.0.1", write, allow}}, Settings{}, Action{alice, "10.0.0.2", write, topic, "t"}, false},
		{"host matches", []Binding{{topic, "t", literal, alice, "10.0.0.1", write, allow}}, Settings{}, Action{alice, "10.0.0.1", write, topic, "t"}, true},
		{"super user over deny", []Binding{bind(topic, "t", literal, alice, write, deny)}, Settings{SuperUsers: []string{alice}}, Action{alice, "h", write, topic, "t"}, true},
	}
	for _, c := range cases {
		if got := c.s.Authorize(c.acls, c.act); got != c.allowed {
			t.Errorf("%s: allowed = %v, want %v", c.name, got, c.allowed)
		}
	}
}

func TestFilterMatches(t *testing.T) {
	name := "orders-eu"
	b := []Binding{
		bind(topic, "orders-eu", literal, "User:a", write, allow),
		bind(topic, "*", literal, "User:a", write, allow),
		bind(topic, "orders-", prefix, "User:b", read, allow),
		bind(topic, "other", literal, "User:a", write, allow),
	}
	count := func(f Filter) int {
		n := 0
		for _, x := range b {
			if f.Matches(x) {
				n++
			}
		}
		return n
	}
	anyF := Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	if n := count(anyF); n != 4 {
		t.Errorf("ANY filter matched %d, want 4", n)
	}
	m := anyF
	m.ResourceName, m.PatternType = &name, kmsg.ACLResourcePatternTypeMatch
	if n := count(m); n != 3 {
		t.Errorf("MATCH %s matched %d, want 3 (literal, wildcard, prefix)", name, n)
	}
	l := anyF
	l.ResourceName, l.PatternType = &name, literal
	if n := count(l); n != 1 {
		t.Errorf("LITERAL %s matched %d, want 1", name, n)
	}
	p := anyF
	p.Principal, p.Operation = kmsg.StringPtr("User:a"), write
	if n := count(p); n != 3 {
		t.Errorf("principal+op filter matched %d, want 3", n)
	}
	if e := (Filter{}).Validate(); e == nil || e.Code != kerr.InvalidRequest.Code {
		t.Errorf("UNKNOWN filter: %v, want INVALID_REQUEST", e)
	}
	if e := anyF.Validate(); e != nil {
		t.Errorf("ANY filter refused: %v", e)
	}
}

func TestBindingValidate(t *testing.T) {
	ok := bind(topic, "t", literal, "User:a", write, allow)
	if e := ok.Validate(); e != nil {
		t.Fatalf("valid binding refused: %v", e)
	}
	bad := map[string]func(*Binding){
		"match pattern": func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypeMatch },
		"any operation": func(b *Binding) { b.Operation = kmsg.ACLOperationAny },
		"any perm":      func(b *Binding) { b.Permission = kmsg.ACLPermissionTypeAny },
		"empty name":    func(b *Binding) { b.ResourceName = "" },
		"cluster name":  func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeCluster },
		"principal":     func(b *Binding) { b.Principal = "alice" },
		"any resource":  func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeAny },
	}
	for name, f := range bad {
		b := ok
		f(&b)
		if e := b.Validate(); e == nil || e.Code != kerr.InvalidRequest.Code {
			t.Errorf("%s: %v, want INVALID_REQUEST", name, e)
		}
	}
}

func TestAuthorizeByResourceType(t *testing.T) {
	a := "User:a"
	cases := []struct {
		name string
		acls []Binding
		s    Settings
		want bool
	}{
		{"nothing", nil, Settings{}, false},
		{"allow everyone, no acl", nil, Settings{AllowEveryoneIfNoACL: true}, true},
		{"super user", nil, Settings{SuperUsers: []string{a}}, true},
		{"one literal allow", []Binding{bind(topic, "t", literal, a, write, allow)}, Settings{}, true},
		{"other principal", []Binding{bind(topic, "t", literal, "User:b", write, allow)}, Settings{}, false},
		{"implied ops do not count", []Binding{bind(topic, "t", literal, a, kmsg.ACLOperationAll, allow), bind(topic, "t", literal, a, write, deny)}, Settings{}, false},
		{"literal deny cancels", []Binding{bind(topic, "t", literal, a, write, allow), bind(topic, "t", literal, a, write, deny)}, Settings{}, false},
		{"prefix deny cancels", []Binding{bind(topic, "ab", literal, a, write, allow), bind(topic, "a", prefix, a, write, deny)}, Settings{}, false},
		{"wildcard deny cancels all", []Binding{bind(topic, "t", literal, a, write, allow), bind(topic, "*", literal, a, write, deny)}, Settings{}, false},
		{"a deny elsewhere leaves it", []Binding{bind(topic, "t", literal, a, write, allow), bind(topic, "u", literal, a, write, deny)}, Settings{}, true},
		{"other type", []Binding{bind(group, "t", literal, a, write, allow)}, Settings{}, false},
	}
	for _, c := range cases {
		if got := c.s.AuthorizeByResourceType(c.acls, a, "h", write, topic); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
