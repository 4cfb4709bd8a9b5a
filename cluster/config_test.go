package cluster

import (
	"strings"
	"testing"
)

// min.insync.replicas is validated once, where the broker's configuration
// enters: unset takes Kafka's default, below 1 is refused naming the flag
// (no clamp: the replicas assert what passes).
func TestConfigMinISR(t *testing.T) {
	base := Config{NodeID: 1, Listen: "127.0.0.1:0", DataDir: t.TempDir()}
	c := base
	c.Defaults()
	if err := c.Validate(); err != nil || c.MinISR != 1 {
		t.Fatalf("unset min ISR: %d, %v; want Kafka's default 1", c.MinISR, err)
	}
	c = base
	c.MinISR = 2
	c.Defaults()
	if err := c.Validate(); err != nil || c.MinISR != 2 {
		t.Fatalf("min ISR 2: %d, %v", c.MinISR, err)
	}
	c = base
	c.MinISR = -1
	c.Defaults()
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--min-isr") || c.MinISR != -1 {
		t.Fatalf("min ISR -1: %d, %v; want an error naming --min-isr, the value untouched", c.MinISR, err)
	}
}
