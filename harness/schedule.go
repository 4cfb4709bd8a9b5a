package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"strconv"

	"gregor/history"
	"gregor/nemesis"
)

// nodeIDs are the run's broker ids (1..Nodes) and controller-only voters
// (the ids after them), as ClusterConfig.Spec numbers them.
func (c *Config) nodeIDs() (brokers, voters []int32) {
	for i := 1; i <= c.Cluster.Nodes+c.Cluster.Controllers; i++ {
		if i <= c.Cluster.Nodes {
			brokers = append(brokers, int32(i))
		} else {
			voters = append(voters, int32(i))
		}
	}
	return brokers, voters
}

// stepParams are a kind's settings in this run, as schedule.json records
// them: a slow link's delay and loss; nil for every other kind.
func (c *Config) stepParams(k nemesis.Kind) map[string]string {
	if k != nemesis.Slow {
		return nil
	}
	return map[string]string{"delay": c.SlowDelay.String(), "loss": strconv.FormatFloat(c.SlowLoss, 'g', -1, 64)}
}

// schedule is the run's fault schedule and its schedule.json: replayed
// from c.Schedule, or drawn from the seed. c is validated; the file is the
// one Validate read and checked, read here only for a Config no one
// validated.
func (c *Config) schedule() (nemesis.Schedule, *nemesis.ScheduleFile, error) {
	brokers, voters := c.nodeIDs()
	if c.Schedule == "" {
		s, err := nemesis.Plan(c.Seed, c.planOptions())
		if err != nil {
			return nil, nil, err
		}
		f := nemesis.RecordSchedule(s, c.Seed, nemesis.Target(c.Target), brokers, voters, c.stepParams)
		return s, &f, nil
	}
	f := c.replay
	if f == nil {
		var err error
		if f, err = c.readSchedule(); err != nil {
			return nil, nil, err
		}
	}
	s, err := f.Schedule()
	if err != nil {
		return nil, nil, err
	}
	// The copy this run records: its own seed and nodes, nothing resolved
	// yet; a shrunk schedule stays marked as such.
	out := nemesis.RecordSchedule(s, c.Seed, nemesis.Target(c.Target), brokers, voters, c.stepParams)
	out.Source, out.From = nemesis.SourceReplayed, c.Schedule
	if f.Source == nemesis.SourceShrunk {
		out.Source, out.From = nemesis.SourceShrunk, f.From
	}
	return s, &out, nil
}

// readSchedule reads c.Schedule and refuses a schedule this run cannot
// replay: a kind not in --nemesis, another target, nodes it does not have,
// a step recorded with other params.
func (c *Config) readSchedule() (*nemesis.ScheduleFile, error) {
	brokers, voters := c.nodeIDs()
	f, err := nemesis.ReadScheduleFile(c.Schedule)
	if err != nil {
		return nil, fmt.Errorf("--schedule: %w", err)
	}
	if err := f.Fits(c.kinds(), nemesis.Target(c.Target), brokers, voters); err != nil {
		return nil, fmt.Errorf("--schedule %s does not fit this run:\n%w", c.Schedule, err)
	}
	for i, r := range f.Steps {
		want := c.stepParams(nemesis.Kind(r.Kind))
		if r.Params != nil && !maps.Equal(r.Params, want) {
			return nil, fmt.Errorf("--schedule %s: step %d (%s) was recorded with %v, this run has %v: give the flags that set them (--slow-delay, --slow-loss)", c.Schedule, i, r.Kind, r.Params, want)
		}
	}
	if _, err := f.Schedule(); err != nil {
		return nil, err
	}
	return f, nil
}

// writeSchedule writes the run's schedule.json (atomically: a crash leaves
// the old file or the new one).
func writeSchedule(dir history.RunDir, f *nemesis.ScheduleFile) error {
	return writeFileAtomic(dir.Schedule(), func(w io.Writer) error {
		_, err := w.Write(f.JSON())
		return err
	})
}

// writeSettings writes run.json: every setting of the run, so that gregor
// shrink can run it again. It is the harness's own record (Config's Go
// field names, durations in nanoseconds), not a contract like test.json.
func writeSettings(dir history.RunDir, c *Config, runtimeName string) error {
	b, err := json.MarshalIndent(Settings{Runtime: runtimeName, Config: *c}, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(dir.Settings(), func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

// Settings is run.json: the runtime a run ran on and its Config.
type Settings struct {
	Runtime string
	Config  Config
}

// ReadSettings reads a run directory's run.json.
func ReadSettings(dir history.RunDir) (*Settings, error) {
	b, err := os.ReadFile(dir.Settings())
	if err != nil {
		return nil, err
	}
	var s Settings
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", dir.Settings(), err)
	}
	return &s, nil
}
