package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"gregor/harness"
	"gregor/history"
	"gregor/nemesis"
)

func init() { subcommands = append(subcommands, shrinkCmd) }

// Exit codes of gregor shrink besides 0 (a smaller schedule stored) and 2
// (bad input: no failing run to shrink).
const shrinkNotFound = 1

func shrinkCmd() *cobra.Command {
	o := harness.ShrinkDefaults
	var runtimeName string
	cmd := &cobra.Command{
		Use:   "shrink RUN_DIR",
		Short: "Find a smaller fault schedule that still fails the same way, and store it as a run",
		Long: `Shrink replays a failing run's fault schedule (its schedule.json) with faults
removed and shortened, and stores the smallest schedule that still shows the
same forbidden anomaly as a new run, <store>/<test>-shrunk/<timestamp>, with
the original's seed; the two runs' reports link each other (shrink.json).
RUN_DIR is a run directory, or a test directory (its latest run).

Every replay is a full gregor run with the original's settings (run.json) and
seed, and the candidate schedule (--schedule); its fault phase ends --tail
after its last fault ends (a step counted as long as it took in the original:
scenarios outlast their hold). The search is delta debugging: ddmin removes halves,
then smaller and smaller chunks of the steps, and their complements, down to
a schedule from which no one step can be removed; then each step's hold and
the quiet time before it are halved while the run still fails. A replay still
fails when it shows one of the original's forbidden anomalies (--anomaly:
only these).

Shrinking is probabilistic: the cluster's timing differs between runs, so a
candidate that passed once might fail another time. One failing replay is
proof; --tries N runs each candidate up to N times before taking it to pass.
The search stops at --max-replays runs or after --budget, keeping the
smallest failing schedule found so far.

Exit status:
  0  a smaller failing schedule was stored (its directory is printed)
  1  no smaller schedule failed within the budget
  2  bad input: not a failing run, or one without schedule.json / run.json
  3  interrupted`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			errOut := cmd.ErrOrStderr()
			dir := history.RunDir(args[0])
			if _, err := os.Stat(dir.History()); err != nil {
				latest, lerr := history.LatestRun(args[0])
				if lerr != nil {
					return &exitError{checkBadInput, fmt.Errorf("%s: neither a run directory (%v) nor a test directory (%v)", args[0], err, lerr)}
				}
				dir = latest
			}
			st, err := harness.ReadSettings(dir)
			if errors.Is(err, os.ErrNotExist) {
				return &exitError{checkBadInput, fmt.Errorf("%s has no %s: it was recorded before runs kept their settings, and cannot be replayed; run it again with this gregor", dir, history.SettingsFile)}
			}
			if err != nil {
				return &exitError{checkBadInput, err}
			}
			if runtimeName == "" {
				runtimeName = st.Runtime
			}
			if runtimeName == "sim" && simChild == nil {
				return shrinkSim(cmd, string(dir))
			}
			if simChild != nil {
				o.Started = simChild.stamp
			}
			bin, err := selfBinary()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if simChild == nil {
				// In gregor-sim the bubble's context is cmd's: a signal
				// channel made in a bubble cannot hear the host.
				var stop context.CancelFunc
				ctx, stop = interruptContext(ctx, cmd.ErrOrStderr())
				defer stop()
			}
			rt, err := pickRuntime(ctx, runtimeName, errOut)
			if err != nil {
				return &exitError{checkBadInput, err}
			}
			o.Runtime, o.Binary, o.Log = rt, bin, errOut
			start := time.Now()
			rep, err := harness.Shrink(ctx, dir, o)
			if ctx.Err() != nil {
				return &exitError{checkUnknown, errors.New("shrink interrupted: nothing stored")}
			}
			if err != nil {
				if _, ok := errors.AsType[*harness.StoreError](err); ok {
					return &exitError{storeFailed, err}
				}
				if rep == nil {
					return &exitError{checkBadInput, err}
				}
				return err
			}
			out := cmd.OutOrStdout()
			l := rep.Links
			fmt.Fprintf(out, "anomalies:  %v (seed %d)\n", l.Anomalies, rep.Seed)
			fmt.Fprintf(out, "original:   %s\n            %s\n", rep.Original, sizeLine(l.Before))
			steps(out, rep.Before)
			budget := ""
			if l.Exhausted {
				budget = ", the budget ended the search"
			}
			took := time.Since(start).Round(time.Second).String()
			if simChild != nil {
				took += " of simulated time"
			}
			fmt.Fprintf(out, "replays:    %d in %s%s\n", l.Replays, took, budget)
			if rep.Shrunk == "" {
				return &exitError{shrinkNotFound, fmt.Errorf("shrink: no smaller schedule showed %v in %d replays (try --tries 2 or a larger --max-replays)", l.Anomalies, l.Replays)}
			}
			fmt.Fprintf(out, "shrunk:     %s\n            %s\n", rep.Shrunk, sizeLine(l.After))
			steps(out, rep.After)
			fmt.Fprintf(out, "report:     %s\n", filepath.Join(string(rep.Shrunk), history.ReportFile))
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.MaxReplays, "max-replays", o.MaxReplays, "at most this many candidate schedules replayed (each run up to --tries times)")
	fl.DurationVar(&o.Budget, "budget", o.Budget, "wall-clock budget of the search; a replay running when it ends is stopped")
	fl.IntVar(&o.Tries, "tries", o.Tries, "runs of each candidate before it is taken to pass (one failing run counts)")
	fl.DurationVar(&o.Tail, "tail", o.Tail, "fault phase left after a replay's last fault ends")
	fl.StringSliceVar(&o.Anomalies, "anomaly", nil, "the anomalies a replay must show (default: the run's forbidden ones)")
	fl.DurationVar(&o.CheckTimeout, "key-timeout", 30*time.Second, "porcupine time budget per key in each replay's check")
	fl.StringVar(&runtimeName, "runtime", "", "docker | process | sim | auto (default: the run's runtime; on sim the whole search runs in bin/gregor-sim and --budget is simulated time)")
	return cmd
}

func steps(w io.Writer, s nemesis.Schedule) {
	for _, l := range s.Steps() {
		fmt.Fprintf(w, "              %s\n", l)
	}
}

func sizeLine(z history.ScheduleSize) string {
	return fmt.Sprintf("%d faults, %.1f s of holds (%.1f s in force), the last ending at %.1f s; %.1f s fault phase",
		z.Faults, time.Duration(z.FaultTime).Seconds(), time.Duration(z.InForce).Seconds(), time.Duration(z.End).Seconds(), time.Duration(z.TimeLimit).Seconds())
}
