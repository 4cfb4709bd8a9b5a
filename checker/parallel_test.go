package checker

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"gregor/checker/checkertest"
	"gregor/history"
)

// Checking keys on several workers gives the very result one worker gives,
// byte for byte, anomalies and their examples included: on histories with
// lost writes (records removed from reads) and nonlinearizable keys (times
// perturbed), read back from their JSONL as gregor check does.
func TestParallelCheckIsDeterministic(t *testing.T) {
	anomalous, nonlin := 0, 0
	for seed := uint64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, 13))
		ops := genHistory(checkertest.GenOptions{Seed: seed, Ops: 3000 + rng.IntN(3000), Keys: 1 + rng.IntN(12), Producers: 1 + rng.IntN(6),
			Consumers: 1 + rng.IntN(3), InfoRate: 0.05, FailRate: 0.05, NemesisEvery: 500})
		perturb(ops, rng)
		acked := checkertest.AckedSends(ops)
		for i := 0; i < 3 && len(acked) > 0; i++ {
			a := acked[rng.IntN(len(acked))]
			ops = checkertest.RemoveFromReads(ops, a[0].(string), a[1].(int64))
		}
		var buf bytes.Buffer
		for i := range ops {
			buf.Write(history.AppendJSON(nil, &ops[i]))
			buf.WriteByte('\n')
		}
		read, _, _, err := history.ReadAll(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		one, err := Check(read, nil, Options{Workers: 1, Window: 16})
		if err != nil {
			t.Fatal(err)
		}
		if len(one.Counts) > 0 {
			anomalous++
		}
		if one.Counts[Nonlinearizable] > 0 {
			nonlin++
		}
		want := one.JSON()
		for _, workers := range []int{2, 3, 8} {
			res, err := Check(read, nil, Options{Workers: workers, Window: 16})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.JSON(); !bytes.Equal(got, want) {
				t.Fatalf("seed %d: %d workers differ from one:\n%s\nwant\n%s", seed, workers, got, want)
			}
		}
	}
	t.Logf("%d of 12 histories with anomalies, %d nonlinearizable", anomalous, nonlin)
	if anomalous < 8 || nonlin < 2 {
		t.Fatalf("only %d of 12 histories had anomalies, %d nonlinearizable", anomalous, nonlin)
	}
}
