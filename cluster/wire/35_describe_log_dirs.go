package wire

// DescribeLogDirs: v0-4.
//
// Behaviour: this broker's one log directory (its data directory) with
// every replica it holds, or the named ones (a nil topic list means all):
// each with its size in bytes on disk and OffsetLag, the high watermark's
// lead over the replica's log end (0 on a leader or a caught-up
// follower), as Kafka's ReplicaManager.describeLogDirs reports it. No
// replica is a "future" one (no intra-broker moves). v4's TotalBytes and
// UsableBytes come from statfs of the directory (-1 if that fails).

import (
	"context"
	"slices"
	"syscall"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/replica"
)

func init() { register(35, 0, 4, handleDescribeLogDirs) }

func handleDescribeLogDirs(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	ab, ok := s.b.(AdminBackend)
	if !ok {
		return now(resp)
	}
	d := kmsg.NewDescribeLogDirsResponseDir()
	d.Dir = ab.LogDir()
	d.TotalBytes, d.UsableBytes = -1, -1
	var st syscall.Statfs_t
	if syscall.Statfs(d.Dir, &st) == nil {
		d.TotalBytes = int64(st.Blocks) * int64(st.Bsize)
		d.UsableBytes = int64(st.Bavail) * int64(st.Bsize)
	}
	wanted := func(topic string, p int32) bool {
		return requested(req.Topics, func(t kmsg.DescribeLogDirsRequestTopic) string { return t.Topic },
			func(t kmsg.DescribeLogDirsRequestTopic) []int32 { return t.Partitions }, topic, p)
	}
	parts := ab.Partitions()
	slices.SortFunc(parts, func(a, b *replica.Partition) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Index - b.Index)
	})
	for _, p := range parts {
		if !wanted(p.Topic, p.Index) {
			continue
		}
		if n := len(d.Topics); n == 0 || d.Topics[n-1].Topic != p.Topic {
			t := kmsg.NewDescribeLogDirsResponseDirTopic()
			t.Topic = p.Topic
			d.Topics = append(d.Topics, t)
		}
		_, hw, leo := p.Offsets()
		rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		rp.Partition, rp.Size, rp.OffsetLag = p.Index, p.Log().Size(), max(hw-leo, 0)
		t := &d.Topics[len(d.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	resp.Dirs = append(resp.Dirs, d)
	return now(resp)
}
