package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"gregor/history"
	"gregor/internal/sleep"
)

// reassignTopology is a Topology that can move a partition's replicas
// (AlterPartitionReassignments, KIP-455) and tell when a move is done.
type reassignTopology interface {
	replicaTopology
	// Reassign asks the controller to move partition to replicas.
	Reassign(ctx context.Context, partition int32, replicas []int32) error
	// Reassigning reports whether partition has a reassignment in progress.
	Reassigning(ctx context.Context, partition int32) (bool, error)
}

// reassignTarget chooses where a partition of replicas moves among brokers:
// as many replicas as there are other brokers (at most all of them) leave,
// the leader first, so that leadership has to move too; the brokers joining
// come first in the target, so one of them is the preferred leader. The
// replication factor is kept. It is deterministic given rng.
func reassignTarget(rng *rand.Rand, brokers, replicas []int32, leader int32) ([]int32, error) {
	var outside []int32
	for _, b := range brokers {
		if !slices.Contains(replicas, b) {
			outside = append(outside, b)
		}
	}
	if len(outside) == 0 {
		return nil, fmt.Errorf("replicas %v cover every broker %v: there is no broker to move to (run with more --nodes than the replication factor)", replicas, brokers)
	}
	rng.Shuffle(len(outside), func(i, j int) { outside[i], outside[j] = outside[j], outside[i] })
	moving := min(len(outside), len(replicas))
	// Leaving: the leader first, then the others in a drawn order.
	var leaving []int32
	if slices.Contains(replicas, leader) {
		leaving = append(leaving, leader)
	}
	rest := slices.DeleteFunc(slices.Clone(replicas), func(r int32) bool { return r == leader })
	rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	leaving = append(leaving, rest...)[:moving]
	target := slices.Clone(outside[:moving])
	for _, r := range replicas {
		if !slices.Contains(leaving, r) {
			target = append(target, r)
		}
	}
	return target, nil
}

// reassign runs one reassign step: the partition's replicas move to other
// brokers while the workload writes, the move is held for the step's hold
// (it may finish or still run), and the undo moves the partition back to
// its original replicas (replacing a move still in progress, as KIP-455
// allows) and waits, bounded, until no reassignment is in progress.
func (r *Runner) reassign(ctx context.Context, st Step, v history.NemesisValue) {
	rt, ok := r.Topo.(reassignTopology)
	if !ok || v.Partition < 0 {
		r.write(string(st.Kind), v, errors.New("reassign needs a cluster whose topology can reassign partitions"))
		return
	}
	ps, err := rt.PartitionState(ctx, v.Partition)
	if err != nil {
		r.write(string(st.Kind), v, err)
		return
	}
	rng := rand.New(rand.NewPCG(st.Pick, uint64(v.Partition)+1))
	target, err := reassignTarget(rng, r.Topo.Brokers(), ps.Replicas, ps.Leader)
	if err != nil {
		r.write(string(st.Kind), v, err)
		return
	}
	original := slices.Clone(ps.Replicas)
	v.Nodes = target
	v.Note = fmt.Sprintf("partition %d replicas %v -> %v (leader %d)", v.Partition, original, target, ps.Leader)
	r.active.Add(1)
	defer r.active.Add(-1)
	r.done.Add(1)
	r.write(string(st.Kind), v, rt.Reassign(ctx, v.Partition, target))
	sleep.For(ctx, st.Hold)
	uctx, cancel := r.undoContext(ctx)
	defer cancel()
	v.Note = fmt.Sprintf("partition %d back to replicas %v", v.Partition, original)
	r.write(undoVerb(st.Kind), v, r.reassignBack(uctx, rt, v.Partition, original))
}

// reassignBack moves a partition to replicas and waits until the move is
// complete, polling (bounded by ctx).
func (r *Runner) reassignBack(ctx context.Context, rt reassignTopology, partition int32, replicas []int32) error {
	if err := rt.Reassign(ctx, partition, replicas); err != nil {
		return err
	}
	for {
		busy, err := rt.Reassigning(ctx, partition)
		if err == nil && !busy {
			return nil
		}
		if !sleep.For(ctx, 100*time.Millisecond) {
			return fmt.Errorf("partition %d still reassigning: %w (last: %v)", partition, ctx.Err(), err)
		}
	}
}

// Reassign implements reassignTopology.
func (k *KafkaTopology) Reassign(ctx context.Context, partition int32, replicas []int32) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign(k.topic, partition, replicas)
	resp, err := kadm.NewClient(k.cl).AlterPartitionAssignments(ctx, req)
	if err != nil {
		return err
	}
	return resp.Error()
}

// Reassigning implements reassignTopology.
func (k *KafkaTopology) Reassigning(ctx context.Context, partition int32) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	listed, err := kadm.NewClient(k.cl).ListPartitionReassignments(ctx, kadm.TopicsSet{k.topic: {partition: {}}})
	if err != nil {
		return false, err
	}
	_, busy := listed[k.topic][partition]
	return busy, nil
}
