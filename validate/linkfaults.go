package validate

import "gregor/matrix"

// linkSafeNemeses are the safe configuration's runs under issue 16's
// faults (nemesis/links.go, storm.go, compose.go): the client-link faults
// on the leader, restart storms of power cuts on the leader (lazyfs, one
// cut at a time with a full ISR between: nothing may be lost), and
// composed faults (without lazyfs: composed power cuts may lose data).
func linkSafeNemeses() []matrix.Nemesis {
	return []matrix.Nemesis{
		{Name: "client-links", Kinds: []string{"client-reset", "lose-responses", "delay-client"}, Target: "leader",
			Interval: "2s", Duration: "3s"},
		{Name: "restart-storm-power", Kinds: []string{"restart-storm"}, Target: "leader", Interval: "2s", Duration: "6s",
			Settings: matrix.Settings{LazyFS: ptr(true), Fsync: "never"}},
		{Name: "composed", Kinds: []string{"kill", "partition", "pause", "restart-storm", "lose-responses"}, Target: "leader",
			Interval: "3s", Duration: "3s", Settings: matrix.Settings{Args: []string{"--compose"}}},
	}
}
