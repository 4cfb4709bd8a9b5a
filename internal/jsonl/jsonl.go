// Package jsonl is the one way a broker's event files (fault-point firings,
// disk-fault events) are written and read: one JSON value a line, each
// appended in one write (O_APPEND), so a line is in the OS's page cache
// before a crash or halt that follows it; read back skipping a torn or
// unreadable line (a crash mid-write).
package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
)

// maxLine bounds one line; an event is a few hundred bytes.
const maxLine = 1 << 20

// Append appends v to the file at path as one line, in one write.
func Append(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = fh.Write(append(b, '\n'))
	return errors.Join(err, fh.Close())
}

// Read reads the file at path; a missing file has no lines, and a line that
// does not decode as a T (a torn last line) is skipped.
func Read[T any](path string) ([]T, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return Parse[T](b)
}

// Parse reads the lines of b, a whole file's contents (Read, or a copy of
// the file out of a container), skipping a line that does not decode.
func Parse[T any](b []byte) ([]T, error) {
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		var v T
		if json.Unmarshal(sc.Bytes(), &v) == nil {
			out = append(out, v)
		}
	}
	return out, sc.Err()
}
