package faultpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"

	"gregor/internal/atomicfile"
	"gregor/internal/jsonl"
)

// FileName is the control file in a broker's data directory: the points
// armed on the node (Control), replaced whole by the harness
// (WriteControl), polled by the broker (Watch), like faultnet's rules file.
// A file survives a restart, so a point stays armed on a restarted node;
// the firings file keeps its count.
const FileName = "faultpoints.json"

// FiringsName is the firings file beside it: one JSON line (Firing) per
// firing, appended by the broker before the action runs.
const FiringsName = "faultpoints.firings.jsonl"

// WriteControl replaces a node's control file whole (internal/atomicfile).
func WriteControl(path string, c Control) error {
	b, err := EncodeControl(c)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b, 0o644)
}

// EncodeControl is the control file's contents for c, for a runtime that
// puts the file in place itself (the docker runtime copies it into the
// container).
func EncodeControl(c Control) ([]byte, error) {
	if c.Arms == nil {
		c.Arms = []Arm{}
	}
	return json.Marshal(c)
}

// AppendFiring appends f to the firings file at path in one write
// (internal/jsonl): the line is in the OS's page cache before a crash
// action exits the process, so the harness reads it.
func AppendFiring(path string, f Firing) error { return jsonl.Append(path, f) }

// ReadFirings reads a firings file; a missing file has none. A torn last
// line (a crash mid-write) is skipped.
func ReadFirings(path string) ([]Firing, error) { return jsonl.Read[Firing](path) }

// ParseFirings reads a firings file's contents, as ReadFirings.
func ParseFirings(b []byte) ([]Firing, error) { return jsonl.Parse[Firing](b) }

// Counts are the firings per arming ID.
func Counts(fs []Firing) map[string]int {
	m := map[string]int{}
	for _, f := range fs {
		m[f.ID]++
	}
	return m
}

// Watch installs node with h, records its firings in dir's firings file
// (unless h.Record is set) and arms what dir's control file names, polled
// every interval until ctx ends, when it uninstalls the node. A missing
// file arms nothing; a malformed one keeps what is armed and calls onErr.
func Watch(ctx context.Context, node int32, dir string, h Handlers, interval time.Duration, onErr func(error)) {
	path, firings := filepath.Join(dir, FileName), filepath.Join(dir, FiringsName)
	if h.Record == nil {
		h.Record = func(f Firing) error { return AppendFiring(firings, f) }
	}
	Install(node, h)
	defer Uninstall(node)
	var last []byte
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		b, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if last != nil {
				_ = Set(node, nil, nil)
			}
			last = nil
		case err != nil:
			onErr(err)
		case !bytes.Equal(b, last):
			c, err := ParseControl(b)
			if err != nil {
				onErr(err)
				break
			}
			fs, err := ReadFirings(firings)
			if err != nil {
				onErr(err)
			}
			if err := Set(node, c.Arms, Counts(fs)); err != nil {
				onErr(err)
				break
			}
			last = b
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
