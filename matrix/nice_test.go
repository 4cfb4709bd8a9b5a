package matrix

import (
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// runAt starts its command n nice levels below the matrix (the sim's
// lane), and at the matrix's own priority for n = 0; the matrix itself
// stays where it was.
func TestRunAtNicesTheChildOnly(t *testing.T) {
	if _, err := exec.LookPath("nice"); err != nil {
		t.Skip("no nice(1) to read a child's niceness")
	}
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	own := 20 - prio // the raw getpriority is 20 - nice
	if own+simNiceness > 19 {
		t.Skipf("already at nice %d", own)
	}
	niceOf := func(n int) int {
		var out bytes.Buffer
		cmd := exec.Command("nice")
		cmd.Stdout = &out
		if err := runAt(cmd, n); err != nil {
			t.Fatal(err)
		}
		v, err := strconv.Atoi(strings.TrimSpace(out.String()))
		if err != nil {
			t.Fatalf("nice printed %q", out.String())
		}
		return v
	}
	if got := niceOf(simNiceness); got != own+simNiceness {
		t.Fatalf("child at nice %d, want %d", got, own+simNiceness)
	}
	if got := niceOf(0); got != own {
		t.Fatalf("child at nice %d with n=0, want the matrix's %d", got, own)
	}
	if p, _ := syscall.Getpriority(syscall.PRIO_PROCESS, 0); p != prio {
		t.Fatalf("the matrix's own priority moved from %d to %d", prio, p)
	}
	r := &Runner{}
	if r.niceness(Cell{Args: []string{"--runtime", "sim"}}) != simNiceness || r.niceness(Cell{Args: []string{"--runtime", "process"}}) != 0 {
		t.Fatal("niceness: the sim's cells not niced, or the process runtime's niced")
	}
}
