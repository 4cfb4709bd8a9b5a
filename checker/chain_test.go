package checker

import (
	"math/rand/v2"
	"testing"

	"github.com/anishathalye/porcupine"

	"gregor/checker/checkertest"
	"gregor/history"
)

// The one-pass chain check must agree with porcupine on every window
// without fills: legal exactly when porcupine says ok. Perturbed histories
// make many windows illegal; both outcomes must occur or the comparison
// proves little.
func TestChainAgreesWithPorcupine(t *testing.T) {
	legal, illegal, fills := 0, 0, 0
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 12))
		ops := genHistory(checkertest.GenOptions{Seed: seed, Ops: 80 + rng.IntN(200), Keys: 1 + rng.IntN(2), Producers: 1 + rng.IntN(4),
			Consumers: 1 + rng.IntN(2), InfoRate: rng.Float64() * 0.2, FailRate: 0.1})
		perturb(ops, rng)
		calls, err := pair(ops)
		if err != nil {
			t.Fatal(err)
		}
		ix, err := buildIndex(calls, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range ix.order {
			k := ix.keys[name]
			for _, window := range []int{1, 4, 16, 1 << 30} {
				for _, w := range ix.keyWindows(k, window) {
					hasFill := false
					for _, o := range w.ops {
						hasFill = hasFill || o.in.kind == linFill
					}
					chain := chainLinearizable(&w)
					por := porcupine.CheckOperations(ix.logModel(k, w.init), toPorcupine(&w))
					if hasFill {
						fills++
						if chain {
							t.Fatalf("seed %d key %s window %d: chain decided a window with fills", seed, name, w.from)
						}
						continue
					}
					if chain != por {
						t.Fatalf("seed %d key %s window [%d, %d) of size %d: chain says %v, porcupine %v", seed, name, w.from, w.to, window, chain, por)
					}
					if por {
						legal++
					} else {
						illegal++
					}
				}
			}
		}
	}
	t.Logf("%d legal, %d illegal windows; %d with fills left to porcupine", legal, illegal, fills)
	if legal < 100 || illegal < 20 {
		t.Fatalf("only %d legal and %d illegal windows", legal, illegal)
	}
}

// genHistory generates a correct history (the test-only generator).
func genHistory(o checkertest.GenOptions) []history.Op { return checkertest.Generate(o) }
