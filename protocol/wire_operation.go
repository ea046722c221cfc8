package protocol

import (
	"bytes"
	"encoding/binary"
	"math"
	"sync/atomic"
	"unicode/utf8"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The operation.call envelope is on every operation call, both ways, and
// json spends most of its time on it in reflection over its small structs
// and in the payload's data, a jsontext.Value it validates and reformats
// on the way out and validates on the way in. The codecs here read and
// write the envelope directly and check the data with one scan; anything
// that scan is not sure of is left to json, which accepts, reformats or
// refuses it as it always did.

// UnmarshalJSONOnePass decodes operation.call's params from the JSON
// object data, as json.Unmarshal would. The input's data is a copy that p
// owns: data may be borrowed from a read buffer that is reused. Only a zero
// p is decoded directly: into anything else json.Unmarshal merges.
func (p *OperationCallParams) UnmarshalJSONOnePass(data []byte) error {
	if p.Operation == "" && p.Input.Schema == "" && p.Input.Data == nil && p.Authority == (Authority{}) && p.RequestID == "" {
		var v OperationCallParams
		if v.decode(data) {
			*p = v
			return nil
		}
	}
	return json.Unmarshal(data, p)
}

// AppendJSON appends the params as JSON to b, byte for byte what
// json.Marshal writes, and fails as json.Marshal fails.
func (p OperationCallParams) AppendJSON(b []byte) ([]byte, error) {
	start := len(b)
	b = append(b, `{"operation":`...)
	b, ok := appendString(b, p.Operation)
	if ok {
		b = append(b, `,"input":`...)
		b, ok = appendPayload(b, p.Input)
	}
	if ok {
		b = append(b, `,"authority":`...)
		b, ok = appendAuthority(b, p.Authority)
	}
	if ok && p.RequestID != "" {
		b = append(b, `,"request_id":`...)
		b, ok = appendString(b, p.RequestID)
	}
	if !ok {
		return appendMarshal(b[:start], p)
	}
	return append(b, '}'), nil
}

// UnmarshalJSONOnePass decodes operation.call's result from the JSON
// object data, as json.Unmarshal would. The output's data is a copy that r
// owns: data may be borrowed from a read buffer that is reused. Only a zero
// r is decoded directly: into anything else json.Unmarshal merges.
func (r *OperationCallResult) UnmarshalJSONOnePass(data []byte) error {
	if r.Output.Schema == "" && r.Output.Data == nil {
		var v OperationCallResult
		if v.decode(data) {
			*r = v
			return nil
		}
	}
	return json.Unmarshal(data, r)
}

// AppendJSON appends the result as JSON to b, byte for byte what
// json.Marshal writes, and fails as json.Marshal fails.
func (r OperationCallResult) AppendJSON(b []byte) ([]byte, error) {
	start := len(b)
	b = append(b, `{"output":`...)
	b, ok := appendPayload(b, r.Output)
	if !ok {
		return appendMarshal(b[:start], r)
	}
	return append(b, '}'), nil
}

// appendMarshal appends json.Marshal's encoding of v to b: the way out for
// anything the direct encoders are not sure of, errors included.
func appendMarshal(b []byte, v any) ([]byte, error) {
	out, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, out...), nil
}

// appendString appends s quoted as json.Marshal quotes a string, or
// reports false (s is not valid UTF-8) for json.Marshal to refuse.
func appendString(b []byte, s string) ([]byte, bool) {
	b, err := jsontext.AppendQuote(b, s)
	return b, err == nil
}

// appendPayload appends p's members in field order, each left out when
// empty (schema) or nil (data), as json.Marshal writes them. The data goes
// out as it is when it is already what json would write of it: compact, its
// strings in canonical form, no repeated names; anything else reports false.
func appendPayload(b []byte, p Payload) ([]byte, bool) {
	b = append(b, '{')
	ok := true
	if p.Schema != "" {
		b = append(b, `"schema":`...)
		if b, ok = appendString(b, p.Schema); !ok {
			return b, false
		}
	}
	if p.Data != nil {
		if p.Schema != "" {
			b = append(b, ',')
		}
		s := valueScanner{b: p.Data, canonical: true}
		if s.value(0) != len(p.Data) {
			return b, false
		}
		b = append(b, `"data":`...)
		b = append(b, p.Data...)
	}
	return append(b, '}'), true
}

// appendAuthority appends a's non-empty members in field order.
func appendAuthority(b []byte, a Authority) ([]byte, bool) {
	b = append(b, '{')
	sep := false
	for _, m := range [...]struct{ name, v string }{
		{`"scope_id":`, a.Scope}, {`"work_id":`, a.Work}, {`"execution_id":`, a.Execution},
		{`"connection":`, a.Connection}, {`"caller":`, a.Caller},
	} {
		if m.v == "" {
			continue
		}
		if sep {
			b = append(b, ',')
		}
		sep = true
		b = append(b, m.name...)
		var ok bool
		if b, ok = appendString(b, m.v); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// decode reads the params in the shape every encoder writes them, in any
// member order and with any whitespace; it reports false, with p perhaps
// half-filled, on anything else: an escaped, repeated, unknown or
// case-variant name, a null, an escaped string, data it is not sure of.
func (p *OperationCallParams) decode(b []byte) bool {
	var seen uint8
	i := walkObject(b, skipSpace(b, 0), func(name []byte, i int) int {
		var bit uint8
		switch string(name) {
		case "operation":
			bit = 1
			p.Operation, i = readName(b, i)
		case "input":
			bit = 2
			i = readPayload(b, i, &p.Input)
		case "authority":
			bit = 4
			i = readAuthority(b, i, &p.Authority)
		case "request_id":
			bit = 8
			p.RequestID, i = readString(b, i)
		default:
			return -1
		}
		if seen&bit != 0 {
			return -1
		}
		seen |= bit
		return i
	})
	return i >= 0 && skipSpace(b, i) == len(b)
}

// decode is OperationCallParams.decode for the result.
func (r *OperationCallResult) decode(b []byte) bool {
	seen := false
	i := walkObject(b, skipSpace(b, 0), func(name []byte, i int) int {
		if string(name) != "output" || seen {
			return -1
		}
		seen = true
		return readPayload(b, i, &r.Output)
	})
	return i >= 0 && skipSpace(b, i) == len(b)
}

// readPayload reads the payload object at b[i] into p and returns the index
// past it, or -1. Its data is copied as it stands, whitespace and escapes
// included, as json.Unmarshal keeps a jsontext.Value.
func readPayload(b []byte, i int, p *Payload) int {
	var seen uint8
	return walkObject(b, i, func(name []byte, i int) int {
		switch string(name) {
		case "schema":
			if seen&1 != 0 {
				return -1
			}
			seen |= 1
			p.Schema, i = readName(b, i)
			return i
		case "data":
			if seen&2 != 0 || i >= len(b) || b[i] == 'n' {
				return -1
			}
			seen |= 2
			s := valueScanner{b: b}
			end := s.value(i)
			if end < 0 {
				return -1
			}
			p.Data = bytes.Clone(b[i:end])
			return end
		}
		return -1
	})
}

// readAuthority reads the authority object at b[i] into a and returns the
// index past it, or -1.
func readAuthority(b []byte, i int, a *Authority) int {
	var seen uint8
	return walkObject(b, i, func(name []byte, i int) int {
		var field *string
		var bit uint8
		switch string(name) {
		case "scope_id":
			field, bit = &a.Scope, 1
		case "work_id":
			field, bit = &a.Work, 2
		case "execution_id":
			field, bit = &a.Execution, 4
		case "connection":
			field, bit = &a.Connection, 8
		case "caller":
			field, bit = &a.Caller, 16
		default:
			return -1
		}
		if seen&bit != 0 {
			return -1
		}
		seen |= bit
		*field, i = readString(b, i)
		return i
	})
}

// walkObject reads the object at b[i], calling member for each member with
// its name (which has no escapes) and the index of its value, which member
// reads, returning the index past it or -1. walkObject returns the index
// past the object, or -1 when it or member gave up.
func walkObject(b []byte, i int, member func(name []byte, i int) int) int {
	if i >= len(b) || b[i] != '{' {
		return -1
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		end := bytes.IndexByte(b[i+1:], '"')
		if end < 0 {
			return -1
		}
		name := b[i+1 : i+1+end]
		if bytes.IndexByte(name, '\\') >= 0 {
			return -1
		}
		i = skipSpace(b, i+end+2)
		if i >= len(b) || b[i] != ':' {
			return -1
		}
		if i = member(name, skipSpace(b, i+1)); i < 0 {
			return -1
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return -1
		}
		if b[i] == '}' {
			return i + 1
		}
		if b[i] != ',' {
			return -1
		}
		i = skipSpace(b, i+1)
	}
}

// readString returns the string at b[i] and the index past it, or -1 when
// it is not a string with no escapes, no control characters and valid
// UTF-8: json.Unmarshal would unescape it, or refuse it.
func readString(b []byte, i int) (string, int) {
	raw, end := rawString(b, i)
	return string(raw), end
}

// rawString is readString's check, returning the string's bytes.
func rawString(b []byte, i int) ([]byte, int) {
	if i >= len(b) || b[i] != '"' {
		return nil, -1
	}
	start := i + 1
	ascii := true
	for i = start; i < len(b); i++ {
		if plainByte[b[i]] {
			continue
		}
		c := b[i]
		if c == '"' {
			s := b[start:i]
			if !ascii && !utf8.Valid(s) {
				return nil, -1
			}
			return s, i + 1
		}
		if c < ' ' || c == '\\' {
			return nil, -1
		}
		ascii = false
	}
	return nil, -1
}

// readName is readString for the strings that repeat from call to call (an
// operation's name, a payload's schema), which it takes from the ones read
// recently rather than allocating each time.
func readName(b []byte, i int) (string, int) {
	raw, end := rawString(b, i)
	if len(raw) == 0 || len(raw) > 64 {
		return string(raw), end
	}
	slot := &recentNames[(len(raw)*31+int(raw[0])*7+int(raw[len(raw)-1]))%len(recentNames)]
	if s := slot.Load(); s != nil && *s == string(raw) {
		return *s, end
	}
	s := string(raw)
	slot.Store(&s)
	return s, end
}

// recentNames are the operation names and schemas read last, by a hash of
// their length and ends.
var recentNames [64]atomic.Pointer[string]

// Limits of valueScanner, past which it leaves the value to json: nesting,
// and the names of the objects open (each name is compared with the others
// of its object).
const (
	maxScanDepth = 64
	maxScanNames = 64
)

// valueScanner checks one JSON value as json checks a jsontext.Value, within
// what it knows to be the same: JSON syntax, valid UTF-8 in strings, no name
// twice in one object. Names with escapes, \u escapes, deep nesting and
// large objects it leaves to json (it reports -1), as it does everything
// invalid. With canonical set it also leaves anything json.Marshal would
// not write as it stands: whitespace between tokens and \/.
type valueScanner struct {
	b         []byte
	canonical bool
	depth     int
	// names are the names of the objects open, innermost last, as offsets
	// into b: slices of b would put the scanner, and its array, on the heap.
	names  [maxScanNames]struct{ start, end int32 }
	nnames int
}

// value returns the index past the value at b[i], or -1.
func (s *valueScanner) value(i int) int {
	b := s.b
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; c {
	case '"':
		return s.str(i, false)
	case '{':
		return s.object(i)
	case '[':
		return s.array(i)
	case 't':
		return literal(b, i, "true")
	case 'f':
		return literal(b, i, "false")
	case 'n':
		return literal(b, i, "null")
	default:
		return number(b, i)
	}
}

// space skips whitespace from i, or returns -1 when there is some and the
// scan is canonical.
func (s *valueScanner) space(i int) int {
	j := skipSpace(s.b, i)
	if j != i && s.canonical {
		return -1
	}
	return j
}

// object returns the index past the object at b[i], or -1.
func (s *valueScanner) object(i int) int {
	if s.depth++; s.depth > maxScanDepth {
		return -1
	}
	b := s.b
	if i = s.space(i + 1); i < 0 || i >= len(b) {
		return -1
	}
	if b[i] == '}' {
		s.depth--
		return i + 1
	}
	open := s.nnames
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		end := s.str(i, true)
		if end < 0 {
			return -1
		}
		name := b[i+1 : end-1]
		for _, n := range s.names[open:s.nnames] {
			if string(b[n.start:n.end]) == string(name) {
				return -1
			}
		}
		if s.nnames == maxScanNames || len(b) > math.MaxInt32 {
			return -1
		}
		s.names[s.nnames].start, s.names[s.nnames].end = int32(i+1), int32(end-1)
		s.nnames++
		if i = s.space(end); i < 0 || i >= len(b) || b[i] != ':' {
			return -1
		}
		if i = s.space(i + 1); i < 0 {
			return -1
		}
		if i = s.value(i); i < 0 {
			return -1
		}
		if i = s.space(i); i < 0 || i >= len(b) {
			return -1
		}
		switch b[i] {
		case '}':
			s.nnames = open
			s.depth--
			return i + 1
		case ',':
			if i = s.space(i + 1); i < 0 {
				return -1
			}
		default:
			return -1
		}
	}
}

// array returns the index past the array at b[i], or -1.
func (s *valueScanner) array(i int) int {
	if s.depth++; s.depth > maxScanDepth {
		return -1
	}
	b := s.b
	if i = s.space(i + 1); i < 0 || i >= len(b) {
		return -1
	}
	if b[i] == ']' {
		s.depth--
		return i + 1
	}
	for {
		if i = s.value(i); i < 0 {
			return -1
		}
		if i = s.space(i); i < 0 || i >= len(b) {
			return -1
		}
		switch b[i] {
		case ']':
			s.depth--
			return i + 1
		case ',':
			if i = s.space(i + 1); i < 0 {
				return -1
			}
		default:
			return -1
		}
	}
}

// str returns the index past the string at b[i], or -1. A name may have no
// escapes (repeats are found by comparing names as written); a value may
// have the two-character escapes, which json's encoder writes as they are,
// and, when the scan is not canonical, \/, which it would rewrite.
func (s *valueScanner) str(i int, name bool) int {
	b := s.b
	for i++; ; {
		for i+8 <= len(b) && plainWord(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && plainByte[b[i]] {
			i++
		}
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			if name || i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
			case '/':
				if s.canonical {
					return -1
				}
			default:
				return -1
			}
			i += 2
		case c < ' ':
			return -1
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return -1
			}
			i += n
		}
	}
}

// plainWord reports whether all eight bytes of x are plainByte ones, a
// word at a time: none under 0x20, none with the high bit set, no quote
// and no backslash. Each test is the exact "some byte is zero" bit trick,
// on x or on x with the byte looked for XORed away. internal/jsonlex has
// the same test for the SDK; protocol imports nothing of this module.
func plainWord(x uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - lo) &^ v & hi }
	return (x&hi | (x-lo*0x20)&^x&hi | zero(x^(lo*'"')) | zero(x^(lo*'\\'))) == 0
}

// plainByte marks the bytes a JSON string holds as they are: printable
// ASCII other than '"' and '\\'.
var plainByte = func() (t [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// literal returns the index past word at b[i], or -1.
func literal(b []byte, i int, word string) int {
	end := i + len(word)
	if end > len(b) || string(b[i:end]) != word {
		return -1
	}
	return end
}

// number returns the index past the JSON number at b[i], or -1. What
// follows it is the caller's to check.
func number(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

// digits returns the index past the decimal digits from b[i].
func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
