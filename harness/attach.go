package harness

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"gregor/history"
	"gregor/runtime"
)

// BadInputError is a run refused before anything ran: the settings cannot
// work against this cluster (gregor run exits 2 on it). The message names
// the flag or field that fixes it.
type BadInputError struct{ Err error }

func (e *BadInputError) Error() string { return e.Err.Error() }
func (e *BadInputError) Unwrap() error { return e.Err }

func badInput(err error) error {
	if err == nil {
		return nil
	}
	return &BadInputError{Err: err}
}

// Topic config names a run may leave to the cluster (Test.ClusterTopicDefaults).
const (
	ConfigMinISR  = "min.insync.replicas"
	ConfigUnclean = "unclean.leader.election.enable"
	configLagMax  = "replica.lag.time.max.ms"
)

// attach learns an attached runtime's brokers before the run is validated:
// the run's --nodes is the cluster's broker count, and settings that only
// gregor's own brokers take are refused.
func (t *Test) attach(ctx context.Context, a runtime.Attached) error {
	brokers, err := a.Probe(ctx)
	if err != nil {
		return badInput(err)
	}
	c := &t.Cluster
	switch {
	case len(c.Bugs) > 0:
		return badInput(fmt.Errorf("--bug %v with --runtime %s: bugs are planted in gregor's own brokers, not in a cluster it did not boot; drop --bug", c.Bugs, a.Name()))
	case c.LazyFS:
		return badInput(fmt.Errorf("--lazyfs with --runtime %s: only gregor's own brokers model a page cache; drop --lazyfs", a.Name()))
	case c.Controllers > 0 || c.Dedicated:
		return badInput(fmt.Errorf("--controllers/--dedicated-controllers with --runtime %s: the cluster's quorum is its own; drop them", a.Name()))
	}
	// The run's shape is the cluster's now: its settings are validated
	// again, against it.
	c.Nodes, t.validated = len(brokers), false
	if t.RF > c.Nodes {
		return badInput(fmt.Errorf("--rf %d: the cluster Metadata lists %d broker(s); lower --rf", t.RF, c.Nodes))
	}
	if c.MinISR > c.Nodes {
		return badInput(fmt.Errorf("--min-isr %d: the cluster Metadata lists %d broker(s), so no topic could take acks=all writes; lower --min-isr", c.MinISR, c.Nodes))
	}
	return nil
}

// readSettings reads back, for a runtime whose brokers are foreign, the
// settings the checker's theory reasons with: the topic's min ISR and
// unclean election (DescribeConfigs on the topic) and the brokers'
// replica.lag.time.max.ms. It updates rec and says what it read, and what
// differs from the flags, in notes.
func readSettings(ctx context.Context, bootstrap []string, brokers []int32, topic string, rec *history.Config) (notes []string, err error) {
	adm, closeFn, err := adminClient(bootstrap)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("DescribeConfigs of topic %s: %w", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return nil, fmt.Errorf("DescribeConfigs of topic %s: %w", topic, err)
	}
	if rc.Err != nil {
		return nil, fmt.Errorf("DescribeConfigs of topic %s: %w", topic, rc.Err)
	}
	value := func(rc kadm.ResourceConfig, name string) (string, bool) {
		for _, c := range rc.Configs {
			if c.Key == name && c.Value != nil {
				return *c.Value, true
			}
		}
		return "", false
	}
	// One broker's resource: its static configs (replica.lag.time.max.ms)
	// and the broker-level value of a topic config the topic's own
	// description lacks.
	if len(brokers) > 0 {
		brokers = brokers[:1]
	}
	bcs, bErr := adm.DescribeBrokerConfigs(ctx, brokers...)
	broker := func(name string) (string, bool) {
		if bErr != nil {
			return "", false
		}
		for _, bc := range bcs {
			if bc.Err == nil {
				if v, ok := value(bc, name); ok {
					return v, true
				}
			}
		}
		return "", false
	}
	// Kafka describes every topic config with its source; an
	// implementation that describes fewer gets, for a config the theory
	// needs, the broker's value, else Kafka's documented default, said so
	// in the notes (the report) and in test.json's "assumed".
	setting := func(name, kafkaDefault, flag string) string {
		if v, ok := value(rc, name); ok {
			return v
		}
		if rec.Assumed == nil {
			rec.Assumed = map[string]string{}
		}
		if v, ok := broker(name); ok {
			rec.Assumed[name] = "not described for the topic: the broker's value " + v
			notes = append(notes, fmt.Sprintf("topic %s: %s not described for the topic: the broker's %s assumed (%s sets it at creation)", topic, name, v, flag))
			return v
		}
		rec.Assumed[name] = "not described by the cluster: Kafka default assumed (" + kafkaDefault + ")"
		notes = append(notes, fmt.Sprintf("topic %s: %s not described by the cluster: Kafka default assumed (%s; %s sets it at creation)", topic, name, kafkaDefault, flag))
		return kafkaDefault
	}
	v := setting(ConfigMinISR, "1", "--min-isr")
	minISR, err := strconv.Atoi(v)
	if err != nil {
		return nil, fmt.Errorf("topic %s: %s=%q: %w (--min-isr sets it)", topic, ConfigMinISR, v, err)
	}
	v = setting(ConfigUnclean, "false", "--unclean")
	unclean, err := strconv.ParseBool(v)
	if err != nil {
		return nil, fmt.Errorf("topic %s: %s=%q: %w (--unclean sets it)", topic, ConfigUnclean, v, err)
	}
	if minISR != rec.MinISR || unclean != rec.Unclean {
		notes = append(notes, fmt.Sprintf("the cluster runs topic %s with %s=%d, %s=%v (asked %d, %v): the check uses the cluster's",
			topic, ConfigMinISR, minISR, ConfigUnclean, unclean, rec.MinISR, rec.Unclean))
	}
	rec.MinISR, rec.Unclean = minISR, unclean
	// How the brokers sync is theirs, not the flag's: unknown here.
	rec.Fsync = ""
	// replica.lag.time.max.ms is a static broker config Kafka describes on
	// a broker's own resource (the cluster-wide one holds only dynamic
	// defaults); a cluster that does not answer it leaves the record
	// without one (the min-ISR check then runs without that bound).
	rec.ReplicaLagMax = 0
	if v, ok := broker(configLagMax); ok {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
			rec.ReplicaLagMax = history.Duration(time.Duration(ms) * time.Millisecond)
		}
	}
	if rec.ReplicaLagMax == 0 {
		notes = append(notes, "the cluster did not describe "+configLagMax+": recorded as unknown")
	}
	return notes, nil
}

// scheduleNotApplied says a run's faults did not all happen as drawn.
func scheduleNotApplied(failed int) string {
	return fmt.Sprintf("schedule not applied as drawn: %d nemesis operation(s) ended in an error (their error and commands are in the history)", failed)
}
