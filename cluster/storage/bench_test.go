package storage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// benchBatch builds a batch of n 100-byte records at base.
func benchBatch(base int64, n int) []byte {
	vals := make([][]byte, n)
	for i := range vals {
		vals[i] = bytes.Repeat([]byte{'x'}, 100)
	}
	return NewBatchAt(base, 1, 1_700_000_000_000, vals...)
}

// BenchmarkAppend appends batches of 100-byte records; SetBaseOffset reuses one batch the way
// the leader rewrites offsets in place.
func BenchmarkAppend(b *testing.B) {
	for _, perBatch := range []int{1, 100} {
		for _, mode := range []struct {
			name string
			opts Options
		}{
			{"never", Options{}},
			{"lazyfs", Options{LazyFS: true, WritebackDelay: DefaultWritebackDelay}},
			{"every1000", Options{Fsync: FsyncPolicy{Mode: FsyncEveryN, N: 1000}}},
		} {
			b.Run(fmt.Sprintf("records=%d/%s", perBatch, mode.name), func(b *testing.B) {
				l := openLog(b, b.TempDir(), mode.opts)
				defer l.Close()
				batch := benchBatch(0, perBatch)
				b.SetBytes(int64(len(batch)))
				b.ReportAllocs()
				for b.Loop() {
					SetBaseOffset(batch, l.LEO())
					if err := l.Append(batch); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*perBatch)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}

func fillLog(b *testing.B, opts Options, batches, perBatch int) *Log {
	b.Helper()
	l := openLog(b, b.TempDir(), opts)
	batch := benchBatch(0, perBatch)
	for range batches {
		SetBaseOffset(batch, l.LEO())
		if err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	return l
}

// BenchmarkReadSequential is a consumer reading the whole log in 1 MiB fetches.
func BenchmarkReadSequential(b *testing.B) {
	l := fillLog(b, Options{}, 20_000, 1)
	defer l.Close()
	leo := l.LEO()
	b.ReportAllocs()
	var bytesRead int64
	off := int64(0)
	for b.Loop() {
		if off >= leo {
			off = 0
		}
		data, err := l.Read(off, 1<<20, leo)
		if err != nil {
			b.Fatal(err)
		}
		bytesRead += int64(len(data))
		_ = ForEachBatch(data, func(h BatchHeader, _ []byte) error { off = h.NextOffset(); return nil })
	}
	b.SetBytes(bytesRead / int64(b.N))
}

// BenchmarkReadRandomScaling reads small fetches at random offsets from logs of two sizes; the
// reported ratio (large/small ns per read) stays near 1 when Read does not depend on log size.
func BenchmarkReadRandomScaling(b *testing.B) {
	perRead := map[int]float64{}
	for _, batches := range []int{5_000, 100_000} {
		b.Run(fmt.Sprintf("batches=%d", batches), func(b *testing.B) {
			l := fillLog(b, Options{SegmentBytes: 8 << 20}, batches, 1)
			defer l.Close()
			leo := l.LEO()
			rng := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				if _, err := l.Read(rng.Int64N(leo), 4096, leo); err != nil {
					b.Fatal(err)
				}
			}
			perRead[batches] = float64(time.Since(start).Nanoseconds()) / float64(b.N)
		})
	}
	if perRead[5_000] > 0 && perRead[100_000] > 0 {
		b.Logf("ns per read, 100k-batch log / 5k-batch log: %.2f", perRead[100_000]/perRead[5_000])
	}
}

// BenchmarkReadAtLEO is the long-poll case: a follower or consumer asking at the log end.
func BenchmarkReadAtLEO(b *testing.B) {
	l := fillLog(b, Options{}, 1000, 1)
	defer l.Close()
	leo := l.LEO()
	b.ReportAllocs()
	for b.Loop() {
		if data, err := l.Read(leo, 1<<20, leo); err != nil || data != nil {
			b.Fatal(data, err)
		}
	}
}

// BenchmarkPartitions8 is the broker's comparison workload at the storage layer: 200k 100-byte
// records over 8 partition logs, appended in batches of 10 by one goroutine per partition, then
// read back in 1 MiB fetches.
func BenchmarkPartitions8(b *testing.B) {
	const partitions, records, perBatch = 8, 200_000, 10
	for b.Loop() {
		b.StopTimer()
		logs := make([]*Log, partitions)
		for i := range logs {
			logs[i] = openLog(b, b.TempDir(), Options{})
		}
		b.StartTimer()
		done := make(chan error, partitions)
		for _, l := range logs {
			go func() {
				batch := benchBatch(0, perBatch)
				for range records / partitions / perBatch {
					SetBaseOffset(batch, l.LEO())
					if err := l.Append(batch); err != nil {
						done <- err
						return
					}
				}
				for off := int64(0); off < l.LEO(); {
					data, err := l.Read(off, 1<<20, l.LEO())
					if err != nil {
						done <- err
						return
					}
					_ = ForEachBatch(data, func(h BatchHeader, _ []byte) error { off = h.NextOffset(); return nil })
				}
				done <- nil
			}()
		}
		for range partitions {
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		for _, l := range logs {
			l.Close()
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(records*b.N)/b.Elapsed().Seconds(), "records/s")
}
