package matrix

import (
	"strconv"

	"gregor/workloads/all"
)

// GroupSettings are the `gregor run` flags of the group workload (inline in
// Settings). Pointers tell "not set here" from a zero value.
type GroupSettings struct {
	// Workload names a registered workload (workloads/all); "" is the
	// default.
	Workload           string   `yaml:"workload,omitempty"`
	Consumers          *int     `yaml:"consumers,omitempty"`
	CommitMode         string   `yaml:"commit_mode,omitempty"` // auto, auto-greedy, before, after, on-revoked
	AutoCommitInterval string   `yaml:"auto_commit_interval,omitempty"`
	Assignor           string   `yaml:"assignor,omitempty"` // range, sticky, cooperative-sticky
	Static             *bool    `yaml:"static,omitempty"`
	FailureRate        *float64 `yaml:"failure_rate,omitempty"`
	FailureHandling    string   `yaml:"failure_handling,omitempty"` // swallow, retry
	ProcessingTime     string   `yaml:"processing_time,omitempty"`
	SessionTimeout     string   `yaml:"group_session_timeout,omitempty"`
}

// GroupDimensions are the group workload's cross-product lists.
type GroupDimensions struct {
	CommitMode         []string `yaml:"commit_mode"`
	AutoCommitInterval []string `yaml:"auto_commit_interval"`
	Assignor           []string `yaml:"assignor"`
	Static             []bool   `yaml:"static"`
}

func (d GroupDimensions) size() int {
	return len(d.CommitMode) + len(d.AutoCommitInterval) + len(d.Assignor) + len(d.Static)
}

// mergeGroup overlays o on s.
func mergeGroup(s, o GroupSettings) GroupSettings {
	for _, p := range []struct{ dst, src *string }{{&s.Workload, &o.Workload}, {&s.CommitMode, &o.CommitMode},
		{&s.AutoCommitInterval, &o.AutoCommitInterval}, {&s.Assignor, &o.Assignor},
		{&s.FailureHandling, &o.FailureHandling}, {&s.ProcessingTime, &o.ProcessingTime}, {&s.SessionTimeout, &o.SessionTimeout}} {
		if *p.src != "" {
			*p.dst = *p.src
		}
	}
	if o.Consumers != nil {
		s.Consumers = o.Consumers
	}
	if o.Static != nil {
		s.Static = o.Static
	}
	if o.FailureRate != nil {
		s.FailureRate = o.FailureRate
	}
	return s
}

// expandGroup crosses configurations out with the group dimensions.
func (d GroupDimensions) expand(out []Settings) []Settings {
	cross := func(n int, set func(s *Settings, i int)) { out = crossSettings(out, n, set) }
	// A dimension of a workload's own flag runs that workload.
	owner := all.Workloads.FlagOwner
	cross(len(d.CommitMode), func(s *Settings, i int) { s.Workload, s.CommitMode = owner("commit-mode"), d.CommitMode[i] })
	cross(len(d.AutoCommitInterval), func(s *Settings, i int) {
		s.Workload, s.AutoCommitInterval = owner("auto-commit-interval"), d.AutoCommitInterval[i]
	})
	cross(len(d.Assignor), func(s *Settings, i int) { s.Workload, s.Assignor = owner("assignor"), d.Assignor[i] })
	cross(len(d.Static), func(s *Settings, i int) { v := d.Static[i]; s.Workload, s.Static = owner("static"), &v })
	return out
}

// groupLabel adds the group settings to a row label.
func (g GroupSettings) label(add func(k, v string)) {
	if all.Workloads.IsDefault(g.Workload) {
		return
	}
	add("workload", g.Workload)
	if g.CommitMode != "" {
		add("commit", g.CommitMode)
	}
	if g.AutoCommitInterval != "" {
		add("autocommit", g.AutoCommitInterval)
	}
	if g.Assignor != "" {
		add("assignor", g.Assignor)
	}
	if g.Static != nil {
		add("static", strconv.FormatBool(*g.Static))
	}
	if g.FailureRate != nil {
		add("failures", strconv.FormatFloat(*g.FailureRate, 'f', -1, 64))
	}
	if g.FailureHandling != "" {
		add("on-failure", g.FailureHandling)
	}
}

// args renders the group settings as `gregor run` flags.
func (g GroupSettings) args() []string {
	var a []string
	str := []struct{ flag, v string }{{"--workload", g.Workload}, {"--commit-mode", g.CommitMode},
		{"--auto-commit-interval", g.AutoCommitInterval}, {"--assignor", g.Assignor}, {"--failure-handling", g.FailureHandling},
		{"--processing-time", g.ProcessingTime}, {"--group-session-timeout", g.SessionTimeout}}
	for _, p := range str {
		if p.v != "" {
			a = append(a, p.flag, p.v)
		}
	}
	if g.Consumers != nil {
		a = append(a, "--consumers", strconv.Itoa(*g.Consumers))
	}
	if g.Static != nil {
		a = append(a, "--static="+strconv.FormatBool(*g.Static))
	}
	if g.FailureRate != nil {
		a = append(a, "--failure-rate", strconv.FormatFloat(*g.FailureRate, 'f', -1, 64))
	}
	return a
}
