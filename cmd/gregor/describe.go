package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/dialer"
)

func init() { subcommands = append(subcommands, describeCmd) }

func describeCmd() *cobra.Command {
	var bootstrap string
	var transactions bool
	var sec securityFlags
	cmd := &cobra.Command{
		Use:   "describe --bootstrap HOST:PORT [--transactions] [TOPIC...]",
		Short: "Print topics exactly as Kafka 4.0's kafka-topics.sh --describe does, or open transactions as kafka-transactions.sh describe does",
		RunE: func(cmd *cobra.Command, topics []string) error {
			if bootstrap == "" {
				return &exitError{2, fmt.Errorf("no --bootstrap: give a broker's host:port (gregor up prints it)")}
			}
			if _, err := sec.load(); err != nil {
				return &exitError{2, err}
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...), dialer.Opt(10*time.Second), dialer.Auth())
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), 15*time.Second)
			defer cancel()
			if transactions {
				if len(topics) > 0 {
					return &exitError{2, fmt.Errorf("--transactions takes no topics (it lists every open transaction)")}
				}
				return describeTransactions(ctx, kadm.NewClient(cl), time.Now(), cmd.OutOrStdout())
			}
			return describeTopics(ctx, kadm.NewClient(cl), topics, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&bootstrap, "bootstrap", "", "broker address(es), comma separated")
	sec.register(cmd.Flags())
	cmd.Flags().BoolVar(&transactions, "transactions", false, "list the open transactions (Ongoing, PrepareCommit, PrepareAbort): id, producer id and epoch, state, age, partitions")
	return cmd
}

// openTxnStates are the states of a transaction not yet complete.
var openTxnStates = []string{"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"}

// describeTransactions writes the open transactions in the columns of
// kafka-transactions.sh describe, one line each, oldest first.
func describeTransactions(ctx context.Context, adm *kadm.Client, now time.Time, w io.Writer) error {
	listed, err := adm.ListTransactions(ctx, nil, openTxnStates)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	defer tw.Flush()
	fmt.Fprintln(tw, "CoordinatorId\tTransactionalId\tProducerId\tProducerEpoch\tTransactionState\tTransactionTimeoutMs\tCurrentTransactionStartTimeMs\tTransactionDurationMs\tTopicPartitions")
	ids := listed.TransactionalIDs()
	if len(ids) == 0 {
		return nil
	}
	described, err := adm.DescribeTransactions(ctx, ids...)
	if err != nil {
		return err
	}
	ds := described.Sorted()
	sort.SliceStable(ds, func(i, j int) bool { return ds[i].StartTimestamp < ds[j].StartTimestamp })
	for _, d := range ds {
		if d.Err != nil {
			fmt.Fprintf(tw, "-\t%s\t-\t-\t%v\t-\t-\t-\t-\n", d.TxnID, d.Err)
			continue
		}
		if !slices.Contains(openTxnStates, d.State) {
			continue // completed between the list and the describe
		}
		var parts []string
		for _, tp := range d.Topics.Sorted() {
			for _, p := range tp.Partitions {
				parts = append(parts, fmt.Sprintf("%s-%d", tp.Topic, p))
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%s\n", d.Coordinator, d.TxnID, d.ProducerID, d.ProducerEpoch, d.State,
			d.TimeoutMillis, d.StartTimestamp, now.UnixMilli()-d.StartTimestamp, strings.Join(parts, ","))
	}
	return nil
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}

// kafkaUUID prints a topic id as Kafka's Uuid.toString does: URL-safe
// base64 without padding (22 characters).
func kafkaUUID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// describeTopics writes the layout of Kafka 4.0's TopicCommand
// (tools/.../TopicCommand.java, TopicDescription and PartitionDescription
// .printDescription): per topic a line
//
//	Topic: T<TAB>TopicId: ID<TAB>PartitionCount: N<TAB>ReplicationFactor: R<TAB>Configs: k=v,...
//
// then per partition, in partition order,
//
//	<TAB>Topic: T<TAB>Partition: P<TAB>Leader: L<TAB>Replicas: a,b<TAB>Isr: a,b<TAB>Elr: <TAB>LastKnownElr:
//
// Leader is "none" when there is none. Configs lists every config whose
// source is not DEFAULT_CONFIG (ConfigEntry.isDefault), in the iteration
// order of the java.util.HashMap the admin client's Config keeps them in.
// Elr and LastKnownElr (KIP-966) are empty: this cluster has no eligible
// leader replicas, as a Kafka 4.0 cluster with ELR disabled answers.
// During a reassignment (KIP-455) the partition line carries "Adding
// Replicas" and "Removing Replicas", and ReplicationFactor counts the
// target replicas, as TopicCommand's getReplicationFactor does.
func describeTopics(ctx context.Context, adm *kadm.Client, topics []string, w io.Writer) error {
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return err
	}
	names := md.Topics.Names()
	sort.Strings(names)
	var live []string
	for _, name := range names {
		if md.Topics[name].Err == nil {
			live = append(live, name)
		}
	}
	configs, err := topicConfigs(ctx, adm, live)
	if err != nil {
		return err
	}
	set := kadm.TopicsSet{}
	for _, name := range live {
		for _, p := range md.Topics[name].Partitions {
			set.Add(name, p.Partition)
		}
	}
	reassigning, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return fmt.Errorf("list partition reassignments: %w", err)
	}
	lookup := func(t string, p int32) (kadm.ListPartitionReassignmentsResponse, bool) {
		r, ok := reassigning[t][p]
		return r, ok
	}
	for _, name := range names {
		td := md.Topics[name]
		if td.Err != nil {
			return fmt.Errorf("topic %s: %w", name, td.Err)
		}
		parts := td.Partitions.Sorted()
		if len(parts) == 0 {
			continue
		}
		rf := len(parts[0].Replicas)
		if ra, ok := lookup(name, parts[0].Partition); ok {
			rf = len(ra.Replicas) - len(ra.AddingReplicas)
		}
		fmt.Fprintf(w, "Topic: %s\tTopicId: %s\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s\n",
			name, kafkaUUID(td.ID), len(parts), rf, configs[name])
		for _, p := range parts {
			leader := fmt.Sprint(p.Leader)
			if p.Leader < 0 {
				leader = "none"
			}
			fmt.Fprintf(w, "\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s",
				name, p.Partition, leader, joinIDs(p.Replicas), joinIDs(p.ISR))
			if ra, ok := lookup(name, p.Partition); ok {
				fmt.Fprintf(w, "\tAdding Replicas: %s\tRemoving Replicas: %s", joinIDs(ra.AddingReplicas), joinIDs(ra.RemovingReplicas))
			}
			fmt.Fprint(w, "\tElr: \tLastKnownElr: \n")
		}
	}
	return nil
}

// topicConfigs describes the topics' configs and renders each topic's
// Configs column. A topic the answering broker does not know yet (its
// metadata trails the controller's by a moment right after a creation) is
// asked again, bounded by ctx: printing an empty column would misstate the
// topic.
func topicConfigs(ctx context.Context, adm *kadm.Client, topics []string) (map[string]string, error) {
	out := map[string]string{}
	pending := topics
	for len(pending) > 0 {
		rcs, err := adm.DescribeTopicConfigs(ctx, pending...)
		if err != nil {
			return nil, fmt.Errorf("describe configs: %w", err)
		}
		var again []string
		for _, rc := range rcs {
			switch {
			case rc.Err == nil:
				out[rc.Name] = configsColumn(rc.Configs)
			case errors.Is(rc.Err, kerr.UnknownTopicOrPartition):
				again = append(again, rc.Name)
			default:
				return nil, fmt.Errorf("describe configs of %s: %w", rc.Name, rc.Err)
			}
		}
		if len(again) > 0 {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("describe configs of %v: %w", again, kerr.UnknownTopicOrPartition)
			case <-time.After(50 * time.Millisecond):
			}
		}
		pending = again
	}
	return out, nil
}

// configsColumn joins the non-default configs as k=v, in java.util.HashMap
// order over all the entries described (Config.entries()).
func configsColumn(cs []kadm.Config) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Key
	}
	var set []string
	for _, i := range javaHashMapOrder(names) {
		c := cs[i]
		if c.Source != kmsg.ConfigSourceDefaultConfig {
			set = append(set, c.Key+"="+c.MaybeValue())
		}
	}
	return strings.Join(set, ",")
}

// javaHashMapOrder returns the indexes of keys (distinct, inserted in this
// order into a new java.util.HashMap<String, _>) in the order the map
// iterates them: by bucket, (h ^ h>>>16) & (capacity-1) of String.hashCode,
// and by insertion within a bucket. The capacity starts at 16 and doubles
// whenever the size passes 3/4 of it; a resize keeps each bucket's relative
// order. (Buckets turn into trees only past 8 entries in a table of at
// least 64, which a few dozen configs never reach.)
func javaHashMapOrder(keys []string) []int {
	capacity := 16
	for n := 1; n <= len(keys); n++ {
		if n > capacity*3/4 {
			capacity *= 2
		}
	}
	bucket := func(s string) int {
		var h int32
		for _, r := range s {
			h = 31*h + int32(r)
		}
		u := uint32(h)
		return int((u ^ u>>16) & uint32(capacity-1))
	}
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return bucket(keys[idx[a]]) < bucket(keys[idx[b]]) })
	return idx
}
