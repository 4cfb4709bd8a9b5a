package txn

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Each producer owns the partitions p mod Producers; bad settings are
// refused naming the flag that fixes them.
func TestConfig(t *testing.T) {
	c := Config{Partitions: 5, Producers: 2, Consumers: 1}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.owned(0), []int32{0, 2, 4}) || !slices.Equal(c.owned(1), []int32{1, 3}) {
		t.Fatalf("owned %v %v", c.owned(0), c.owned(1))
	}
	if c.TxnTimeout != DefaultTxnTimeout || c.MaxMops != 4 {
		t.Errorf("defaults %+v", c)
	}
	for _, bad := range []struct {
		c    Config
		flag string
	}{
		{Config{Partitions: 1, Producers: 2}, "--partitions"},
		{Config{Partitions: 2, Producers: 2, AbortRate: 1}, "--abort-rate"},
		{Config{Partitions: 2, Producers: 2, Think: 2 * time.Second}, "--txn-think"},
		{Config{Partitions: 2, Producers: 0}, "--concurrency"},
	} {
		if err := bad.c.Validate(); err == nil || !strings.Contains(err.Error(), bad.flag) {
			t.Errorf("%+v: %v, want an error naming %s", bad.c, err, bad.flag)
		}
	}
	if ids := TransactionalIDs(3); len(ids) != 3 || ids[2] != "gregor-txn-2" {
		t.Errorf("ids %v", ids)
	}
}
