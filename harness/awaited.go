package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"gregor/checker"
	"gregor/history"
)

// AwaitedFile is the file in a run directory that says what a passed
// bound left unfinished (recovery, final reads); absent when nothing was.
const AwaitedFile = "awaited.json"

// Awaited is one bound a run passed and what it was still waiting for:
// recovery names the partitions without a leader or a full ISR, a final
// read the keys short of their end offsets ("t/1 at 873 of 886").
type Awaited struct {
	Phase string `json:"phase"`
	Bound string `json:"bound"`
	What  string `json:"what"`
	// Decisive: the check cannot decide without it (a final read cut
	// short cannot tell a lost record from a late one), so a verdict that
	// would be true, or false on unseen records only, is unknown.
	Decisive bool `json:"decisive,omitempty"`
}

func (a Awaited) String() string {
	return fmt.Sprintf("%s did not finish within %s: still awaited: %s", a.Phase, a.Bound, a.What)
}

func writeAwaited(dir history.RunDir, aw []Awaited) error {
	path := filepath.Join(string(dir), AwaitedFile)
	return writeFileAtomic(path, func(w io.Writer) error {
		b, err := json.MarshalIndent(aw, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	})
}

// readAwaited reads a run directory's awaited.json (nil when absent).
func readAwaited(dir history.RunDir) ([]Awaited, error) {
	b, err := os.ReadFile(filepath.Join(string(dir), AwaitedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var aw []Awaited
	if err := json.Unmarshal(b, &aw); err != nil {
		return nil, &history.ParseError{File: filepath.Join(string(dir), AwaitedFile), Msg: err.Error()}
	}
	return aw, nil
}

// applyAwaited joins what the run's passed bounds left unfinished to the
// result: every one as a warning, and a decisive one makes a verdict
// unknown that the missing reads could have changed: true, or false
// only on unseen records (acknowledged, not read: late or lost).
func applyAwaited(res *checker.Result, aw []Awaited) {
	for _, a := range aw {
		res.Warnings = append(res.Warnings, a.String())
		if !a.Decisive {
			continue
		}
		onlyUnseen := len(res.Forbidden) > 0
		for name := range res.Forbidden {
			if name != checker.Unseen {
				onlyUnseen = false
			}
		}
		if res.Valid == checker.ValidTrue || (res.Valid == checker.ValidFalse && onlyUnseen) {
			res.Valid = checker.ValidUnknown
		}
		if res.Valid == checker.ValidUnknown {
			res.UnknownReasons = append(res.UnknownReasons, a.String())
		}
	}
}
