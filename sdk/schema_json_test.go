package sdk

import (
	"bytes"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// marshalSchema is the general encoding the hand encoder must equal:
// prepare's steps, each schema through json.Marshal.
func marshalSchema(t testing.TB, s *Schema) ([]byte, bool) {
	t.Helper()
	var prep func(*Schema)
	prep = func(s *Schema) {
		switch {
		case s.Closed:
			s.AdditionalJSON = jsontext.Value("false")
		case s.Additional != nil:
			prep(s.Additional)
			s.AdditionalJSON, _ = json.Marshal(s.Additional, json.Deterministic(true))
		}
		for _, p := range s.Properties {
			prep(p)
		}
		if s.Items != nil {
			prep(s.Items)
		}
	}
	prep(s)
	b, err := json.Marshal(s, json.Deterministic(true))
	return b, err == nil
}

// handJSON is Schema.JSON, reporting a panic (text json.Marshal refuses)
// as false.
func handJSON(s *Schema) (b []byte, ok bool) {
	defer func() {
		if recover() != nil {
			b, ok = nil, false
		}
	}()
	return s.JSON(), true
}

// schemaGen builds a schema from fuzz bytes, the same schema for the same
// bytes, so the two encodings each get their own copy.
type schemaGen struct {
	data []byte
}

func (g *schemaGen) next() byte {
	if len(g.data) == 0 {
		return 0
	}
	c := g.data[0]
	g.data = g.data[1:]
	return c
}

// texts are the strings a schema is built of: plain, empty, and every
// kind of character an encoder escapes or refuses.
var texts = []string{"", "string", "object", "a", "b", "text", "A", "<&>", "quote\"back\\slash", "tab\tnew\nline",
	"\u2028\u2029", "\x00\x1f", "é ü", "\xff", "emoji 😀", "date-time", "byte", "ctrl\x7f"}

func (g *schemaGen) text() string { return texts[int(g.next())%len(texts)] }

// handSet are AdditionalJSON values set by hand, not by prepare.
var handSet = []string{"", "", "false", "true", "{}", "null", "[]", `{ "type" : "string" }`, `{"a":1}`}

func (g *schemaGen) schema(depth int) *Schema {
	c := g.next()
	s := &Schema{Type: g.text(), Description: g.text(), Format: g.text()}
	if c&1 != 0 && depth > 0 {
		s.Properties = map[string]*Schema{}
		for range int(g.next()) % 4 {
			s.Properties[g.text()] = g.schema(depth - 1)
		}
	}
	if c&2 != 0 {
		s.Required = []string{}
		for range int(g.next()) % 3 {
			s.Required = append(s.Required, g.text())
		}
	}
	if c&4 != 0 && depth > 0 {
		s.Items = g.schema(depth - 1)
	}
	if c&8 != 0 && depth > 0 {
		s.Additional = g.schema(depth - 1)
	}
	s.Closed = c&16 != 0
	if c&32 != 0 {
		s.AdditionalJSON = jsontext.Value(handSet[int(g.next())%len(handSet)])
	}
	return s
}

func checkSchemaJSON(t *testing.T, data []byte) {
	t.Helper()
	hand, handOK := handJSON((&schemaGen{data: data}).schema(3))
	want, wantOK := marshalSchema(t, (&schemaGen{data: data}).schema(3))
	if handOK != wantOK || wantOK && !bytes.Equal(hand, want) {
		t.Fatalf("schema from %q:\nhand    %s (%v)\nMarshal %s (%v)", data, hand, handOK, want, wantOK)
	}
}

// FuzzSchemaJSON holds the hand-written schema encoding to json.Marshal's:
// the same bytes, and a panic exactly where json.Marshal fails.
func FuzzSchemaJSON(f *testing.F) {
	for _, seed := range []string{"", "\x00", "\x01\x03\x05", "\x1f\x07\x02", "\x0c\x00\x00\x00", "\x28\x00\x00\x00\x07",
		"\x08\x00\x00\x00\x04", "\x04\x00\x00\x00\x00", "\x01\x02\x05\x00\x00\x00\x00\x0d", "\x03\x02\x01\x00\x00\x02\x0d\x0e"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(checkSchemaJSON)
}

// TestSchemaJSONMatchesMarshal runs a spread of generated schemas, and the
// schemas of real types, through both encodings.
func TestSchemaJSONMatchesMarshal(t *testing.T) {
	for i := range 4096 {
		data := []byte{byte(i), byte(i >> 3), byte(i * 7), byte(i >> 5), byte(i * 13), byte(i >> 2), byte(i * 31), byte(i >> 7)}
		checkSchemaJSON(t, append(data, data...))
	}
	type inner struct {
		When time.Time         `json:"when"`
		Tags map[string]string `json:"tags,omitempty"`
		Any  []any             `json:"any"`
		Raw  jsontext.Value    `json:"raw,omitempty"`
	}
	type outer struct {
		Name   string            `json:"name" doc:"the \"name\" <of> it"`
		N      *int              `json:"n"`
		Blob   []byte            `json:"blob"`
		Inner  inner             `json:"inner"`
		List   []inner           `json:"list"`
		Free   map[string]any    `json:"free"`
		Nested map[string][]bool `json:"nested"`
		inner
	}
	for _, s := range []func() *Schema{SchemaOf[outer], SchemaOf[inner], SchemaOf[struct{}]} {
		want, ok := marshalSchema(t, s())
		if got := s().JSON(); !ok || !bytes.Equal(got, want) {
			t.Fatalf("hand %s\nMarshal %s (%v)", got, want, ok)
		}
	}
}
