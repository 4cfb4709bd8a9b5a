package checker

import (
	"strings"
	"testing"

	"gregor/history"
)

// Traps that must stay valid: an indeterminate transaction read by a
// read_committed consumer, an aborted one never read, a read_uncommitted
// control reading the aborted one, markers and aborted records leaving
// offset gaps, and a transaction that polled and then aborted (its reads
// are not kept, so the consumer's position is forgotten, not skipped).
func TestTxnTrapsStayValid(t *testing.T) {
	res, err := Check(readFixture(t, "txn-traps"), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid != ValidTrue || len(res.Counts) != 0 {
		t.Fatalf("valid %v, anomalies %v:\n%s", res.Valid, res.Counts, res.JSON())
	}
	st := res.Stats
	if st.UncommittedAbortedReads != 1 || st.TxnCommitted != 2 || st.TxnAborted != 2 || st.TxnUnknown != 1 {
		t.Errorf("stats %+v", st)
	}
	if l := res.Linearizability["t/0"]; l.Status != "skipped" {
		t.Errorf("transactional key's linearizability %+v, want skipped", l)
	}
}

// The traps are traps: each, changed to the anomaly it resembles, is found.
func TestTxnTrapsTurnedAreFound(t *testing.T) {
	cases := []struct {
		name string
		edit func(ops []history.Op)
		want string
	}{
		// The read_uncommitted control's read counted as read_committed.
		{"control read committed", func(ops []history.Op) { ops[4].F, ops[5].F = history.FPoll, history.FPoll }, AbortedRead},
		// The indeterminate transaction was in fact aborted.
		{"info read turned fail", func(ops []history.Op) { ops[1].Type = history.Fail }, AbortedRead},
	}
	for _, c := range cases {
		ops := readFixture(t, "txn-traps")
		c.edit(ops)
		res, err := Check(ops, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Counts[c.want] == 0 || res.Valid != ValidFalse {
			t.Errorf("%s: counts %v, want %s", c.name, res.Counts, c.want)
		}
	}
}

// Each cycle example prints its cycle, naming every operation on it.
func TestCycleExamplesPrintTheCycle(t *testing.T) {
	for name, want := range map[string]string{
		G0:      "op 2 -ww-> op 3 -ww-> op 2",
		G1c:     "op 2 -wr-> op 3 -wr-> op 2",
		GSingle: "op 5 -rw-> op 3 -wr-> op 5",
	} {
		res, err := Check(readFixture(t, name), nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if ex := res.Anomalies[name]; len(ex) != 1 || ex[0].Note != want {
			t.Errorf("%s: examples %+v, want note %q", name, ex, want)
		}
	}
}

// The theory of transactions: version 1 with request delays allows the
// KIP-890 anomalies, version 2 forbids them under the same faults, a fault
// that delays nothing allows nothing in version 1, and read skew
// (G-single) is always allowed.
func TestTxnTheory(t *testing.T) {
	base := func(v int, nemeses ...string) *history.Config {
		return &history.Config{Acks: "all", MinISR: 2, RF: 3, Idempotence: true, Workload: "txn", TransactionVersion: v, Nemeses: nemeses}
	}
	kip890 := []string{AbortedRead, TornTransaction, LostCommittedWrite, IntermediateRead, G0, G1c}
	v1 := Expect(base(1, history.NemesisPause))
	v2 := Expect(base(2, history.NemesisPause))
	v1kill := Expect(base(1, history.NemesisKill))
	for _, a := range kip890 {
		if !v1[a].Allowed || !strings.Contains(v1[a].Reason, "ordered delivery") {
			t.Errorf("v1 + pause: %s %+v, want allowed (ordered delivery)", a, v1[a])
		}
		if v2[a].Allowed || !strings.Contains(v2[a].Reason, "KIP-890") {
			t.Errorf("v2 + pause: %s %+v, want forbidden by KIP-890", a, v2[a])
		}
		if v1kill[a].Allowed {
			t.Errorf("v1 + kill: %s allowed: a kill delays no request", a)
		}
	}
	for _, cfg := range []*history.Config{base(2), base(1, history.NemesisKill)} {
		if e := Expect(cfg); !e[GSingle].Allowed {
			t.Errorf("%+v: G-single forbidden", cfg)
		}
	}
	// Wherever an acks=all record can be lost, a committed transaction can
	// be torn.
	unclean := base(2, history.NemesisKill)
	unclean.Unclean = true
	if e := Expect(unclean); !e[TornTransaction].Allowed || !e[LostCommittedWrite].Allowed || e[AbortedRead].Allowed {
		t.Errorf("unclean v2: torn %+v lost %+v aborted %+v", e[TornTransaction], e[LostCommittedWrite], e[AbortedRead])
	}
}

// The eos traps stay valid: an aborted pipeline transaction's output never
// read (its record processed again with the next attempt's value), and an
// input record past the committed offsets not yet in the output.
func TestEOSTrapsStayValid(t *testing.T) {
	res, err := Check(readFixture(t, "eos-traps"), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid != ValidTrue || len(res.Counts) != 0 {
		t.Fatalf("valid %v, anomalies %v:\n%s", res.Valid, res.Counts, res.JSON())
	}
	// Turned: the aborted transaction's output read is a duplicate (and an
	// aborted read).
	ops := readFixture(t, "eos-traps")
	ops[11].Mops[0].Polls[1].Records = append([]history.Record{{Offset: 0, Value: 1001}}, ops[11].Mops[0].Polls[1].Records...)
	res, err = Check(ops, nil, Options{})
	if err != nil || res.Counts[EOSDuplicate] != 1 || res.Counts[AbortedRead] != 1 {
		t.Fatalf("aborted output read: counts %v (%v)", res.Counts, err)
	}
}

// The eos anomalies: forbidden in both versions under kills, allowed
// under version 1 with delayed requests.
func TestEOSTheory(t *testing.T) {
	cfg := func(v int, n string) *history.Config {
		return &history.Config{Acks: "all", MinISR: 2, RF: 3, Idempotence: true, Workload: history.WorkloadEOS, TransactionVersion: v, Nemeses: []string{n}}
	}
	for _, a := range []string{EOSDuplicate, EOSMissing, EOSReorder, EOSOffsetMismatch} {
		for _, v := range []int{1, 2} {
			if e := Expect(cfg(v, history.NemesisKillTxnCoordinator))[a]; e.Allowed || !strings.Contains(e.Reason, "KIP-447") {
				t.Errorf("v%d kills: %s %+v, want forbidden (KIP-447)", v, a, e)
			}
		}
		if !Expect(cfg(1, history.NemesisDelayClient))[a].Allowed || Expect(cfg(2, history.NemesisDelayClient))[a].Allowed {
			t.Errorf("%s: want allowed under v1 + delay-client only", a)
		}
	}
}
