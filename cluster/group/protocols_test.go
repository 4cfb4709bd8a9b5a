package group

import (
	"strings"
	"testing"
)

// group.coordinator.rebalance.protocols: classic alone keeps KIP-848 and
// KIP-932 off, consumer and share turn each on (the default both), and a
// list without classic or with a protocol gregor does not run is refused,
// naming the fix.
func TestParseRebalanceProtocols(t *testing.T) {
	for _, tc := range []struct {
		list            []string
		consumer, share bool
		err             string
	}{
		{[]string{"classic"}, false, false, ""},
		{[]string{"classic", "consumer"}, true, false, ""},
		{[]string{"consumer", "classic"}, true, false, ""},
		{[]string{"classic", "share"}, false, true, ""},
		{[]string{"classic", "consumer", "share"}, true, true, ""},
		{[]string{"consumer"}, false, false, "disabling the classic protocol is not supported"},
		{[]string{"classic", "streams"}, false, false, "give classic, plus consumer"},
		{DefaultRebalanceProtocols(), true, true, ""}, // Kafka 4.2's: every protocol gregor runs
	} {
		consumer, share, err := ParseRebalanceProtocols(tc.list)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want one saying %q", tc.list, err, tc.err)
			}
			continue
		}
		if err != nil || consumer != tc.consumer || share != tc.share {
			t.Errorf("%v: consumer %v share %v (%v), want %v %v", tc.list, consumer, share, err, tc.consumer, tc.share)
		}
	}
}
