package checker

import (
	"encoding/json"
	"slices"
	"testing"

	"gregor/history"
)

func TestAuthzTrapsPass(t *testing.T) {
	res, err := Check(readFixture(t, "authz-traps"), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid != ValidTrue || len(res.Counts) != 0 {
		t.Fatalf("valid %v, anomalies %v:\n%s", res.Valid, res.Counts, res.JSON())
	}
}

// editOp rewrites the value of the op at index i.
func editOp(t *testing.T, ops []history.Op, i int64, edit func(m map[string]any)) {
	t.Helper()
	for k := range ops {
		if ops[k].Index != i {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(ops[k].Raw, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		ops[k].Raw = raw
		return
	}
	t.Fatalf("no op %d", i)
}

func setType(ops []history.Op, i int64, typ history.Type) {
	for k := range ops {
		if ops[k].Index == i {
			ops[k].Type = typ
		}
	}
}

func setTime(ops []history.Op, i, at int64) {
	for k := range ops {
		if ops[k].Index == i {
			ops[k].Time = at
		}
	}
}

// The traps are traps: each, changed to the anomaly it resembles, is found.
func TestAuthzTrapsAreTraps(t *testing.T) {
	cases := []struct {
		name, anomaly string
		edit          func(t *testing.T, ops []history.Op)
	}{
		// a's send inside the bound, invoked past it instead.
		{"inside the bound", UnauthorizedWrite, func(t *testing.T, ops []history.Op) {
			setTime(ops, 4, 2200000000)
			setTime(ops, 5, 2300000000)
		}},
		// b's send after a's revocation, a's own instead.
		{"another principal", UnauthorizedWrite, func(t *testing.T, ops []history.Op) {
			editOp(t, ops, 8, func(m map[string]any) { m["principal"] = "User:a" })
		}},
		// a's refused send, taken instead.
		{"a refused send", UnauthorizedWrite, func(t *testing.T, ops []history.Op) { setType(ops, 9, history.OK) }},
		// a's send answered after the next grant was invoked: without it.
		{"a send past the next grant", UnauthorizedWrite, nil},
		// c's revocation of unknown outcome, acknowledged instead.
		{"an unknown revocation", UnauthorizedRead, func(t *testing.T, ops []history.Op) {
			setType(ops, 15, history.OK)
			editOp(t, ops, 15, func(m map[string]any) { m["bound_ms"] = 1000 })
		}},
		// d's empty poll past the bound, with a record instead.
		{"an empty poll", UnauthorizedRead, func(t *testing.T, ops []history.Op) {
			editOp(t, ops, 21, func(m map[string]any) { m["records"] = []any{map[string]any{"offset": 3, "value": 9}} })
		}},
		// e's grant of unknown outcome before its revocation, acknowledged.
		{"an unknown grant before", UnauthorizedWrite, func(t *testing.T, ops []history.Op) { setType(ops, 23, history.OK) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ops := readFixture(t, "authz-traps")
			if c.edit != nil {
				c.edit(t, ops)
			} else { // drop the grant's two lines
				ops = slices.DeleteFunc(ops, func(o history.Op) bool { return o.Index == 11 || o.Index == 12 })
			}
			res, err := Check(ops, nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Counts[c.anomaly] != 1 || len(res.Counts) != 1 {
				t.Fatalf("anomalies %v, want one %s", res.Counts, c.anomaly)
			}
		})
	}
}
