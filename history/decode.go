package history

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// decoder parses one operation line. It is hand-written because
// encoding/json with interface{} values is several times slower and the
// checker must read a million operations in a few seconds. Strings that repeat
// (keys, f, error codes) are interned so a long history shares them.
type decoder struct {
	b   []byte
	i   int
	buf []byte // scratch for strings with escapes
	// scratch for keyRecords; reused across lines.
	spans []recSpan
	recs  []Record
	// intern maps a string's bytes to one shared copy.
	// Invariant: len(intern) <= maxInterned, so hostile input cannot grow it without bound
	// (makeString, its one writer, stops adding at the bound).
	intern map[string]string
	// skipOnly turns off parsing a value in place (tests compare the two).
	skipOnly bool
	// slabs, when set, makes the decoder carve micro-ops and records out of
	// shared arrays (one allocation for thousands of lines, not one or two
	// a line). Only for readers that keep every line they decode (the
	// batched reader): an op kept alone would hold its whole slab.
	slabs   bool
	mops    []Mop // scratch for a line's micro-ops
	mopSlab []Mop
	krSlab  []KeyRecords
	recSlab []Record
}

// slabLen is how many elements a slab holds: large enough that a history
// of a million lines makes a few hundred allocations, small enough that the
// unused tail of the last one does not matter.
const slabLen = 4096

// takeSlab returns n elements of *slab as a slice of capacity n (an append
// by its user copies), refilling the slab when it has fewer left.
func takeSlab[T any](slab *[]T, n int) []T {
	if n == 0 {
		return []T{} // empty, not nil, as make gives
	}
	if len(*slab) < n {
		*slab = make([]T, max(n, slabLen))
	}
	s := (*slab)[:n:n]
	*slab = (*slab)[n:]
	return s
}

const maxInterned = 1 << 16

// recSpan is one key's records within the decoder's scratch.
type recSpan struct {
	key        string
	start, end int
}

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: "+format, append([]any{d.i + 1}, args...)...)
}

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\r', '\n':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) peek() byte {
	d.ws()
	if d.i >= len(d.b) {
		return 0
	}
	return d.b[d.i]
}

func (d *decoder) expect(c byte) error {
	if d.peek() != c {
		if d.i >= len(d.b) {
			return d.errorf("unexpected end of line, want %q", c)
		}
		return d.errorf("want %q, got %q", c, d.b[d.i])
	}
	d.i++
	return nil
}

// parseOp parses a whole line holding one object.
func (d *decoder) parseOp(b []byte) (Op, error) {
	var op Op
	err := d.parseOpInto(b, &op)
	return op, err
}

// parseOpInto is parseOp writing into *op (all of it), so a reader filling
// a slice of Ops copies none.
func (d *decoder) parseOpInto(b []byte, op *Op) error {
	d.b, d.i = b, 0
	*op = Op{Index: -1, Time: -1, Process: -2}
	var raw []byte
	haveValue := false
	// parsedAs is the f whose shape the value was parsed in place with
	// (when f came first, as writers put it); "" when it was only skipped.
	parsedAs := ""
	if err := d.expect('{'); err != nil {
		return err
	}
	if d.peek() == '}' {
		d.i++
	} else {
		for {
			key, err := d.str(true) // interned: field names repeat on every line
			if err != nil {
				return fmt.Errorf("field name: %w", err)
			}
			if err := d.expect(':'); err != nil {
				return err
			}
			switch key {
			case "index":
				if op.Index, err = d.int(); err != nil {
					return fmt.Errorf("field \"index\": %w", err)
				}
			case "time":
				if op.Time, err = d.int(); err != nil {
					return fmt.Errorf("field \"time\": %w", err)
				}
			case "process":
				if d.peek() == '"' {
					s, err := d.str(false)
					if err != nil {
						return fmt.Errorf("field \"process\": %w", err)
					}
					if s != "nemesis" {
						return fmt.Errorf("field \"process\": want an integer or \"nemesis\", got %q", s)
					}
					op.Process = Nemesis
				} else {
					n, err := d.int()
					if err != nil || n < 0 || n > 1<<31 {
						return fmt.Errorf("field \"process\": want an integer >= 0 or \"nemesis\"")
					}
					op.Process = Process(n)
				}
			case "type":
				s, err := d.str(true)
				if err != nil {
					return fmt.Errorf("field \"type\": %w", err)
				}
				t, ok := ParseType(s)
				if !ok {
					return fmt.Errorf("field \"type\": want invoke, ok, fail or info, got %q", s)
				}
				op.Type = t
			case "f":
				if op.F, err = d.str(true); err != nil {
					return fmt.Errorf("field \"f\": %w", err)
				}
			case "value":
				start := d.i
				parsedAs = ""
				if op.F != "" && shapeOf(op.F) != shapeRaw && !d.skipOnly {
					// Parse it in place, once; on any error go back and
					// take the general path, so errors read the same.
					if d.parseValueHere(op, shapeOf(op.F)) == nil {
						parsedAs = op.F
					} else {
						op.Mops, op.Keys, op.Offsets, op.Records = nil, nil, nil, nil
						d.i = start
					}
				}
				if parsedAs == "" {
					if err := d.skip(0); err != nil {
						return fmt.Errorf("field \"value\": %w", err)
					}
				}
				raw = d.b[start:d.i]
				haveValue = true
			case "error":
				if d.peek() == 'n' {
					err = d.null()
				} else {
					op.Error, err = d.str(true)
				}
				if err != nil {
					return fmt.Errorf("field \"error\": %w", err)
				}
			case "group":
				if op.Group, err = d.str(true); err != nil {
					return fmt.Errorf("field \"group\": %w", err)
				}
			default:
				// Unknown fields are skipped: newer writers may add some.
				if err := d.skip(0); err != nil {
					return fmt.Errorf("field %q: %w", key, err)
				}
			}
			c := d.peek()
			if c == ',' {
				d.i++
				continue
			}
			if c == '}' {
				d.i++
				break
			}
			return d.errorf("want ',' or '}' after a field")
		}
	}
	d.ws()
	if d.i != len(d.b) {
		return d.errorf("trailing data after the object")
	}
	switch {
	case op.Index < 0:
		return errors.New("missing or negative \"index\"")
	case op.Time < 0:
		return errors.New("missing or negative \"time\"")
	case op.Process == -2:
		return errors.New("missing \"process\"")
	case op.Type == 0:
		return errors.New("missing \"type\"")
	case op.F == "":
		return errors.New("missing \"f\"")
	}
	if haveValue && parsedAs != op.F {
		op.Mops, op.Keys, op.Offsets, op.Records = nil, nil, nil, nil
		if err := d.parseValue(op, raw); err != nil {
			return fmt.Errorf("field \"value\" of f %q: %w", op.F, err)
		}
	}
	return nil
}

func (d *decoder) parseValue(op *Op, raw []byte) error {
	shape := shapeOf(op.F)
	if shape == shapeRaw {
		if string(raw) != "null" {
			op.Raw = append([]byte(nil), raw...)
		}
		return nil
	}
	saveB, saveI := d.b, d.i
	defer func() { d.b, d.i = saveB, saveI }()
	d.b, d.i = raw, 0
	return d.parseValueHere(op, shape)
}

// parseValueHere parses a value of the shape at the current position.
func (d *decoder) parseValueHere(op *Op, shape valueShape) error {
	if d.peek() == 'n' {
		return d.null()
	}
	switch shape {
	case shapeMops:
		if err := d.expect('['); err != nil {
			return err
		}
		if d.slabs {
			return d.mopsIntoSlab(op)
		}
		op.Mops = make([]Mop, 0, 1)
		for first := true; ; first = false {
			if d.peek() == ']' {
				d.i++
				return nil
			}
			if !first {
				if err := d.expect(','); err != nil {
					return err
				}
			}
			m, err := d.mop()
			if err != nil {
				return fmt.Errorf("micro-op %d: %w", len(op.Mops), err)
			}
			op.Mops = append(op.Mops, m)
		}
	case shapeKeys:
		if err := d.expect('['); err != nil {
			return err
		}
		op.Keys = []string{}
		for first := true; ; first = false {
			if d.peek() == ']' {
				d.i++
				return nil
			}
			if !first {
				if err := d.expect(','); err != nil {
					return err
				}
			}
			k, err := d.str(true)
			if err != nil {
				return err
			}
			op.Keys = append(op.Keys, k)
		}
	case shapeOffsets:
		if err := d.expect('{'); err != nil {
			return err
		}
		op.Offsets = []KeyOffset{}
		for first := true; ; first = false {
			if d.peek() == '}' {
				d.i++
				return nil
			}
			if !first {
				if err := d.expect(','); err != nil {
					return err
				}
			}
			k, err := d.str(true)
			if err != nil {
				return err
			}
			if err := d.expect(':'); err != nil {
				return err
			}
			n, err := d.int()
			if err != nil {
				return fmt.Errorf("offset of %q: %w", k, err)
			}
			op.Offsets = append(op.Offsets, KeyOffset{Key: k, Offset: n})
		}
	case shapeRecords:
		krs, err := d.keyRecords()
		op.Records = krs
		return err
	}
	return nil
}

// mopsIntoSlab is the micro-op list's loop (after its '[') gathering them
// in scratch, then copying them into the slab: the same result and errors
// as the loop in parseValueHere, without an allocation a line.
func (d *decoder) mopsIntoSlab(op *Op) error {
	mops := d.mops[:0]
	defer func() { clear(mops); d.mops = mops[:0] }()
	for first := true; ; first = false {
		if d.peek() == ']' {
			d.i++
			op.Mops = takeSlab(&d.mopSlab, len(mops))
			copy(op.Mops, mops)
			return nil
		}
		if !first {
			if err := d.expect(','); err != nil {
				return err
			}
		}
		m, err := d.mop()
		if err != nil {
			return fmt.Errorf("micro-op %d: %w", len(mops), err)
		}
		mops = append(mops, m)
	}
}

// mop parses ["send", key, value], ["send", key, [offset, value]], ["poll"]
// or ["poll", {key: [[offset, value]...]}].
func (d *decoder) mop() (Mop, error) {
	var m Mop
	if err := d.expect('['); err != nil {
		return m, err
	}
	f, err := d.str(true)
	if err != nil {
		return m, err
	}
	switch f {
	case "send":
		m.Kind = MopSend
		if err := d.expect(','); err != nil {
			return m, err
		}
		if m.Key, err = d.str(true); err != nil {
			return m, fmt.Errorf("send key: %w", err)
		}
		if err := d.expect(','); err != nil {
			return m, err
		}
		m.Offset = NoOffset
		if d.peek() == '[' {
			d.i++
			if d.peek() == 'n' {
				if err := d.null(); err != nil {
					return m, err
				}
			} else if m.Offset, err = d.int(); err != nil {
				return m, fmt.Errorf("send offset: %w", err)
			} else if m.Offset < 0 {
				m.Offset = NoOffset
			}
			if err := d.expect(','); err != nil {
				return m, err
			}
			if m.Value, err = d.int(); err != nil {
				return m, fmt.Errorf("send value: %w", err)
			}
			if err := d.expect(']'); err != nil {
				return m, err
			}
		} else if m.Value, err = d.int(); err != nil {
			return m, fmt.Errorf("send value: %w", err)
		}
	case "poll":
		m.Kind = MopPoll
		if d.peek() == ',' {
			d.i++
			if d.peek() == 'n' {
				if err := d.null(); err != nil {
					return m, err
				}
			} else if m.Polls, err = d.keyRecords(); err != nil {
				return m, err
			}
		}
	default:
		return m, fmt.Errorf("unknown micro-op %q (want \"send\" or \"poll\")", f)
	}
	return m, d.expect(']')
}

// keyRecords parses {key: [[offset, value]...]}. Records are gathered in
// scratch space and copied out once, into one backing array for all keys, so
// a poll costs two allocations however many keys and records it holds.
func (d *decoder) keyRecords() ([]KeyRecords, error) {
	if err := d.expect('{'); err != nil {
		return nil, err
	}
	spans := d.spans[:0]
	recs := d.recs[:0]
	defer func() { d.spans, d.recs = spans[:0], recs[:0] }()
	for first := true; ; first = false {
		if d.peek() == '}' {
			d.i++
			break
		}
		if !first {
			if err := d.expect(','); err != nil {
				return nil, err
			}
		}
		k, err := d.str(true)
		if err != nil {
			return nil, err
		}
		if err := d.expect(':'); err != nil {
			return nil, err
		}
		if err := d.expect('['); err != nil {
			return nil, err
		}
		start := len(recs)
		for first := true; ; first = false {
			if d.peek() == ']' {
				d.i++
				break
			}
			if !first {
				if err := d.expect(','); err != nil {
					return nil, err
				}
			}
			var r Record
			if err := d.expect('['); err != nil {
				return nil, err
			}
			if r.Offset, err = d.int(); err != nil {
				return nil, fmt.Errorf("record offset of %q: %w", k, err)
			}
			if err := d.expect(','); err != nil {
				return nil, err
			}
			if r.Value, err = d.int(); err != nil {
				return nil, fmt.Errorf("record value of %q: %w", k, err)
			}
			if err := d.expect(']'); err != nil {
				return nil, err
			}
			recs = append(recs, r)
		}
		spans = append(spans, recSpan{k, start, len(recs)})
	}
	var krs []KeyRecords
	var backing []Record
	if d.slabs {
		krs, backing = takeSlab(&d.krSlab, len(spans)), takeSlab(&d.recSlab, len(recs))
	} else {
		krs, backing = make([]KeyRecords, len(spans)), make([]Record, len(recs))
	}
	copy(backing, recs)
	for i, sp := range spans {
		krs[i] = KeyRecords{Key: sp.key, Records: backing[sp.start:sp.end:sp.end]}
	}
	return krs, nil
}

func (d *decoder) null() error {
	d.ws()
	if len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		return nil
	}
	return d.errorf("want null")
}

// int parses a JSON integer; fractions and exponents are refused because
// every number of the format is an integer.
func (d *decoder) int() (int64, error) {
	d.ws()
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	if d.i == digits {
		if d.i < len(d.b) {
			return 0, d.errorf("want an integer, got %q", d.b[d.i])
		}
		return 0, d.errorf("want an integer, got end of line")
	}
	if d.i < len(d.b) && (d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		return 0, d.errorf("want an integer, got a fraction or exponent")
	}
	s := d.b[start:d.i]
	if len(s) < 18 { // fast path: cannot overflow
		var n int64
		neg := s[0] == '-'
		if neg {
			s = s[1:]
		}
		for _, c := range s {
			n = n*10 + int64(c-'0')
		}
		if neg {
			n = -n
		}
		return n, nil
	}
	n, err := strconv.ParseInt(string(s), 10, 64)
	if err != nil {
		return 0, d.errorf("integer out of range")
	}
	return n, nil
}

// str parses a JSON string; intern shares repeated values.
func (d *decoder) str(intern bool) (string, error) {
	if d.peek() != '"' {
		if d.i >= len(d.b) {
			return "", d.errorf("want a string, got end of line")
		}
		return "", d.errorf("want a string, got %q", d.b[d.i])
	}
	d.i++
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		if c == '"' {
			s := d.b[start:d.i]
			d.i++
			return d.makeString(s, intern), nil
		}
		if c == '\\' {
			return d.strSlow(start, intern)
		}
		if c < 0x20 {
			return "", d.errorf("control character in string")
		}
		d.i++
	}
	return "", d.errorf("unterminated string")
}

func (d *decoder) makeString(s []byte, intern bool) string {
	if !intern {
		return string(s)
	}
	if v, ok := knownString(s); ok {
		return v
	}
	if v, ok := d.intern[string(s)]; ok {
		return v
	}
	v := string(s)
	if d.intern == nil {
		d.intern = make(map[string]string)
	}
	if len(d.intern) < maxInterned {
		d.intern[v] = v
	}
	return v
}

func (d *decoder) strSlow(start int, intern bool) (string, error) {
	buf := append(d.buf[:0], d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			d.buf = buf
			return d.makeString(buf, intern), nil
		case c < 0x20:
			return "", d.errorf("control character in string")
		case c != '\\':
			buf = append(buf, c)
			d.i++
			continue
		}
		d.i++
		if d.i >= len(d.b) {
			break
		}
		e := d.b[d.i]
		d.i++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return "", d.errorf("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if d.i+1 < len(d.b) && d.b[d.i] == '\\' && d.b[d.i+1] == 'u' {
					d.i += 2
					if r2, ok = d.hex4(); !ok {
						return "", d.errorf("bad \\u escape")
					}
				}
				r = utf16.DecodeRune(r, r2)
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", d.errorf("bad escape \\%c", e)
		}
	}
	return "", d.errorf("unterminated string")
}

func (d *decoder) hex4() (rune, bool) {
	if len(d.b)-d.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	d.i += 4
	return r, true
}

// maxDepth bounds nesting of free JSON values so a hostile line cannot
// exhaust the stack.
const maxDepth = 64

// skip moves past one JSON value, checking its syntax.
func (d *decoder) skip(depth int) error {
	if depth > maxDepth {
		return d.errorf("value nested deeper than %d", maxDepth)
	}
	switch c := d.peek(); {
	case c == '"':
		_, err := d.str(false)
		return err
	case c == '{' || c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		d.i++
		for first := true; ; first = false {
			if d.peek() == closing {
				d.i++
				return nil
			}
			if !first {
				if err := d.expect(','); err != nil {
					return err
				}
			}
			if c == '{' {
				if _, err := d.str(false); err != nil {
					return err
				}
				if err := d.expect(':'); err != nil {
					return err
				}
			}
			if err := d.skip(depth + 1); err != nil {
				return err
			}
		}
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
				d.i += len(lit)
				return nil
			}
		}
		return d.errorf("bad literal")
	case c == '-' || (c >= '0' && c <= '9'):
		start := d.i
		d.i++
		for d.i < len(d.b) && bytesNumber(d.b[d.i]) {
			d.i++
		}
		if _, err := strconv.ParseFloat(string(d.b[start:d.i]), 64); err != nil {
			return d.errorf("bad number")
		}
		return nil
	case c == 0:
		return d.errorf("unexpected end of line")
	default:
		return d.errorf("unexpected %q", c)
	}
}

func bytesNumber(c byte) bool {
	return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// knownString is the format's own vocabulary (field names, types, fs,
// micro-op names), matched without a map lookup.
func knownString(s []byte) (string, bool) {
	switch string(s) {
	case "index":
		return "index", true
	case "time":
		return "time", true
	case "process":
		return "process", true
	case "type":
		return "type", true
	case "f":
		return "f", true
	case "value":
		return "value", true
	case "error":
		return "error", true
	case "invoke":
		return "invoke", true
	case "ok":
		return "ok", true
	case "fail":
		return "fail", true
	case "info":
		return "info", true
	case FSend:
		return FSend, true
	case FPoll:
		return FPoll, true
	}
	return "", false
}
