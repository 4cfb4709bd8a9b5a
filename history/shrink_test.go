package history

import (
	"strconv"
	"testing"
	"time"
)

// Faults are in force from a step's first operation to its end, overlaps
// counted once; a fault that failed to start is not, an instant one takes
// no time, one never ended lasts to the heal-all, and operations of other
// processes change nothing.
func TestFaultsInForce(t *testing.T) {
	s := int64(time.Second)
	op := func(at int64, f string, step int, err string) Op {
		return Op{Time: at, Process: Nemesis, F: f, Error: err, Raw: []byte(`{"step":` + strconv.Itoa(step) + `}`)}
	}
	ops := []Op{
		{Time: 0, Process: 0, F: FSend},
		op(1*s, NemesisKill, 0, ""), op(3*s, VerbStart, 0, ""),
		op(4*s, NemesisPartition, 1, "boom"),
		op(5*s, NemesisStrandLeader, 2, ""), op(6*s, NemesisStrandLeader, 2, ""), // a later phase
		op(7*s, NemesisPause, 3, ""), // overlaps the story
		op(8*s, EndVerb(NemesisStrandLeader), 2, ""), op(9*s, VerbResume, 3, ""),
		op(10*s, NemesisClientCrash, 4, ""), // instant: no end
		op(11*s, NemesisKill, 5, ""),        // never ended
		{Time: 13 * s, Process: Nemesis, F: VerbHealAll, Raw: []byte(`{"nodes":[1]}`)},
		{Time: 20 * s, Process: 1, F: FSend},
	}
	if got, want := FaultsInForce(ops), 8*time.Second; got != want {
		t.Fatalf("in force %v, want %v (2 s kill, 4 s story and pause together, 2 s kill to the heal-all)", got, want)
	}
}
