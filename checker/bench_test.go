package checker

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	"gregor/history"
)

var benchHistories = map[int][]history.Op{}

func benchHistory(keys int) []history.Op {
	if h, ok := benchHistories[keys]; ok {
		return h
	}
	h := Generate(GenOptions{Seed: 42, Ops: 1_000_000, Keys: keys, Producers: 8, Consumers: 4,
		FailRate: 0.02, InfoRate: 0.02, NemesisEvery: 20000})
	benchHistories[keys] = h
	return h
}

// BenchmarkCheck checks a 1,000,000-operation history, porcupine included;
// the contract is >= 200,000 ops/s on the project's 2-core machine.
func BenchmarkCheck(b *testing.B) {
	for _, keys := range []int{4, 64} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			ops := benchHistory(keys)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := Check(ops, nil, Options{})
				if err != nil || res.Valid != ValidTrue {
					b.Fatalf("valid %v err %v counts %v", res.Valid, err, res.Counts)
				}
			}
			b.ReportMetric(float64(len(ops))*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

// BenchmarkReadAndCheck adds decoding the JSONL file, as `gregor check` does.
func BenchmarkReadAndCheck(b *testing.B) {
	ops := benchHistory(4)
	var buf bytes.Buffer
	for i := range ops {
		buf.Write(history.AppendJSON(nil, &ops[i]))
		buf.WriteByte('\n')
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got, _, _, err := history.ReadAll(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		res, err := Check(got, nil, Options{})
		if err != nil || res.Valid != ValidTrue {
			b.Fatalf("valid %v err %v", res.Valid, err)
		}
	}
	b.ReportMetric(float64(len(ops))*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// Memory must grow linearly with the history: checking four times the
// operations allocates about four times the bytes (not sixteen), measured in
// bytes allocated, not wall time.
func TestAllocationsGrowLinearly(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a few hundred MB")
	}
	alloc := func(n int) float64 {
		ops := Generate(GenOptions{Seed: 9, Ops: n, Keys: 4, Producers: 6, Consumers: 3, InfoRate: 0.03, FailRate: 0.03})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res, err := Check(ops, nil, Options{})
		runtime.ReadMemStats(&after)
		if err != nil || res.Valid != ValidTrue {
			t.Fatalf("n=%d valid %v err %v", n, res.Valid, err)
		}
		return float64(after.TotalAlloc-before.TotalAlloc) / float64(len(ops))
	}
	small, large := alloc(25_000), alloc(100_000)
	ratio := large / small
	t.Logf("bytes per op: %.0f at 25k, %.0f at 100k (ratio %.2f)", small, large, ratio)
	if ratio > 1.5 || ratio < 0.5 {
		t.Fatalf("bytes allocated per op changed by %.2fx between 25k and 100k ops: not linear", ratio)
	}
}
