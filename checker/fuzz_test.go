package checker

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gregor/history"
)

// A history gregor never wrote (another tool's, a hand-edited one, a
// damaged file) must get an answer or an error naming the problem, never a
// panic or a verdict that contradicts itself. Seeded with every fixture and
// trap; `go test -fuzz FuzzCheck ./checker` mutates them (make test runs the
// seeds only).
func FuzzCheck(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no fixtures: %v", err)
	}
	for _, p := range files {
		if strings.HasSuffix(p, ".metadata.jsonl") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	configs := []*history.Config{nil, {Acks: "all", MinISR: 2, RF: 3}, {Acks: "1", MinISR: 1, RF: 3, Unclean: true}}
	f.Fuzz(func(t *testing.T, data []byte) {
		ops, _, _, err := history.ReadAll(bytes.NewReader(data))
		if err != nil {
			if _, ok := errors.AsType[*history.ParseError](err); !ok {
				t.Fatalf("a bad history's error names no line: %v", err)
			}
			return
		}
		for _, cfg := range configs {
			res, err := Check(ops, cfg, Options{KeyTimeout: time.Second, Workers: 1})
			if err != nil {
				if _, ok := errors.AsType[*InputError](err); !ok {
					t.Fatalf("a refused history's error names no operation: %v", err)
				}
				return // the same ops are refused under every configuration
			}
			checkCoherent(t, cfg, res)
		}
	})
}

// checkCoherent asserts what every result must satisfy: each anomaly
// counted is judged forbidden or allowed, not both; the verdict follows
// from them; examples never outnumber the count.
func checkCoherent(t *testing.T, cfg *history.Config, res Result) {
	t.Helper()
	for name, n := range res.Counts {
		_, forbidden := res.Forbidden[name]
		_, allowed := res.Allowed[name]
		if n <= 0 || forbidden == allowed {
			t.Fatalf("cfg %+v: %s counted %d, forbidden %v, allowed %v", cfg, name, n, forbidden, allowed)
		}
		if len(res.Anomalies[name]) > n {
			t.Fatalf("cfg %+v: %s: %d examples of %d", cfg, name, len(res.Anomalies[name]), n)
		}
	}
	for name := range res.Forbidden {
		if res.Counts[name] == 0 {
			t.Fatalf("cfg %+v: %s forbidden but not counted", cfg, name)
		}
	}
	if (len(res.Forbidden) > 0) != (res.Valid == ValidFalse) {
		t.Fatalf("cfg %+v: valid %v with forbidden %v", cfg, res.Valid, res.Forbidden)
	}
}
