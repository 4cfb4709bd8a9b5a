package checker

import (
	"math/rand/v2"
	"testing"

	"gregor/checker/checkertest"
	"gregor/history"
)

// Histories of a correct log whose only faults drop unacknowledged writes
// never fail; removing one acknowledged write from every read always fails
// with lost-write or unseen.
func TestPropertyCorrectLogPassesAndLossIsCaught(t *testing.T) {
	runs := 40
	if testing.Short() {
		runs = 10
	}
	for seed := uint64(1); seed <= uint64(runs); seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		opts := checkertest.GenOptions{Seed: seed, Ops: 200 + rng.IntN(2000), Keys: 1 + rng.IntN(4),
			Producers: 1 + rng.IntN(6), Consumers: 1 + rng.IntN(3),
			FailRate: rng.Float64() * 0.3, InfoRate: rng.Float64() * 0.3, NemesisEvery: 100 + rng.IntN(200)}
		ops := checkertest.Generate(opts)
		res, err := Check(ops, nil, Options{Window: 1 + rng.IntN(64)})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if res.Valid != ValidTrue {
			t.Fatalf("seed %d %+v: correct log judged %v: %v\n%s", seed, opts, res.Valid, res.Counts, res.JSON())
		}
		acked := checkertest.AckedSends(ops)
		if len(acked) == 0 {
			continue
		}
		victim := acked[rng.IntN(len(acked))]
		lossy := checkertest.RemoveFromReads(ops, victim[0].(string), victim[1].(int64))
		res, err = Check(lossy, nil, Options{})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if res.Valid != ValidFalse || res.Counts[LostWrite]+res.Counts[Unseen] != 1 {
			t.Fatalf("seed %d: removing %v from reads: valid %v, counts %v", seed, victim, res.Valid, res.Counts)
		}
		// The original must be untouched by the mutation.
		if again, _ := Check(ops, nil, Options{}); again.Valid != ValidTrue {
			t.Fatalf("seed %d: RemoveFromReads modified its input", seed)
		}
	}
}

// Splitting a key's history into porcupine windows must not change the
// verdict: compare small windows with one window over the whole key, on
// histories whose operation times are perturbed so that many are not
// linearizable.
func TestWindowsAgreeWithWholeHistory(t *testing.T) {
	illegal, legal := 0, 0
	for seed := uint64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		ops := checkertest.Generate(checkertest.GenOptions{Seed: seed, Ops: 60 + rng.IntN(120), Keys: 1, Producers: 1 + rng.IntN(4),
			Consumers: 1 + rng.IntN(2), InfoRate: rng.Float64() * 0.2, FailRate: 0.1})
		perturb(ops, rng)
		whole := linStatus(t, ops, 1<<30)
		for _, w := range []int{1, 3, 8} {
			if got := linStatus(t, ops, w); got != whole {
				t.Fatalf("seed %d: window %d says %s, whole history says %s", seed, w, got, whole)
			}
		}
		if whole == "illegal" {
			illegal++
		} else {
			legal++
		}
	}
	// The perturbation must produce both outcomes, or the comparison proves little.
	t.Logf("%d illegal, %d legal", illegal, legal)
	if illegal < 20 || legal < 20 {
		t.Fatalf("only %d illegal and %d legal histories", illegal, legal)
	}
}

// perturb moves a few operations' intervals in time, keeping each completion
// after its invoke.
func perturb(ops []history.Op, rng *rand.Rand) {
	open := map[history.Process]int{}
	for i := range ops {
		op := &ops[i]
		if op.Process == history.Nemesis || (op.F != history.FSend && op.F != history.FPoll) {
			continue
		}
		if op.Type == history.Invoke {
			open[op.Process] = i
			continue
		}
		j, ok := open[op.Process]
		if !ok || rng.IntN(40) != 0 {
			continue
		}
		delete(open, op.Process)
		shift := rng.Int64N(6000) - 3000
		ops[j].Time = max(0, ops[j].Time+shift)
		op.Time = max(ops[j].Time, op.Time+shift)
	}
}

func linStatus(t *testing.T, ops []history.Op, window int) string {
	t.Helper()
	res, err := Check(ops, nil, Options{Window: window})
	if err != nil {
		t.Fatal(err)
	}
	return res.Linearizability["t/0"].Status
}
