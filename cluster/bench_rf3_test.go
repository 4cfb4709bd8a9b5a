package cluster

import (
	"context"
	"fmt"
	"testing"

	"gregor/bench"
)

// TestBenchRF3Profile runs the bench load with RF=3 against an in-process
// 3-broker cluster (for profiling: GREGOR_BENCH_RF3=1 go test -run
// BenchRF3Profile -cpuprofile cpu.out).
func TestBenchRF3Profile(t *testing.T) {
	if testing.Short() || !benchEnv() {
		t.Skip("set GREGOR_BENCH_RF3=1 to run")
	}
	tc := startCluster(t, 3, nil)
	target := bench.Target{Name: "gregor RF=3", Bootstrap: tc.bootstrap()}
	for _, l := range []bench.Load{
		{Records: 200_000, ValueBytes: 100, Partitions: 8, Acks: 1, RF: 1},
		{Records: 200_000, ValueBytes: 100, Partitions: 8, Acks: 1, RF: 3},
		{Records: 200_000, ValueBytes: 100, Partitions: 8, Acks: -1, RF: 3},
	} {
		r, err := bench.Run(context.Background(), target, l, fmt.Sprint("rf", l.RF, "-", l.Acks))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("RF=%d acks=%d: produce %.0f/s consume %.0f/s", l.RF, l.Acks, r.ProducePerS, r.ConsumePerS)
	}
}
