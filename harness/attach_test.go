package harness

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/history"
)

// TestReadSettingsUndescribedConfig: against a Kafka-protocol cluster that
// describes fewer topic configs than Kafka (franz-go's kfake describes no
// unclean.leader.election.enable), the external runtime's setup is not
// refused: the missing config takes the broker's value, else Kafka's
// documented default, and test.json ("assumed") and the report's notes say
// "not described by the cluster: Kafka default assumed".
func TestReadSettingsUndescribedConfig(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	rec := history.Config{MinISR: 2, Unclean: true}
	notes, err := readSettings(ctx, c.ListenAddrs(), []int32{0}, "t", &rec)
	if err != nil {
		t.Fatalf("setup refused: %v", err)
	}
	if rec.Unclean {
		t.Errorf("unclean %v, want Kafka's default false", rec.Unclean)
	}
	a := rec.Assumed[ConfigUnclean]
	if !strings.Contains(a, "not described by the cluster: Kafka default assumed") {
		t.Errorf("test.json assumed[%s] = %q", ConfigUnclean, a)
	}
	joined := strings.Join(notes, "\n")
	if !strings.Contains(joined, ConfigUnclean+" not described by the cluster: Kafka default assumed") || !strings.Contains(joined, "--unclean") {
		t.Errorf("notes do not say the default was assumed and which flag sets it: %q", joined)
	}
	t.Logf("min.insync.replicas %d (assumed: %q); notes: %q", rec.MinISR, rec.Assumed[ConfigMinISR], notes)
}
