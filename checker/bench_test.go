package checker

import (
	"bytes"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"gregor/checker/checkertest"
	"gregor/history"
)

var benchHistories = map[int][]history.Op{}

func benchHistory(keys int) []history.Op {
	if h, ok := benchHistories[keys]; ok {
		return h
	}
	h := checkertest.Generate(checkertest.GenOptions{Seed: 42, Ops: 1_000_000, Keys: keys, Producers: 8, Consumers: 4,
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
		ops := checkertest.Generate(checkertest.GenOptions{Seed: 9, Ops: n, Keys: 4, Producers: 6, Consumers: 3, InfoRate: 0.03, FailRate: 0.03})
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

var benchTxn []history.Op

func txnBenchHistory() []history.Op {
	if benchTxn == nil {
		benchTxn = checkertest.GenerateTxn(checkertest.TxnGenOptions{Seed: 42, Ops: 1_000_000, Keys: 8, Producers: 4, Consumers: 2, AbortRate: 0.2, InfoRate: 0.02, MaxMops: 4})
	}
	return benchTxn
}

// BenchmarkCheckTxn checks a 1,000,000-operation txn history, the
// dependency graph and its cycle search included; the target is >= 300,000
// ops/s on the project's 2-core machine. On a shared machine wall time
// measures the neighbours too, so it also reports ops per second of the
// process's own CPU time (every thread, GC included): a lower bound of
// what one idle core does.
func BenchmarkCheckTxn(b *testing.B) {
	ops := txnBenchHistory()
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := Check(ops, nil, Options{})
		if err != nil || res.Valid != ValidTrue {
			b.Fatalf("valid %v err %v counts %v", res.Valid, err, res.Counts)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(len(ops))*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	b.ReportMetric(float64(len(ops))*float64(b.N)/(cpuTime()-cpu0).Seconds(), "ops/cpu-s")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// The generated txn history is one a correct cluster could give: no
// anomaly, every kind of transaction outcome, aborted records read by the
// control only.
func TestGeneratedTxnHistoryIsValid(t *testing.T) {
	ops := checkertest.GenerateTxn(checkertest.TxnGenOptions{Seed: 3, Ops: 20_000, Keys: 6, Producers: 3, Consumers: 2, AbortRate: 0.2, InfoRate: 0.05, MaxMops: 4})
	res, err := Check(ops, nil, Options{})
	if err != nil || res.Valid != ValidTrue || len(res.Counts) != 0 {
		t.Fatalf("valid %v err %v counts %v", res.Valid, err, res.Counts)
	}
	st := res.Stats
	if st.TxnCommitted == 0 || st.TxnAborted == 0 || st.TxnUnknown == 0 || st.UncommittedAbortedReads == 0 {
		t.Fatalf("stats %+v", st)
	}
}

// Memory of the txn checks grows linearly: four times the operations
// allocate about four times the bytes.
func TestTxnAllocationsGrowLinearly(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a few hundred MB")
	}
	alloc := func(n int) float64 {
		ops := checkertest.GenerateTxn(checkertest.TxnGenOptions{Seed: 9, Ops: n, Keys: 6, Producers: 3, Consumers: 2, AbortRate: 0.2, InfoRate: 0.02, MaxMops: 4})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res, err := Check(ops, nil, Options{})
		runtime.ReadMemStats(&after)
		if err != nil || res.Valid != ValidTrue {
			t.Fatalf("n=%d valid %v err %v counts %v", n, res.Valid, err, res.Counts)
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
