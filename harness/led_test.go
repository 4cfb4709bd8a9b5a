package harness

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/nemesis"
)

// KafkaTopology.Led on a real cluster: the partitions a broker leads, each
// with its epoch, its ISR and the high watermark its leader answers, which
// after acks=all writes is the count written (what history.NemesisValue.Led
// records before a node fault).
func TestKafkaTopologyLed(t *testing.T) {
	c := startCluster(t, testSpec("led", 3, 2))
	boot := c.Bootstrap()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := CreateTopic(ctx, boot, TopicSpec{Name: "led", Partitions: 2, RF: 3, MinISR: 2}); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(boot...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	written := map[int32]int64{0: 7, 1: 3}
	for p, n := range written {
		for range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "led", Partition: p, Value: []byte("x")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	topo, err := nemesis.NewKafkaTopology(boot, "led", 2, []int32{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Close()
	all, err := topo.Led(ctx, []int32{1, 2, 3})
	if err != nil || len(all) != 2 {
		t.Fatalf("led by every broker: %+v, %v", all, err)
	}
	for _, l := range all {
		if l.HW == nil || *l.HW != written[l.Partition] || len(l.ISR) != 3 || !slices.IsSorted(l.ISR) || l.Leader < 1 {
			t.Fatalf("partition %d: %+v (hw %v), want HW %d and a full sorted ISR", l.Partition, l, l.HW, written[l.Partition])
		}
	}
	// One broker: only what it leads.
	mine, err := topo.Led(ctx, []int32{all[0].Leader})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range mine {
		if l.Leader != all[0].Leader {
			t.Fatalf("broker %d's partitions include %+v", all[0].Leader, l)
		}
	}
	if len(mine) == 0 {
		t.Fatalf("broker %d leads nothing", all[0].Leader)
	}
}
