package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"gregor/checker"
	"gregor/history"
	"gregor/nemesis"
	"gregor/workloads/queue"
)

// client-crash tears a workload client down mid-run: the nemesis names the
// process, the process's last operation completes, a crash event follows,
// the process never runs again, a new process takes over, and the history
// still pairs (one operation at a time per process).
func TestClientCrash(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	c := startCluster(t, testSpec("crash", 1, 1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := CreateTopic(ctx, c.Bootstrap(), TopicSpec{Name: "cc", Partitions: 2, RF: 1, MinISR: 1}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	h := history.NewWriter(&buf, 0)
	epoch := time.Now()
	wl, err := queue.New(queue.Config{Bootstrap: c.Bootstrap(), Topic: "cc", Partitions: 2, Acks: "all",
		Retries: -1, Rate: 200, Producers: 2, Consumers: 1, Seed: 3}, h, epoch)
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { wl.Run(wctx); close(done) }()
	r := &nemesis.Runner{Cluster: c, Topo: nemesis.StaticTopology{IDs: []int32{1}, Leaders: []int32{1, 1}},
		History: h, Epoch: epoch, Crash: wl.Crash}
	time.Sleep(time.Second)
	r.Run(ctx, nemesis.Schedule{{Kind: nemesis.ClientCrash, Hold: time.Millisecond}, {At: time.Second, Kind: nemesis.ClientCrash, Hold: time.Millisecond}})
	time.Sleep(time.Second)
	stop()
	<-done
	h.Close()
	ops, _, _, err := history.ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	crashed := map[history.Process]bool{}
	events := map[history.Process]bool{}
	for _, op := range ops {
		if op.Process == history.Nemesis && op.F == string(nemesis.ClientCrash) {
			var v struct{ Process *int }
			json.Unmarshal(op.Raw, &v)
			if v.Process == nil || op.Error != "" {
				t.Fatalf("client-crash op without a process: %s (%s)", op.Raw, op.Error)
			}
			crashed[history.Process(*v.Process)] = true
			continue
		}
		if events[op.Process] {
			t.Fatalf("process %v ran op %d after its crash event", op.Process, op.Index)
		}
		if op.F == history.FCrash {
			if !crashed[op.Process] {
				t.Fatalf("crash event of process %v that the nemesis did not crash", op.Process)
			}
			events[op.Process] = true
		}
	}
	if len(crashed) != 2 || len(events) != 2 {
		t.Fatalf("crashed %v, crash events %v", crashed, events)
	}
	if _, err := checker.Check(ops, nil, checker.Options{}); err != nil {
		t.Fatalf("history does not pair: %v", err)
	}
	if wl.Ops() == 0 {
		t.Fatal("no operation completed")
	}
}
