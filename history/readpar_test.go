package history

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// The parallel reader gives what the sequential one gives: the same ops,
// line numbers, warnings and error, for any number of workers and any batch
// size, and however much room it was given, on histories damaged in many ways (a bad line anywhere, a torn last
// line, blank lines, indexes that do not increase, a read error).
func TestParallelReadAgrees(t *testing.T) {
	var clean []string
	for i := 0; i < 100; i++ {
		clean = append(clean,
			fmt.Sprintf(`{"index":%d,"time":%d,"process":%d,"type":"invoke","f":"send","value":[["send","t/%d",%d]]}`, 3*i, 10*i, i%5, i%3, i),
			fmt.Sprintf(`{"index":%d,"time":%d,"process":%d,"type":"ok","f":"poll","value":[["poll",{"t/0":[[%d,1],[%d,2]]}]]}`, 3*i+1, 10*i+1, i%5, i, i+1),
			fmt.Sprintf(`{"index":%d,"time":%d,"process":"nemesis","type":"info","f":"kill","value":{"nodes":[%d]}}`, 3*i+2, 10*i+2, i%3))
	}
	rng := rand.New(rand.NewPCG(5, 6))
	errs, warned := 0, 0
	for trial := 0; trial < 200; trial++ {
		lines := append([]string(nil), clean[:1+rng.IntN(len(clean))]...)
		for d := rng.IntN(3); d > 0; d-- {
			j := rng.IntN(len(lines))
			switch rng.IntN(5) {
			case 0:
				lines[j] = lines[j][:rng.IntN(len(lines[j]))]
			case 1:
				lines[j] = "  "
			case 2:
				lines[j] = strings.Replace(lines[j], `"index":`, `"index":1`, 1)
			case 3:
				lines[j] = lines[j] + " x"
			default:
				lines = append(lines[:j], append([]string{""}, lines[j:]...)...)
			}
		}
		torn := rng.IntN(4) == 0
		if torn { // a write cut short
			last := lines[len(lines)-1]
			lines[len(lines)-1] = last[:rng.IntN(len(last)+1)]
		}
		text := strings.Join(lines, "\n")
		if !torn && rng.IntN(2) == 0 {
			text += "\n"
		}
		var readErr error
		if rng.IntN(10) == 0 {
			readErr = fmt.Errorf("disk on fire")
		}
		open := func() io.Reader {
			r := io.Reader(strings.NewReader(text))
			if readErr != nil {
				r = io.MultiReader(r, errReader{readErr})
			}
			return r
		}
		wantOps, wantLines, wantWarn, wantErr := readAll(open(), 0)
		if wantErr != nil {
			errs++
		}
		if len(wantWarn) > 0 {
			warned++
		}
		for _, workers := range []int{1, 2, 3} {
			for _, batch := range []int{1, 7, 2048} {
				// hint: room for no op, for some (the batches that fit are
				// decoded in place, the rest appended), for all.
				hint := []int{0, 7 + rng.IntN(100), 10000}[rng.IntN(3)]
				ops, lines, warn, err := readBatched(open(), hint, workers, batch)
				if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(warn, wantWarn) ||
					!reflect.DeepEqual(lines, wantLines) || !reflect.DeepEqual(ops, wantOps) {
					t.Fatalf("trial %d, %d workers, batches of %d, hint %d: got %d ops, lines %v, warnings %q, error %v; want %d ops, lines %v, warnings %q, error %v",
						trial, workers, batch, hint, len(ops), lines, warn, err, len(wantOps), wantLines, wantWarn, wantErr)
				}
			}
		}
	}
	if errs < 40 || warned < 10 || errs > 160 {
		t.Fatalf("%d of 200 trials failed, %d warned: the damage proves little", errs, warned)
	}
	// A line longer than the bound is an error naming it, as sequentially.
	long := `{"index":0,"time":0,"process":0,"type":"ok","f":"kill","value":"` + strings.Repeat("x", MaxLineBytes+(2<<20)) + `"}` + "\n"
	_, _, _, want := readAll(strings.NewReader("{\"index\":0,\"time\":0,\"process\":0,\"type\":\"ok\",\"f\":\"kill\"}\n"+long), 0)
	_, _, _, got := readBatched(bytes.NewReader([]byte("{\"index\":0,\"time\":0,\"process\":0,\"type\":\"ok\",\"f\":\"kill\"}\n"+long)), 0, 2, 2048)
	if want == nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("long line: got %v, want %v", got, want)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
