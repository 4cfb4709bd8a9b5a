package checker

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gregor/history"
)

// Authorization (issue 31): the authz workload's acl, authz-send and
// authz-poll lines (DESIGN.md sections 4 and 5).
//
// What the history proves, and only that: an ok revocation of a
// principal's WRITE (READ) on the topic means its record is in the
// metadata log, so from its acknowledgement plus the bound the workload
// recorded (BoundMs) no broker may honour the binding; a later grant may
// take effect from its invoke on. So a window opens at the revocation's
// ack plus the bound and closes at the next grant's invoke, and a send
// (poll) of that principal invoked inside it and answered ok before it
// closes was appended (read) though unauthorized. A grant whose outcome is
// unknown may be applied at any later time (a request held in a frozen
// socket): it closes the window and no later one of that principal and
// operation is checked.
const (
	// UnauthorizedWrite: a principal's record appended after its WRITE was
	// revoked, past the propagation bound.
	UnauthorizedWrite = "unauthorized-write"
	// UnauthorizedRead: a principal read records after its READ was
	// revoked, past the propagation bound.
	UnauthorizedRead = "unauthorized-read"
)

// AuthzAnomalies are the authorization checks' anomalies, in table order.
var AuthzAnomalies = []string{UnauthorizedWrite, UnauthorizedRead}

type aclSubject struct{ principal, operation string }

// revokedWindow is a span in which a principal certainly lacks the
// binding: from the revocation's ack plus the bound to the next grant's
// invoke (math.MaxInt64: none).
type revokedWindow struct {
	from, to int64
	revoke   int32 // the revocation's call
	boundMs  int64
}

// authzWindows collects every subject's revoked windows from the acl
// lines, in invoke order.
func authzWindows(ix *index) (map[aclSubject][]revokedWindow, error) {
	type aclCall struct {
		ci  int32
		acl history.AuthzACL
	}
	bySubject := map[aclSubject][]aclCall{}
	for ci := range ix.calls {
		c := &ix.calls[ci]
		if c.f != history.FACL || c.inv == nil {
			continue
		}
		var a history.AuthzACL
		if err := history.ParseAuthz(c.inv, &a); err != nil {
			return nil, err
		}
		if c.typ == history.OK {
			if err := history.ParseAuthz(c.op, &a); err != nil {
				return nil, err
			}
		}
		s := aclSubject{a.Principal, a.Operation}
		bySubject[s] = append(bySubject[s], aclCall{int32(ci), a})
	}
	out := map[aclSubject][]revokedWindow{}
	for s, calls := range bySubject {
		slices.SortStableFunc(calls, func(a, b aclCall) int { return cmp.Compare(ix.calls[a.ci].start, ix.calls[b.ci].start) })
		var ws []revokedWindow
		poisoned := false
		for _, ac := range calls {
			c := &ix.calls[ac.ci]
			if ac.acl.Action == history.ACLGrant {
				if n := len(ws); n > 0 && ws[n-1].to == math.MaxInt64 {
					ws[n-1].to = c.start
				}
				poisoned = poisoned || c.typ != history.OK && c.typ != history.Fail
				continue
			}
			if c.typ == history.OK && !poisoned {
				ws = append(ws, revokedWindow{from: c.end + ac.acl.BoundMs*1e6, to: math.MaxInt64, revoke: ac.ci, boundMs: ac.acl.BoundMs})
			}
		}
		out[s] = ws
	}
	return out, nil
}

// checkAuthz finds unauthorized-write and unauthorized-read, and counts
// the records the principals' polls read.
func checkAuthz(ix *index, col *collector) (records int, err error) {
	windows, err := authzWindows(ix)
	if err != nil {
		return 0, err
	}
	for ci := range ix.calls {
		c := &ix.calls[ci]
		if c.typ != history.OK || (c.f != history.FAuthzSend && c.f != history.FAuthzPoll) {
			continue
		}
		n, err := checkAuthzCall(ix, col, windows, c)
		if err != nil {
			return 0, err
		}
		records += n
	}
	return records, nil
}

// checkAuthzCall checks one ok send or poll; n is the records it read.
func checkAuthzCall(ix *index, col *collector, windows map[aclSubject][]revokedWindow, c *call) (n int, err error) {
	var principal, key string
	var offset, value int64 = -1, -1
	name, op := UnauthorizedWrite, history.ACLWrite
	if c.f == history.FAuthzSend {
		var s history.AuthzSend
		if err := history.ParseAuthz(c.op, &s); err != nil {
			return 0, err
		}
		principal, key, offset, value = s.Principal, s.Key, s.Offset, s.Value
	} else {
		var p history.AuthzPoll
		if err := history.ParseAuthz(c.op, &p); err != nil {
			return 0, err
		}
		if n = len(p.Records); n == 0 {
			return 0, nil
		}
		principal, key, offset, value = p.Principal, p.Key, p.Records[0].Offset, p.Records[0].Value
		name, op = UnauthorizedRead, history.ACLRead
	}
	for _, w := range windows[aclSubject{principal, op}] {
		if c.start < w.from || c.end >= w.to {
			continue
		}
		rv := &ix.calls[w.revoke]
		verb := "appended at offset"
		if name == UnauthorizedRead {
			verb = "read from offset"
		}
		col.add(name, func() Example {
			return Example{Key: key, Offset: i64(offset), Value: i64(value),
				Note: fmt.Sprintf("%s's %s was revoked (acknowledged at %d ms, bound %d ms); invoked %d ms after the bound, %s %d before any new grant",
					principal, op, rv.end/1e6, w.boundMs, (c.start-w.from)/1e6, verb, offset),
				Ops: []OpRef{ref(rv), refMop(c, key, offset, value)}}
		})
		return n, nil
	}
	return n, nil
}
