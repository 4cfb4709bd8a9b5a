package history

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestReadMetadata(t *testing.T) {
	good := `{"time":1,"broker":2,"controller":1,"partitions":[{"partition":0,"leader":2,"leader_epoch":3,"replicas":[1,2,3],"isr":[2,3]}]}
{"time":2,"broker":-1,"controller":-1,"error":"no broker answered","failed":[{"broker":1,"error":"refused"}]}
`
	s, w, err := ReadMetadata(strings.NewReader(good))
	if err != nil || len(w) != 0 || len(s) != 2 {
		t.Fatalf("%d samples, %v, %v", len(s), w, err)
	}
	if p := s[0].Partitions[0]; p.Leader != 2 || p.LeaderEpoch != 3 || len(p.ISR) != 2 || s[1].Failed[0].Broker != 1 {
		t.Fatalf("decoded %+v", s)
	}
	// A crash mid-write leaves a torn last line: dropped with a warning.
	s, w, err = ReadMetadata(strings.NewReader(good + `{"time":3,"bro`))
	if err != nil || len(s) != 2 || len(w) != 1 || !strings.Contains(w[0], "line 3") {
		t.Fatalf("torn last line: %d samples, %v, %v", len(s), w, err)
	}
	// A damaged line in the middle is an error naming it.
	_, _, err = ReadMetadata(strings.NewReader("{\"time\":1}\nnot json\n{\"time\":2}\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("damaged line 2: %v", err)
	}
	// A whole last line without its newline is kept.
	s, w, err = ReadMetadata(strings.NewReader(`{"time":5,"broker":1}`))
	if err != nil || len(w) != 0 || len(s) != 1 || s[0].Time != 5 {
		t.Fatalf("last line without newline: %+v %v %v", s, w, err)
	}
	// A line longer than the reader's buffer (a topic with many partitions).
	var b strings.Builder
	b.WriteString(`{"time":9,"broker":1,"partitions":[`)
	for i := range 3000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"partition":` + strconv.Itoa(i) + `,"leader":1,"leader_epoch":0,"replicas":[1,2,3],"isr":[1,2,3]}`)
	}
	b.WriteString("]}\n")
	s, _, err = ReadMetadata(strings.NewReader(b.String() + good))
	if err != nil || len(s) != 3 || len(s[0].Partitions) != 3000 {
		t.Fatalf("long line: %d samples, %v", len(s), err)
	}
	if _, _, err := ReadMetadataFile(filepath.Join(t.TempDir(), MetadataFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}
