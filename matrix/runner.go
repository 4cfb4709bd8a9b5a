package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"gregor/checker"
	"gregor/harness"
	"gregor/history"
	"gregor/internal/atomicfile"
	"gregor/reports"
)

// MaxParallel bounds the runs a matrix keeps at once (--parallel, -j): a
// process-runtime run of the default matrix uses about a third of a core
// (its cluster mostly waits on faults and timeouts), so four per core still
// leaves the clusters the CPU their failure detectors need.
func MaxParallel() int { return 4 * runtime.NumCPU() }

// CheckParallel validates a --parallel value.
func CheckParallel(n int) error {
	if n < 1 || n > MaxParallel() {
		return fmt.Errorf("--parallel %d: give 1..%d (4 per core on this machine; runs that starve each other of CPU miss their failure detectors' deadlines)", n, MaxParallel())
	}
	return nil
}

// Runner runs cells through `gregor run` subprocesses.
type Runner struct {
	Binary   string // the gregor binary
	Out      string // output directory: runs/<cell>/..., index.html, results.json
	Parallel int
	// ExtraArgs go to every `gregor run` (e.g. --runtime process).
	ExtraArgs []string
	Progress  io.Writer
	// LaneParallel overrides Parallel for one runtime's cells (gregor
	// matrix --lane sim=2): each runtime's cells are a lane of their own.
	LaneParallel map[string]int
	// Resume reuses the cells an earlier, interrupted run of the same
	// matrix into Out finished (cellRecord, same arguments) and runs the
	// rest afresh.
	Resume bool
}

// cellRecordFile, in a cell's directory, is the cell's outcome, written
// (atomically) only once the cell ran to its end: its presence is what
// "finished" means to Resume.
const cellRecordFile = "cell.json"

// cellRecord is what a finished cell leaves for Resume.
type cellRecord struct {
	// Args are the `gregor run` arguments the cell ran with: a cell whose
	// arguments changed (the matrix file or the flags did) is run again.
	Args []string     `json:"args"`
	Cell reports.Cell `json:"cell"`
}

// cellArgs are the arguments of cell c's `gregor run`.
func (r *Runner) cellArgs(c Cell) []string {
	args := append(append([]string{"run"}, c.Args...), r.ExtraArgs...)
	return append(args, "--store", r.cellDir(c), "--name", "run")
}

func (r *Runner) cellDir(c Cell) string { return filepath.Join(r.Out, "runs", c.ID) }

// finished returns the stored outcome of a cell an earlier run finished
// with the same arguments.
func (r *Runner) finished(c Cell) (reports.Cell, bool) {
	b, err := os.ReadFile(filepath.Join(r.cellDir(c), cellRecordFile))
	if err != nil {
		return reports.Cell{}, false
	}
	var rec cellRecord
	if json.Unmarshal(b, &rec) != nil || !slices.Equal(rec.Args, r.cellArgs(c)) {
		return reports.Cell{}, false
	}
	return rec.Cell, true
}

// record stores a finished cell's outcome for Resume.
func (r *Runner) record(c Cell, out reports.Cell) error {
	b, err := json.MarshalIndent(cellRecord{Args: r.cellArgs(c), Cell: out}, "", "  ")
	if err != nil {
		return err
	}
	// Resume trusts the record: durable as the store's files are.
	return atomicfile.WriteFile(filepath.Join(r.cellDir(c), cellRecordFile), append(b, '\n'), 0o644)
}

// cellTimeout bounds one cell: its fault phase three times over plus boot,
// recovery and final reads; a cell past it is killed and recorded crashed.
func cellTimeout(c Cell) time.Duration {
	return 3*max(c.Duration, 30*time.Second) + 5*time.Minute
}

// Run runs every cell and returns their outcomes in cell order. Cells run
// in lanes, one per runtime (runtimeOf), each with its own workers
// (LaneParallel, else Parallel): a matrix on two runtimes keeps both busy.
func (r *Runner) Run(ctx context.Context, cells []Cell) []reports.Cell {
	out := make([]reports.Cell, len(cells))
	p := &progress{w: r.Progress, total: len(cells), start: time.Now(), current: map[string]bool{}}
	lanes := map[string][]int{}
	var order []string
	for i, c := range cells {
		rt := r.runtimeOf(c)
		if _, ok := lanes[rt]; !ok {
			order = append(order, rt)
		}
		lanes[rt] = append(lanes[rt], i)
	}
	var wg sync.WaitGroup
	for _, rt := range order {
		wg.Go(func() { r.runLane(ctx, cells, lanes[rt], r.laneParallel(rt), out, p) })
	}
	wg.Wait()
	if r.Progress != nil {
		fmt.Fprintln(r.Progress)
	}
	return out
}

// laneParallel is how many of runtime rt's cells run at once.
func (r *Runner) laneParallel(rt string) int {
	if n, ok := r.LaneParallel[rt]; ok {
		return max(1, n)
	}
	return max(1, r.Parallel)
}

// runtimeOf is the runtime cell c's `gregor run` is on: its last
// --runtime (ExtraArgs come after the cell's own), "" for gregor run's
// default.
func (r *Runner) runtimeOf(c Cell) string {
	args := r.cellArgs(c)
	rt := ""
	for i, a := range args {
		if a == "--runtime" && i+1 < len(args) {
			rt = args[i+1]
		} else if v, ok := strings.CutPrefix(a, "--runtime="); ok {
			rt = v
		}
	}
	return rt
}

// runLane runs the cells at idx, n at a time, into out.
func (r *Runner) runLane(ctx context.Context, cells []Cell, idx []int, n int, out []reports.Cell, p *progress) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for i := range work {
				p.begin(cells[i].ID)
				res := r.runCell(ctx, cells[i])
				if ctx.Err() == nil {
					if err := r.record(cells[i], res); err != nil && r.Progress != nil {
						fmt.Fprintf(r.Progress, "\ncell %s: %v (a --resume will run it again)\n", cells[i].ID, err)
					}
				}
				out[i] = res
				p.end(cells[i].ID)
			}
		})
	}
	for _, i := range idx {
		if r.Resume {
			if done, ok := r.finished(cells[i]); ok {
				// Same arguments, same run; the row it shows in is this
				// plan's (a label may have changed since).
				done.Config, done.Nemesis, done.Runtime = cells[i].Label, cells[i].Nemesis.Name, cells[i].Runtime
				out[i] = done
				p.end("")
				continue
			}
			// Whatever an interrupted attempt left is not this cell's run.
			os.RemoveAll(r.cellDir(cells[i]))
		}
		if ctx.Err() != nil {
			out[i] = reports.Cell{Config: cells[i].Label, Nemesis: cells[i].Nemesis.Name, Seed: cells[i].Seed, Runtime: cells[i].Runtime, Valid: "crashed", Log: "matrix interrupted before this cell ran"}
			continue
		}
		work <- i
	}
	close(work)
	wg.Wait()
}

// progress is the matrix's one progress line, shared by its lanes.
type progress struct {
	w       io.Writer
	mu      sync.Mutex
	total   int
	done    int
	start   time.Time
	current map[string]bool
}

func (p *progress) begin(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.current[id] = true
	p.print()
}

// end counts a cell done ("" for one resumed without running).
func (p *progress) end(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.current, id)
	p.done++
	p.print()
}

func (p *progress) print() {
	if p.w == nil {
		return
	}
	var cur []string
	for id := range p.current {
		cur = append(cur, id)
	}
	sort.Strings(cur)
	elapsed := time.Since(p.start)
	est := "?"
	if p.done > 0 {
		est = (elapsed / time.Duration(p.done) * time.Duration(p.total-p.done)).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r[%d/%d] elapsed %s, remaining ~%s  %s\033[K", p.done, p.total, elapsed.Round(time.Second), est, strings.Join(cur, " "))
}

// bootAttempts bounds how often a cell is started whose cluster did not boot
// (gregor run's exit 5: nothing was tested). A boot outlasting its readiness
// bound on a machine loaded far past its cores is not a finding; one that
// fails this often is reported, as crashed.
const bootAttempts = 3

// exitBootFailed is gregor run's exit status when its cluster did not boot.
const exitBootFailed = 5

// runBooted runs cell c's gregor run, again while its cluster did not boot
// (up to bootAttempts), and returns the last attempt's exit status.
func (r *Runner) runBooted(ctx context.Context, c Cell, logf *os.File) (int, error) {
	args := r.cellArgs(c)
	for attempt := 1; ; attempt++ {
		fmt.Fprintf(logf, "gregor %s\n", strings.Join(args, " "))
		code, err := r.runOnce(ctx, c, args, logf)
		if code != exitBootFailed || attempt == bootAttempts || ctx.Err() != nil {
			return code, err
		}
		fmt.Fprintf(logf, "matrix: the cluster did not boot (attempt %d of %d): starting the cell again\n", attempt, bootAttempts)
	}
}

// runOnce runs gregor run once with args, bounded by the cell's timeout,
// and returns its exit status (-1 if it could not be run).
func (r *Runner) runOnce(ctx context.Context, c Cell, args []string, logf *os.File) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, cellTimeout(c))
	defer cancel()
	cmd := exec.CommandContext(cctx, r.Binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// A SIGINT to the matrix reaches the run (same process group) and it
	// tears its cluster down; a timeout kills it.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	// A matrix that dies (SIGKILL included) takes its runs with it: SIGTERM
	// makes a run tear its cluster down and keep its history, so that a
	// --resume never finds an orphan still writing into a cell.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	cmd.WaitDelay = time.Minute
	runErr := runAt(cmd, r.niceness(c))
	var ee *exec.ExitError
	if errors.As(runErr, &ee) {
		return ee.ExitCode(), runErr
	} else if runErr != nil {
		return -1, runErr
	}
	return 0, nil
}

func (r *Runner) runCell(ctx context.Context, c Cell) reports.Cell {
	cell := reports.Cell{Config: c.Label, Nemesis: c.Nemesis.Name, Seed: c.Seed, Runtime: c.Runtime}
	dir := r.cellDir(c)
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
	code, runErr := r.runBooted(ctx, c, logf)
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
	out.Runtime = c.Runtime
	// The run's own acks, not the label's: at acks=0 nothing is
	// acknowledged and the index shows what was never seen instead.
	if cfg, err := history.ReadConfig(runDir.Config()); err == nil {
		out.Acks = cfg.Acks
	} else {
		fmt.Fprintf(logf, "acks of the run: %v\n", err)
	}
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
