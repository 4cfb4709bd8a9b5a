package checker

import (
	"cmp"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gregor/history"
)

func readFixture(t *testing.T, name string) []history.Op {
	t.Helper()
	ops, _, warns, err := history.ReadFile(filepath.Join("testdata", name+".jsonl"))
	if err != nil || len(warns) > 0 {
		t.Fatalf("%s: %v %v", name, err, warns)
	}
	return ops
}

// fixtureMetadata reads testdata/NAME.metadata.jsonl when it exists, with
// the configuration its check needs (acks=all, min ISR 2, no faults, so
// every anomaly is forbidden); else nil and no samples.
func fixtureMetadata(t *testing.T, name string) (*history.Config, []history.MetadataSample) {
	t.Helper()
	md, warns, err := history.ReadMetadataFile(filepath.Join("testdata", name+".metadata.jsonl"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil || len(warns) > 0 {
		t.Fatalf("%s metadata: %v %v", name, err, warns)
	}
	return &history.Config{Acks: "all", MinISR: 2, RF: 3}, md
}

// Each fixture holds exactly one anomaly; the checker must name it, and only
// it, with the operations (by index) that show it.
func TestFixturesNameExactlyTheirAnomaly(t *testing.T) {
	cases := []struct {
		anomaly string
		ops     []int64 // indexes the first example must name
		key     string
	}{
		{LostWrite, []int64{3}, "t/0"},
		{Unseen, []int64{3}, "t/0"},
		{Duplicate, []int64{3, 7}, "t/0"},
		{InconsistentOffsets, []int64{3, 13}, "t/0"},
		{NonmonotonicSend, []int64{1, 1}, "t/0"},
		{PollSkip, []int64{9, 11}, "t/0"},
		{NonmonotonicPoll, []int64{5, 7}, "t/0"},
		{G1a, []int64{1, 5}, "t/0"},
		{CommittedSkip, []int64{7}, "t/0"},
		{Redelivered, []int64{6, 12}, "t/0"},
		{CommittedOffsetRegression, []int64{8, 11, 13}, "t/0"},
		{Nonlinearizable, []int64{3, 5}, "t/0"},
		{UnderMinISRAck, []int64{1}, "t/0"},
		// Transactions: examples spanning keys name none ("").
		{AbortedRead, []int64{1, 5}, "t/0"},
		{TornTransaction, []int64{1, 1, 5}, ""},
		{LostCommittedWrite, []int64{1}, "t/0"},
		{IntermediateRead, []int64{3, 1, 1}, "t/0"},
		{G0, []int64{2, 3}, ""},
		{G1c, []int64{2, 3}, ""},
		{GSingle, []int64{5, 3}, ""},
		{EOSDuplicate, []int64{1}, "in/0"},
		{EOSMissing, []int64{3, 9}, ""},
		{EOSReorder, []int64{5, 5}, "out/0"},
		{EOSOffsetMismatch, []int64{3, 9}, ""},
		// Share groups (share.go).
		{ShareDoubleAcquire, []int64{3, 5, 7}, "t/0"},
		{ShareAcceptedRedelivered, []int64{3, 5, 7}, "t/0"},
		{ShareSkip, []int64{1, 5}, "t/0"},
		{ShareOverLimit, []int64{11}, "t/0"},
		{ShareReleaseLost, []int64{3}, "t/0"},
		{ShareLateAck, []int64{3, 5}, "t/0"},
		// Authorization (authz.go): the revocation names no key.
		{UnauthorizedWrite, []int64{5, 9}, ""},
		{UnauthorizedRead, []int64{5, 9}, ""},
	}
	if len(cases) != len(AnomalyNames) {
		t.Fatalf("%d fixtures for %d anomaly names", len(cases), len(AnomalyNames))
	}
	for _, c := range cases {
		t.Run(c.anomaly, func(t *testing.T) {
			out := t.TempDir()
			cfg, md := fixtureMetadata(t, c.anomaly)
			res, err := Check(readFixture(t, c.anomaly), cfg, Options{OutDir: out, Metadata: md})
			if err != nil {
				t.Fatal(err)
			}
			if res.Valid != ValidFalse {
				t.Errorf("valid = %v, want false", res.Valid)
			}
			var found []string
			for name := range res.Counts {
				found = append(found, name)
			}
			if len(found) != 1 || found[0] != c.anomaly || res.Counts[c.anomaly] != 1 {
				t.Fatalf("anomalies %v, want exactly one %s; result:\n%s", res.Counts, c.anomaly, res.JSON())
			}
			if _, ok := res.Forbidden[c.anomaly]; !ok {
				t.Errorf("%s not forbidden (configuration %+v)", c.anomaly, cfg)
			}
			ex := res.Anomalies[c.anomaly][0]
			var got []int64
			for _, r := range ex.Ops {
				got = append(got, r.Index)
				if c.key != "" && r.Key != c.key {
					t.Errorf("op %d names key %q", r.Index, r.Key)
				}
			}
			if !slices.Equal(got, c.ops) {
				t.Errorf("example names ops %v, want %v:\n%s", got, c.ops, res.JSON())
			}
			if c.anomaly == Nonlinearizable {
				if ex.Visualization == "" {
					t.Fatal("no visualization path")
				}
				b, err := os.ReadFile(ex.Visualization)
				if err != nil || !strings.Contains(string(b), "<html") {
					t.Fatalf("visualization %s: %v", ex.Visualization, err)
				}
				if res.Linearizability["t/0"].Status != "illegal" {
					t.Errorf("key status %q", res.Linearizability["t/0"].Status)
				}
			}
		})
	}
}

func TestCleanAndIndeterminateFixturesPass(t *testing.T) {
	for _, name := range []string{"clean", "indeterminate-missing"} {
		res, err := Check(readFixture(t, name), nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Valid != ValidTrue || len(res.Counts) != 0 {
			t.Errorf("%s: valid %v, anomalies %v", name, res.Valid, res.Counts)
		}
		if res.ConfigNote == "" || !strings.Contains(res.ConfigNote, "forbidden") {
			t.Errorf("%s: config note %q does not say every anomaly is forbidden", name, res.ConfigNote)
		}
	}
}

func TestIndeterminateFixtureAvailability(t *testing.T) {
	res, err := Check(readFixture(t, "indeterminate-missing"), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Availability
	// 10 ok; 11, 12 info; 13 fail; 14 never completed (info).
	if a.Sends != 5 || a.OK != 1 || a.Fail != 1 || a.Info != 3 {
		t.Fatalf("availability %+v", a)
	}
	if a.ErrorsByCode["NOT_ENOUGH_REPLICAS"] != 1 || a.ErrorsByCode["REQUEST_TIMED_OUT"] != 1 || a.ErrorsByCode["NETWORK_EXCEPTION"] != 1 {
		t.Fatalf("errors by code %v", a.ErrorsByCode)
	}
	// The only ok send completes at 200; the history runs from 100 to 1200.
	if a.LongestOutage.From != 200 || a.LongestOutage.To != 1200 {
		t.Fatalf("longest outage %+v", a.LongestOutage)
	}
}

func TestCleanFixtureRecovery(t *testing.T) {
	res, err := Check(readFixture(t, "clean"), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Availability.Recovery
	// The kill completes at 500; the first ok send invoked after it completes at 700.
	if len(rec) != 1 || rec[0].RecoverNs["t/0"] != 200 {
		t.Fatalf("recovery %+v", rec)
	}
}

func TestNoReadsIsUnknown(t *testing.T) {
	ops := readFixture(t, "clean")
	var sendsOnly []history.Op
	for _, op := range ops {
		if op.F == history.FSend {
			sendsOnly = append(sendsOnly, op)
		}
	}
	res, err := Check(sendsOnly, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Every ok send is unseen (forbidden) -> false; without sends at all -> unknown.
	if res.Valid != ValidFalse {
		t.Errorf("sends without reads: valid %v", res.Valid)
	}
	res, err = Check(nil, nil, Options{})
	if err != nil || res.Valid != ValidUnknown || len(res.UnknownReasons) == 0 {
		t.Errorf("empty history: valid %v, reasons %v, err %v", res.Valid, res.UnknownReasons, err)
	}
}

func TestInputErrors(t *testing.T) {
	op := func(i int64, p history.Process, typ history.Type, f string) history.Op {
		o := history.Op{Index: i, Time: i * 10, Process: p, Type: typ, F: f}
		if f == history.FSend {
			o.Mops = []history.Mop{history.Send("t/0", i)}
		}
		return o
	}
	cases := map[string][]history.Op{
		"two open ops":     {op(0, 0, history.Invoke, "send"), op(1, 0, history.Invoke, "send")},
		"orphan ok":        {op(0, 0, history.OK, "send")},
		"mismatched f":     {op(0, 0, history.Invoke, "send"), op(1, 0, history.OK, "poll")},
		"value sent twice": {op(0, 0, history.Invoke, "send"), op(1, 0, history.OK, "send"), op(2, 1, history.Invoke, "send"), op(3, 1, history.OK, "send")},
	}
	// make the last case reuse one value
	cases["value sent twice"][2].Mops = []history.Mop{history.Send("t/0", 0)}
	cases["value sent twice"][3].Mops = []history.Mop{history.Send("t/0", 0)}
	cases["value sent twice"][1].Mops = []history.Mop{history.Send("t/0", 0)}
	for name, ops := range cases {
		_, err := Check(ops, nil, Options{})
		var ie *InputError
		if err == nil || !errorsAs(err, &ie) {
			t.Errorf("%s: want an InputError, got %v", name, err)
		}
	}
}

// NOT_ENOUGH_REPLICAS_AFTER_APPEND means the leader may have appended the
// batch (seed 003): reading it is not an aborted read.
func TestAfterAppendFailureIsIndeterminate(t *testing.T) {
	ops := readFixture(t, "G1a")
	ops[1].Error = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
	res, err := Check(ops, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid != ValidTrue || len(res.Counts) != 0 || res.Availability.Info != 1 {
		t.Fatalf("valid %v counts %v availability %+v", res.Valid, res.Counts, res.Availability)
	}
}

// Traps for committed-offset-regression: a later or concurrent lower commit
// explains a lower start, an unknown commit proves nothing; a lower commit
// the same consumer made before, or the new owner made after, does not.
func TestCommittedOffsetRegressionTraps(t *testing.T) {
	commit := func(index, time int64, proc history.Process, typ history.Type, offset int64) history.Op {
		return history.Op{Index: index, Time: time, Process: proc, Type: typ, F: history.FCommit, Group: "g",
			Offsets: []history.KeyOffset{{Key: "t/0", Offset: offset}}}
	}
	with := func(extra ...history.Op) []history.Op {
		ops := slices.Clone(readFixture(t, "committed-offset-regression"))
		ops = append(ops, extra...)
		slices.SortStableFunc(ops, func(a, b history.Op) int { return cmp.Compare(a.Time, b.Time) })
		for i := range ops {
			ops[i].Index = int64(i)
		}
		return ops
	}
	cases := []struct {
		name string
		ops  []history.Op
		want bool // anomaly expected
	}{
		{"another consumer committed lower after", with(commit(0, 750, 3, history.OK, 0)), false},
		{"another consumer's unknown lower commit in flight", with(commit(0, 650, 3, history.Info, 0)), false},
		{"the same consumer committed lower before", with(commit(0, 650, 1, history.OK, 0)), true},
		{"the new owner commits lower after its poll", with(commit(0, 1300, 2, history.OK, 0)), true},
	}
	for _, c := range cases {
		res, err := Check(c.ops, nil, Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := res.Counts[CommittedOffsetRegression] > 0; got != c.want {
			t.Errorf("%s: committed-offset-regression %v, want %v (%v)", c.name, got, c.want, res.Counts)
		}
	}
	unknown := slices.Clone(readFixture(t, "committed-offset-regression"))
	unknown[8].Type = history.Info
	res, err := Check(unknown, nil, Options{})
	if err != nil || res.Counts[CommittedOffsetRegression] != 0 {
		t.Errorf("an unknown commit proves nothing: %v %v", res.Counts, err)
	}
}

// The first false alarm of issue 28 (make check, acks=all, min ISR 1, unclean
// on, idempotence on, kill-leader): a consumer read a batch from the old
// leader before its acknowledgement, an unclean election lost it, and the
// producer's retry landed at a later offset of the new leader's log. The
// theory allows it where records consumers read can vanish, and forbids it
// where the next leader always holds the batch and its sequence.
func TestDuplicateAfterReadLoss(t *testing.T) {
	ops := readFixture(t, "duplicate-after-unclean")
	unclean := history.Config{Acks: "all", MinISR: 1, RF: 3, Idempotence: true, Unclean: true, Nemeses: []string{history.NemesisKill}}
	res, err := Check(ops, &unclean, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts[Duplicate] != 1 || res.Valid != ValidTrue || !strings.Contains(res.Allowed[Duplicate], "KIP-98") {
		t.Fatalf("unclean: valid %v counts %v allowed %v forbidden %v", res.Valid, res.Counts, res.Allowed, res.Forbidden)
	}
	for name, cfg := range map[string]history.Config{
		"clean election":               {Acks: "all", MinISR: 1, RF: 3, Idempotence: true, Nemeses: []string{history.NemesisKill}},
		"acks=1, clean, kill":          {Acks: "1", MinISR: 1, RF: 3, Idempotence: true, Nemeses: []string{history.NemesisKill}},
		"power loss with fsync always": {Acks: "all", MinISR: 1, RF: 3, Idempotence: true, LazyFS: true, Fsync: "always", Nemeses: []string{history.NemesisPowerLoss}},
	} {
		res, err := Check(ops, &cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := res.Forbidden[Duplicate]; !ok || res.Valid != ValidFalse {
			t.Errorf("%s: duplicate not forbidden: valid %v forbidden %v", name, res.Valid, res.Forbidden)
		}
	}
}

// Traps for duplicate: a retry the broker deduplicated (acknowledged at the
// offset a consumer had already read it at) and a value read twice at one
// offset by two consumers are one copy, in every configuration.
func TestDuplicateTraps(t *testing.T) {
	res, err := Check(readFixture(t, "duplicate-traps"), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid != ValidTrue || len(res.Counts) != 0 {
		t.Fatalf("valid %v counts %v:\n%s", res.Valid, res.Counts, res.JSON())
	}
}
