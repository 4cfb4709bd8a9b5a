package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func init() { subcommands = append(subcommands, describeCmd) }

func describeCmd() *cobra.Command {
	var bootstrap string
	var transactions bool
	cmd := &cobra.Command{
		Use:   "describe --bootstrap HOST:PORT [--transactions] [TOPIC...]",
		Short: "Print topics as kafka-topics.sh --describe does (Topic, Partition, Leader, Replicas, Isr), or open transactions as kafka-transactions.sh describe does",
		RunE: func(cmd *cobra.Command, topics []string) error {
			if bootstrap == "" {
				return &exitError{2, fmt.Errorf("no --bootstrap: give a broker's host:port (gregor up prints it)")}
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
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

// describeTopics writes kafka-topics.sh's --describe layout: a summary line
// per topic, then one line per partition. Offline leaders print as "none".
func describeTopics(ctx context.Context, adm *kadm.Client, topics []string, w io.Writer) error {
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return err
	}
	names := md.Topics.Names()
	sort.Strings(names)
	cfgs, _ := adm.DescribeTopicConfigs(ctx, names...)
	for _, name := range names {
		td := md.Topics[name]
		if td.Err != nil {
			fmt.Fprintf(w, "Error for topic %s: %v\n", name, td.Err)
			continue
		}
		var set []string
		if rc, err := cfgs.On(name, nil); err == nil {
			for _, c := range rc.Configs {
				if c.Source == 1 /* DYNAMIC_TOPIC_CONFIG */ && c.Value != nil {
					set = append(set, c.Key+"="+*c.Value)
				}
			}
		}
		rf := 0
		if len(td.Partitions) > 0 {
			rf = len(td.Partitions[0].Replicas)
		}
		fmt.Fprintf(w, "Topic: %s\tTopicId: %s\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s\n",
			name, td.ID, len(td.Partitions), rf, strings.Join(set, ","))
		for _, p := range td.Partitions.Sorted() {
			leader := fmt.Sprint(p.Leader)
			if p.Leader < 0 {
				leader = "none"
			}
			fmt.Fprintf(w, "\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s\n",
				name, p.Partition, leader, joinIDs(p.Replicas), joinIDs(p.ISR))
		}
	}
	return nil
}
