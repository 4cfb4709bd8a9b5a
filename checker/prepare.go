package checker

import (
	"fmt"
	"math"
	"slices"

	"gregor/history"
)

// InputError says why a history cannot be checked: it breaks the format's
// rules (section 4) in a way no check could interpret.
type InputError struct {
	Index int64 // the op's index
	Pos   int   // position of the op in the slice given to Check
	Msg   string
}

func (e *InputError) Error() string { return fmt.Sprintf("op %d: %s", e.Index, e.Msg) }

// never is the return time of an indeterminate operation: it may take effect
// at any time after its invocation.
const never = math.MaxInt64

// call is one completed operation: an invoke paired with its completion, or a
// standalone event.
type call struct {
	pos     int   // position of the completion (or event) in the input
	index   int64 // index of the invoke (of the event when standalone)
	cindex  int64 // index of the completion
	proc    history.Process
	f       string
	typ     history.Type // OK, Fail or Info; never Invoke
	start   int64        // invoke time
	end     int64        // completion time; never for Info
	endSeen int64        // completion time as observed, also for Info
	op      *history.Op  // the completion (or event)
	inv     *history.Op  // the invoke; nil for standalone events
	event   bool         // standalone line without an invoke
}

// sendMops returns the send micro-ops with the best knowledge: the
// completion's when it carries them (offsets), else the invoke's.
func (c *call) mops() []history.Mop {
	if len(c.op.Mops) > 0 {
		return c.op.Mops
	}
	if c.inv != nil {
		return c.inv.Mops
	}
	return nil
}

// standalone says which f may appear as a completion without an invoke.
func standalone(op *history.Op) bool {
	if op.Process == history.Nemesis {
		return true
	}
	switch op.F {
	case history.FProcess, history.FAssign, history.FSubscribe, history.FCrash, history.FRebalance, history.FCommit, history.FShareDrain:
		return true
	}
	return false
}

// afterAppendErr is Kafka's NOT_ENOUGH_REPLICAS_AFTER_APPEND: the leader
// appended the batch before the ISR shrank, so the record may exist (seed 003:
// "leader 可能已经写了"). A send failing with it is indeterminate, not failed.
const afterAppendErr = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"

// pair turns lines into calls in completion order. An invoke still pending at
// the end of the history becomes an Info call (the harness stopped waiting).
func pair(ops []history.Op) ([]call, error) {
	n := 0 // completions and events: one call each
	for i := range ops {
		if ops[i].Type != history.Invoke {
			n++
		}
	}
	calls := make([]call, 0, n+1)
	var pending pendingInvokes // process -> position of its open invoke
	for i := range ops {
		op := &ops[i]
		if op.Type == history.Invoke {
			if j, ok := pending.get(op.Process); ok {
				if op.Process == history.Nemesis {
					// The nemesis may overlap its own operations; keep the latest.
					pending.set(op.Process, i)
					continue
				}
				return nil, &InputError{op.Index, i, fmt.Sprintf("process %v invokes %q while op %d is still open (a process runs one operation at a time)", op.Process, op.F, ops[j].Index)}
			}
			pending.set(op.Process, i)
			continue
		}
		j, open := pending.get(op.Process)
		if !open || ops[j].F != op.F {
			if !standalone(op) {
				if open {
					return nil, &InputError{op.Index, i, fmt.Sprintf("process %v completes %q but its open op %d is %q", op.Process, op.F, ops[j].Index, ops[j].F)}
				}
				return nil, &InputError{op.Index, i, fmt.Sprintf("process %v completes %q without an invoke", op.Process, op.F)}
			}
			calls = append(calls, call{pos: i, index: op.Index, cindex: op.Index, proc: op.Process, f: op.F,
				typ: op.Type, start: op.Time, end: op.Time, endSeen: op.Time, op: op, event: true})
			continue
		}
		pending.del(op.Process)
		inv := &ops[j]
		if op.Time < inv.Time {
			return nil, &InputError{op.Index, i, fmt.Sprintf("completes at time %d before its invoke %d at %d", op.Time, inv.Index, inv.Time)}
		}
		c := call{pos: i, index: inv.Index, cindex: op.Index, proc: op.Process, f: op.F, typ: op.Type,
			start: inv.Time, end: op.Time, endSeen: op.Time, op: op, inv: inv}
		if c.typ == history.Fail && op.Error == afterAppendErr {
			c.typ = history.Info
		}
		if c.typ == history.Info {
			c.end = never
		}
		calls = append(calls, c)
	}
	// Invokes never completed, in input order so results are deterministic.
	open := pending.all()
	slices.Sort(open)
	for _, j := range open {
		inv := &ops[j]
		calls = append(calls, call{pos: j, index: inv.Index, cindex: inv.Index, proc: inv.Process, f: inv.F,
			typ: history.Info, start: inv.Time, end: never, endSeen: inv.Time, op: inv, inv: inv})
	}
	return calls, nil
}

// maxDenseProcess bounds the client ids pendingInvokes keeps in its table.
const maxDenseProcess = 1 << 16

// pendingInvokes maps a process to the position of its open invoke: a
// table for the nemesis and client ids below maxDenseProcess (the
// harness numbers them from 0), a map for the rest.
type pendingInvokes struct {
	dense []int // dense[p+1] is the position + 1; 0: none
	other map[history.Process]int
}

func (p *pendingInvokes) get(proc history.Process) (int, bool) {
	if i := int(proc) + 1; i >= 0 && i < len(p.dense) {
		return p.dense[i] - 1, p.dense[i] > 0
	}
	j, ok := p.other[proc]
	return j, ok
}

func (p *pendingInvokes) set(proc history.Process, pos int) {
	if i := int(proc) + 1; i >= 0 && i <= maxDenseProcess {
		if i >= len(p.dense) {
			p.dense = append(p.dense, make([]int, i+1-len(p.dense))...)
		}
		p.dense[i] = pos + 1
		return
	}
	if p.other == nil {
		p.other = make(map[history.Process]int)
	}
	p.other[proc] = pos
}

func (p *pendingInvokes) del(proc history.Process) {
	if i := int(proc) + 1; i >= 0 && i < len(p.dense) {
		p.dense[i] = 0
		return
	}
	delete(p.other, proc)
}

// all is every open invoke's position, in no order.
func (p *pendingInvokes) all() []int {
	var out []int
	for _, j := range p.dense {
		if j > 0 {
			out = append(out, j-1)
		}
	}
	for _, j := range p.other {
		out = append(out, j)
	}
	return out
}
