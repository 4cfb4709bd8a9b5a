package matrix

import (
	"strings"
	"testing"
)

// matrix/groups-faults.yaml and matrix/share-faults.yaml put the KIP-848
// consumer protocol and the share workload under coordinator kills, leader
// kills and partitions (share: its share coordinators too, and a share
// consumer paused past its lock), 30 sim seeds a
// cell on safe brokers (issue 30's must-show).
func TestGroupAndShareFaultMatrices(t *testing.T) {
	for _, m := range []struct {
		file, workload string
		nemeses        []string
	}{
		{"groups-faults.yaml", "--workload group", []string{"--nemesis-target coordinator", "--nemesis-target leader", "--nemesis partition"}},
		{"share-faults.yaml", "--workload share", []string{"--nemesis-target coordinator", "--nemesis-target share-coordinator",
			"--nemesis-target leader", "--nemesis partition", "--nemesis pause-share-consumer"}},
	} {
		s, err := Load(m.file)
		if err != nil {
			t.Fatal(err)
		}
		cells, err := s.Cells()
		if err != nil {
			t.Fatal(err)
		}
		if len(cells) != len(m.nemeses)*30 {
			t.Errorf("%s: %d cells, want %d nemeses x 30 sim seeds", m.file, len(cells), len(m.nemeses))
		}
		joined := ""
		for _, c := range cells {
			a := strings.Join(c.Args, " ")
			for _, want := range []string{m.workload, "--acks all", "--min-isr 2", "--rf 3", "--unclean=false"} {
				if !strings.Contains(a, want) {
					t.Errorf("%s: cell %s lacks %q: %s", m.file, c.ID, want, a)
				}
			}
			if c.Runtime != "sim" {
				t.Errorf("%s: cell %s on %q, want sim", m.file, c.ID, c.Runtime)
			}
			joined += a + "\n"
		}
		for _, want := range m.nemeses {
			if !strings.Contains(joined, want) {
				t.Errorf("%s lacks %q", m.file, want)
			}
		}
		if m.workload == "--workload group" && strings.Count(joined, "--group-protocol consumer") != len(cells) {
			t.Errorf("%s: not every cell runs the consumer protocol", m.file)
		}
	}
}
