package history_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"gregor/history"
)

func intp(n int) *int { return &n }

func i64p(n int64) *int64 { return &n }

// Every field of a nemesis value survives NemesisOp -> the history line ->
// ReadAll -> ParseNemesis.
func TestNemesisValueRoundTrip(t *testing.T) {
	full := history.NemesisValue{
		NemesisAction: history.NemesisAction{Nodes: []int32{1, 3}, Groups: [][]int32{{1}, {2, 3}},
			Partition: 2, Note: "leader of partition 2 unknown: a random broker instead"},
		Step: intp(4), Target: history.TargetLeader, Shape: "isolate-leader", Hold: "5s",
		Process: intp(7), Phase: "strand", Round: intp(2), Processes: []int{8, 9},
		Broker: "127.0.0.1:9093", Conns: intp(3), LateBytes: intp(512),
		Commands: []history.NemesisCommand{{Node: 1, Verb: "kill", Command: "ssh n1 pkill -9 java", Exit: -1,
			Output: "timed out", Duration: "10s", Error: "timed out after 10s"}},
		Led: []history.LedPartition{{Partition: 2, Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 3}, HW: i64p(812), At: 1490},
			{Partition: 0, Leader: 1, LeaderEpoch: 2, ISR: []int32{1}, At: 1490}},
		LedError: "partition 1: ListOffsets: timed out",
	}
	for _, tc := range []struct {
		name string
		v    history.NemesisValue
		err  error
	}{
		{"every field", full, nil},
		{"heal-all, nothing touched", history.NemesisValue{NemesisAction: history.NemesisAction{Partition: -1}}, nil},
		{"failed", history.NemesisValue{NemesisAction: history.NemesisAction{Nodes: []int32{2}, Partition: -1}, Step: intp(0)}, errors.New("node 2: boom")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := history.NemesisOp(1500, history.NemesisKill, tc.v, tc.err)
			line := history.AppendJSON(nil, &op)
			ops, _, _, err := history.ReadAll(strings.NewReader(string(line) + "\n"))
			if err != nil || len(ops) != 1 {
				t.Fatalf("reading %s: %v (%d ops)", line, err, len(ops))
			}
			got, err := history.ParseNemesis(&ops[0])
			if err != nil {
				t.Fatal(err)
			}
			want := tc.v
			if want.Nodes == nil {
				want.Nodes = []int32{} // written as [], never null
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decoded\n %+v\nwant\n %+v\nfrom %s", got, want, line)
			}
			if ops[0].Process != history.Nemesis || ops[0].Type != history.Info || ops[0].F != history.NemesisKill || ops[0].Time != 1500 {
				t.Fatalf("op %+v", ops[0])
			}
			if (tc.err == nil) != (ops[0].Error == "") || tc.err != nil && ops[0].Error != tc.err.Error() {
				t.Fatalf("error %q, want %v", ops[0].Error, tc.err)
			}
		})
	}
}

// Nemesis lines as histories on disk hold them (from runs of the queue
// workload, and a line from before steps and partitions were recorded)
// decode, and encode again to the same value bytes: the format is
// unchanged.
func TestNemesisValueFixtures(t *testing.T) {
	for _, tc := range []struct {
		line string
		want history.NemesisValue
	}{
		{`{"index":41,"time":5120834771,"process":"nemesis","type":"info","f":"kill","value":{"nodes":[1],"partition":0,"step":0,"target":"leader","hold":"4.57639206s"}}`,
			history.NemesisValue{NemesisAction: history.NemesisAction{Nodes: []int32{1}, Partition: 0}, Step: intp(0), Target: "leader", Hold: "4.57639206s"}},
		{`{"index":90,"time":9706402210,"process":"nemesis","type":"info","f":"partition","value":{"nodes":[1,2,3,4],"groups":[[1],[2,3,4]],"partition":0,"step":0,"target":"leader","shape":"isolate-leader","hold":"5.429907675s"}}`,
			history.NemesisValue{NemesisAction: history.NemesisAction{Nodes: []int32{1, 2, 3, 4}, Groups: [][]int32{{1}, {2, 3, 4}}, Partition: 0},
				Step: intp(0), Target: "leader", Shape: "isolate-leader", Hold: "5.429907675s"}},
		{`{"index":52,"time":7204000000,"process":"nemesis","type":"info","f":"kill","value":{"nodes":[2],"partition":1,"step":1,"target":"leader","hold":"3s","led":[{"partition":1,"leader":2,"leader_epoch":3,"isr":[1,2,3],"hw":1041,"at":7201500000}]}}`,
			history.NemesisValue{NemesisAction: history.NemesisAction{Nodes: []int32{2}, Partition: 1}, Step: intp(1), Target: "leader", Hold: "3s",
				Led: []history.LedPartition{{Partition: 1, Leader: 2, LeaderEpoch: 3, ISR: []int32{1, 2, 3}, HW: i64p(1041), At: 7201500000}}}},
		{`{"index":200,"time":30000000000,"process":"nemesis","type":"info","f":"heal-all","value":{"nodes":[],"partition":-1}}`,
			history.NemesisValue{NemesisAction: history.NemesisAction{Nodes: []int32{}, Partition: -1}}},
	} {
		ops, _, _, err := history.ReadAll(strings.NewReader(tc.line + "\n"))
		if err != nil || len(ops) != 1 {
			t.Fatalf("reading %s: %v", tc.line, err)
		}
		got, err := history.ParseNemesis(&ops[0])
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("%s decoded as %+v, want %+v", tc.line, got, tc.want)
		}
		again := history.NemesisOp(ops[0].Time, ops[0].F, got, nil)
		again.Index = ops[0].Index
		if line := string(history.AppendJSON(nil, &again)); line != tc.line {
			t.Fatalf("encoded again as\n %s\nwant\n %s", line, tc.line)
		}
	}
	// Before steps were recorded: no step, no partition (decoded as 0).
	ops, _, _, err := history.ReadAll(strings.NewReader(`{"index":8,"time":500,"process":"nemesis","type":"info","f":"kill","value":{"nodes":[2]}}` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := history.ParseNemesis(&ops[0]); err != nil || v.Step != nil || !reflect.DeepEqual(v.Nodes, []int32{2}) {
		t.Fatalf("an old line decoded as %+v, %v", v, err)
	}
}

// A client's operation is not a nemesis value.
func TestParseNemesisRefusesClients(t *testing.T) {
	op := history.Op{Index: 3, Process: 1, Type: history.OK, F: history.FSend}
	if _, err := history.ParseNemesis(&op); err == nil {
		t.Fatal("a client's operation parsed as a nemesis value")
	}
}
