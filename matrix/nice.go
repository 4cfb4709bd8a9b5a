package matrix

import (
	"os/exec"
	"runtime"
	"syscall"
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

// runAt runs cmd n nice levels below this process (0: at its priority). Linux keeps a nice
// value per thread and a child inherits its forking thread's, so cmd is
// started from a thread of its own, niced, which lives (locked to the
// goroutine) until cmd ends: the parent-death signal (Pdeathsig) follows
// the forking thread, so that thread must outlive the child. The thread is
// discarded after (the goroutine ends locked), never reused at nice n.
func runAt(cmd *exec.Cmd, n int) error {
	if n == 0 {
		return cmd.Run()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		// n above the matrix's own nice (the raw getpriority is 20 - nice);
		// best effort: a refused nice leaves the run at the matrix's.
		tid := syscall.Gettid()
		if prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid); err == nil {
			_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, min(19, 20-prio+n))
		}
		errc <- cmd.Run()
	}()
	return <-errc
}
