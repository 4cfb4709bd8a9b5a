package wire

// ListPartitionReassignments: v0.
//
// Behaviour (KIP-455): the reassignments in progress as this broker's
// metadata shows them: per partition its replicas (the union of the old and
// the target set) and the adding and removing replicas. A nil topic list
// means every partition; a named partition that is not being reassigned is
// left out of the answer, as Kafka does. (Kafka sends this to the
// controller; a broker's replicated image holds the same state.)

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(46, 0, 0, handleListPartitionReassignments) }

func handleListPartitionReassignments(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	im := s.b.Image()
	wanted := func(topic string, p int32) bool {
		return requested(req.Topics, func(t kmsg.ListPartitionReassignmentsRequestTopic) string { return t.Topic },
			func(t kmsg.ListPartitionReassignmentsRequestTopic) []int32 { return t.Partitions }, topic, p)
	}
	for _, name := range im.SortedTopics() {
		rt := kmsg.NewListPartitionReassignmentsResponseTopic()
		rt.Topic = name
		for _, p := range im.Topics[name].Partitions {
			if !p.Reassigning() || !wanted(name, p.Index) {
				continue
			}
			rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			rp.Partition = p.Index
			rp.Replicas = slices.Clone(p.Replicas)
			rp.AddingReplicas, rp.RemovingReplicas = slices.Clone(p.Adding), slices.Clone(p.Removing)
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) > 0 {
			resp.Topics = append(resp.Topics, rt)
		}
	}
	return now(resp)
}
