//go:build synctests

package main

// gregor-sim's entry (make build: go test -c -tags synctests -o
// bin/gregor-sim ./cmd/gregor): with GREGOR_SIM_ARGS set, TestSim runs
// `gregor run` inside one testing/synctest bubble against runtime/sim and
// the process exits with the run's own exit status. Without it this is
// cmd/gregor's test binary as usual.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	goruntime "runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"gregor/runtime/sim"
)

var (
	simExit        = -1
	simInterrupted atomic.Bool
	simStdout      = os.Stdout
)

func TestMain(m *testing.M) {
	if os.Getenv(simArgsEnv) == "" {
		os.Exit(m.Run())
	}
	// The host's signals are heard outside the bubble (a signal channel
	// made inside could not be sent on from outside); the bubble polls.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		simInterrupted.Store(true)
		// A bubble that cannot end (a goroutine stuck outside virtual
		// time) must not outlive its parent's patience.
		time.Sleep(8 * time.Second)
		fmt.Fprintln(os.Stderr, "gregor-sim: the simulation did not end within 8s of the signal; exiting")
		os.Exit(checkUnknown)
	}()
	go sim.WatchClock(nil, simStallAfter, simStalled)
	// The testing package's own lines (a bubble's deadlock report) go to
	// stderr, but its closing PASS does not; stdout is the run's.
	pr, pw, err := os.Pipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gregor-sim:", err)
		os.Exit(checkUnknown)
	}
	os.Stdout = pw
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if sc.Text() != "PASS" {
				fmt.Fprintln(os.Stderr, sc.Text())
			}
		}
	}()
	code := m.Run()
	pw.Close()
	<-copied
	if simExit < 0 || code != 0 {
		if simExit <= 0 {
			simExit = checkUnknown
		}
		fmt.Fprintln(os.Stderr, "gregor-sim: the simulation failed (see above)")
	}
	os.Exit(simExit)
}

// simStallAfter is how long the virtual clock may stand still, in wall
// time, while a cluster runs: a simulated broker has timers due every few
// hundred milliseconds, which even a loaded machine serves within seconds;
// the drivers' own bounds are 180 s (.ci/faultpoint-detect).
const simStallAfter = 60 * time.Second

// simStalled ends a run whose virtual clock stopped (sim.WatchClock): the
// bubble cannot be torn down (its timers never fire), so the run is not
// checked and ends unknown, saying why and which goroutines did it, with
// every goroutine's stack between the two statements.
func simStalled(s sim.Stall) {
	verdict := "gregor-sim: the run is not checked (unknown): " + s.String() +
		" (DESIGN.md section 7, what the sim cannot model)"
	fmt.Fprintln(os.Stderr, verdict)
	os.Stderr.Write(sim.AllStacks())
	fmt.Fprintln(os.Stderr, verdict)
	os.Exit(checkUnknown)
}

func TestSim(t *testing.T) {
	if os.Getenv(simArgsEnv) == "" {
		t.Skip("gregor-sim's entry: gregor run --runtime sim runs it with " + simArgsEnv)
	}
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv(simArgsEnv)), &args); err != nil {
		t.Fatalf("%s: %v", simArgsEnv, err)
	}
	started, err := time.Parse(time.RFC3339Nano, os.Getenv(simStartedEnv))
	if err != nil {
		started = time.Now()
	}
	synctest.Test(t, func(t *testing.T) {
		outside := goruntime.NumGoroutine()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// The host's signal, seen in virtual time (every 100 ms of it).
		polled := make(chan struct{})
		go func() {
			defer close(polled)
			for ctx.Err() == nil {
				if simInterrupted.Load() {
					cancel()
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
		simChild = &simEnv{rt: simRuntime(), started: started, result: os.Getenv(simResultEnv), virtual: time.Now()}
		root := newRoot()
		root.SetArgs(args)
		root.SetOut(simStdout)
		root.SetErr(os.Stderr)
		err := root.ExecuteContext(ctx)
		cancel()
		<-polled
		// A dead node's goroutine may still be finishing a delayed write
		// (the link delay sleeps before it fails on the closed connection),
		// as a killed process's sockets drain in the kernel: give the
		// stragglers up to a minute of virtual time to end; what is left
		// then is a leak, reported by synctest.
		i := 0
		for ; i < 600 && goruntime.NumGoroutine() > outside; i++ {
			time.Sleep(100 * time.Millisecond)
		}
		if os.Getenv("GREGOR_SIM_DEBUG") != "" { // every goroutine left at the end
			fmt.Fprintf(os.Stderr, "gregor-sim: goroutines %d, outside %d, %d settling steps\n", goruntime.NumGoroutine(), outside, i)
			buf := make([]byte, 1<<20)
			os.Stderr.Write(buf[:goruntime.Stack(buf, true)])
		}
		simExit = 0
		if err != nil {
			simExit = 1
			if ee, ok := err.(*exitError); ok {
				simExit = ee.code
			}
			fmt.Fprintln(os.Stderr, "gregor:", err)
		}
	})
}
