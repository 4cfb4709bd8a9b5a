package docker

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The runtime talks to the engine DOCKER_HOST names (a remote engine), and
// says which one did not answer.
func TestDockerHostHonoured(t *testing.T) {
	t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := New(Options{}).Available(ctx)
	if err == nil || !strings.Contains(err.Error(), "no Docker engine answers at tcp://127.0.0.1:1") {
		t.Fatalf("got %v, want the DOCKER_HOST engine named", err)
	}
}
