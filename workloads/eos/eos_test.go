package eos

import (
	"strings"
	"testing"

	"gregor/history"
)

// Bad settings are refused naming the flag; the output topic, the ids and
// the output value scale are the ones the checker reads.
func TestConfig(t *testing.T) {
	c := Config{Partitions: 3, Pipelines: 2, Rate: 50}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.OutTopic() != "eos-out" || OutScale != history.EOSOutScale {
		t.Errorf("output %q scale %d", c.OutTopic(), OutScale)
	}
	if ids := TransactionalIDs(2); len(ids) != 2 || ids[1] != "gregor-eos-1" {
		t.Errorf("ids %v", ids)
	}
	for _, bad := range []struct {
		c    Config
		flag string
	}{
		{Config{Partitions: 0, Pipelines: 1, Rate: 1}, "--partitions"},
		{Config{Partitions: 1, Pipelines: 0, Rate: 1}, "--consumers"},
		{Config{Partitions: 1, Pipelines: 1, Rate: 0}, "--rate"},
	} {
		if err := bad.c.Validate(); err == nil || !strings.Contains(err.Error(), bad.flag) {
			t.Errorf("%+v: %v, want an error naming %s", bad.c, err, bad.flag)
		}
	}
}
