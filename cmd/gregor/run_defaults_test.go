package main

import (
	"testing"

	"github.com/spf13/pflag"

	"gregor/harness"
	"gregor/runtime"
	"gregor/runtime/docker"
	"gregor/runtime/process"
	"gregor/workloads/kit"
)

// gregor run's defaults are what users run: Kafka's producer defaults,
// resolved as Kafka's ProducerConfig resolves them, and the harness's own
// link delay on the process runtime only (issue 28).
func TestRunDefaultsAreKafkas(t *testing.T) {
	parse := func(args ...string) (*pflag.FlagSet, harness.Config) {
		t.Helper()
		var cfg harness.Config
		fl := pflag.NewFlagSet("run", pflag.ContinueOnError)
		registerRun(fl, &cfg)
		if err := fl.Parse(args); err != nil {
			t.Fatal(err)
		}
		clientDefaults(fl, &cfg)
		return fl, cfg
	}
	cases := []struct {
		args        []string
		idempotence bool
		maxInFlight int
	}{
		{nil, true, kit.KafkaMaxInFlight},
		{[]string{"--acks", "1"}, false, kit.KafkaMaxInFlight},
		{[]string{"--acks", "0"}, false, kit.KafkaMaxInFlight},
		{[]string{"--idempotence=false"}, false, kit.KafkaMaxInFlight},
		{[]string{"--max-in-flight", "1"}, true, 1},
		// The transactional workloads send one record at a time.
		{[]string{"--workload", "txn", "--partitions", "4"}, true, 0},
		{[]string{"--workload", "group"}, true, kit.KafkaMaxInFlight},
	}
	for _, c := range cases {
		_, cfg := parse(c.args...)
		if len(c.args) == 0 && cfg.Acks != "all" {
			t.Fatalf("default acks %q, want all (Kafka's since 3.0)", cfg.Acks)
		}
		if cfg.Idempotence != c.idempotence || cfg.MaxInFlight != c.maxInFlight {
			t.Errorf("%v: idempotence %v max in flight %d, want %v and %d", c.args, cfg.Idempotence, cfg.MaxInFlight, c.idempotence, c.maxInFlight)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%v: the defaults do not validate: %v", c.args, err)
		}
	}
	// Asked for explicitly, idempotence with acks=1 is refused, naming
	// the fix, as Kafka's ConfigException does.
	if _, cfg := parse("--acks", "1", "--idempotence"); cfg.Validate() == nil {
		t.Error("--acks 1 --idempotence accepted")
	}

	for _, c := range []struct {
		name string
		args []string
		rt   runtime.Runtime
		want string
	}{
		{"process", nil, process.Runtime{}, harness.ProcessLinkDelay.String()},
		{"process, link delay given", []string{"--link-delay", "0s"}, process.Runtime{}, "0s"},
		{"docker", nil, docker.New(docker.Options{}), "0s"},
	} {
		fl, cfg := parse(c.args...)
		runtimeDefaults(fl, &cfg, c.rt)
		if got := cfg.LinkDelay.String(); got != c.want {
			t.Errorf("%s: link delay %s, want %s", c.name, got, c.want)
		}
	}
}
