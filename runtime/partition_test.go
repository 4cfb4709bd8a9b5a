package runtime

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// render lists each node's cuts as "a:b,c a2:..." in order, for comparison.
func render(cuts map[int32]map[int32]bool) string {
	var ids []int
	for a := range cuts {
		ids = append(ids, int(a))
	}
	sort.Ints(ids)
	var parts []string
	for _, a := range ids {
		var bs []int
		for b, on := range cuts[int32(a)] {
			if on {
				bs = append(bs, int(b))
			}
		}
		sort.Ints(bs)
		parts = append(parts, fmt.Sprintf("%d:%s", a, strings.Trim(fmt.Sprint(bs), "[]")))
	}
	return strings.Join(parts, " ")
}

func TestCutsShapes(t *testing.T) {
	cases := []struct {
		name   string
		groups [][]int32
		want   string
	}{
		{"isolate-one", [][]int32{{1}, {2, 3}}, "1:2 3 2:1 3:1"},
		{"halves", [][]int32{{1, 2}, {3, 4, 5}}, "1:3 4 5 2:3 4 5 3:1 2 4:1 2 5:1 2"},
		{"bridge", [][]int32{{1, 2, 3}, {3, 4, 5}}, "1:4 5 2:4 5 3: 4:1 2 5:1 2"},
		{"majorities-ring", [][]int32{{1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 1}}, "1:3 4 2:4 5 3:1 5 4:1 2 5:2 3"},
		{"unlisted left alone", [][]int32{{1}, {2}}, "1:2 2:1"},
		{"one group cuts nothing", [][]int32{{1, 2, 3}}, "1: 2: 3:"},
	}
	for _, tc := range cases {
		got := Cuts(tc.groups)
		if r := render(got); r != tc.want {
			t.Errorf("%s: got %q want %q", tc.name, r, tc.want)
		}
		for a, bs := range got {
			if bs[a] {
				t.Errorf("%s: %d cut from itself", tc.name, a)
			}
			for b, on := range bs {
				if on != got[b][a] {
					t.Errorf("%s: cut %d-%d not symmetric", tc.name, a, b)
				}
			}
		}
	}
}
