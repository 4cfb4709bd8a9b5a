package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func init() { subcommands = append(subcommands, describeCmd) }

func describeCmd() *cobra.Command {
	var bootstrap string
	cmd := &cobra.Command{
		Use:   "describe --bootstrap HOST:PORT [TOPIC...]",
		Short: "Print topics as kafka-topics.sh --describe does: Topic, Partition, Leader, Replicas, Isr",
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
			return describeTopics(ctx, kadm.NewClient(cl), topics, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&bootstrap, "bootstrap", "", "broker address(es), comma separated")
	return cmd
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
