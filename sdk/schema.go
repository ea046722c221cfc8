package sdk

import (
	"encoding/base64"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

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
