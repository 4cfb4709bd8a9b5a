package storage

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gregor/internal/fsys"
)

func TestEndOffsetForEpoch(t *testing.T) {
	c := &epochCache{entries: []EpochEntry{{1, 0}, {3, 10}, {4, 25}, {7, 40}}}
	const leo = 50
	cases := []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{-1, -1, -1}, // UNDEFINED asked, UNDEFINED answered
		{0, -1, -1},  // below every entry
		{1, 1, 10},   // first epoch ends where epoch 3 starts
		{2, 1, 10},   // unknown epoch between: the largest known below it
		{3, 3, 25},
		{4, 4, 40},
		{5, 4, 40},
		{6, 4, 40},
		{7, 7, leo}, // latest: LEO
		{8, 7, leo}, // above the latest: still the latest
		{1 << 30, 7, leo},
	}
	for _, tc := range cases {
		e, off := c.endOffsetFor(tc.epoch, leo)
		if e != tc.wantEpoch || off != tc.wantEnd {
			t.Errorf("EndOffsetForEpoch(%d) = (%d, %d), want (%d, %d)", tc.epoch, e, off, tc.wantEpoch, tc.wantEnd)
		}
	}
	empty := &epochCache{}
	for _, ep := range []int32{-1, 0, 5} {
		if e, off := empty.endOffsetFor(ep, leo); e != -1 || off != -1 {
			t.Errorf("empty cache: EndOffsetForEpoch(%d) = (%d, %d)", ep, e, off)
		}
	}
	single := &epochCache{entries: []EpochEntry{{5, 3}}}
	if e, off := single.endOffsetFor(5, leo); e != 5 || off != leo {
		t.Errorf("single entry: (%d, %d)", e, off)
	}
	if e, off := single.endOffsetFor(4, leo); e != -1 || off != -1 {
		t.Errorf("single entry, older epoch: (%d, %d)", e, off)
	}
}

func TestEpochCacheFromAppendsAndPersistence(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentBytes: 800})
	for _, ep := range []int32{1, 1, 3, 4, 4, 2, 7} { // 2 after 4: stale, no entry
		if err := l.Append(batchAt(l.LEO(), ep, 2)); err != nil {
			t.Fatal(err)
		}
	}
	// A batch without an epoch (-1) creates no entry either.
	if err := l.Append(batchAt(l.LEO(), -1, 2)); err != nil {
		t.Fatal(err)
	}
	want := []EpochEntry{{1, 0}, {3, 4}, {4, 6}, {7, 12}}
	if got := l.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	if e, ok := l.LatestEpoch(); !ok || e != 7 {
		t.Fatalf("latest %d %v", e, ok)
	}
	// A new leader records its epoch at LEO; stale epochs are no-ops; offsets outside the log fail.
	if err := l.AssignEpoch(9, l.LEO()); err != nil {
		t.Fatal(err)
	}
	if err := l.AssignEpoch(8, l.LEO()); err != nil {
		t.Fatal(err)
	}
	if err := l.AssignEpoch(10, l.LEO()+1); err == nil {
		t.Fatal("AssignEpoch past LEO accepted")
	}
	want = append(want, EpochEntry{9, 16})
	if got := l.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	if e, off := l.EndOffsetForEpoch(7); e != 7 || off != 16 {
		t.Fatalf("EndOffsetForEpoch(7) = (%d, %d)", e, off)
	}
	appendBatches(t, l, 9, 2, 2)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, Options{SegmentBytes: 800})
	if got := l.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("after reopen epochs %v, want %v", got, want)
	}
	if e, off := l.EndOffsetForEpoch(9); e != 9 || off != 20 {
		t.Fatalf("EndOffsetForEpoch(9) = (%d, %d) after reopen", e, off)
	}
	// Truncation trims entries starting at or after the new LEO.
	if err := l.TruncateTo(6); err != nil {
		t.Fatal(err)
	}
	if got := l.Epochs(); !slices.Equal(got, want[:2]) {
		t.Fatalf("after TruncateTo(6) epochs %v, want %v", got, want[:2])
	}
	l.Close()
	l = openLog(t, dir, Options{})
	defer l.Close()
	if got := l.Epochs(); !slices.Equal(got, want[:2]) {
		t.Fatalf("trim not persisted: epochs %v", got)
	}
}

// The KIP-101 scenario: a follower holds records of epoch 1 that the new leader never had; the
// leader's answer for epoch 1 makes the follower cut exactly those.
func TestFollowerTruncationByLeaderEpoch(t *testing.T) {
	leader := openLog(t, t.TempDir(), Options{})
	defer leader.Close()
	follower := openLog(t, t.TempDir(), Options{})
	defer follower.Close()
	appendBatches(t, leader, 1, 5, 2)   // epoch 1: [0, 10)
	appendBatches(t, follower, 1, 6, 2) // the follower got [10, 12) from the old leader
	if err := leader.AssignEpoch(2, leader.LEO()); err != nil {
		t.Fatal(err)
	}
	appendBatches(t, leader, 2, 3, 2) // epoch 2: [10, 16), different records at 10, 11

	fe, _ := follower.LatestEpoch()
	e, end := leader.EndOffsetForEpoch(fe)
	if e != 1 || end != 10 {
		t.Fatalf("leader answers (%d, %d) for epoch %d", e, end, fe)
	}
	if err := follower.TruncateTo(min(end, follower.LEO())); err != nil {
		t.Fatal(err)
	}
	if follower.LEO() != 10 {
		t.Fatalf("follower LEO %d", follower.LEO())
	}
	data, err := leader.Read(follower.LEO(), 1<<20, leader.LEO())
	if err != nil {
		t.Fatal(err)
	}
	if err := follower.Append(data); err != nil {
		t.Fatal(err)
	}
	if got := follower.Epochs(); !slices.Equal(got, leader.Epochs()) {
		t.Fatalf("follower epochs %v, leader %v", got, leader.Epochs())
	}
}

func TestRecoveryDropsEpochsBeyondLEO(t *testing.T) {
	dir := t.TempDir()
	opts := Options{LazyFS: true}
	l := openLog(t, dir, opts)
	appendBatches(t, l, 1, 3, 2)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	appendBatches(t, l, 2, 3, 2) // epoch 2 lives only in the page cache
	if got := l.Epochs(); len(got) != 2 {
		t.Fatalf("epochs %v", got)
	}
	l.Crash()
	l = openLog(t, dir, opts)
	defer l.Close()
	if l.LEO() != 6 {
		t.Fatalf("LEO %d after power cut, want 6", l.LEO())
	}
	if got := l.Epochs(); !slices.Equal(got, []EpochEntry{{1, 0}}) {
		t.Fatalf("epochs %v after recovery", got)
	}
	// And the checkpoint file says so too.
	c, err := loadEpochCache(fsys.OS{}, dir)
	if err != nil || !slices.Equal(c.entries, []EpochEntry{{1, 0}}) {
		t.Fatalf("checkpoint %v, %v", c, err)
	}
}

func TestEpochCheckpointCorruptFailsOpen(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{})
	appendBatches(t, l, 1, 1, 1)
	l.Close()
	if err := os.WriteFile(filepath.Join(dir, epochCheckpointFile), []byte("0\n2\n1 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if l, err := Open(dir, Options{}); err == nil {
		l.Close()
		t.Fatal("Open accepted an epoch checkpoint whose count does not match")
	}
}
