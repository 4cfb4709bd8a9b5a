package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"gregor/internal/atomicfile"
	"gregor/internal/fsys"
)

// producerIDBlock is how many ids are reserved on disk at a time: a restart
// skips the rest of a block, never reuses an id.
const producerIDBlock = 1000

// producerIDs hands out producer ids unique across the cluster and across
// restarts: the node id in the high bits keeps brokers apart, and a block
// reserved on disk before use keeps one broker's restarts apart.
type producerIDs struct {
	mu   sync.Mutex
	fs   fsys.FS
	path string
	node int64
	// Invariant: 0 <= next <= limit, and limit is durably reserved. Both
	// hold by construction and are not checked: open refuses a negative
	// block, allocate reserves a new block before next would pass limit,
	// and only a crash could show whether a write was durable
	// (atomicfile's fsync is what promises it).
	next, limit int64
}

func openProducerIDs(fs fsys.FS, dir string, node int32) (*producerIDs, error) {
	fs = fsys.Or(fs)
	p := &producerIDs{fs: fs, path: filepath.Join(dir, "producer-id-block"), node: int64(node)}
	b, err := fs.ReadFile(p.path)
	switch {
	case err == nil:
		v, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if perr == nil && v < 0 {
			perr = fmt.Errorf("negative block start %d", v)
		}
		if perr != nil {
			return nil, fmt.Errorf("reading %s: %w (delete it to restart producer ids at a fresh block)", p.path, perr)
		}
		p.next, p.limit = v, v
	case os.IsNotExist(err):
	default:
		return nil, err
	}
	return p, nil
}

func (p *producerIDs) allocate() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next >= p.limit {
		limit := p.limit + producerIDBlock
		if err := atomicfile.WriteFileFS(p.fs, p.path, []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
			return 0, err
		}
		p.next, p.limit = p.limit, limit
	}
	id := p.node<<40 | p.next
	p.next++
	return id, nil
}
