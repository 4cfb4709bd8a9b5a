package checker

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"gregor/history"
)

// BenchmarkReadFileAndCheck is `gregor check` on a 1,000,000-operation
// history: history.ReadFile of the JSONL file (decode included), then Check
// (porcupine per key included). The goal of issue 27 is >= 1,000,000 ops/s
// with 64 keys on the project's 2-core machine.
func BenchmarkReadFileAndCheck(b *testing.B) {
	for _, keys := range []int{4, 64} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			ops := benchHistory(keys)
			path := filepath.Join(b.TempDir(), "history.jsonl")
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			w := bufio.NewWriter(f)
			var line []byte
			for i := range ops {
				line = append(history.AppendJSON(line[:0], &ops[i]), '\n')
				w.Write(line)
			}
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
			f.Close()
			st, _ := os.Stat(path)
			b.SetBytes(st.Size())
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				got, _, _, err := history.ReadFile(path)
				if err != nil {
					b.Fatal(err)
				}
				res, err := Check(got, nil, Options{})
				if err != nil || res.Valid != ValidTrue {
					b.Fatalf("valid %v err %v", res.Valid, err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(len(ops))*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			b.ReportMetric(float64(len(ops))*float64(b.N)/(cpuTime()-cpu0).Seconds(), "ops/cpu-s")
		})
	}
}
