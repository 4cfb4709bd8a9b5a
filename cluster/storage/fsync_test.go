package storage

import (
	"strings"
	"testing"
)

func TestParseFsyncPolicy(t *testing.T) {
	good := map[string]FsyncPolicy{
		"never":      {Mode: FsyncNever},
		"ALWAYS":     {Mode: FsyncAlways},
		"every:1000": {Mode: FsyncEveryN, N: 1000},
		" every:1 ":  {Mode: FsyncEveryN, N: 1},
	}
	for s, want := range good {
		got, err := ParseFsyncPolicy(s)
		if err != nil || got != want {
			t.Errorf("ParseFsyncPolicy(%q) = %+v, %v; want %+v", s, got, err, want)
		}
		if again, err := ParseFsyncPolicy(got.String()); err != nil || again != got {
			t.Errorf("String() of %+v does not parse back: %q", got, got.String())
		}
	}
	for _, s := range []string{"sometimes", "every:", "every:0", "every:-3", "every:x", "every 5"} {
		_, err := ParseFsyncPolicy(s)
		if err == nil || !strings.Contains(err.Error(), `"every:N"`) {
			t.Errorf("ParseFsyncPolicy(%q): err %v should list the accepted forms", s, err)
		}
	}
}

func TestFsyncPolicyIsObservable(t *testing.T) {
	cases := []struct {
		policy    FsyncPolicy
		lazy      bool
		wantSyncs int64 // after 20 appends of 2 records
		leftover  bool  // records left unsynced, so a Sync must fsync once more
	}{
		{FsyncPolicy{Mode: FsyncNever}, false, 0, true},
		{FsyncPolicy{Mode: FsyncAlways}, false, 20, false},
		{FsyncPolicy{Mode: FsyncEveryN, N: 5}, false, 6, true}, // every 3rd append (6 records); 4 left
		{FsyncPolicy{Mode: FsyncEveryN, N: 2}, false, 20, false},
		{FsyncPolicy{Mode: FsyncEveryN, N: 100}, false, 0, true},
		{FsyncPolicy{Mode: FsyncAlways}, true, 20, false},
		{FsyncPolicy{Mode: FsyncEveryN, N: 5}, true, 6, true},
	}
	for _, c := range cases {
		t.Run(c.policy.String(), func(t *testing.T) {
			l := openLog(t, t.TempDir(), Options{Fsync: c.policy, LazyFS: c.lazy})
			defer l.Close()
			appendBatches(t, l, 0, 20, 2)
			if got := l.fsyncs.Load(); got != c.wantSyncs {
				t.Fatalf("%d fsyncs, want %d", got, c.wantSyncs)
			}
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			// Sync fsyncs once when the policy left records unsynced, else not at all.
			after := l.fsyncs.Load()
			want := c.wantSyncs
			if c.leftover {
				want++
			}
			if after != want {
				t.Fatalf("Sync: %d fsyncs in total, want %d", after, want)
			}
			if err := l.Sync(); err != nil || l.fsyncs.Load() != after {
				t.Fatalf("second Sync: %v, fsyncs %d -> %d", err, after, l.fsyncs.Load())
			}
		})
	}
}

func TestRollSyncsTheOldSegment(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{SegmentBytes: 1000})
	defer l.Close()
	appendBatches(t, l, 0, 30, 2)
	if rolls := int64(l.NumSegments() - 1); rolls < 2 || l.fsyncs.Load() != rolls {
		t.Fatalf("%d fsyncs for %d rolls under fsync=never", l.fsyncs.Load(), rolls)
	}
}
