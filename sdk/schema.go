package sdk

import (
	"encoding/base64"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/internal/jsonlex"
	"github.com/open-conduit/open-conduit/protocol"
)

// Schema is the subset of JSON Schema the SDK derives from Go types and
// checks inputs against: enough to say which fields exist, which are
// required and what type each has.
type Schema struct {
	Type        string             `json:"type,omitempty"`
	Description string             `json:"description,omitempty"`
	Format      string             `json:"format,omitempty"`
	Properties  map[string]*Schema `json:"properties,omitempty"`
	Required    []string           `json:"required,omitempty"`
	Items       *Schema            `json:"items,omitempty"`
	// Additional is the schema of members not in Properties: nil with
	// Closed false allows anything (a map of any), Closed refuses them.
	Additional *Schema `json:"-"`
	Closed     bool    `json:"-"`
	// AdditionalJSON is how Additional and Closed are written.
	AdditionalJSON jsontext.Value `json:"additionalProperties,omitempty"`
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[jsontext.Value]()
	payType  = reflect.TypeFor[protocol.Payload]()
)

// SchemaOf derives the JSON Schema of T: struct fields by their json names,
// required unless tagged omitempty or omitzero or a pointer, with a doc tag
// as the description; unknown members are refused.
func SchemaOf[T any]() *Schema { return schemaOf(reflect.TypeFor[T](), map[reflect.Type]bool{}) }

func schemaOf(t reflect.Type, seen map[reflect.Type]bool) *Schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return &Schema{Type: "string", Format: "date-time"}
	case t == rawType, t == payType:
		return &Schema{}
	}
	switch t.Kind() {
	case reflect.String:
		return &Schema{Type: "string"}
	case reflect.Bool:
		return &Schema{Type: "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &Schema{Type: "integer"}
	case reflect.Float32, reflect.Float64:
		return &Schema{Type: "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return &Schema{Type: "string", Format: "byte"}
		}
		return &Schema{Type: "array", Items: schemaOf(t.Elem(), seen)}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			panic(fmt.Sprintf("sdk: schema of %s: map keys must be strings", t))
		}
		return &Schema{Type: "object", Additional: schemaOf(t.Elem(), seen)}
	case reflect.Interface:
		return &Schema{}
	case reflect.Struct:
		if seen[t] {
			panic(fmt.Sprintf("sdk: schema of %s: recursive types are not supported", t))
		}
		seen[t] = true
		defer delete(seen, t)
		s := &Schema{Type: "object", Properties: map[string]*Schema{}, Closed: true}
		addFields(s, t, seen)
		sort.Strings(s.Required)
		return s
	}
	panic(fmt.Sprintf("sdk: schema of %s: unsupported kind %s", t, t.Kind()))
}

// addFields adds a struct's exported fields, flattening embedded structs as
// encoding/json does.
func addFields(s *Schema, t reflect.Type, seen map[reflect.Type]bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, optional, use := jsonField(f)
		if !use {
			continue
		}
		if name == "" {
			addFields(s, f.Type, seen)
			continue
		}
		fs := schemaOf(f.Type, seen)
		if doc := f.Tag.Get("doc"); doc != "" {
			fs.Description = doc
		}
		s.Properties[name] = fs
		if !optional {
			s.Required = append(s.Required, name)
		}
	}
}

// jsonField is how a struct field appears in JSON: its member name, and
// whether it may be absent (a pointer, or tagged omitempty or omitzero).
// use is false for a field JSON leaves out; an empty name with use is an
// embedded struct whose fields are flattened into the parent.
func jsonField(f reflect.StructField) (name string, optional, use bool) {
	if !f.IsExported() {
		return "", false, false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false, false
	}
	name, opts, _ := strings.Cut(tag, ",")
	if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
		return "", false, true
	}
	if name == "" {
		name = f.Name
	}
	optional = f.Type.Kind() == reflect.Pointer ||
		strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
	return name, optional, true
}

// JSON encodes the schema deterministically, as the manifest carries it.
//
// Every operation's schema is encoded while the extension is built, before
// it answers initialize, so the encoding is written by hand: the encoder
// json.Marshal builds for Schema by reflection on first use cost each start
// more than all the schemas it then encodes. What the hand encoder does not
// handle (text that is not UTF-8, an AdditionalJSON set by hand) goes to
// json.Marshal, and a fuzz test holds the two to the same bytes.
func (s *Schema) JSON() jsontext.Value {
	s.prepare()
	b, err := s.encode()
	if err != nil {
		panic(fmt.Sprintf("sdk: encoding schema: %v", err))
	}
	return b
}

// encode is the prepared schema as json.Marshal writes it, with the
// properties in name order.
func (s *Schema) encode() (jsontext.Value, error) {
	if b, ok := appendSchema(nil, s); ok {
		return b, nil
	}
	return json.Marshal(s, json.Deterministic(true))
}

// appendSchema appends s as json.Marshal writes it (omitempty fields left
// out when their JSON is empty), or reports false when s holds something
// only json.Marshal handles.
func appendSchema(b []byte, s *Schema) ([]byte, bool) {
	if s == nil {
		return append(b, "null"...), true
	}
	ok := true
	str := func(name, v string) {
		if v == "" || !ok {
			return
		}
		b = appendName(b, name)
		b, ok = appendString(b, v)
	}
	b = append(b, '{')
	str("type", s.Type)
	str("description", s.Description)
	str("format", s.Format)
	if len(s.Properties) > 0 && ok {
		b = appendName(b, "properties")
		b = append(b, '{')
		names := make([]string, 0, len(s.Properties))
		for name := range s.Properties {
			names = append(names, name)
		}
		sort.Strings(names)
		for i, name := range names {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendString(b, name); !ok {
				return nil, false
			}
			b = append(b, ':')
			if b, ok = appendSchema(b, s.Properties[name]); !ok {
				return nil, false
			}
		}
		b = append(b, '}')
	}
	if len(s.Required) > 0 && ok {
		b = appendName(b, "required")
		b = append(b, '[')
		for i, r := range s.Required {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendString(b, r); !ok {
				return nil, false
			}
		}
		b = append(b, ']')
	}
	if s.Items != nil && ok {
		mark := len(b)
		b = appendName(b, "items")
		at := len(b)
		if b, ok = appendSchema(b, s.Items); ok && emptyJSON(b[at:]) {
			b = b[:mark]
		}
	}
	if !ok {
		return nil, false
	}
	// AdditionalJSON is what prepare wrote: false when Closed, else
	// Additional's encoding, written again here, so a part json.Marshal
	// refused is refused here too. One set by hand is json.Marshal's.
	switch {
	case s.Closed:
		b = appendName(b, "additionalProperties")
		b = append(b, "false"...)
	case s.Additional != nil:
		mark := len(b)
		b = appendName(b, "additionalProperties")
		at := len(b)
		if b, ok = appendSchema(b, s.Additional); !ok {
			return nil, false
		}
		if emptyJSON(b[at:]) {
			b = b[:mark]
		}
	case s.AdditionalJSON != nil:
		return nil, false
	}
	return append(b, '}'), true
}

// appendName appends an object member's name and its colon, after a comma
// unless it is the first member.
func appendName(b []byte, name string) []byte {
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// appendString appends v quoted as json.Marshal quotes it; false when v is
// not valid UTF-8.
func appendString(b []byte, v string) ([]byte, bool) {
	if jsonlex.PlainPrefix(v) == len(v) {
		// What AppendQuote writes for it, at a fraction of its cost.
		return append(append(append(b, '"'), v...), '"'), true
	}
	out, err := jsontext.AppendQuote(b, v)
	return out, err == nil
}

// emptyJSON reports whether v is what omitempty leaves out.
func emptyJSON(v []byte) bool {
	switch string(v) {
	case "null", `""`, "{}", "[]":
		return true
	}
	return false
}

func (s *Schema) prepare() {
	switch {
	case s.Closed:
		s.AdditionalJSON = jsontext.Value("false")
	case s.Additional != nil:
		s.Additional.prepare()
		s.AdditionalJSON, _ = s.Additional.encode()
	}
	for _, p := range s.Properties {
		p.prepare()
	}
	if s.Items != nil {
		s.Items.prepare()
	}
}

// Check validates a decoded JSON value (as json.Unmarshal into any gives it)
// against the schema and names the first field that does not fit, by its
// JSON path.
func (s *Schema) Check(v any) error { return s.check(v, "") }

func (s *Schema) check(v any, path string) error {
	at := path
	if at == "" {
		at = "/"
	}
	switch s.Type {
	case "":
		return nil
	case "string":
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("field %s must be a string, not %s", at, kindOf(v))
		}
		if s.Format == "byte" {
			if _, err := base64.StdEncoding.DecodeString(str); err != nil {
				return fmt.Errorf("field %s must be base64 text", at)
			}
		}
		if s.Format == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
				return fmt.Errorf("field %s must be an RFC 3339 time", at)
			}
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("field %s must be a boolean, not %s", at, kindOf(v))
		}
	case "integer":
		n, ok := v.(float64)
		if !ok || n != math.Trunc(n) {
			return fmt.Errorf("field %s must be an integer, not %s", at, kindOf(v))
		}
	case "number":
		if _, ok := v.(float64); !ok {
			return fmt.Errorf("field %s must be a number, not %s", at, kindOf(v))
		}
	case "array":
		if v == nil {
			return nil // a nil slice
		}
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("field %s must be an array, not %s", at, kindOf(v))
		}
		for i, e := range a {
			if err := s.Items.check(e, fmt.Sprintf("%s/%d", path, i)); err != nil {
				return err
			}
		}
	case "object":
		if v == nil && !s.Closed {
			return nil // a nil map
		}
		o, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("field %s must be an object, not %s", at, kindOf(v))
		}
		return s.checkObject(o, path)
	}
	return nil
}

func (s *Schema) checkObject(o map[string]any, path string) error {
	for _, r := range s.Required {
		if _, ok := o[r]; !ok {
			return fmt.Errorf("field %s/%s is required", path, r)
		}
	}
	names := make([]string, 0, len(o))
	for k := range o {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		child := path + "/" + escapePointer(k)
		if ps, ok := s.Properties[k]; ok {
			if err := ps.check(o[k], child); err != nil {
				return err
			}
			continue
		}
		if s.Closed {
			return fmt.Errorf("field %s is not a known field: remove it or correct its name", child)
		}
		if s.Additional != nil {
			if err := s.Additional.check(o[k], child); err != nil {
				return err
			}
		}
	}
	return nil
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escapePointer(s string) string { return pointerEscaper.Replace(s) }

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// rawCheck is a Schema compiled to check encoded JSON in place, so an input
// the strict decode accepted need not be decoded a second time into any just
// to be checked. It answers only "Check would pass": accepts returns false
// whenever Check might fail or the JSON decode into any might, and the
// caller then runs the decode and Check themselves for their error.
type rawCheck struct {
	kind       byte // one of the kind* constants
	format     string
	items      *rawCheck
	props      map[string]rawProp
	required   uint64 // the bit of every required member
	closed     bool
	additional *rawCheck
}

// rawProp is a property's compiled schema and its bit in required (zero
// when it is optional).
type rawProp struct {
	check *rawCheck
	bit   uint64
}

const (
	kindAny = iota // Type "" or a type Check does not know: anything goes
	kindString
	kindBoolean
	kindInteger
	kindNumber
	kindArray
	kindObject
)

// anyCheck checks a value Check does not look at, which must still decode
// into any.
var anyCheck = &rawCheck{kind: kindAny}

// compileRaw compiles s, or returns nil when checking in place cannot
// follow Check: an array without Items (Check would panic on an element)
// or an object with more than 64 required members.
func compileRaw(s *Schema) *rawCheck {
	return compileRawSeen(s, map[*Schema]*rawCheck{})
}

func compileRawSeen(s *Schema, seen map[*Schema]*rawCheck) *rawCheck {
	if c, ok := seen[s]; ok {
		return c
	}
	c := &rawCheck{format: s.Format}
	seen[s] = c
	switch s.Type {
	case "string":
		c.kind = kindString
	case "boolean":
		c.kind = kindBoolean
	case "integer":
		c.kind = kindInteger
	case "number":
		c.kind = kindNumber
	case "array":
		c.kind = kindArray
		if s.Items == nil {
			return nil
		}
		if c.items = compileRawSeen(s.Items, seen); c.items == nil {
			return nil
		}
	case "object":
		c.kind = kindObject
		c.closed = s.Closed
		if len(s.Required) > 64 {
			return nil
		}
		c.props = make(map[string]rawProp, len(s.Properties)+len(s.Required))
		for name, ps := range s.Properties {
			pc := compileRawSeen(ps, seen)
			if pc == nil {
				return nil
			}
			c.props[name] = rawProp{check: pc}
		}
		for i, name := range s.Required {
			p, ok := c.props[name]
			if !ok {
				// Required but not a property: only an additional member
				// can satisfy it, which Check checks as any other.
				p.check = c.additionalCheck(s, seen)
				if p.check == nil {
					return nil
				}
				if s.Closed {
					// Present, it is refused as unknown; absent, as missing.
					return nil
				}
			}
			if p.bit != 0 {
				return nil // named twice: leave it to Check
			}
			p.bit = 1 << i
			c.props[name] = p
			c.required |= p.bit
		}
		if !s.Closed {
			if c.additional = c.additionalCheck(s, seen); c.additional == nil {
				return nil
			}
		}
	}
	return c
}

// additionalCheck is the compiled check of s's additional members: anything
// (that decodes) when Additional is nil.
func (c *rawCheck) additionalCheck(s *Schema, seen map[*Schema]*rawCheck) *rawCheck {
	if s.Additional == nil {
		return anyCheck
	}
	return compileRawSeen(s.Additional, seen)
}

// accepts reports whether Check accepts the value data decodes to, data
// being one JSON value that a decoder has already found valid (syntax,
// UTF-8, no duplicate names). False means "refused, or not known here".
func (c *rawCheck) accepts(data []byte) bool {
	i, ok := c.value(data, jsonlex.SkipSpace(data, 0))
	return ok && jsonlex.SkipSpace(data, i) == len(data)
}

// value checks the value at data[i:] and returns the index after it.
func (c *rawCheck) value(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return i, false
	}
	switch b := data[i]; {
	case b == 'n':
		ok := c.kind == kindAny || c.kind == kindArray || (c.kind == kindObject && !c.closed)
		return i + len("null"), ok
	case b == 't':
		return i + len("true"), c.kind == kindAny || c.kind == kindBoolean
	case b == 'f':
		return i + len("false"), c.kind == kindAny || c.kind == kindBoolean
	case b == '"':
		end, escaped, ok := jsonlex.StringEnd(data, i)
		if !ok || (c.kind != kindAny && c.kind != kindString) {
			return end, false
		}
		if c.kind == kindString && (c.format == "byte" || c.format == "date-time") {
			return end, checkFormat(c.format, data[i:end], escaped)
		}
		return end, true
	case b == '-' || ('0' <= b && b <= '9'):
		return scanNumber(data, i, c.kind)
	case b == '[':
		items := anyCheck
		switch c.kind {
		case kindAny:
		case kindArray:
			items = c.items
		default:
			return i, false
		}
		return items.array(data, i)
	case b == '{':
		switch c.kind {
		case kindAny:
			return anyObject(data, i)
		case kindObject:
			return c.object(data, i)
		}
	}
	return i, false
}

func (items *rawCheck) array(data []byte, i int) (int, bool) {
	i = jsonlex.SkipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = items.value(data, i); !ok {
			return i, false
		}
		i = jsonlex.SkipSpace(data, i)
		if i >= len(data) {
			return i, false
		}
		switch data[i] {
		case ',':
			i = jsonlex.SkipSpace(data, i+1)
		case ']':
			return i + 1, true
		default:
			return i, false
		}
	}
}

// anyObject checks that every member of an object Check does not look at
// decodes.
func anyObject(data []byte, i int) (int, bool) {
	return members(data, i, func(_ []byte, _ bool, i int) (int, bool) { return anyCheck.value(data, i) })
}

func (c *rawCheck) object(data []byte, i int) (int, bool) {
	var seen uint64
	end, ok := members(data, i, func(name []byte, escaped bool, i int) (int, bool) {
		if escaped {
			var err error
			if name, err = jsontext.AppendUnquote(nil, name); err != nil {
				return i, false
			}
		} else {
			name = name[1 : len(name)-1]
		}
		p, known := c.props[string(name)]
		switch {
		case known:
			seen |= p.bit
			return p.check.value(data, i)
		case c.closed:
			return i, false
		default:
			return c.additional.value(data, i)
		}
	})
	return end, ok && seen == c.required
}

// members walks the members of the object at data[i:], handing each
// member's quoted name, whether it has escapes, and the index of its value
// to member, which returns the index after the value.
func members(data []byte, i int, member func(name []byte, escaped bool, i int) (int, bool)) (int, bool) {
	i = jsonlex.SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1, true
	}
	for {
		end, escaped, ok := jsonlex.StringEnd(data, i)
		if !ok {
			return end, false
		}
		name := data[i:end]
		i = jsonlex.SkipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return i, false
		}
		if i, ok = member(name, escaped, jsonlex.SkipSpace(data, i+1)); !ok {
			return i, false
		}
		i = jsonlex.SkipSpace(data, i)
		if i >= len(data) {
			return i, false
		}
		switch data[i] {
		case ',':
			i = jsonlex.SkipSpace(data, i+1)
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

// scanNumber checks the number at data[i:] against kind: it must decode
// into a float64 (not overflow), and be integral for kindInteger.
func scanNumber(data []byte, i int, kind byte) (int, bool) {
	end, digits, plain := i, 0, true
	for ; end < len(data); end++ {
		b := data[end]
		if '0' <= b && b <= '9' {
			digits++
			continue
		}
		if b == '.' || b == 'e' || b == 'E' || b == '+' || b == '-' {
			plain = plain && b == '-'
			continue
		}
		break
	}
	if kind != kindAny && kind != kindNumber && kind != kindInteger {
		return end, false
	}
	if plain && digits <= 300 {
		return end, true // an integer well within float64's range
	}
	f, err := strconv.ParseFloat(string(data[i:end]), 64)
	if err != nil {
		return end, false
	}
	return end, kind != kindInteger || f == math.Trunc(f)
}

// checkFormat runs Check's format test on a quoted string.
func checkFormat(format string, quoted []byte, escaped bool) bool {
	var s string
	if escaped {
		b, err := jsontext.AppendUnquote(nil, quoted)
		if err != nil {
			return false
		}
		s = string(b)
	} else {
		s = string(quoted[1 : len(quoted)-1])
	}
	switch format {
	case "byte":
		_, err := base64.StdEncoding.DecodeString(s)
		return err == nil
	case "date-time":
		_, err := time.Parse(time.RFC3339Nano, s)
		return err == nil
	}
	return true
}
