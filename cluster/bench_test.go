package cluster

import (
	"context"
	"fmt"
	"os"
	"testing"

	"gregor/bench"
)

// BenchmarkProduceConsume runs the bench load against an in-process broker
// (for profiling: go test -bench ProduceConsume -cpuprofile cpu.out).
func BenchmarkProduceConsume(b *testing.B) {
	br := startBroker(b, b.TempDir(), nil)
	t := bench.Target{Name: "gregor", Bootstrap: []string{br.Addr()}}
	for i := 0; i < b.N; i++ {
		if _, err := bench.Run(context.Background(), t, bench.Load{Records: 200_000, ValueBytes: 100, Partitions: 8, Acks: 1}, fmt.Sprint("b", i)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkKFakeProduceConsume(b *testing.B) {
	ref, err := bench.KFake()
	if err != nil {
		b.Fatal(err)
	}
	defer ref.Close()
	for i := 0; i < b.N; i++ {
		if _, err := bench.Run(context.Background(), ref, bench.Load{Records: 200_000, ValueBytes: 100, Partitions: 8, Acks: 1}, fmt.Sprint("b", i)); err != nil {
			b.Fatal(err)
		}
	}
}

func benchEnv() bool { return os.Getenv("GREGOR_BENCH_RF3") != "" }
