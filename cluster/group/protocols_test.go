package group

import (
	"strings"
	"testing"
)

// group.coordinator.rebalance.protocols: classic alone keeps KIP-848 off,
// classic,consumer turns it on, and a list without classic or with a
// protocol gregor does not run is refused, naming the fix.
func TestParseRebalanceProtocols(t *testing.T) {
	for _, tc := range []struct {
		list     []string
		consumer bool
		err      string
	}{
		{[]string{"classic"}, false, ""},
		{[]string{"classic", "consumer"}, true, ""},
		{[]string{"consumer", "classic"}, true, ""},
		{[]string{"consumer"}, false, "disabling the classic protocol is not supported"},
		{[]string{"classic", "share"}, false, "give classic, or classic,consumer"},
	} {
		got, err := ParseRebalanceProtocols(tc.list)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want one saying %q", tc.list, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.consumer {
			t.Errorf("%v: consumer %v (%v), want %v", tc.list, got, err, tc.consumer)
		}
	}
}
