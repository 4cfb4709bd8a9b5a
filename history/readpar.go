package history

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// A history is read in batches of lines: one goroutine splits the file
// into lines (Reader.readLine, as the sequential reader does), workers decode
// batches in parallel, and the caller takes the batches in file order,
// checking indexes and applying the sequential reader's policy line by line
// (a bad line is an error, a bad last line without its newline a warning).
// The result is the sequential reader's (TestParallelReadAgrees).

// batchLines and batchBytes bound a batch.
const (
	batchLines = 2048
	batchBytes = 512 << 10
)

type readBatch struct {
	buf       []byte
	ends      []int // ends[i]: end of line i in buf
	firstLine int   // line number of the batch's first line
	// lastOpen: the batch's last line had no newline (the file's end).
	lastOpen bool
	// readErr ends the file after the batch's lines (a read error, a line
	// too long).
	readErr error

	// base is the position of the batch's first op in the result, count
	// its lines that are not blank; direct: they fit the result's capacity,
	// so the worker decodes them there (ops and lines are then that part
	// of the result, and nothing is copied).
	base, count int
	direct      bool

	// decoded by a worker:
	ops   []Op
	lines []int
	// own are the batch's arrays for ops that are not direct.
	ownOps   []Op
	ownLines []int
	badLine  int   // line number of the first line that did not parse; 0: none
	badOpen  bool  // that line was the last one, without its newline
	bad      error // why
	done     chan struct{}
}

// decode decodes the batch's lines, into ops and lines (the whole result's
// arrays) when direct.
func (b *readBatch) decode(d *decoder, ops []Op, lines []int) {
	b.badLine, b.bad = 0, nil
	if b.direct {
		b.ops, b.lines = ops[b.base:b.base:b.base+b.count], lines[b.base:b.base:b.base+b.count]
	} else {
		b.ops, b.lines = b.ownOps[:0], b.ownLines[:0]
		defer func() { b.ownOps, b.ownLines = b.ops[:0], b.lines[:0] }()
	}
	start := 0
	for i, end := range b.ends {
		line := bytes.TrimSpace(b.buf[start:end])
		start = end
		if len(line) == 0 {
			continue
		}
		b.ops = append(b.ops, Op{})
		if err := d.parseOpInto(line, &b.ops[len(b.ops)-1]); err != nil {
			b.ops[len(b.ops)-1] = Op{}
			b.ops = b.ops[:len(b.ops)-1]
			b.badLine, b.badOpen, b.bad = b.firstLine+i, b.lastOpen && i == len(b.ends)-1, err
			return
		}
		b.lines = append(b.lines, b.firstLine+i)
	}
}

// blank is whether a line holds nothing but white space, as decode sees it.
func blank(l []byte) bool {
	if len(l) > 0 && l[0] > ' ' && l[0] < 0x80 {
		return false
	}
	return len(bytes.TrimSpace(l)) == 0
}

// readAllParallel is readAll with the decoding spread over workers.
func readAllParallel(rd io.Reader, sizeHint, workers int) (ops []Op, lines []int, warnings []string, err error) {
	return readBatched(rd, sizeHint, workers, batchLines)
}

// readBatched is readAllParallel with at most maxLines lines a batch.
func readBatched(rd io.Reader, sizeHint, workers, maxLines int) (ops []Op, lines []int, warnings []string, err error) {
	workers = max(workers, 1)
	r := NewReader(rd)
	work := make(chan *readBatch)
	order := make(chan *readBatch, 2*workers)
	quit := make(chan struct{})
	free := make(chan *readBatch, 3*workers+1)
	// The result's arrays, filled in place while they have room: batches
	// fit as long as the lines before them do, so the direct ones are the
	// first, and all are taken before the first that is not.
	ops = make([]Op, 0, sizeHint)
	lines = make([]int, 0, sizeHint)
	allOps, allLines := ops[:cap(ops)], lines[:cap(lines)]
	// Split lines.
	go func() {
		defer close(work)
		defer close(order)
		next := 0 // position of the next batch's first op
		for {
			var b *readBatch
			select {
			case b = <-free:
				b.buf, b.ends, b.readErr, b.lastOpen = b.buf[:0], b.ends[:0], nil, false
			default:
				b = &readBatch{done: make(chan struct{}, 1)}
			}
			b.firstLine = r.line + 1
			b.base, b.count = next, 0
			eof := false
			for len(b.ends) < maxLines && len(b.buf) < batchBytes {
				l, complete, err := r.readLine()
				if err != nil {
					b.readErr = err
					eof = true
					break
				}
				if l == nil {
					eof = true
					break
				}
				r.line++ // readLine names the next line in its errors
				b.buf = append(b.buf, l...)
				b.ends = append(b.ends, len(b.buf))
				if !blank(l) {
					b.count++
				}
				if !complete {
					b.lastOpen = true
					eof = true
					break
				}
			}
			next += b.count
			b.direct = next <= len(allOps)
			select {
			case order <- b:
			case <-quit:
				return
			}
			select {
			case work <- b:
			case <-quit:
				return
			}
			if eof {
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := decoder{slabs: true} // the result keeps every line
			for b := range work {
				b.decode(&d, allOps, allLines)
				b.done <- struct{}{}
			}
		}()
	}
	defer func() {
		close(quit)
		for b := range order { // let the splitter end
			_ = b
		}
		wg.Wait()
		if err != nil && len(ops) <= len(allOps) {
			clear(allOps[len(ops):]) // what batches after the error decoded
		}
	}()
	lastIdx := int64(-1)
	for b := range order {
		<-b.done
		for i := range b.ops {
			op := &b.ops[i]
			if op.Index <= lastIdx {
				return ops, lines, warnings, &ParseError{Line: b.lines[i], Msg: fmt.Sprintf("index %d does not increase (previous %d)", op.Index, lastIdx)}
			}
			lastIdx = op.Index
			if b.direct {
				ops, lines = ops[:len(ops)+1], lines[:len(lines)+1] // in place already
			} else {
				ops = append(ops, *op)
				lines = append(lines, b.lines[i])
			}
		}
		if !b.direct {
			clear(b.ops) // drop references, the batch is reused
		}
		b.ops, b.lines = nil, nil
		switch {
		case b.bad != nil && b.badOpen:
			// A write cut short by a crash: tolerate it, the line was never whole.
			warnings = append(warnings, fmt.Sprintf("line %d: truncated last line ignored (%v)", b.badLine, b.bad))
			return ops, lines, warnings, nil
		case b.bad != nil:
			return ops, lines, warnings, &ParseError{Line: b.badLine, Msg: b.bad.Error()}
		case b.readErr != nil:
			return ops, lines, warnings, b.readErr
		}
		select {
		case free <- b:
		default:
		}
	}
	return ops, lines, warnings, nil
}
