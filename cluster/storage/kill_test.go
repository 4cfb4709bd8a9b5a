package storage

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"gregor/cluster/invariant"
)

// The child half of TestSIGKILL: it appends 10 synced and 10 unsynced records, says "ready" and
// waits to be killed.
func TestMain(m *testing.M) {
	invariant.Enable()
	if dir := os.Getenv("STORAGE_KILL_CHILD_DIR"); dir != "" {
		lazy, _ := strconv.ParseBool(os.Getenv("STORAGE_KILL_CHILD_LAZY"))
		l, err := Open(dir, Options{LazyFS: lazy})
		if err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(2)
		}
		for i := int64(0); i < 20; i += 2 {
			if err := l.Append(batchAt(i, 0, 2)); err != nil {
				os.Exit(3)
			}
			if i == 8 {
				if err := l.Sync(); err != nil {
					os.Exit(4)
				}
			}
		}
		os.Stdout.WriteString("ready\n")
		time.Sleep(time.Minute) // bounded: the parent kills us long before
		os.Exit(5)
	}
	os.Exit(m.Run())
}

// A real SIGKILL: without LazyFS the kernel keeps every write; with it, unsynced records die
// with the process, as in a power cut.
func TestSIGKILL(t *testing.T) {
	for _, c := range []struct {
		lazy    bool
		wantLEO int64
	}{{false, 20}, {true, 10}} {
		t.Run("lazy="+strconv.FormatBool(c.lazy), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "STORAGE_KILL_CHILD_DIR="+dir,
				"STORAGE_KILL_CHILD_LAZY="+strconv.FormatBool(c.lazy))
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			ready := make(chan bool, 1)
			go func() {
				line, _ := bufio.NewReader(out).ReadString('\n')
				ready <- line == "ready\n"
			}()
			select {
			case ok := <-ready:
				if !ok {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatal("child failed before ready")
				}
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatal("child not ready in time")
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			l := openLog(t, dir, Options{LazyFS: c.lazy})
			defer l.Close()
			if l.LEO() != c.wantLEO {
				t.Fatalf("LEO %d after SIGKILL, want %d", l.LEO(), c.wantLEO)
			}
			if got := readAllFrom(t, l, 0, 1<<20); got != c.wantLEO {
				t.Fatalf("read to %d", got)
			}
		})
	}
}
