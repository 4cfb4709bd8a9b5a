package kit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// ErrLogGone is a final read that ended because the log no longer holds
// records a producer saw acknowledged (the end offsets stayed below them):
// a finding the checker names, not a read cut short.
var ErrLogGone = errors.New("the log no longer holds them")

// MaxFinalReassigns bounds a final reader's re-assigns after errors.
const MaxFinalReassigns = 100

// EmptyPollsAtEnd is how many successive empty polls, once every
// partition's last stable offset has reached its high watermark, end a
// read_committed final read: its position stops at the last data record,
// and the aborted records and markers after it are never returned, so the
// position alone cannot say the end was reached.
const EmptyPollsAtEnd = 3

// StableEnds waits until no transaction is open on topic (every
// partition's last stable offset has reached its high watermark: the
// coordinator aborts what a fault left open within the transaction
// timeout) and returns the high watermarks. It gives up when ctx ends,
// with the last reason a partition was not stable.
func StableEnds(ctx context.Context, adm *kadm.Client, topic string, partitions int) ([]int64, error) {
	var last error
	for ctx.Err() == nil {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		hw, err1 := adm.ListEndOffsets(lctx, topic)
		lso, err2 := adm.ListCommittedOffsets(lctx, topic)
		cancel()
		if err := errors.Join(err1, err2); err != nil {
			last = err
		} else {
			ends := make([]int64, partitions)
			stable := true
			for p := range ends {
				h, ok1 := hw.Lookup(topic, int32(p))
				l, ok2 := lso.Lookup(topic, int32(p))
				switch {
				case !ok1 || !ok2 || h.Err != nil || l.Err != nil:
					stable, last = false, fmt.Errorf("%s: %v %v", Key(topic, int32(p)), h.Err, l.Err)
				case l.Offset < h.Offset:
					stable, last = false, fmt.Errorf("%s: a transaction is still open (last stable offset %d, high watermark %d)", Key(topic, int32(p)), l.Offset, h.Offset)
				}
				ends[p] = h.Offset
			}
			if stable {
				return ends, nil
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("%w (last: %v)", ctx.Err(), last)
}
