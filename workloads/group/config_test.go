package group

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"gregor/workloads/queue"
)

func validCfg() Config {
	return Config{Consumers: 2}
}

func TestValidateDefaultsAndRefusals(t *testing.T) {
	c := validCfg()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.CommitMode != CommitAuto || c.Assignor != Range || c.FailureHandling != Swallow || c.MaxPollRecords != 50 ||
		c.AutoCommitInterval != 5*time.Second || c.Group != DefaultGroup || c.RestartSettle <= c.SessionTimeout ||
		c.GroupProtocol != ProtocolClassic {
		t.Fatalf("defaults: %+v", c)
	}
	bad := []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.Consumers = 0 }, "give 1.."},
		{func(c *Config) { c.Consumers = MaxConsumers + 1 }, "give 1.."},
		{func(c *Config) { c.FailureRate = 1 }, "[0, 1)"},
		{func(c *Config) { c.CommitMode = "never" }, "on-revoked"},
		{func(c *Config) { c.Assignor = "rr" }, "cooperative-sticky"},
		{func(c *Config) { c.FailureHandling = "panic" }, "swallow or retry"},
		{func(c *Config) { c.ProcessingTime = time.Hour }, "0..1m"},
		{func(c *Config) { c.GroupProtocol = "next-gen" }, "give classic or consumer"},
		{func(c *Config) { c.GroupProtocol, c.Assignor = ProtocolConsumer, CooperativeSticky }, "give --assignor range or sticky"},
	}
	for _, b := range bad {
		c := validCfg()
		b.mut(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("want an error naming %q, got %v", b.want, err)
		}
	}
	// The producers' config must leave the consumers to the group.
	producers := queue.Config{Bootstrap: []string{"127.0.0.1:9092"}, Partitions: 4, Acks: "all", Producers: 1, Consumers: 1}
	if _, err := New(producers, validCfg(), nil, time.Now()); err == nil || !strings.Contains(err.Error(), "replace them") {
		t.Errorf("producers with queue consumers: want an error naming %q, got %v", "replace them", err)
	}
}

// The commit modes map onto the configuration the checker's theory reads.
func TestHistoryMode(t *testing.T) {
	for mode, want := range map[string]struct {
		auto bool
		m    string
	}{CommitAuto: {true, "auto"}, CommitAutoGreedy: {true, "auto-greedy"}, CommitBefore: {false, "before-processing"}, CommitAfter: {false, "after-processing"}, CommitOnRevoked: {false, "on-revoked"}} {
		c := Config{CommitMode: mode}
		if a, m := c.HistoryMode(); a != want.auto || m != want.m {
			t.Errorf("%s: %v %q", mode, a, m)
		}
	}
}

// A killed dialer cuts the connections it made and refuses new ones: the
// crashed consumer can send nothing more.
func TestKillDialer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { buf := make([]byte, 1); c.Read(buf); c.Close() }()
		}
	}()
	k := newKillDialer(nil, 0)
	conn, err := k.dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	k.kill()
	if _, err := conn.Write([]byte("x")); err == nil {
		t.Error("write on a killed connection succeeded")
	}
	if _, err := k.dial(context.Background(), "tcp", ln.Addr().String()); err != errCrashed {
		t.Errorf("dial after kill: %v", err)
	}
}
