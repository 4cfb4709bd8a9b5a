package checker

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
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

// buildIndex cut into many chunks on several workers gives one pass's
// result: the same check output on histories with anomalies, and the same
// first input error (a value sent twice, an offset out of range; sends'
// errors before reads') wherever the chunks fall.
func TestChunkedIndexAgrees(t *testing.T) {
	defer func(n int) { chunkMinCalls = n }(chunkMinCalls)
	errors := 0
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 29))
		ops := genHistory(checkertest.GenOptions{Seed: seed, Ops: 2000 + rng.IntN(2000), Keys: 2 + rng.IntN(7), Producers: 1 + rng.IntN(5),
			Consumers: 1 + rng.IntN(3), InfoRate: 0.05, FailRate: 0.05, NemesisEvery: 300})
		perturb(ops, rng)
		if acked := checkertest.AckedSends(ops); len(acked) > 0 {
			a := acked[rng.IntN(len(acked))]
			ops = checkertest.RemoveFromReads(ops, a[0].(string), a[1].(int64))
		}
		if seed%2 == 0 {
			breakHistory(ops, rng)
		}
		calls, err := pair(ops)
		if err != nil {
			t.Fatal(err)
		}
		chunkMinCalls = 1 << 30 // one chunk: one pass
		want, wantErr := buildIndex(calls, 1)
		chunkMinCalls = 1 + rng.IntN(40)
		got, gotErr := buildIndex(calls, 3)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || fmt.Sprint(wantErr) != fmt.Sprint(onePassError(calls)) {
			t.Fatalf("seed %d: error %v, one chunk %v, one pass %v", seed, gotErr, wantErr, onePassError(calls))
		}
		if wantErr != nil {
			errors++
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: the chunked index differs from one pass's", seed)
		}
		res1, _ := Check(ops, nil, Options{Workers: 1, Window: 16})
		res3, _ := Check(ops, nil, Options{Workers: 3, Window: 16})
		if !bytes.Equal(res1.JSON(), res3.JSON()) {
			t.Fatalf("seed %d: results differ:\n%s\nwant\n%s", seed, res3.JSON(), res1.JSON())
		}
	}
	if errors < 3 {
		t.Fatalf("only %d of 4 broken histories were refused", errors)
	}
}

// breakHistory plants input errors at random places: a value sent twice to
// a key, and a read or an acknowledgement at an offset out of range.
func breakHistory(ops []history.Op, rng *rand.Rand) {
	var sends, reads []int
	for i := range ops {
		if ops[i].Type != history.OK {
			continue
		}
		for _, m := range ops[i].Mops {
			switch {
			case m.Kind == history.MopSend && m.Offset >= 0:
				sends = append(sends, i)
			case m.Kind == history.MopPoll && len(m.Polls) > 0 && len(m.Polls[0].Records) > 0:
				reads = append(reads, i)
			}
		}
	}
	for range 3 + rng.IntN(3) {
		switch rng.IntN(3) {
		case 0: // the value of another send to the same key
			a, b := &ops[sends[rng.IntN(len(sends))]].Mops[0], &ops[sends[rng.IntN(len(sends))]].Mops[0]
			b.Key, b.Value = a.Key, a.Value
		case 1:
			ops[sends[rng.IntN(len(sends))]].Mops[0].Offset = maxOffset + 5
		case 2:
			ops[reads[rng.IntN(len(reads))]].Mops[0].Polls[0].Records[0].Offset = maxOffset + 7
		}
	}
}

// onePassError is the input error one pass over the calls meets first:
// every send in order (a value sent twice to its key, then its
// acknowledgement's offset), then every ok poll's records.
func onePassError(calls []call) error {
	sent := map[string]map[int64]int64{} // key -> value -> index of its op
	for _, c := range calls {
		if c.event || c.proc == history.Nemesis {
			continue
		}
		for _, m := range c.mops() {
			if m.Kind != history.MopSend {
				continue
			}
			if sent[m.Key] == nil {
				sent[m.Key] = map[int64]int64{}
			}
			if prev, dup := sent[m.Key][m.Value]; dup {
				return &InputError{c.index, c.pos, fmt.Sprintf("value %d sent to key %q twice (also by op %d); values must be unique per key", m.Value, m.Key, prev)}
			}
			sent[m.Key][m.Value] = c.index
			if c.typ == history.OK && m.Offset >= maxOffset {
				return &InputError{c.cindex, c.pos, fmt.Sprintf("key %q: offset %d out of range [0, %d)", m.Key, m.Offset, maxOffset)}
			}
		}
	}
	for _, c := range calls {
		if c.typ != history.OK || c.event || c.proc == history.Nemesis || c.f == history.FPollUncommitted {
			continue
		}
		for _, m := range c.op.Mops {
			for _, kr := range m.Polls {
				for _, r := range kr.Records {
					if r.Offset < 0 || r.Offset >= maxOffset {
						return &InputError{c.cindex, c.pos, fmt.Sprintf("key %q: offset %d out of range [0, %d)", kr.Key, r.Offset, maxOffset)}
					}
				}
			}
		}
	}
	return nil
}
