package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/history"
	"gregor/internal/dialer"
	"gregor/runtime"
)

// Bounds of the sampler's timing. Faster than 100 ms would load the
// brokers under test; slower than 5 s would miss most leader changes,
// which take a session timeout (3 s in tests).
const (
	DefaultMetadataInterval = 250 * time.Millisecond
	MinMetadataInterval     = 100 * time.Millisecond
	MaxMetadataInterval     = 5 * time.Second
	// DefaultMetadataTimeout is one request's limit: a paused broker
	// (SIGSTOP) accepts the connection and never answers.
	DefaultMetadataTimeout = time.Second
	MaxMetadataTimeout     = 5 * time.Second
)

// SamplerConfig configures a MetadataSampler.
type SamplerConfig struct {
	Topic string
	// Brokers are asked in turn; each needs an ID and a KafkaAddr.
	Brokers []runtime.NodeInfo
	// Epoch is time zero of the samples (the history's epoch).
	Epoch time.Time
	// Interval between the starts of two samples: 0 is
	// DefaultMetadataInterval; else within [MinMetadataInterval,
	// MaxMetadataInterval].
	Interval time.Duration
	// Timeout of one request to one broker: 0 is DefaultMetadataTimeout;
	// else within (0, MaxMetadataTimeout].
	Timeout time.Duration
	// Budget of one sample over every broker it asks: 0 is 2 x Timeout. A
	// sample whose budget runs out is written as failed, never retried.
	Budget time.Duration
}

func (c *SamplerConfig) normalize() error {
	if c.Topic == "" {
		return errors.New("metadata sampler: no topic")
	}
	if len(c.Brokers) == 0 {
		return errors.New("metadata sampler: no broker to ask")
	}
	for _, b := range c.Brokers {
		if b.KafkaAddr == "" {
			return fmt.Errorf("metadata sampler: broker %d has no Kafka address", b.ID)
		}
	}
	if c.Interval == 0 {
		c.Interval = DefaultMetadataInterval
	}
	if c.Interval < MinMetadataInterval || c.Interval > MaxMetadataInterval {
		return fmt.Errorf("metadata interval %v: give %v to %v", c.Interval, MinMetadataInterval, MaxMetadataInterval)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultMetadataTimeout
	}
	if c.Timeout < 0 || c.Timeout > MaxMetadataTimeout {
		return fmt.Errorf("metadata timeout %v: give a positive duration up to %v", c.Timeout, MaxMetadataTimeout)
	}
	if c.Budget == 0 {
		c.Budget = 2 * c.Timeout
	}
	if c.Budget < c.Timeout || c.Budget > 4*MaxMetadataTimeout {
		return fmt.Errorf("metadata budget %v: give %v to %v", c.Budget, c.Timeout, 4*MaxMetadataTimeout)
	}
	if c.Epoch.IsZero() {
		c.Epoch = time.Now()
	}
	return nil
}

// MetadataSampler asks the brokers, in turn, for the topic's metadata every
// Interval and writes one line per sample. Each sample starts with the
// broker after the one that answered the previous sample, so every broker's
// view is seen (a stale one too, which the report flags) and a broker that
// is down costs one failed attempt, not a stalled sampler. A failed sample
// is written as such and the next tick starts a new one.
type MetadataSampler struct {
	cfg     SamplerConfig
	clients []*kgo.Client // clients[i] talks only to cfg.Brokers[i]
	w       *bufio.Writer
	closer  io.Closer // the file under w; nil when writing elsewhere

	cancel   context.CancelFunc // ends the loop and a sample in flight
	done     chan struct{}      // closed when the loop has returned
	stopOnce sync.Once

	// Owned by the sampling goroutine until done is closed.
	next    int // index in cfg.Brokers the next sample asks first
	samples int
	failed  int
	err     error // first write error; the sampler stops on it
}

// StartMetadataSampler starts sampling into the run directory's
// metadata.jsonl (created anew) until Stop or ctx ends.
func StartMetadataSampler(ctx context.Context, dir history.RunDir, cfg SamplerConfig) (*MetadataSampler, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(dir.Metadata(), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	s, err := startSampler(ctx, f, cfg)
	if err != nil {
		f.Close()
		return nil, err
	}
	s.closer = f
	return s, nil
}

// startSampler writes samples to w; cfg is normalized.
func startSampler(ctx context.Context, w io.Writer, cfg SamplerConfig) (*MetadataSampler, error) {
	s := &MetadataSampler{cfg: cfg, w: bufio.NewWriterSize(w, 16<<10), done: make(chan struct{})}
	for _, b := range cfg.Brokers {
		// One client per broker, asked through its seed connection: a
		// client given every broker would route by its own metadata, and
		// which broker answered must be the one we asked.
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.KafkaAddr), dialer.Opt(cfg.Timeout), dialer.Auth(),
			kgo.RequestTimeoutOverhead(cfg.Timeout), kgo.RequestRetries(0))
		if err != nil {
			s.closeClients()
			return nil, fmt.Errorf("metadata sampler: client for broker %d: %w", b.ID, err)
		}
		s.clients = append(s.clients, cl)
	}
	ctx, s.cancel = context.WithCancel(ctx)
	go s.loop(ctx)
	return s, nil
}

func (s *MetadataSampler) closeClients() {
	for _, cl := range s.clients {
		cl.Close()
	}
}

func (s *MetadataSampler) loop(ctx context.Context) {
	defer close(s.done)
	tick := time.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	for {
		sample := s.sample(ctx)
		if ctx.Err() != nil {
			return // a sample cut short by Stop or the run's end says nothing
		}
		if err := s.write(&sample); err != nil {
			s.err = err
			return
		}
		// A sample slower than the interval is followed at once: the
		// ticker keeps at most one tick.
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

// sample asks brokers from s.next on until one answers or the budget runs
// out; each request is bounded by the timeout.
func (s *MetadataSampler) sample(ctx context.Context) history.MetadataSample {
	bctx, cancel := context.WithTimeout(ctx, s.cfg.Budget)
	defer cancel()
	out := history.MetadataSample{Broker: -1, Controller: -1}
	n := len(s.cfg.Brokers)
	for i := range n {
		idx := (s.next + i) % n
		id := s.cfg.Brokers[idx].ID
		if bctx.Err() != nil {
			out.Failed = append(out.Failed, history.MetadataAttempt{Broker: id, Error: "not asked: the sample's budget of " + s.cfg.Budget.String() + " ran out"})
			continue
		}
		resp, err := s.ask(bctx, idx)
		if err != nil {
			out.Failed = append(out.Failed, history.MetadataAttempt{Broker: id, Error: err.Error()})
			continue
		}
		out.Time = time.Since(s.cfg.Epoch).Nanoseconds()
		out.Broker, out.Controller = id, resp.Controller
		fill(&out, resp, s.cfg.Topic)
		s.next = (idx + 1) % n
		return out
	}
	out.Time = time.Since(s.cfg.Epoch).Nanoseconds()
	out.Error = fmt.Sprintf("no broker answered within %v", s.cfg.Budget)
	s.next = (s.next + 1) % n
	return out
}

func (s *MetadataSampler) ask(ctx context.Context, idx int) (*runtime.MetadataView, error) {
	seeds := s.clients[idx].SeedBrokers()
	if len(seeds) != 1 {
		return nil, fmt.Errorf("client has %d seed brokers, want 1", len(seeds))
	}
	return runtime.AskMetadata(ctx, seeds[0], s.cfg.Timeout, s.cfg.Topic)
}

// fill copies the topic's partitions from v into out.
func fill(out *history.MetadataSample, v *runtime.MetadataView, topic string) {
	t, ok := v.Topic(topic)
	switch {
	case !ok:
		out.TopicError = "topic " + topic + " not in the answer"
	case t.Error != "":
		out.TopicError = t.Error
	default:
		out.Partitions = t.Partitions
	}
}

// write appends one line and flushes it: a crash leaves whole lines and at
// most one torn last line, which the reader drops.
func (s *MetadataSampler) write(sample *history.MetadataSample) error {
	b, err := json.Marshal(sample)
	if err != nil {
		return err
	}
	s.w.Write(b)
	s.w.WriteByte('\n')
	if err := s.w.Flush(); err != nil {
		return err
	}
	s.samples++
	if sample.Error != "" {
		s.failed++
	}
	return nil
}

// Stop ends sampling (a sample in flight is dropped) and closes the file. It is idempotent and safe on a nil sampler; it
// returns the first write or close error.
func (s *MetadataSampler) Stop() error {
	if s == nil {
		return nil
	}
	s.stopOnce.Do(func() {
		s.cancel()
		<-s.done
		s.closeClients()
		if s.closer != nil {
			if err := s.closer.Close(); err != nil && s.err == nil {
				s.err = err
			}
		}
	})
	return s.err
}

// Counts returns the samples written and how many of them failed; call it
// after Stop.
func (s *MetadataSampler) Counts() (samples, failed int) {
	<-s.done
	return s.samples, s.failed
}

// startMetadata starts the run's sampler over the test's brokers (not the
// controller-only voters, which serve no Metadata). A sampler that cannot
// start is a note, not a failed run: the report then says it has no
// samples.
func (t *Test) startMetadata(ctx context.Context, c runtime.Cluster, dir history.RunDir, epoch time.Time) (*MetadataSampler, error) {
	var brokers []runtime.NodeInfo
	for _, n := range c.Nodes() {
		if !n.ControllerOnly {
			brokers = append(brokers, n)
		}
	}
	s, err := StartMetadataSampler(ctx, dir, SamplerConfig{Topic: t.Topic, Brokers: brokers, Epoch: epoch, Interval: t.MetadataInterval})
	if err != nil {
		return nil, fmt.Errorf("metadata sampler not started: %w", err)
	}
	return s, nil
}
