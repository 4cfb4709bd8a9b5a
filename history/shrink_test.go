package history

import (
	"testing"
	"time"
)

// Faults are in force from a fault's start to the next end; a fault that
// failed to start is not, one never ended lasts to the history's end, and
// operations of other processes change nothing.
func TestFaultsInForce(t *testing.T) {
	s := int64(time.Second)
	ops := []Op{
		{Time: 0, Process: 0, F: FSend},
		{Time: 1 * s, Process: Nemesis, F: NemesisKill},
		{Time: 3 * s, Process: Nemesis, F: VerbStart},
		{Time: 4 * s, Process: Nemesis, F: NemesisPartition, Error: "boom"},
		{Time: 5 * s, Process: Nemesis, F: NemesisStrandLeader},
		{Time: 6 * s, Process: Nemesis, F: NemesisStrandLeader}, // a later phase
		{Time: 8 * s, Process: Nemesis, F: EndVerb(NemesisStrandLeader)},
		{Time: 9 * s, Process: Nemesis, F: NemesisPause},
		{Time: 12 * s, Process: 1, F: FSend},
	}
	if got, want := FaultsInForce(ops), 8*time.Second; got != want {
		t.Fatalf("in force %v, want %v (2 s kill, 3 s strand-leader, 3 s pause to the end)", got, want)
	}
}
