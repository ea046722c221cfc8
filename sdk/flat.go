package sdk

import (
	"encoding"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/internal/jsonlex"
)

// flatCodec reads and writes an operation's input or output struct
// directly when every field the JSON package would touch is a string, a
// bool or an integer of a predeclared type (a type of the author's own may
// carry methods or a format): the shape of most operations' inputs and
// outputs. The JSON package's first decoding
// or encoding of a type is mostly reflection over it, about 100 µs of
// every new extension process's first call, and its per-call cost is its
// general machinery. Anything the codec is not sure of (an escaped
// string or name, a number with a fraction or exponent or out of range, a
// null, a repeated or unknown member) is left to the JSON package, which
// accepts or refuses it as it always did; tests and a fuzzer hold the two
// to the same result.
type flatCodec struct {
	fields []flatField
}

// flatField is one struct field as JSON sees it.
type flatField struct {
	name      string
	index     int
	kind      reflect.Kind
	omitEmpty bool
	omitZero  bool
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	marshalerToType   = reflect.TypeFor[json.MarshalerTo]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	textAppenderType  = reflect.TypeFor[encoding.TextAppender]()
)

// newFlatCodec returns t's codec, or nil when t is not a flat struct: a
// field of another type, an embedded field, a tag option other than
// omitempty and omitzero, a quoted or repeated name, or a method the JSON
// package would call on t.
func newFlatCodec(t reflect.Type) *flatCodec {
	if t.Kind() != reflect.Struct {
		return nil
	}
	for _, m := range []reflect.Type{marshalerType, marshalerToType, textMarshalerType, textAppenderType,
		unmarshalerType, unmarshalerFromType, textUnmarshalerType} {
		if t.Implements(m) || reflect.PointerTo(t).Implements(m) {
			return nil
		}
	}
	c := &flatCodec{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, tagged := f.Tag.Lookup("json")
		if !f.IsExported() || f.Anonymous {
			if tagged || f.Anonymous {
				return nil
			}
			continue
		}
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.HasPrefix(name, "'") {
			return nil
		}
		if name == "" {
			name = f.Name
		}
		ff := flatField{name: name, index: i, kind: f.Type.Kind()}
		if opts != "" {
			for o := range strings.SplitSeq(opts, ",") {
				switch o {
				case "omitempty":
					ff.omitEmpty = true
				case "omitzero":
					ff.omitZero = true
				default:
					return nil
				}
			}
		}
		if !plainKind(f.Type) || c.field(name) >= 0 {
			return nil
		}
		c.fields = append(c.fields, ff)
	}
	return c
}

// plainKind reports whether t is string, bool or one of the integer types,
// predeclared (a named type may have methods, and a format of its own).
func plainKind(t reflect.Type) bool {
	if t.PkgPath() != "" {
		return false
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return t.Name() == t.Kind().String()
	}
	return false
}

// field returns the index in fields of the field named name, or -1.
func (c *flatCodec) field(name string) int {
	for i := range c.fields {
		if c.fields[i].name == name {
			return i
		}
	}
	return -1
}

// decode fills v, a zero struct of the codec's type, from the JSON object
// data as json.Unmarshal with strictInput would, and reports whether it
// could; false leaves v perhaps half-filled, for the caller to zero.
func (c *flatCodec) decode(data []byte, v reflect.Value) bool {
	var seen uint64
	if len(c.fields) > 64 {
		return false
	}
	i := jsonlex.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = jsonlex.SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return jsonlex.SkipSpace(data, i+1) == len(data)
	}
	for {
		end, escaped, ok := jsonlex.StringEnd(data, i)
		if !ok || escaped {
			return false
		}
		k := c.field(string(data[i+1 : end-1]))
		if k < 0 || seen&(1<<k) != 0 {
			return false
		}
		seen |= 1 << k
		i = jsonlex.SkipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		if i = c.fields[k].read(data, jsonlex.SkipSpace(data, i+1), v.Field(c.fields[k].index)); i < 0 {
			return false
		}
		i = jsonlex.SkipSpace(data, i)
		if i >= len(data) {
			return false
		}
		if data[i] == '}' {
			return jsonlex.SkipSpace(data, i+1) == len(data)
		}
		if data[i] != ',' {
			return false
		}
		i = jsonlex.SkipSpace(data, i+1)
	}
}

// read sets dst from the value at data[i] and returns the index past it,
// or -1.
func (f *flatField) read(data []byte, i int, dst reflect.Value) int {
	if i >= len(data) {
		return -1
	}
	switch f.kind {
	case reflect.String:
		end, escaped, ok := jsonlex.StringEnd(data, i)
		if !ok || escaped || !plainText(data[i+1:end-1]) {
			return -1
		}
		dst.SetString(string(data[i+1 : end-1]))
		return end
	case reflect.Bool:
		switch {
		case len(data)-i >= 4 && string(data[i:i+4]) == "true":
			dst.SetBool(true)
			return i + 4
		case len(data)-i >= 5 && string(data[i:i+5]) == "false":
			return i + 5
		}
		return -1
	}
	end := i
	if end < len(data) && data[end] == '-' {
		end++
	}
	digits := end
	for end < len(data) && '0' <= data[end] && data[end] <= '9' {
		end++
	}
	// Plain digits, no leading zero (JSON forbids it), not -0; a fraction
	// or an exponent is the JSON package's to judge.
	switch {
	case end == digits, data[digits] == '0' && (end-digits > 1 || digits > i),
		end < len(data) && (data[end] == '.' || data[end] == 'e' || data[end] == 'E'):
		return -1
	}
	text := string(data[i:end])
	switch f.kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(text, 10, dst.Type().Bits())
		if err != nil {
			return -1
		}
		dst.SetInt(n)
	default:
		if digits > i {
			return -1
		}
		n, err := strconv.ParseUint(text, 10, dst.Type().Bits())
		if err != nil {
			return -1
		}
		dst.SetUint(n)
	}
	return end
}

// plainText reports whether s, a string's bytes between its quotes, is
// valid UTF-8 without a control character.
func plainText(s []byte) bool {
	ascii := true
	for _, c := range s {
		if c < ' ' {
			return false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	return ascii || utf8.Valid(s)
}

// encode appends v, a struct of the codec's type, as json.Marshal writes
// it, or reports false (a string that is not UTF-8) for json.Marshal to
// refuse.
func (c *flatCodec) encode(b []byte, v reflect.Value) ([]byte, bool) {
	// One allocation for the common case: each member's name, quotes and
	// separators, a string's bytes, or the longest integer.
	need := 2
	for i := range c.fields {
		need += len(c.fields[i].name) + 4
		if c.fields[i].kind == reflect.String {
			need += v.Field(c.fields[i].index).Len() + 2
		} else {
			need += 20
		}
	}
	b = slices.Grow(b, need)
	b = append(b, '{')
	first := true
	for i := range c.fields {
		f := &c.fields[i]
		fv := v.Field(f.index)
		if f.omitZero && fv.IsZero() || f.omitEmpty && f.kind == reflect.String && fv.Len() == 0 {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		var ok bool
		if b, ok = appendString(b, f.name); !ok {
			return b, false
		}
		b = append(b, ':')
		switch f.kind {
		case reflect.String:
			if b, ok = appendString(b, fv.String()); !ok {
				return b, false
			}
		case reflect.Bool:
			b = strconv.AppendBool(b, fv.Bool())
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			b = strconv.AppendInt(b, fv.Int(), 10)
		default:
			b = strconv.AppendUint(b, fv.Uint(), 10)
		}
	}
	return append(b, '}'), true
}
