package history

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
)

// ParseError says which line of a run file (a history, metadata.jsonl) is
// unusable and why: damage, not a torn last line (see ReadRun's policy).
type ParseError struct {
	File string // the file's path; "" when read from a stream
	Line int    // 1-based
	Msg  string
}

func (e *ParseError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: line %d: %s", e.File, e.Line, e.Msg)
}

// inFile names path in a reader's error and warnings.
func inFile(path string, warnings []string, err error) ([]string, error) {
	for i, w := range warnings {
		warnings[i] = path + ": " + w
	}
	// A read error (*fs.PathError) names the file already.
	if pe, ok := errors.AsType[*ParseError](err); ok && pe.File == "" {
		pe.File = path
	}
	return warnings, err
}

// MaxLineBytes bounds one line; a longer one is reported, not buffered.
const MaxLineBytes = 64 << 20

// Reader streams operations from a JSON Lines history.
//
// Only the LAST line may be broken, and only if it lacks its newline: that is
// what a harness killed mid-write leaves. Such a line is dropped with a
// warning. Any other bad line is an error naming the line. Blank lines are
// skipped. Indexes must increase strictly.
type Reader struct {
	r        *bufio.Reader
	d        decoder
	line     int
	lastIdx  int64
	warnings []string
	done     bool
}

// NewReader reads a history from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 1<<20), lastIdx: -1}
}

// Line is the 1-based line number of the operation Next returned last.
func (r *Reader) Line() int { return r.line }

// Warnings lists what was tolerated (a truncated last line).
func (r *Reader) Warnings() []string { return r.warnings }

// Next returns the next operation, io.EOF at the end, or a *ParseError.
func (r *Reader) Next() (Op, error) {
	var op Op
	if err := r.next(&op); err != nil {
		return Op{}, err
	}
	return op, nil
}

// next is Next decoding into *op, which holds garbage after an error.
func (r *Reader) next(op *Op) error {
	for !r.done {
		line, complete, err := r.readLine()
		if err != nil {
			return err
		}
		if line == nil {
			r.done = true
			break
		}
		r.line++
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		perr := r.d.parseOpInto(line, op)
		if perr != nil {
			if !complete {
				// A write cut short by a crash: tolerate it, the line was never whole.
				r.warnings = append(r.warnings, fmt.Sprintf("line %d: truncated last line ignored (%v)", r.line, perr))
				r.done = true
				break
			}
			return &ParseError{Line: r.line, Msg: perr.Error()}
		}
		if op.Index <= r.lastIdx {
			return &ParseError{Line: r.line, Msg: fmt.Sprintf("index %d does not increase (previous %d)", op.Index, r.lastIdx)}
		}
		r.lastIdx = op.Index
		return nil
	}
	return io.EOF
}

// readLine returns the next line without its newline, whether it ended in a
// newline, or nil at EOF.
func (r *Reader) readLine() ([]byte, bool, error) {
	line, err := r.r.ReadSlice('\n')
	if err == nil {
		return line[:len(line)-1], true, nil
	}
	if errors.Is(err, bufio.ErrBufferFull) {
		buf := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(buf) > MaxLineBytes {
				return nil, false, &ParseError{Line: r.line + 1, Msg: fmt.Sprintf("line longer than %d bytes", MaxLineBytes)}
			}
			line, err = r.r.ReadSlice('\n')
			buf = append(buf, line...)
		}
		if err == nil {
			return buf[:len(buf)-1], true, nil
		}
		line = buf
	}
	if err == io.EOF {
		if len(line) == 0 {
			return nil, false, nil
		}
		return line, false, nil
	}
	return nil, false, err
}

// ReadAll reads a whole history. lines[i] is the line of ops[i].
func ReadAll(rd io.Reader) (ops []Op, lines []int, warnings []string, err error) {
	hint := 0
	if l, ok := rd.(interface{ Len() int }); ok { // bytes.Reader, strings.Reader
		hint = min(l.Len()/100+1, 1<<24)
	}
	return readAllParallel(rd, hint, runtime.GOMAXPROCS(0))
}

// readAll reads a whole history with room for sizeHint ops, so a million-line
// file is not copied over and over as the slice grows. It is the reference
// readAllParallel is tested against.
func readAll(rd io.Reader, sizeHint int) (ops []Op, lines []int, warnings []string, err error) {
	r := NewReader(rd)
	ops = make([]Op, 0, sizeHint)
	lines = make([]int, 0, sizeHint)
	for {
		ops = append(ops, Op{})
		err := r.next(&ops[len(ops)-1])
		if err != nil {
			ops[len(ops)-1] = Op{} // drop what a failed line left
			ops = ops[:len(ops)-1]
		}
		if err == io.EOF {
			return ops, lines, r.Warnings(), nil
		}
		if err != nil {
			return ops, lines, r.Warnings(), err
		}
		lines = append(lines, r.Line())
	}
}

// ReadFile reads a history file; its errors and warnings name the file.
func ReadFile(path string) (ops []Op, lines []int, warnings []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	hint := 0
	if st, err := f.Stat(); err == nil {
		// ~100 bytes a line; bounded so a huge file cannot reserve absurd memory up front.
		hint = int(min(st.Size()/100+1, 1<<24))
	}
	ops, lines, warnings, err = readAllParallel(f, hint, runtime.GOMAXPROCS(0))
	warnings, err = inFile(path, warnings, err)
	return ops, lines, warnings, err
}
