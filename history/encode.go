package history

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends op as one JSON object (no newline) to dst. It is written
// by hand, not through encoding/json, because the harness streams every
// operation through it and the checker's benchmarks read a million of them.
func AppendJSON(dst []byte, op *Op) []byte {
	dst = append(dst, `{"index":`...)
	dst = strconv.AppendInt(dst, op.Index, 10)
	dst = append(dst, `,"time":`...)
	dst = strconv.AppendInt(dst, op.Time, 10)
	dst = append(dst, `,"process":`...)
	if op.Process == Nemesis {
		dst = append(dst, `"nemesis"`...)
	} else {
		dst = strconv.AppendInt(dst, int64(op.Process), 10)
	}
	dst = append(dst, `,"type":"`...)
	dst = append(dst, op.Type.String()...)
	dst = append(dst, `","f":`...)
	dst = appendString(dst, op.F)
	dst = append(dst, `,"value":`...)
	dst = appendValue(dst, op)
	if op.Error != "" {
		dst = append(dst, `,"error":`...)
		dst = appendString(dst, op.Error)
	}
	if op.Group != "" {
		dst = append(dst, `,"group":`...)
		dst = appendString(dst, op.Group)
	}
	return append(dst, '}')
}

func appendValue(dst []byte, op *Op) []byte {
	switch shapeOf(op.F) {
	case shapeMops:
		if op.Mops == nil {
			return append(dst, "null"...)
		}
		dst = append(dst, '[')
		for i := range op.Mops {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendMop(dst, &op.Mops[i])
		}
		return append(dst, ']')
	case shapeKeys:
		if op.Keys == nil {
			return append(dst, "null"...)
		}
		dst = append(dst, '[')
		for i, k := range op.Keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
		}
		return append(dst, ']')
	case shapeOffsets:
		if op.Offsets == nil {
			return append(dst, "null"...)
		}
		dst = append(dst, '{')
		for i, ko := range op.Offsets {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, ko.Key)
			dst = append(dst, ':')
			dst = strconv.AppendInt(dst, ko.Offset, 10)
		}
		return append(dst, '}')
	case shapeRecords:
		if op.Records == nil {
			return append(dst, "null"...)
		}
		return appendKeyRecords(dst, op.Records)
	}
	if len(op.Raw) == 0 {
		return append(dst, "null"...)
	}
	return append(dst, op.Raw...)
}

func appendMop(dst []byte, m *Mop) []byte {
	switch m.Kind {
	case MopSend:
		dst = append(dst, `["send",`...)
		dst = appendString(dst, m.Key)
		dst = append(dst, ',')
		if m.Offset >= 0 {
			dst = append(dst, '[')
			dst = strconv.AppendInt(dst, m.Offset, 10)
			dst = append(dst, ',')
			dst = strconv.AppendInt(dst, m.Value, 10)
			dst = append(dst, ']')
		} else {
			dst = strconv.AppendInt(dst, m.Value, 10)
		}
		return append(dst, ']')
	case MopPoll:
		if m.Polls == nil {
			return append(dst, `["poll"]`...)
		}
		dst = append(dst, `["poll",`...)
		dst = appendKeyRecords(dst, m.Polls)
		return append(dst, ']')
	}
	return append(dst, "null"...)
}

func appendKeyRecords(dst []byte, krs []KeyRecords) []byte {
	dst = append(dst, '{')
	for i := range krs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, krs[i].Key)
		dst = append(dst, ":["...)
		for j, r := range krs[i].Records {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '[')
			dst = strconv.AppendInt(dst, r.Offset, 10)
			dst = append(dst, ',')
			dst = strconv.AppendInt(dst, r.Value, 10)
			dst = append(dst, ']')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json does, so every line stays valid JSON.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// MarshalJSON lets an Op sit inside other JSON documents (reports, examples).
func (o Op) MarshalJSON() ([]byte, error) { return AppendJSON(nil, &o), nil }

// UnmarshalJSON parses one operation object.
func (o *Op) UnmarshalJSON(b []byte) error {
	var d decoder
	op, err := d.parseOp(b)
	if err != nil {
		return err
	}
	*o = op
	return nil
}

// MarshalJSON writes a Process as an integer or "nemesis".
func (p Process) MarshalJSON() ([]byte, error) {
	if p == Nemesis {
		return []byte(`"nemesis"`), nil
	}
	return strconv.AppendInt(nil, int64(p), 10), nil
}

// MarshalJSON writes a Type as its name.
func (t Type) MarshalJSON() ([]byte, error) {
	return appendString(nil, t.String()), nil
}

// UnmarshalJSON reads an integer or "nemesis".
func (p *Process) UnmarshalJSON(b []byte) error {
	d := decoder{b: b}
	if d.peek() == '"' {
		s, err := d.str(false)
		if err != nil || s != "nemesis" {
			return fmt.Errorf("process: want an integer or \"nemesis\", got %s", b)
		}
		*p = Nemesis
		return nil
	}
	n, err := d.int()
	if err != nil || n < 0 {
		return fmt.Errorf("process: want an integer >= 0 or \"nemesis\", got %s", b)
	}
	*p = Process(n)
	return nil
}

// UnmarshalJSON reads a type name.
func (t *Type) UnmarshalJSON(b []byte) error {
	d := decoder{b: b}
	s, err := d.str(false)
	if err != nil {
		return err
	}
	v, ok := ParseType(s)
	if !ok {
		return fmt.Errorf("type: want invoke, ok, fail or info, got %q", s)
	}
	*t = v
	return nil
}
