package history_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"

	"gregor/checker/checkertest"
	"gregor/history"
)

// Every generated history survives encode -> decode unchanged.
func TestRoundTripGenerated(t *testing.T) {
	ops := checkertest.Generate(checkertest.GenOptions{Seed: 5, Ops: 5000, Keys: 3, Producers: 3, Consumers: 2,
		FailRate: 0.1, InfoRate: 0.1, NemesisEvery: 300})
	var buf bytes.Buffer
	w := history.NewWriter(&buf, time.Hour) // Close must flush what the timer has not
	for _, op := range ops {
		if _, err := w.Write(op); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, _, warns, err := history.ReadAll(&buf)
	if err != nil || len(warns) > 0 {
		t.Fatal(err, warns)
	}
	if !reflect.DeepEqual(got, ops) {
		for i := range ops {
			if !reflect.DeepEqual(got[i], ops[i]) {
				t.Fatalf("op %d differs:\n got %+v\nwant %+v", i, got[i], ops[i])
			}
		}
		t.Fatalf("lengths %d vs %d", len(got), len(ops))
	}
}

// syncBuffer lets the test read what the writer's timer flushed.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

// A line written without Flush or Close reaches the file on its own: a
// harness that then crashes leaves it readable.
func TestWriterFlushesWithoutBeingAsked(t *testing.T) {
	var sb syncBuffer
	w := history.NewWriter(&sb, 5*time.Millisecond)
	defer w.Close()
	if _, err := w.Write(history.Op{Process: history.Nemesis, Type: history.Info, F: "kill", Raw: json.RawMessage(`{"nodes":[1]}`)}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000 && sb.Len() == 0; i++ { // bounded: at most ~10s
		time.Sleep(10 * time.Millisecond)
	}
	if sb.Len() == 0 {
		t.Fatal("nothing flushed without Flush or Close")
	}
}

func TestProcessAndTypeJSON(t *testing.T) {
	var v struct {
		P history.Process `json:"p"`
		Q history.Process `json:"q"`
		T history.Type    `json:"t"`
	}
	if err := json.Unmarshal([]byte(`{"p":"nemesis","q":7,"t":"info"}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.P != history.Nemesis || v.Q != 7 || v.T != history.Info {
		t.Fatalf("%+v", v)
	}
	b, _ := json.Marshal(v)
	if string(b) != `{"p":"nemesis","q":7,"t":"info"}` {
		t.Fatalf("%s", b)
	}
}
