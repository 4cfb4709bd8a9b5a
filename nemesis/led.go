package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/history"
	"gregor/runtime"
)

// ledTopology is a Topology that can say which topic partitions some nodes
// lead, with each one's leader epoch, ISR and high watermark: what a node
// fault is about to take away (history.NemesisValue.Led).
type ledTopology interface {
	Led(ctx context.Context, nodes []int32) ([]history.LedPartition, error)
}

// ledTimeout bounds asking the topology before a fault: the fault waits for
// the answer, so it must not wait long (a broker a composed fault froze
// answers nothing).
const ledTimeout = time.Second

// led asks the topology, just before a node fault on nodes is applied,
// which partitions they lead; the times are the history's clock. A
// topology that cannot tell gives nothing and no error.
func (r *Runner) led(ctx context.Context, nodes []int32) ([]history.LedPartition, string) {
	lt, ok := r.Topo.(ledTopology)
	if !ok || len(nodes) == 0 {
		return nil, ""
	}
	ctx, cancel := context.WithTimeout(ctx, ledTimeout)
	defer cancel()
	led, err := lt.Led(ctx, nodes)
	at := int64(time.Since(r.Epoch))
	for i := range led {
		led[i].At = at
	}
	if err != nil {
		return led, err.Error()
	}
	return led, ""
}

// ledFault is whether k is applied by Runner.apply to nodes it resolved:
// the faults whose operations record Led.
func ledFault(k Kind) bool {
	switch k {
	case Kill, PowerLoss, KillTxnCoordinator, Stop, Pause, Partition, Slow:
		return true
	}
	return false
}

// Led implements ledTopology: the partitions Metadata names one of nodes
// leader of, each with the high watermark its leader answers to ListOffsets
// (latest, read_uncommitted), asked of that broker itself. A partition
// whose leader does not answer keeps a nil HW and the error says so.
func (k *KafkaTopology) Led(ctx context.Context, nodes []int32) ([]history.LedPartition, error) {
	v, err := runtime.AskMetadata(ctx, k.cl, ledTimeout, k.topic)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	t, _ := v.Topic(k.topic)
	var led []history.LedPartition
	byLeader := map[int32][]int{} // leader -> indexes in led
	for _, p := range t.Partitions {
		if p.Leader < 0 || !slices.Contains(nodes, p.Leader) {
			continue
		}
		isr := slices.Clone(p.ISR)
		slices.Sort(isr)
		byLeader[p.Leader] = append(byLeader[p.Leader], len(led))
		led = append(led, history.LedPartition{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, ISR: isr})
	}
	var errs []error
	for _, leader := range sorted(mapKeys(byLeader)) {
		idx := byLeader[leader]
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = k.topic
		for _, i := range idx {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition = led[i].Partition
			rp.CurrentLeaderEpoch = led[i].LeaderEpoch
			rp.Timestamp = -1 // latest: the high watermark under read_uncommitted
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, k.cl.Broker(int(leader)))
		if err != nil {
			errs = append(errs, fmt.Errorf("ListOffsets to broker %d: %w", leader, err))
			continue
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				i := slices.IndexFunc(led, func(l history.LedPartition) bool { return l.Partition == rp.Partition })
				if i < 0 {
					continue
				}
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					errs = append(errs, fmt.Errorf("ListOffsets %s/%d at broker %d: %w", k.topic, rp.Partition, leader, err))
					continue
				}
				hw := rp.Offset
				led[i].HW = &hw
			}
		}
	}
	return led, errors.Join(errs...)
}

func mapKeys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Led implements ledTopology from the fixed leaders and ISRs (no high
// watermark: nothing was written).
func (s StaticTopology) Led(ctx context.Context, nodes []int32) ([]history.LedPartition, error) {
	var led []history.LedPartition
	for p := range s.Leaders {
		st, err := s.PartitionState(ctx, int32(p))
		if err != nil || !slices.Contains(nodes, st.Leader) {
			continue
		}
		led = append(led, history.LedPartition{Partition: st.Partition, Leader: st.Leader, ISR: sorted(st.ISR)})
	}
	return led, nil
}
