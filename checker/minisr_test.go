package checker

import (
	"testing"

	"gregor/history"
)

// The under-min-isr-ack check flags only what the leader's own answers
// prove: an ISR below min ISR in the leader samples bracketing the send, at
// most minISRWindow apart, with one leader and epoch throughout.
func TestUnderMinISRAckNeedsProof(t *testing.T) {
	ops := readFixture(t, UnderMinISRAck)
	_, base := fixtureMetadata(t, UnderMinISRAck)
	sample := func(at int64, broker, leader, epoch int32, isr ...int32) history.MetadataSample {
		return history.MetadataSample{Time: at, Broker: broker, Partitions: []history.PartitionState{
			{Partition: 0, Leader: leader, LeaderEpoch: epoch, Replicas: []int32{1, 2, 3}, ISR: isr}}}
	}
	safe := history.Config{Acks: "all", MinISR: 2, RF: 3}
	cases := []struct {
		name string
		cfg  history.Config
		md   []history.MetadataSample
		want int
	}{
		{"fixture", safe, base, 1},
		{"leader saw the ISR whole in between", safe, []history.MetadataSample{
			sample(600e6, 1, 1, 3, 1), sample(1005e6, 1, 1, 3, 1, 2), sample(1400e6, 1, 1, 3, 1)}, 0},
		{"samples too far apart", safe, []history.MetadataSample{sample(600e6, 1, 1, 3, 1), sample(1700e6, 1, 1, 3, 1)}, 0},
		{"leader epoch changed", safe, []history.MetadataSample{sample(600e6, 1, 1, 3, 1), sample(1400e6, 1, 1, 4, 1)}, 0},
		{"only other brokers' answers", safe, []history.MetadataSample{sample(600e6, 2, 1, 3, 1), sample(1400e6, 3, 1, 3, 1)}, 0},
		{"no sample after the ack", safe, []history.MetadataSample{sample(600e6, 1, 1, 3, 1)}, 0},
		{"ISR at min ISR", safe, []history.MetadataSample{sample(600e6, 1, 1, 3, 1, 2), sample(1400e6, 1, 1, 3, 1, 2)}, 0},
		{"min ISR 1", history.Config{Acks: "all", MinISR: 1, RF: 3}, base, 0},
		{"acks=1", history.Config{Acks: "1", MinISR: 2, RF: 3}, base, 0},
		{"replica lag below the window", history.Config{Acks: "all", MinISR: 2, RF: 3, ReplicaLagMax: history.Duration(500e6)}, base, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Check(ops, &c.cfg, Options{Metadata: c.md})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Counts[UnderMinISRAck]; got != c.want {
				t.Fatalf("%d under-min-isr-ack, want %d: %v", got, c.want, res.Anomalies[UnderMinISRAck])
			}
			if c.want > 0 && res.Valid != ValidFalse {
				t.Fatalf("valid %v with a forbidden anomaly", res.Valid)
			}
		})
	}
}
