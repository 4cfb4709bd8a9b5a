package matrix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"gregor/checker"
	"gregor/harness"
	"gregor/history"
	"gregor/reports"
)

// Runner runs cells through `gregor run` subprocesses.
type Runner struct {
	Binary   string // the gregor binary
	Out      string // output directory: runs/<cell>/..., index.html, results.json
	Parallel int
	// ExtraArgs go to every `gregor run` (e.g. --runtime process).
	ExtraArgs []string
	Progress  io.Writer
}

// cellTimeout bounds one cell: its fault phase three times over plus boot,
// recovery and final reads; a cell past it is killed and recorded crashed.
func cellTimeout(c Cell) time.Duration {
	return 3*max(c.Duration, 30*time.Second) + 5*time.Minute
}

// Run runs every cell and returns their outcomes in cell order.
func (r *Runner) Run(ctx context.Context, cells []Cell) []reports.Cell {
	out := make([]reports.Cell, len(cells))
	var (
		mu      sync.Mutex
		done    int
		current = map[string]bool{}
	)
	start := time.Now()
	var total time.Duration
	for _, c := range cells {
		total += max(c.Duration, time.Second)
	}
	progress := func() {
		if r.Progress == nil {
			return
		}
		var cur []string
		for id := range current {
			cur = append(cur, id)
		}
		elapsed := time.Since(start)
		est := "?"
		if done > 0 {
			est = (elapsed / time.Duration(done) * time.Duration(len(cells)-done)).Round(time.Second).String()
		}
		fmt.Fprintf(r.Progress, "\r[%d/%d] elapsed %s, remaining ~%s  %s\033[K", done, len(cells), elapsed.Round(time.Second), est, strings.Join(cur, " "))
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < max(1, r.Parallel); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				mu.Lock()
				current[cells[i].ID] = true
				progress()
				mu.Unlock()
				res := r.runCell(ctx, cells[i])
				mu.Lock()
				out[i] = res
				delete(current, cells[i].ID)
				done++
				progress()
				mu.Unlock()
			}
		}()
	}
	for i := range cells {
		if ctx.Err() != nil {
			out[i] = reports.Cell{Config: cells[i].Label, Nemesis: cells[i].Nemesis.Name, Seed: cells[i].Seed, Valid: "crashed", Log: "matrix interrupted before this cell ran"}
			continue
		}
		work <- i
	}
	close(work)
	wg.Wait()
	if r.Progress != nil {
		fmt.Fprintln(r.Progress)
	}
	return out
}

func (r *Runner) runCell(ctx context.Context, c Cell) reports.Cell {
	cell := reports.Cell{Config: c.Label, Nemesis: c.Nemesis.Name, Seed: c.Seed}
	dir := filepath.Join(r.Out, "runs", c.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		cell.Valid, cell.Log = "crashed", err.Error()
		return cell
	}
	logPath := filepath.Join(dir, "run.log")
	logf, err := os.Create(logPath)
	if err != nil {
		cell.Valid, cell.Log = "crashed", err.Error()
		return cell
	}
	defer logf.Close()
	args := append(append([]string{"run"}, c.Args...), r.ExtraArgs...)
	args = append(args, "--store", dir, "--name", "run")
	fmt.Fprintf(logf, "gregor %s\n", strings.Join(args, " "))
	cctx, cancel := context.WithTimeout(ctx, cellTimeout(c))
	defer cancel()
	cmd := exec.CommandContext(cctx, r.Binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// A SIGINT to the matrix reaches the run (same process group) and it
	// tears its cluster down; a timeout kills it.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	runErr := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(runErr, &ee) {
		code = ee.ExitCode()
	} else if runErr != nil {
		code = -1
	}
	runDir, err := history.LatestRun(filepath.Join(dir, "run"))
	if err != nil || (code != 0 && code != 1 && code != 3) {
		cell.Valid = "crashed"
		cell.Log = fmt.Sprintf("exit %d: %v\n%s", code, runErr, tail(logPath, 4000))
		return cell
	}
	res, err := checker.ReadResultFile(runDir.Results())
	if err != nil {
		cell.Valid = "crashed"
		cell.Log = fmt.Sprintf("exit %d, no readable results: %v\n%s", code, err, tail(logPath, 4000))
		return cell
	}
	report := runDir.Report()
	if _, err := os.Stat(report); err != nil {
		// The run stopped between results.json and its report: draw it
		// from the stored run, read by the one reader (a damaged file is an
		// error naming it, logged; the cell keeps its verdict).
		if err := writeRunReport(runDir, c.ID, res); err != nil {
			fmt.Fprintf(logf, "report: %v\n", err)
		}
	}
	rel, _ := filepath.Rel(r.Out, report)
	out := reports.CellFrom(c.Label, c.Nemesis.Name, c.Seed, res, filepath.ToSlash(rel))
	return out
}

func writeRunReport(dir history.RunDir, title string, res *checker.Result) error {
	run, err := history.ReadRun(dir.History(), "")
	if err != nil {
		return err
	}
	return harness.WriteRunReport(run, res, title, "")
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
