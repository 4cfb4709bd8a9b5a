// Package bench measures the embedded cluster's throughput side by side with
// franz-go's in-memory kfake under the same franz-go load, in one run, so the
// figure that matters is a ratio on the same noisy machine, never an absolute
// time. Rounds alternate between targets and the median is reported.
package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Load is one franz-go workload.
type Load struct {
	Records    int
	ValueBytes int
	Partitions int32
	// Acks: 0, 1 or -1 (all). acks=all enables idempotence as clients do by default.
	Acks int16
	RF   int16
	// TxnSize > 0 produces in transactions of that many records, each
	// committed before the next begins (acks=all), and consumes
	// read_committed.
	TxnSize int
}

// Target is a cluster to measure.
type Target struct {
	Name      string
	Bootstrap []string
	// Close stops it (nil when the caller owns it).
	Close func()
}

// Result is one round against one target.
type Result struct {
	Target      string
	ProducePerS float64
	ConsumePerS float64
}

// KFake starts franz-go's in-memory fake cluster in this process.
func KFake() (Target, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return Target{}, err
	}
	return Target{Name: "kfake", Bootstrap: c.ListenAddrs(), Close: c.Close}, nil
}

// KFakeProcess starts kfake in its own process (`gregor kfake`), so that it
// and the broker under test are measured alike: each a separate process
// competing with the load generator for the same cores.
func KFakeProcess(ctx context.Context, binary string) (Target, error) {
	cmd := exec.Command(binary, "kfake")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return Target{}, err
	}
	if err := cmd.Start(); err != nil {
		return Target{}, err
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "KFAKE "); ok {
				addr <- a
			}
		}
	}()
	select {
	case a := <-addr:
		return Target{Name: "kfake", Bootstrap: []string{a}, Close: stop}, nil
	case <-time.After(30 * time.Second):
	case <-ctx.Done():
	}
	stop()
	return Target{}, fmt.Errorf("gregor kfake did not print its address within 30s")
}

// Run produces then consumes l's records against t on a fresh topic.
func Run(ctx context.Context, t Target, l Load, topic string) (Result, error) {
	res := Result{Target: t.Name}
	admin, err := kgo.NewClient(kgo.SeedBrokers(t.Bootstrap...))
	if err != nil {
		return res, err
	}
	defer admin.Close()
	cr, err := kadm.NewClient(admin).CreateTopics(ctx, l.Partitions, max(l.RF, 1), nil, topic)
	if err != nil {
		return res, fmt.Errorf("%s: create topic: %w", t.Name, err)
	}
	if e := cr[topic].Err; e != nil {
		return res, fmt.Errorf("%s: create topic: %w", t.Name, e)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(t.Bootstrap...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.MaxBufferedRecords(50_000)}
	switch {
	case l.TxnSize > 0:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.TransactionalID(topic+"-producer"))
	case l.Acks == -1:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case l.Acks == 0:
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	}
	prod, err := kgo.NewClient(opts...)
	if err != nil {
		return res, err
	}
	defer prod.Close()
	if err := prod.Ping(ctx); err != nil {
		return res, err
	}
	value := make([]byte, l.ValueBytes)
	// Warm up: one record per partition, untimed, so that the timed run does
	// not include a new topic's leaders settling on every broker (franz-go
	// backs off on NOT_LEADER while they do) — the same for every target.
	warmOpts := append(slices.Clone(opts), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if l.TxnSize > 0 {
		// The transactional producer warms up in the timed client's stead:
		// a second one with the same id would fence it.
		warmOpts = append(warmOpts, kgo.TransactionalID(topic+"-warm"))
	}
	warm, err := kgo.NewClient(warmOpts...)
	if err != nil {
		return res, err
	}
	if err := warmUp(ctx, warm, l, value); err != nil {
		warm.Close()
		return res, fmt.Errorf("%s: warm-up: %w", t.Name, err)
	}
	warm.Close()
	var wg sync.WaitGroup
	var failed atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	batch := l.Records
	if l.TxnSize > 0 {
		batch = l.TxnSize
	}
	for i := 0; i < l.Records; i += batch {
		if l.TxnSize > 0 {
			if err := prod.BeginTransaction(); err != nil {
				return res, fmt.Errorf("%s: begin transaction: %w", t.Name, err)
			}
		}
		for j := i; j < min(i+batch, l.Records); j++ {
			wg.Add(1)
			prod.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				if err != nil && failed.Add(1) == 1 {
					firstErr.Store(err)
				}
				wg.Done()
			})
		}
		if l.TxnSize > 0 {
			wg.Wait()
			if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
				return res, fmt.Errorf("%s: commit: %w", t.Name, err)
			}
		}
	}
	wg.Wait()
	res.ProducePerS = float64(l.Records) / time.Since(start).Seconds()
	if n := failed.Load(); n > 0 {
		return res, fmt.Errorf("%s: %d of %d produces failed, first: %v", t.Name, n, l.Records, firstErr.Load())
	}

	offsets := map[string]map[int32]kgo.Offset{topic: {}}
	for p := int32(0); p < l.Partitions; p++ {
		offsets[topic][p] = kgo.NewOffset().At(0)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(t.Bootstrap...), kgo.ConsumePartitions(offsets), kgo.FetchIsolationLevel(isolation(l)))
	if err != nil {
		return res, err
	}
	defer cons.Close()
	got := 0
	want := l.Records + int(l.Partitions) // with the warm-up records
	start = time.Now()
	for got < want {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			return res, fmt.Errorf("%s: consumed %d of %d: %w", t.Name, got, l.Records, ctx.Err())
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return res, fmt.Errorf("%s: fetch: %v", t.Name, errs[0].Err)
		}
		got += fs.NumRecords()
	}
	res.ConsumePerS = float64(got) / time.Since(start).Seconds()
	return res, nil
}

// Compare runs `rounds` alternating rounds of l against a reference and
// each other target, returning per-target medians.
func Compare(ctx context.Context, ref Target, others []Target, l Load, rounds int) (map[string]Result, error) {
	all := append([]Target{ref}, others...)
	samples := map[string][]Result{}
	for r := 0; r < rounds; r++ {
		for i, t := range all {
			res, err := Run(ctx, t, l, fmt.Sprintf("bench-%d-%d", r, i))
			if err != nil {
				return nil, err
			}
			samples[t.Name] = append(samples[t.Name], res)
		}
	}
	out := map[string]Result{}
	for name, rs := range samples {
		out[name] = Result{Target: name, ProducePerS: median(rs, func(r Result) float64 { return r.ProducePerS }),
			ConsumePerS: median(rs, func(r Result) float64 { return r.ConsumePerS })}
	}
	return out, nil
}

// Pair runs alternating rounds of refLoad against ref and load against t
// (the loads may differ, e.g. in replication factor) and returns medians.
func Pair(ctx context.Context, ref Target, refLoad Load, t Target, load Load, rounds int) (Result, Result, error) {
	var rs, ts []Result
	for r := 0; r < rounds; r++ {
		a, err := Run(ctx, ref, refLoad, fmt.Sprintf("pair-ref-%d-%d", load.RF, r)+loadName(load))
		if err != nil {
			return Result{}, Result{}, err
		}
		b, err := Run(ctx, t, load, fmt.Sprintf("pair-%d-%d", load.RF, r)+loadName(load))
		if err != nil {
			return Result{}, Result{}, err
		}
		rs, ts = append(rs, a), append(ts, b)
	}
	med := func(name string, v []Result) Result {
		return Result{Target: name, ProducePerS: median(v, func(r Result) float64 { return r.ProducePerS }),
			ConsumePerS: median(v, func(r Result) float64 { return r.ConsumePerS })}
	}
	return med(ref.Name, rs), med(t.Name, ts), nil
}

// loadName tells loads apart in topic names.
func loadName(l Load) string {
	if l.TxnSize > 0 {
		return fmt.Sprintf("-txn%d", l.TxnSize)
	}
	if l.Acks == -1 {
		return "-all"
	}
	return fmt.Sprintf("-%d", l.Acks)
}

func median(rs []Result, f func(Result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// Row is one printed comparison.
type Row struct {
	Label       string
	Result      Result
	Ref         Result
	TargetMin   float64 // ratio target for produce, 0 if none
	ProduceOnly bool
}

// Print writes a table of records/s and ratios to the reference.
func Print(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "load\ttarget\tproduce rec/s\tconsume rec/s\tproduce ratio\tconsume ratio\ttarget ratio")
	for _, r := range rows {
		pr := r.Result.ProducePerS / r.Ref.ProducePerS
		cr := r.Result.ConsumePerS / r.Ref.ConsumePerS
		tgt := "-"
		if r.TargetMin > 0 {
			verdict := "met"
			if pr < r.TargetMin || (!r.ProduceOnly && cr < r.TargetMin) {
				verdict = "MISSED"
			}
			tgt = fmt.Sprintf(">= %.1fx %s", r.TargetMin, verdict)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f\t%.2fx\t%.2fx\t%s\n", r.Label, r.Result.Target, r.Result.ProducePerS, r.Result.ConsumePerS, pr, cr, tgt)
	}
	tw.Flush()
}

// warmUp writes one record per partition (in one transaction for a
// transactional load).
func warmUp(ctx context.Context, cl *kgo.Client, l Load, value []byte) error {
	if l.TxnSize > 0 {
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
	}
	for p := int32(0); p < l.Partitions; p++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: value}).FirstErr(); err != nil {
			return fmt.Errorf("partition %d: %w", p, err)
		}
	}
	if l.TxnSize > 0 {
		return cl.EndTransaction(ctx, kgo.TryCommit)
	}
	return nil
}

func isolation(l Load) kgo.IsolationLevel {
	if l.TxnSize > 0 {
		return kgo.ReadCommitted()
	}
	return kgo.ReadUncommitted()
}
