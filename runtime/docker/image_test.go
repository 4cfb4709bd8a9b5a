package docker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
)

func TestImageReusedByContentHash(t *testing.T) {
	needEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt := New(Options{})
	// A copy with one byte appended: still a valid static ELF, another hash,
	// so this test builds an image of its own from nothing.
	b, err := os.ReadFile(peerBinary)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, byte(time.Now().UnixNano()), byte(time.Now().UnixNano()>>8), 0x42)
	bin := filepath.Join(t.TempDir(), "gregor")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	tag1, built1, err := rt.EnsureImage(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := newClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	defer cli.ImageRemove(context.Background(), tag1, image.RemoveOptions{Force: true, PruneChildren: true})
	if !built1 || tag1 != ImageTag(b) || !strings.HasPrefix(tag1, "gregor:") {
		t.Fatalf("first: tag %s built %v", tag1, built1)
	}
	ins1, err := cli.ImageInspect(ctx, tag1)
	if err != nil {
		t.Fatal(err)
	}
	tag2, built2, err := rt.EnsureImage(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	ins2, err := cli.ImageInspect(ctx, tag2)
	if err != nil {
		t.Fatal(err)
	}
	if built2 || tag2 != tag1 || ins2.ID != ins1.ID {
		t.Fatalf("second build was not a no-op: built %v, %s/%s, ids %s/%s", built2, tag1, tag2, ins1.ID, ins2.ID)
	}
	if ins1.Config.Labels[LabelManaged] != "true" {
		t.Fatalf("image labels %v", ins1.Config.Labels)
	}
}

func TestImageRefusesDynamicBinary(t *testing.T) {
	// The test binary itself is built with cgo (-race), hence dynamic; if
	// not, fall back to any dynamic system binary.
	for _, p := range []string{os.Args[0], "/bin/sh", "/usr/bin/env"} {
		_, err := readStatic(p)
		if err != nil && strings.Contains(err.Error(), "CGO_ENABLED=0") {
			return
		}
	}
	t.Skip("no dynamically linked binary found to try")
}

func TestImageRefusesMissingBinary(t *testing.T) {
	if _, err := readStatic(filepath.Join(t.TempDir(), "nope")); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("missing binary: %v", err)
	}
}
