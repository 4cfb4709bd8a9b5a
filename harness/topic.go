package harness

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/internal/dialer"
	"gregor/internal/sleep"
	"gregor/runtime"
)

// TopicSpec is the topic a test writes to.
type TopicSpec struct {
	Name       string
	Partitions int
	RF         int
	MinISR     int
	Unclean    bool
	// ClusterDefaults names the topic configs (ConfigMinISR, ConfigUnclean)
	// left to the cluster's defaults instead of set from MinISR and Unclean.
	ClusterDefaults []string
}

func adminClient(bootstrap []string) (*kadm.Client, func(), error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...), dialer.Opt(time.Second), dialer.Auth(),
		kgo.RequestTimeoutOverhead(2*time.Second), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}

// CreateTopic creates t (an existing topic is an error: a test starts
// clean) and waits, bounded by ctx, until every partition has a leader and
// a full ISR.
func CreateTopic(ctx context.Context, bootstrap []string, t TopicSpec) error {
	adm, closeFn, err := adminClient(bootstrap)
	if err != nil {
		return err
	}
	defer closeFn()
	configs := map[string]*string{
		ConfigMinISR:  kadm.StringPtr(strconv.Itoa(t.MinISR)),
		ConfigUnclean: kadm.StringPtr(strconv.FormatBool(t.Unclean)),
	}
	for _, k := range t.ClusterDefaults {
		delete(configs, k)
	}
	var last error
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := adm.CreateTopics(cctx, int32(t.Partitions), int16(t.RF), configs, t.Name)
		cancel()
		if err == nil {
			r := resp[t.Name]
			if r.Err == nil || r.Err == kerr.TopicAlreadyExists {
				break
			}
			if !kerr.IsRetriable(r.Err) {
				return fmt.Errorf("create topic %s: %v (%s)", t.Name, r.Err, r.ErrMessage)
			}
			err = r.Err
		}
		last = err
		sleep.For(ctx, 200*time.Millisecond)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("create topic %s: %w (last: %v)", t.Name, ctx.Err(), last)
	}
	return WaitHealthy(ctx, bootstrap, t)
}

// WaitHealthy waits, bounded by ctx, until every broker's metadata shows
// every partition of t with a leader and an ISR of t.RF replicas, all
// brokers agreeing on the leader: the cluster has recovered from every
// fault. One broker's view is not enough; a broker's metadata image can
// trail the controller's by a heartbeat.
func WaitHealthy(ctx context.Context, bootstrap []string, t TopicSpec) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...), dialer.Opt(time.Second), dialer.Auth(),
		kgo.RequestTimeoutOverhead(2*time.Second), kgo.RetryTimeout(3*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	// last is the last answer that said what is missing; a round cut by
	// ctx ending says nothing.
	var last error
	for {
		err := healthy(ctx, cl, t)
		if err == nil {
			return nil
		}
		if ctx.Err() == nil || last == nil {
			last = err
		}
		if !sleep.For(ctx, 200*time.Millisecond) {
			return fmt.Errorf("topic %s not healthy: %v", t.Name, last)
		}
	}
}

func healthy(ctx context.Context, cl *kgo.Client, t TopicSpec) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	md, err := runtime.AskMetadata(ctx, cl, 3*time.Second, t.Name)
	if err != nil {
		return fmt.Errorf("no broker answered Metadata, so every partition of %s (%d) is awaited: %w", t.Name, t.Partitions, err)
	}
	if len(md.Brokers) == 0 {
		return fmt.Errorf("metadata lists no broker")
	}
	leaders := map[int32]int32{}
	for _, b := range md.Brokers {
		v, err := runtime.AskMetadata(ctx, cl.Broker(int(b)), 3*time.Second, t.Name)
		if err != nil {
			return fmt.Errorf("broker %d: %w", b, err)
		}
		if len(v.Topics) != 1 {
			return fmt.Errorf("broker %d: %d topics for %s", b, len(v.Topics), t.Name)
		}
		td := v.Topics[0]
		if td.Error != "" {
			return fmt.Errorf("broker %d: topic %s: %s", b, t.Name, td.Error)
		}
		if len(td.Partitions) != t.Partitions {
			return fmt.Errorf("broker %d: topic %s has %d partitions of %d", b, t.Name, len(td.Partitions), t.Partitions)
		}
		// Every partition short of a leader or a full ISR is named: a
		// recovery that times out says what it still awaited.
		var short []string
		for _, p := range td.Partitions {
			if p.Leader < 0 {
				short = append(short, fmt.Sprintf("%s/%d has no leader", t.Name, p.Partition))
				continue
			}
			if len(p.ISR) < t.RF {
				short = append(short, fmt.Sprintf("%s/%d ISR %v of %d replicas", t.Name, p.Partition, p.ISR, t.RF))
				continue
			}
			if l, ok := leaders[p.Partition]; ok && l != p.Leader {
				return fmt.Errorf("%s/%d: brokers disagree on the leader (%d, %d)", t.Name, p.Partition, l, p.Leader)
			}
			leaders[p.Partition] = p.Leader
		}
		if len(short) > 0 {
			return fmt.Errorf("broker %d: %s", b, strings.Join(short, ", "))
		}
	}
	return nil
}
