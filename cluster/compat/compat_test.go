package compat

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestClients runs every client against one three-broker cluster, each on
// its own topic; the last step takes a broker down (acks=all below min ISR)
// and so runs last.
func TestClients(t *testing.T) {
	kcat := requireTool(t, "kcat", "kcat")
	requirePython(t, "confluent_kafka", "python3-confluent-kafka")
	requirePython(t, "kafka", "python3-kafka")
	tc := startCluster(t)
	t.Run("kafka-python", func(t *testing.T) { kafkaPython(t, tc.in(t)) })
	t.Run("kcat", func(t *testing.T) { kcatSteps(t, tc.in(t), kcat) })
	t.Run("confluent-kafka", func(t *testing.T) { confluentKafka(t, tc.in(t)) })
	t.Run("sarama", func(t *testing.T) { saramaSteps(t, tc.in(t)) })
	t.Run("kcat-not-enough-replicas", func(t *testing.T) { kcatNotEnoughReplicas(t, tc.in(t), kcat) })
}

// kcatSteps: metadata (-L), an idempotent acks=all produce (-P), a consume
// to the end that exits (-C -e), a group consume that exits and commits
// (-G -e), and offset queries (-Q).
func kcatSteps(t *testing.T, tc *testCluster, kcat string) {
	const topic, n = "kcat-topic", 100
	b := []string{"-b", tc.bootstrap}
	// Created by the produce (auto.create.topics.enable, as in Kafka),
	// with the broker defaults: 1 partition, RF 1. Create it explicitly
	// with kadm instead, to have 3 partitions and RF 3.
	ctx := t.Context()
	if _, err := tc.admin().CreateTopic(ctx, 3, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	_, stderr := run(t, 60*time.Second, in.String(), false, kcat, append(b, "-P", "-t", topic, "-K:",
		"-X", "acks=all", "-X", "enable.idempotence=true")...)
	if strings.Contains(stderr, "ERROR") {
		t.Fatalf("produce: %s", stderr)
	}
	_, total := tc.endOffsets(topic)
	if total != n {
		t.Fatalf("%d records after kcat produced %d", total, n)
	}

	md, _ := run(t, 30*time.Second, "", false, kcat, append(b, "-L", "-t", topic)...)
	if !strings.Contains(md, " 3 brokers:") || !strings.Contains(md, fmt.Sprintf("topic \"%s\" with 3 partitions:", topic)) ||
		!regexp.MustCompile(`partition 0, leader \d, replicas: \d,\d,\d, isrs: \d,\d,\d`).MatchString(md) {
		t.Fatalf("kcat -L:\n%s", md)
	}

	// -e: exit at the end of every partition. Before the empty-records fix
	// librdkafka failed to parse the answer past the end and never exited.
	out, _ := run(t, 60*time.Second, "", false, kcat, append(b, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k:%s\n")...)
	if got := sortedLines(out); len(got) != n || got[0] != "k0:v0" {
		t.Fatalf("kcat -C -e read %d records (first %q), want %d", len(got), first(got), n)
	}

	out, _ = run(t, 60*time.Second, "", false, kcat, append(b, "-G", "kcat-group", "-X", "auto.offset.reset=earliest", "-e", "-q", "-f", "%s\n", topic)...)
	if got := sortedLines(out); len(got) != n {
		t.Fatalf("kcat -G -e read %d records, want %d", len(got), n)
	}
	ends, _ := tc.endOffsets(topic)
	tc.waitFor("kcat's group committed the end offsets", 15*time.Second, func() error {
		if c := tc.committed("kcat-group", topic); fmt.Sprint(c) != fmt.Sprint(ends) {
			return fmt.Errorf("committed %v, end %v", c, ends)
		}
		return nil
	})

	// -Q: the end offset (logical -1) of each partition.
	args := append(b, "-Q")
	for p := range 3 {
		args = append(args, "-t", fmt.Sprintf("%s:%d:-1", topic, p))
	}
	out, _ = run(t, 30*time.Second, "", false, kcat, args...)
	for p, end := range ends {
		if want := fmt.Sprintf("%s [%d] offset %d", topic, p, end); !strings.Contains(out, want) {
			t.Fatalf("kcat -Q lacks %q:\n%s", want, out)
		}
	}
}

// kcatNotEnoughReplicas: acks=all to a partition whose ISR is below
// min.insync.replicas is refused NOT_ENOUGH_REPLICAS, which kcat reports as
// Kafka's "Not enough in-sync replicas".
func kcatNotEnoughReplicas(t *testing.T, tc *testCluster, kcat string) {
	const topic = "strict"
	min3 := "3"
	if _, err := tc.admin().CreateTopic(t.Context(), 1, 3, map[string]*string{"min.insync.replicas": &min3}, topic); err != nil {
		t.Fatal(err)
	}
	tc.waitFor("full ISR", 10*time.Second, func() error {
		if p := tc.brokers[0].Image().Topics[topic]; p == nil || len(p.Partitions[0].ISR) != 3 {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	leader := tc.brokers[0].Image().Topics[topic].Partitions[0].Leader
	down := 3
	if leader == 3 {
		down = 2
	}
	tc.brokers[down-1].Close() // a controlled shutdown leaves the ISR at once
	tc.brokers[down-1] = nil
	tc.waitFor("ISR below min ISR", 15*time.Second, func() error {
		if p := tc.brokers[leader-1].Image().Topics[topic].Partitions[0]; len(p.ISR) != 2 {
			return fmt.Errorf("isr %v", p.ISR)
		}
		return nil
	})
	live := []string{}
	for _, b := range tc.brokers {
		if b != nil {
			live = append(live, b.Advertised())
		}
	}
	_, stderr := run(t, 60*time.Second, "refused\n", true, kcat, "-b", strings.Join(live, ","), "-P", "-t", topic,
		"-X", "acks=all", "-X", "retries=0", "-X", "message.timeout.ms=10000")
	if !strings.Contains(stderr, "Not enough in-sync replicas") {
		t.Fatalf("kcat reported %q, want Kafka's \"Not enough in-sync replicas\"", stderr)
	}
}

// clientReport is what the Python scripts print.
type clientReport struct {
	UnknownConfig string           `json:"unknown_config"`
	Configs       map[string]any   `json:"configs"`
	Produced      int              `json:"produced"`
	Consumed      int              `json:"consumed"`
	TooLarge      string           `json:"too_large"`
	Committed     map[string]int64 `json:"committed"`
	End           map[string]int64 `json:"end"`
}

func runPython(t *testing.T, script string, args ...string) clientReport {
	t.Helper()
	out, _ := run(t, 120*time.Second, "", false, python, append([]string{"testdata/" + script}, args...)...)
	var r clientReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%s printed %q: %v", script, out, err)
	}
	return r
}

// checkCommittedAtEnd: the group committed exactly the end offsets, and the
// end offsets count every record produced.
func checkCommittedAtEnd(t *testing.T, r clientReport) {
	t.Helper()
	var sum int64
	for p, end := range r.End {
		sum += end
		if r.Committed[p] != end {
			t.Fatalf("partition %s: committed %d, end %d", p, r.Committed[p], end)
		}
	}
	if sum != int64(r.Produced) || r.Consumed != r.Produced {
		t.Fatalf("produced %d, consumed %d, end offsets sum to %d", r.Produced, r.Consumed, sum)
	}
}

func confluentKafka(t *testing.T, tc *testCluster) {
	r := runPython(t, "confluent_kafka_client.py", tc.bootstrap, "ck-topic", "ck-group")
	if !strings.Contains(r.UnknownConfig, "Unknown topic config name: no.such.config") {
		t.Fatalf("an unknown topic config answered %q", r.UnknownConfig)
	}
	min, _ := r.Configs["min.insync.replicas"].(map[string]any)
	if min["value"] != "2" || min["source"] != float64(1) { // DYNAMIC_TOPIC_CONFIG
		t.Fatalf("min.insync.replicas described as %v", min)
	}
	if !strings.Contains(r.TooLarge, "Message size too large") {
		t.Fatalf("a record over max.message.bytes reported %q, want librdkafka's \"Broker: Message size too large\"", r.TooLarge)
	}
	checkCommittedAtEnd(t, r)
}

func kafkaPython(t *testing.T, tc *testCluster) {
	r := runPython(t, "kafka_python_client.py", tc.bootstrap, "kp-topic", "kp-group")
	if r.UnknownConfig != "InvalidConfigurationError" {
		t.Fatalf("an unknown topic config answered %q", r.UnknownConfig)
	}
	if r.Configs["min.insync.replicas"] != "2" {
		t.Fatalf("min.insync.replicas described as %v", r.Configs["min.insync.replicas"])
	}
	checkCommittedAtEnd(t, r)
}

func sortedLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
