package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A producer-id block file holding a negative start is refused with the
// fix, instead of handing out negative ids that would repeat.
func TestProducerIDBlockRejectsNegative(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "producer-id-block"), []byte("-5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openProducerIDs(nil, dir, 1); err == nil || !strings.Contains(err.Error(), "delete it") {
		t.Fatalf("negative block: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "producer-id-block"), []byte("2000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := openProducerIDs(nil, dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	id, err := p.allocate()
	if err != nil || id != 1<<40|2000 {
		t.Fatalf("first id after a restart at block 2000: %d, %v", id, err)
	}
}
