package matrix

import (
	"os/exec"
	"strconv"
)

// simNiceness is the CPU priority (nice) of the simulation's runs beside
// others: a simulated run is on virtual time, so a CPU it waits for
// changes nothing it measures, while a process-runtime run beside it is
// on real time (its failure detectors miss their deadlines on a starved
// CPU). The simulation takes the CPU the real-time runs leave.
const simNiceness = 10

// niceness is the nice value cell c's run gets: simNiceness on the
// simulation, 0 (as the matrix) elsewhere.
func (r *Runner) niceness(c Cell) int {
	if r.runtimeOf(c) == "sim" {
		return simNiceness
	}
	return 0
}

// runAt runs cmd n nice levels below this process (0: at its priority),
// through nice(1), which execs the command in the same process: its pid,
// and the parent-death signal (Pdeathsig) set for it, stay cmd's.
//
// Not by nicing a locked OS thread to fork from: Linux keeps a nice value
// per thread, but Pdeathsig fires when the *thread* that forked a child
// exits, and a goroutine that forked a process-runtime run may move to
// another thread before waiting, leaving its thread to be locked, niced
// and discarded by a sim run: that SIGTERMed a process-runtime run mid-way
// (seen once in a matrix on both runtimes). Without nice(1) on PATH the
// run goes at the matrix's own priority (best effort).
func runAt(cmd *exec.Cmd, n int) error {
	if n == 0 {
		return cmd.Run()
	}
	nice, err := exec.LookPath("nice")
	if err != nil {
		return cmd.Run()
	}
	cmd.Args = append([]string{nice, "-n", strconv.Itoa(n), cmd.Path}, cmd.Args[1:]...)
	cmd.Path = nice
	return cmd.Run()
}
