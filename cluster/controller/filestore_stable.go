package controller

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	"gregor/internal/atomicfile"
)

func (s *fileStore) loadStable() error {
	b, err := s.fs.ReadFile(filepath.Join(s.dir, stableFileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return json.Unmarshal(b, &s.stable)
}

// saveStable rewrites the stable file atomically; it holds only raft's
// current term and vote, so it is tiny and rarely written.
func (s *fileStore) saveStable() error {
	b, err := json.Marshal(s.stable)
	if err != nil {
		return err
	}
	return atomicfile.WriteFileFS(s.fs, filepath.Join(s.dir, stableFileName), b, 0o644)
}

// Set implements raft.StableStore.
func (s *fileStore) Set(key, val []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stable[string(key)] = append([]byte(nil), val...)
	return s.saveStable()
}

// Get implements raft.StableStore.
func (s *fileStore) Get(key []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.stable[string(key)]
	if !ok {
		return nil, errKeyNotFound
	}
	return append([]byte(nil), v...), nil
}

// SetUint64 implements raft.StableStore.
func (s *fileStore) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 implements raft.StableStore; a missing key reads as 0.
func (s *fileStore) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if errors.Is(err, errKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, errors.New("controller: stable value is not a uint64")
	}
	return binary.BigEndian.Uint64(v), nil
}
