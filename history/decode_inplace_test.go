package history

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// Parsing a value in place (when f precedes it) must decode exactly what
// skipping it and parsing it afterwards decodes, and fail with the same
// error: on the design example, with fields reordered and repeated, and on
// thousands of lines damaged one byte at a time.
func TestValueInPlaceAgreesWithSkip(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(designExample), "\n")
	lines = append(lines,
		`{"index":1,"time":2,"process":0,"type":"ok","value":[["send","t/0",[42,17]]],"f":"send"}`,
		`{"index":1,"time":2,"process":0,"type":"ok","f":"poll","value":[["send","t/0",[42,17]]],"f":"send"}`,
		`{"index":1,"time":2,"process":0,"type":"ok","f":"send","value":[["send","t/0",[42,17]]],"f":"kill"}`,
		`{"index":1,"time":2,"process":0,"type":"ok","f":"send","value":[["send","t/0",[42,17]]],"value":[["send","t/0",3]]}`,
		`{"index":1,"time":2,"process":0,"type":"ok","f":"send","value":[["send","t/0",[42,17]]],"value":{"x":1}}`,
		`{"index":1,"time":2,"process":0,"type":"ok","f":"send","value":{"x":1},"value":[["send","t/0",3]]}`,
		`{"index":1,"time":2,"process":0,"type":"ok","f":"send","value":null}`,
		`{"index":1,"time":2,"process":0,"type":"ok","f":"send","value":[["send","t/0",99999999999999999999]]}`,
		`{"index":1,"time":2,"process":0,"type":"ok","f":"send","value":[["send","t/0",012]]}`,
		`{"index":1,"time":2,"process":0,"type":"ok","f":"commit","value":{"t/0":1.5}}`,
		`{"index":1,"time":2,"process":0,"type":"ok","f":"assign","value":["a","b\u0041"]}`,
	)
	rng := rand.New(rand.NewPCG(1, 2))
	const junk = `[]{},:"\ 0123456789.-enul`
	n := len(lines)
	for i := 0; i < 4000; i++ {
		b := []byte(lines[rng.IntN(n)])
		switch j := rng.IntN(len(b)); rng.IntN(3) {
		case 0:
			b[j] = junk[rng.IntN(len(junk))]
		case 1:
			b = append(b[:j], b[j+1:]...)
		default:
			b = append(b[:j], append([]byte{junk[rng.IntN(len(junk))]}, b[j:]...)...)
		}
		lines = append(lines, string(b))
	}
	var fast, slow decoder
	slow.skipOnly = true
	bad := 0
	for _, line := range lines {
		a, errA := fast.parseOp([]byte(line))
		b, errB := slow.parseOp([]byte(line))
		if fmt.Sprint(errA) != fmt.Sprint(errB) {
			t.Fatalf("%s\nin place: %v\nskipped: %v", line, errA, errB)
		}
		if errA != nil {
			bad++
			continue
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s\nin place: %+v\nskipped: %+v", line, a, b)
		}
	}
	if bad < 1000 || len(lines)-bad < 500 {
		t.Fatalf("%d of %d lines bad: the damage proves little", bad, len(lines))
	}
}
