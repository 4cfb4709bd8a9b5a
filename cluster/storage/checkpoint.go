package storage

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gregor/internal/atomicfile"
	"gregor/internal/fsys"
)

// File names inside a partition directory besides the segments.
const (
	hwCheckpointFile       = "high-watermark-checkpoint"
	recoveryPointFile      = "recovery-point-offset-checkpoint"
	epochCheckpointFile    = "leader-epoch-checkpoint"
	cleanShutdownFile      = ".clean-shutdown"
	tmpSuffix              = atomicfile.TmpSuffix // a crash's leftover, removed by recovery
	checkpointVersion      = 0
	maxCheckpointFileBytes = 1 << 20 // epoch files hold one line per leader change
)

// writeFileAtomic replaces dir/name with data so that a crash leaves the old or the new content,
// never a mix (internal/atomicfile: a temporary file, fsynced, renamed over, the directory fsynced).
func writeFileAtomic(fs fsys.FS, dir, name string, data []byte) error {
	return atomicfile.WriteFileFS(fs, filepath.Join(dir, name), data, 0o644)
}

// syncDir makes renames, creations and removals in dir durable.
func syncDir(fs fsys.FS, dir string) error { return atomicfile.SyncDirFS(fs, dir) }

// readCheckpointLines reads a Kafka-style checkpoint: a version line, a count line, then count
// lines of fields. ok is false when the file does not exist.
func readCheckpointLines(fs fsys.FS, path string) (lines [][]string, ok bool, err error) {
	data, err := fs.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if len(data) > maxCheckpointFileBytes {
		return nil, false, fmt.Errorf("checkpoint %s: %d bytes, more than %d", path, len(data), maxCheckpointFileBytes)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	var raw []string
	for sc.Scan() {
		raw = append(raw, strings.TrimSpace(sc.Text()))
	}
	if len(raw) < 2 {
		return nil, false, fmt.Errorf("checkpoint %s: want version and count lines, have %d lines", path, len(raw))
	}
	if v, err := strconv.Atoi(raw[0]); err != nil || v != checkpointVersion {
		return nil, false, fmt.Errorf("checkpoint %s: version %q, want %d", path, raw[0], checkpointVersion)
	}
	n, err := strconv.Atoi(raw[1])
	if err != nil || n < 0 || n != len(raw)-2 {
		return nil, false, fmt.Errorf("checkpoint %s: count %q does not match %d entry lines", path, raw[1], len(raw)-2)
	}
	for _, l := range raw[2:] {
		lines = append(lines, strings.Fields(l))
	}
	return lines, true, nil
}

func formatCheckpoint(lines []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(lines))
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// readOffsetCheckpoint reads a checkpoint holding one offset.
func readOffsetCheckpoint(fs fsys.FS, dir, name string) (int64, bool, error) {
	lines, ok, err := readCheckpointLines(fs, filepath.Join(dir, name))
	if err != nil || !ok {
		return 0, false, err
	}
	if len(lines) != 1 || len(lines[0]) != 1 {
		return 0, false, fmt.Errorf("checkpoint %s: want one offset", name)
	}
	v, err := strconv.ParseInt(lines[0][0], 10, 64)
	if err != nil || v < 0 {
		return 0, false, fmt.Errorf("checkpoint %s: bad offset %q", name, lines[0][0])
	}
	return v, true, nil
}

func writeOffsetCheckpoint(fs fsys.FS, dir, name string, v int64) error {
	return writeFileAtomic(fs, dir, name, formatCheckpoint([]string{strconv.FormatInt(v, 10)}))
}

// CheckpointHW durably records the high watermark (write, fsync, rename). The broker calls it
// periodically, as Kafka writes replication-offset-checkpoint; RecoveredHW returns it after Open.
func (l *Log) CheckpointHW(hw int64) error {
	if hw < 0 {
		return fmt.Errorf("storage: negative high watermark %d", hw)
	}
	l.hwMu.Lock()
	defer l.hwMu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	return writeOffsetCheckpoint(l.fs, l.dir, hwCheckpointFile, hw)
}

// RecoveredHW is the high watermark the checkpoint held at Open (0 without one), clamped to
// [StartOffset, LEO] as recovered: a power cut may have taken records the checkpoint covered.
func (l *Log) RecoveredHW() int64 { return l.recoveredHW }
