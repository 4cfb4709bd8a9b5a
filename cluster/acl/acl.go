// Package acl is the broker's authorizer: ACL bindings as the metadata
// log holds them (Kafka's AccessControlEntryRecord), the filters that
// DescribeAcls and DeleteAcls match them with (AclBindingFilter), and the
// decision of Kafka's StandardAuthorizer (org.apache.kafka.metadata.
// authorizer.StandardAuthorizerData.authorize):
//
//   - a super user (super.users) is allowed everything;
//   - the ACLs that apply to a resource are the LITERAL ones with its exact
//     name, the LITERAL wildcard "*", and the PREFIXED ones whose name
//     starts the resource's; of those, the ones whose principal is the
//     caller's or "User:*" and whose host is the caller's or "*";
//   - a matching DENY wins over any ALLOW; DENY matches only its own
//     operation (or ALL);
//   - an ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE, one of
//     ALTER_CONFIGS also DESCRIBE_CONFIGS (IMPLIES_DESCRIBE,
//     IMPLIES_DESCRIBE_CONFIGS); ALL allows everything;
//   - no matching ALLOW: denied, unless the resource has no ACL at all
//     (for any principal), when allow.everyone.if.no.acl.found decides
//     (Kafka's default false).
package acl

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Wildcard is the LITERAL resource name, principal and host that match
// any (ResourcePattern.WILDCARD_RESOURCE, "User:*", "*").
const (
	Wildcard          = "*"
	WildcardPrincipal = "User:*"
	// ClusterName is the one name of the CLUSTER resource.
	ClusterName = "kafka-cluster"
	// Anonymous is the principal of a connection that did not
	// authenticate (KafkaPrincipal.ANONYMOUS).
	Anonymous = "User:ANONYMOUS"
)

// Binding is one ACL: a resource pattern and an access control entry
// (Kafka's AclBinding, StandardAcl).
type Binding struct {
	ResourceType kmsg.ACLResourceType        `json:"rt"`
	ResourceName string                      `json:"rn"`
	PatternType  kmsg.ACLResourcePatternType `json:"pt"`
	Principal    string                      `json:"principal"`
	Host         string                      `json:"host"`
	Operation    kmsg.ACLOperation           `json:"op"`
	Permission   kmsg.ACLPermissionType      `json:"perm"`
}

func (b Binding) String() string {
	return fmt.Sprintf("(%s %s %s: %s %s %s from %s)", b.ResourceType, b.PatternType, b.ResourceName,
		b.Principal, b.Permission, b.Operation, b.Host)
}

// Validate is AclControlManager.validateNewAcl with AclApis' checks: a
// concrete resource type, pattern LITERAL or PREFIXED, a name (the
// CLUSTER's is kafka-cluster), a concrete operation and permission, a
// principal Type:Name and a host. It answers INVALID_REQUEST with Kafka's
// message, or nil.
func (b Binding) Validate() *Error {
	switch {
	case b.ResourceType <= kmsg.ACLResourceTypeAny || b.ResourceType > kmsg.ACLResourceTypeUser:
		return invalid("Invalid resourceType %s", b.ResourceType)
	case b.PatternType != kmsg.ACLResourcePatternTypeLiteral && b.PatternType != kmsg.ACLResourcePatternTypePrefixed:
		return invalid("Invalid patternType %s", b.PatternType)
	case b.Operation <= kmsg.ACLOperationAny || b.Operation > kmsg.ACLOperationDescribeTokens:
		return invalid("Invalid operation %s", b.Operation)
	case b.Permission != kmsg.ACLPermissionTypeAllow && b.Permission != kmsg.ACLPermissionTypeDeny:
		return invalid("Invalid permissionType %s", b.Permission)
	case b.ResourceName == "":
		return invalid("Resource name should not be empty")
	case b.ResourceType == kmsg.ACLResourceTypeCluster && b.ResourceName != ClusterName:
		return invalid("The only valid name for the CLUSTER resource is %s", ClusterName)
	case b.Host == "":
		return invalid("Invalid host: empty")
	}
	if typ, name, ok := strings.Cut(b.Principal, ":"); !ok || typ == "" || name == "" {
		return invalid("Could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", b.Principal)
	}
	return nil
}

// Error is a Kafka error code and its message.
type Error struct {
	Code int16
	Msg  string
}

func invalid(format string, args ...any) *Error {
	return &Error{kerr.InvalidRequest.Code, fmt.Sprintf(format, args...)}
}

// Filter is an AclBindingFilter: nil names, principal and host match any;
// ANY types, operation and permission match any; pattern MATCH matches
// every pattern that would apply to the named resource.
type Filter struct {
	ResourceType kmsg.ACLResourceType
	ResourceName *string
	PatternType  kmsg.ACLResourcePatternType
	Principal    *string
	Host         *string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// Validate refuses a filter with an UNKNOWN field, as
// AclControlManager.validateFilter and AclBindingFilter.findIndefiniteField
// do (INVALID_REQUEST).
func (f Filter) Validate() *Error {
	switch {
	case f.ResourceType == kmsg.ACLResourceTypeUnknown || f.ResourceType > kmsg.ACLResourceTypeUser:
		return invalid("Unknown patternFilter.")
	case f.PatternType == kmsg.ACLResourcePatternTypeUnknown || f.PatternType > kmsg.ACLResourcePatternTypePrefixed:
		return invalid("Unknown patternFilter.")
	case f.Operation == kmsg.ACLOperationUnknown || f.Operation > kmsg.ACLOperationDescribeTokens:
		return invalid("Unknown entryFilter.")
	case f.Permission == kmsg.ACLPermissionTypeUnknown || f.Permission > kmsg.ACLPermissionTypeAllow:
		return invalid("Unknown entryFilter.")
	}
	return nil
}

// Matches is AclBindingFilter.matches: ResourcePatternFilter.matches and
// AccessControlEntryFilter.matches.
func (f Filter) Matches(b Binding) bool {
	return f.matchesPattern(b) &&
		(f.Principal == nil || *f.Principal == b.Principal) &&
		(f.Host == nil || *f.Host == b.Host) &&
		(f.Operation == kmsg.ACLOperationAny || f.Operation == b.Operation) &&
		(f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == b.Permission)
}

func (f Filter) matchesPattern(b Binding) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	anyOrMatch := f.PatternType == kmsg.ACLResourcePatternTypeAny || f.PatternType == kmsg.ACLResourcePatternTypeMatch
	if !anyOrMatch && f.PatternType != b.PatternType {
		return false
	}
	if f.ResourceName == nil {
		return true
	}
	name := *f.ResourceName
	if f.PatternType == kmsg.ACLResourcePatternTypeAny || f.PatternType == b.PatternType {
		return name == b.ResourceName
	}
	switch b.PatternType { // MATCH
	case kmsg.ACLResourcePatternTypeLiteral:
		return name == b.ResourceName || b.ResourceName == Wildcard
	case kmsg.ACLResourcePatternTypePrefixed:
		return strings.HasPrefix(name, b.ResourceName)
	}
	return false
}

// Settings are the authorizer's broker configs, validated once where the
// broker's configuration enters (cluster.Config.Validate).
type Settings struct {
	// SuperUsers is super.users ("User:alice"); the inter-broker user is
	// always one.
	SuperUsers []string
	// AllowEveryoneIfNoACL is allow.everyone.if.no.acl.found.
	AllowEveryoneIfNoACL bool
}

// Action is one authorization question: may principal, from host, do op
// on the resource?
type Action struct {
	Principal    string
	Host         string
	Operation    kmsg.ACLOperation
	ResourceType kmsg.ACLResourceType
	ResourceName string
}

// Authorize is StandardAuthorizerData.authorize over acls.
func (s *Settings) Authorize(acls []Binding, a Action) bool {
	if slices.Contains(s.SuperUsers, a.Principal) {
		return true
	}
	var allowed, found bool
	for _, b := range acls {
		if !appliesTo(b, a.ResourceType, a.ResourceName) {
			continue
		}
		found = true
		switch result(b, a) {
		case kmsg.ACLPermissionTypeDeny:
			return false
		case kmsg.ACLPermissionTypeAllow:
			allowed = true
		}
	}
	if allowed {
		return true
	}
	return !found && s.AllowEveryoneIfNoACL
}

// appliesTo reports whether b's pattern covers the resource (checkSection's
// scan: the exact literal, the literal wildcard, the prefixes).
func appliesTo(b Binding, rt kmsg.ACLResourceType, name string) bool {
	if b.ResourceType != rt {
		return false
	}
	switch b.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral:
		return b.ResourceName == name || b.ResourceName == Wildcard
	case kmsg.ACLResourcePatternTypePrefixed:
		return strings.HasPrefix(name, b.ResourceName)
	}
	return false
}

// result is StandardAuthorizerData.findResult: the binding's permission
// when its principal, host and operation match the action, else UNKNOWN.
func result(b Binding, a Action) kmsg.ACLPermissionType {
	if b.Principal != a.Principal && b.Principal != WildcardPrincipal {
		return kmsg.ACLPermissionTypeUnknown
	}
	if b.Host != Wildcard && b.Host != a.Host {
		return kmsg.ACLPermissionTypeUnknown
	}
	if b.Operation != kmsg.ACLOperationAll && !opMatches(b, a.Operation) {
		return kmsg.ACLPermissionTypeUnknown
	}
	return b.Permission
}

func opMatches(b Binding, op kmsg.ACLOperation) bool {
	if b.Permission != kmsg.ACLPermissionTypeAllow {
		return b.Operation == op // a DENY of READ does not deny DESCRIBE
	}
	switch op {
	case kmsg.ACLOperationDescribe:
		switch b.Operation {
		case kmsg.ACLOperationDescribe, kmsg.ACLOperationRead, kmsg.ACLOperationWrite,
			kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
		return false
	case kmsg.ACLOperationDescribeConfigs:
		return b.Operation == kmsg.ACLOperationDescribeConfigs || b.Operation == kmsg.ACLOperationAlterConfigs
	}
	return b.Operation == op
}

// AuthorizeByResourceType is Kafka's Authorizer.authorizeByResourceType
// (KIP-679, the default method StandardAuthorizer keeps): may the
// principal do op on some resource of the type? First a resource named
// "hardcode" is authorized as usual (super users, allow.everyone.if.no.
// acl.found); then yes if some ALLOW binding of the principal (or
// User:*) and host for op (or ALL) is not cancelled by a DENY: the
// LITERAL wildcard DENY cancels all, a LITERAL DENY its own name, a
// PREFIXED DENY every name it starts. Implied operations do not count
// here, as in Kafka.
func (s *Settings) AuthorizeByResourceType(acls []Binding, principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if s.Authorize(acls, Action{Principal: principal, Host: host, Operation: op, ResourceType: rt, ResourceName: "hardcode"}) {
		return true
	}
	var allows, denies []Binding
	for _, b := range acls {
		if b.ResourceType != rt || (b.Principal != principal && b.Principal != WildcardPrincipal) ||
			(b.Host != Wildcard && b.Host != host) || (b.Operation != op && b.Operation != kmsg.ACLOperationAll) {
			continue
		}
		if b.Permission == kmsg.ACLPermissionTypeDeny {
			if b.PatternType == kmsg.ACLResourcePatternTypeLiteral && b.ResourceName == Wildcard {
				return false
			}
			denies = append(denies, b)
		} else if b.Permission == kmsg.ACLPermissionTypeAllow {
			allows = append(allows, b)
		}
	}
	for _, a := range allows {
		if !slices.ContainsFunc(denies, func(d Binding) bool { return cancels(d, a) }) {
			return true
		}
	}
	return false
}

// cancels reports whether DENY d covers every name ALLOW a does.
func cancels(d, a Binding) bool {
	if d.PatternType == kmsg.ACLResourcePatternTypePrefixed {
		return strings.HasPrefix(a.ResourceName, d.ResourceName)
	}
	return a.PatternType == kmsg.ACLResourcePatternTypeLiteral && a.ResourceName == d.ResourceName
}

// ErrorResponse answers every item of a CreateAcls or DeleteAcls request
// with code and msg (a refused ALTER, SECURITY_DISABLED, NOT_CONTROLLER, a
// single broker's INVALID_REQUEST); nil for another request.
func ErrorResponse(req kmsg.Request, code int16, msg *string) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.CreateACLsRequest:
		resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
		for range r.Creations {
			out := kmsg.NewCreateACLsResponseResult()
			out.ErrorCode, out.ErrorMessage = code, msg
			resp.Results = append(resp.Results, out)
		}
		return resp
	case *kmsg.DeleteACLsRequest:
		resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
		for range r.Filters {
			out := kmsg.NewDeleteACLsResponseResult()
			out.ErrorCode, out.ErrorMessage = code, msg
			resp.Results = append(resp.Results, out)
		}
		return resp
	}
	return nil
}
