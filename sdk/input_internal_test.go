package sdk

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The input types decodeInput is held to the two-pass decode over.

type echoIn struct {
	Text string `json:"text"`
}

type InnerIn struct {
	Name string   `json:"name"`
	Tags []string `json:"tags,omitempty"`
}

type EmbeddedIn struct {
	Region string `json:"region"`
}

type hiddenIn struct {
	Zone string `json:"zone"`
}

type richIn struct {
	EmbeddedIn
	hiddenIn
	S    string             `json:"s"`
	I    int                `json:"i"`
	U8   uint8              `json:"u8,omitempty"`
	F    float64            `json:"f,omitempty"`
	F32  float32            `json:"f32,omitempty"`
	B    bool               `json:"b,omitempty"`
	P    *string            `json:"p"`
	L    []string           `json:"l,omitempty"`
	M    map[string]int     `json:"m,omitempty"`
	Raw  []byte             `json:"raw,omitempty"`
	At   time.Time          `json:"at,omitzero"`
	Any  any                `json:"any,omitempty"`
	Val  jsontext.Value     `json:"val,omitempty"`
	In   InnerIn            `json:"in"`
	PIn  *InnerIn           `json:"pin"`
	Ins  []InnerIn          `json:"ins,omitempty"`
	MIn  map[string]InnerIn `json:"min,omitempty"`
	Arr  [2]int             `json:"arr,omitempty"`
	Quot int                `json:"quot,string,omitempty"`
	Fold string             `json:"fold,omitempty,case:ignore"`
	Bare string
}

// upper decodes a JSON string upper-cased: its own code, which the fast
// path must leave to the two passes.
type upper string

func (u *upper) UnmarshalJSON(b []byte) error {
	var s string
	if len(b) < 2 || b[0] != '"' {
		return errors.New("upper: not a string")
	}
	s = strings.ToUpper(string(b[1 : len(b)-1]))
	*u = upper(s)
	return nil
}

type customIn struct {
	U    upper  `json:"u"`
	Text string `json:"text"`
}

type anyIn struct {
	V any `json:"v"`
}

type emptyIn struct{}

type mapIn struct {
	M map[string]any   `json:"m"`
	L [][]float64      `json:"l,omitempty"`
	R []jsontext.Value `json:"r,omitempty"`
}

// inputCase runs one input through the new and the two-pass decode of one
// type and says how they differ ("" when they do not).
type inputCase struct {
	name    string
	schema  *Schema
	decoder func() *inputDecoder
	diff    func(d *inputDecoder, data []byte) string
}

func caseOf[T any](name string) inputCase {
	return inputCase{
		name:    name,
		schema:  SchemaOf[T](),
		decoder: func() *inputDecoder { return newInputDecoder(SchemaOf[T](), reflect.TypeFor[T]()) },
		diff:    diffTwoPass[T],
	}
}

// diffTwoPass decodes data with d and with the two passes, and compares
// the outcomes: the error's text, or the decoded values.
func diffTwoPass[T any](d *inputDecoder, data []byte) string {
	var got, want T
	gotErr := decodeInput(d, data, &got)
	wantErr := decodeInputChecked(d.schema, data, &want)
	switch {
	case (gotErr == nil) != (wantErr == nil):
		return fmt.Sprintf("error %v, two passes %v", gotErr, wantErr)
	case gotErr != nil && gotErr.Error() != wantErr.Error():
		return fmt.Sprintf("error %q, two passes %q", gotErr, wantErr)
	case gotErr == nil && !reflect.DeepEqual(got, want):
		return fmt.Sprintf("decoded %#v, two passes %#v", got, want)
	}
	return ""
}

func inputCases() []inputCase {
	return []inputCase{
		caseOf[echoIn]("echo"),
		caseOf[richIn]("rich"),
		caseOf[customIn]("custom"),
		caseOf[anyIn]("any"),
		caseOf[emptyIn]("empty"),
		caseOf[mapIn]("map"),
		caseOf[InnerIn]("inner"),
	}
}

// tableInputs are inputs every type meets: the edges of each rule Check
// and the strict decode apply.
var tableInputs = []string{
	``, `{}`, ` { } `, `null`, `[]`, `"x"`, `1`, `true`, `{`, `{}x`, `{} {}`, "{\"text\":\"\xff\"}",
	`{"text":"hi"}`, `{"text":""}`, `{"text":null}`, `{"text":1}`, `{"text":"a","text":"b"}`,
	`{"Text":"hi"}`, `{"text":"hi","extra":1}`, `{"\u0074ext":"hi"}`, `{"te\"xt":"hi"}`,
	`{"text":"\u2028\ud83d\ude00 \\ \/"}`, `{"text":"a"}  `, `{"text":"a\\"}`, `{"text":"\\\""}`, `{"text":"\"\\\"\""}`, `{"a\\":"x"}`, "\t{\n\"text\"\r:\"a\"}",
	`{"u":"abc","text":"t"}`, `{"u":1,"text":"t"}`, `{"u":null,"text":"t"}`, `{"text":"t"}`,
	`{"v":null}`, `{"v":1e400}`, `{"v":[1,{"a":null}]}`, `{"v":{"a":1e-400}}`, `{}`, `{"v":-0}`,
	`{"m":null}`, `{"m":{"a":null,"b":[1e400]}}`, `{"m":{}}`, `{"m":{"a":1},"l":[[1.5],null]}`,
	`{"m":{},"l":[null]}`, `{"m":{},"r":[null,1e400,{"a":1}]}`, `{"m":[]}`, `{"m":{},"l":{}}`,
	`{"name":"n"}`, `{"name":"n","tags":null}`, `{"name":"n","tags":["a",null]}`, `{"name":"n","tags":[1]}`,
	`{"name":null}`, `{"name":"n","tags":"a"}`,
	richJSON(nil),
	richJSON(map[string]string{"i": `1.0`}), richJSON(map[string]string{"i": `1.5`}),
	richJSON(map[string]string{"i": `1e2`}), richJSON(map[string]string{"i": `-0`}),
	richJSON(map[string]string{"i": `123456789012345678901234567890`}),
	richJSON(map[string]string{"i": `9223372036854775808`}),
	richJSON(map[string]string{"u8": `256`}), richJSON(map[string]string{"u8": `-1`}),
	richJSON(map[string]string{"f": `1e400`}), richJSON(map[string]string{"f": `1e-400`}),
	richJSON(map[string]string{"f32": `1e300`}), richJSON(map[string]string{"f": `null`}),
	richJSON(map[string]string{"s": `null`}), richJSON(map[string]string{"b": `null`}),
	richJSON(map[string]string{"p": `null`}), richJSON(map[string]string{"p": `"x"`}),
	richJSON(map[string]string{"l": `null`}), richJSON(map[string]string{"l": `[null]`}),
	richJSON(map[string]string{"m": `null`}), richJSON(map[string]string{"m": `{"a":null}`}),
	richJSON(map[string]string{"m": `{"a":1.5}`}), richJSON(map[string]string{"m": `{"a":1,"a":2}`}),
	richJSON(map[string]string{"raw": `"aGk="`}), richJSON(map[string]string{"raw": `"aGk"`}),
	richJSON(map[string]string{"raw": `"a\nGk="`}), richJSON(map[string]string{"raw": `"aG\u006b="`}),
	richJSON(map[string]string{"raw": `null`}), richJSON(map[string]string{"raw": `[1]`}),
	richJSON(map[string]string{"at": `"2026-12-01T06:00:00Z"`}), richJSON(map[string]string{"at": `"2026-12-01T06:00:00.5+01:00"`}),
	richJSON(map[string]string{"at": `"2026-12-01"`}), richJSON(map[string]string{"at": `"2026-12-01T24:00:00Z"`}),
	richJSON(map[string]string{"at": `null`}), richJSON(map[string]string{"at": `"2026-12-01T06:00:00\u005a"`}),
	richJSON(map[string]string{"any": `null`}), richJSON(map[string]string{"any": `1e400`}),
	richJSON(map[string]string{"val": `null`}), richJSON(map[string]string{"val": `1e400`}),
	richJSON(map[string]string{"val": `{"x":[1,"2",null]}`}),
	richJSON(map[string]string{"in": `null`}), richJSON(map[string]string{"in": `{}`}),
	richJSON(map[string]string{"in": `{"name":"n","x":1}`}), richJSON(map[string]string{"pin": `{}`}),
	richJSON(map[string]string{"pin": `{"name":"m"}`}), richJSON(map[string]string{"ins": `[{"name":"a"},{}]`}),
	richJSON(map[string]string{"ins": `[null]`}), richJSON(map[string]string{"min": `{"k":{"name":"a"}}`}),
	richJSON(map[string]string{"min": `{"k":{}}`}), richJSON(map[string]string{"min": `{"k":null}`}),
	richJSON(map[string]string{"arr": `[1,2]`}), richJSON(map[string]string{"arr": `[1]`}),
	richJSON(map[string]string{"arr": `[1,2,3]`}), richJSON(map[string]string{"quot": `"5"`}),
	richJSON(map[string]string{"quot": `5`}), richJSON(map[string]string{"fold": `"x"`}),
	richJSON(map[string]string{"FOLD": `"x"`}), richJSON(map[string]string{"region": `null`}),
	richJSON(map[string]string{"zone": `"z"`}), richJSON(map[string]string{"Bare": `null`}),
	richJSON(map[string]string{"EmbeddedIn": `{"region":"r"}`}),
	richJSON(map[string]string{"x/y~z": `1`}),
}

// richJSON is a richIn input that passes both decodes, with members
// replaced, added or (with the value "-") removed by change.
func richJSON(change map[string]string) string {
	members := map[string]string{
		"region": `"eu"`, "s": `"s"`, "i": `7`, "p": `"p"`, "in": `{"name":"n","tags":["a"]}`,
		"pin": `{"name":"m"}`, "Bare": `"b"`, "m": `{"a":1}`, "at": `"2026-12-01T06:00:00Z"`,
	}
	for k, v := range change {
		members[k] = v
	}
	var b strings.Builder
	b.WriteString("{")
	first := true
	for _, k := range slices.Sorted(maps.Keys(members)) {
		if members[k] == "-" {
			continue
		}
		if !first {
			b.WriteString(",")
		}
		first = false
		fmt.Fprintf(&b, "%q:%s", k, members[k])
	}
	b.WriteString("}")
	return b.String()
}

// TestDecodeInputMatchesTwoPass holds decodeInput to the two-pass decode
// (JSON into any, Check, strict decode) over the table's inputs and over
// inputs generated from each type's schema: same value, same error text.
func TestDecodeInputMatchesTwoPass(t *testing.T) {
	for _, c := range inputCases() {
		t.Run(c.name, func(t *testing.T) {
			d := c.decoder()
			inputs := append([]string(nil), tableInputs...)
			inputs = append(inputs, generatedInputs(c.schema, 3000)...)
			for _, in := range inputs {
				if diff := c.diff(d, []byte(in)); diff != "" {
					t.Errorf("input %s: %s", in, diff)
				}
			}
		})
	}
}

// TestDecodeInputFastPathIsTaken: the one-pass path proves the usual inputs
// (so the comparison above is not met by always falling back), and leaves
// types that decode with their own methods to the two passes.
func TestDecodeInputFastPathIsTaken(t *testing.T) {
	accepted := map[string][]string{
		"echo": {`{"text":"hi"}`, `{"text":""}`, `{"te\u0078t":"x"}`},
		"rich": {richJSON(nil), richJSON(map[string]string{"raw": `"aGk="`, "l": `null`, "val": `[1e300]`})},
		"any":  {`{"v":null}`, `{"v":{"a":[1,true,"x"]}}`},
		"map":  {`{"m":null}`, `{"m":{"a":null},"l":[[1,2.5]],"r":[null]}`},
	}
	refused := map[string][]string{
		"echo": {`{}`, `{"text":null}`, `null`},
		"rich": {richJSON(map[string]string{"p": `null`}), richJSON(map[string]string{"in": `{}`}),
			richJSON(map[string]string{"i": `1.5`}), richJSON(map[string]string{"raw": `"aGk"`}),
			richJSON(map[string]string{"any": `1e400`}), richJSON(map[string]string{"quot": `"5"`})},
		"any": {`{"v":1e400}`},
	}
	for _, c := range inputCases() {
		d := c.decoder()
		if c.name == "custom" {
			if d.raw != nil {
				t.Errorf("custom: a type with UnmarshalJSON took the one-pass path")
			}
			continue
		}
		if d.raw == nil {
			t.Errorf("%s: no one-pass path", c.name)
			continue
		}
		for _, in := range accepted[c.name] {
			if !d.raw.accepts([]byte(in)) {
				t.Errorf("%s: %s not proven", c.name, in)
			}
		}
		for _, in := range refused[c.name] {
			if d.raw.accepts([]byte(in)) {
				t.Errorf("%s: %s proven, but Check refuses it", c.name, in)
			}
		}
	}
}

// TestDecodeInputComparisonCatchesADifference is the comparison's negative
// control: a decoder whose in-place check forgets required members and
// closed objects must be caught, on the table and on generated inputs.
func TestDecodeInputComparisonCatchesADifference(t *testing.T) {
	for _, c := range []inputCase{caseOf[echoIn]("echo"), caseOf[richIn]("rich")} {
		d := c.decoder()
		broken := &inputDecoder{schema: d.schema, raw: compileRaw(&Schema{Type: "object"})}
		caught := 0
		for _, in := range append(append([]string(nil), tableInputs...), generatedInputs(c.schema, 300)...) {
			if c.diff(broken, []byte(in)) != "" {
				caught++
			}
		}
		if caught == 0 {
			t.Errorf("%s: the comparison did not catch a decoder that skips required members", c.name)
		}
	}
}

// FuzzDecodeInput holds decodeInput to the two-pass decode over fuzzed
// inputs, for each input type.
func FuzzDecodeInput(f *testing.F) {
	for _, in := range tableInputs {
		f.Add([]byte(in))
	}
	cases := inputCases()
	decoders := make([]*inputDecoder, len(cases))
	for i, c := range cases {
		decoders[i] = c.decoder()
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for i, c := range cases {
			if diff := c.diff(decoders[i], data); diff != "" {
				t.Errorf("%s: input %q: %s", c.name, data, diff)
			}
		}
	})
}

// generatedInputs makes n inputs from schema: mostly fitting, with members
// dropped, added, nulled, retyped, renamed or escaped at random.
func generatedInputs(s *Schema, n int) []string {
	r := rand.New(rand.NewPCG(13, uint64(len(s.Properties))))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		genValue(r, &b, s, 0)
		out[i] = b.String()
	}
	return out
}

var (
	genStrings  = []string{`""`, `"a"`, `"\u00e9\n"`, `"aGk="`, `"aGk"`, `"2026-12-01T06:00:00Z"`, `"2026-13-01T06:00:00Z"`, `"\u2028"`}
	genNumbers  = []string{`0`, `-0`, `7`, `-3`, `1.0`, `1.5`, `1e2`, `2E-2`, `1e400`, `1e-400`, `255`, `256`, `123456789012345678901234567890`}
	genOthers   = []string{`null`, `true`, `false`, `{}`, `[]`, `"x"`, `1`}
	genUnknowns = []string{`zz`, `Text`, `NAME`, `x/y`}
)

func genValue(r *rand.Rand, b *strings.Builder, s *Schema, depth int) {
	if r.IntN(12) == 0 || depth > 4 {
		b.WriteString(genOthers[r.IntN(len(genOthers))])
		return
	}
	switch s.Type {
	case "string":
		switch {
		case s.Format == "date-time" && r.IntN(3) > 0:
			b.WriteString(`"2026-12-01T06:00:00.25+02:00"`)
		case s.Format == "byte" && r.IntN(3) > 0:
			b.WriteString(`"aGVsbG8="`)
		default:
			b.WriteString(genStrings[r.IntN(len(genStrings))])
		}
	case "boolean":
		b.WriteString([]string{"true", "false"}[r.IntN(2)])
	case "integer", "number":
		b.WriteString(genNumbers[r.IntN(len(genNumbers))])
	case "array":
		b.WriteString("[")
		for i := range r.IntN(4) {
			if i > 0 {
				b.WriteString(",")
			}
			genValue(r, b, s.Items, depth+1)
		}
		b.WriteString("]")
	case "object":
		b.WriteString("{")
		first := true
		member := func(name string, v *Schema) {
			if !first {
				b.WriteString(",")
			}
			first = false
			if r.IntN(20) == 0 && name != "" {
				fmt.Fprintf(b, `"\u%04x%s":`, name[0], name[1:])
			} else {
				fmt.Fprintf(b, "%q:", name)
			}
			genValue(r, b, v, depth+1)
		}
		for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
			if r.IntN(8) > 0 {
				member(name, s.Properties[name])
			}
		}
		if s.Additional != nil || !s.Closed {
			add := s.Additional
			if add == nil {
				add = &Schema{}
			}
			for i := range r.IntN(3) {
				member(fmt.Sprintf("k%d", i), add)
			}
		}
		if r.IntN(15) == 0 {
			member(genUnknowns[r.IntN(len(genUnknowns))], &Schema{})
		}
		b.WriteString("}")
	default:
		b.WriteString(genOthers[r.IntN(len(genOthers))])
	}
}

// rawSchemas are schemas rawCheck is held to Check over: each input type's,
// and hand-made ones with what derived schemas lack.
func rawSchemas() map[string]*Schema {
	s := map[string]*Schema{
		"integers": {Type: "array", Items: &Schema{Type: "integer"}},
		"numbers":  {Type: "object", Additional: &Schema{Type: "number"}},
		"open":     {Type: "object", Properties: map[string]*Schema{"a": {Type: "boolean"}}, Required: []string{"a", "b"}},
		"bytes":    {Type: "string", Format: "byte"},
		"time":     {Type: "string", Format: "date-time"},
		"unknown":  {Type: "null"},
		"anything": {},
	}
	for _, c := range inputCases() {
		s[c.name] = c.schema
	}
	return s
}

var rawInputs = []string{
	`[1,2.0,-0,1e2]`, `[1.5]`, `[1e400]`, `[null]`, `["1"]`, `{"a":1.5,"b":2}`, `{"a":"x"}`, `{"a":null}`,
	`{"a":true,"b":null}`, `{"a":true}`, `{"b":1}`, `{"a":true,"b":1,"c":[{}]}`, `{"\u0061":false,"b":0}`,
	`"aGk="`, `"aGk"`, `"a\nGk="`, `"a\u0047k="`, `"2026-12-01T06:00:00Z"`, `"2026-12-01T06:00:00\u005a"`,
	`"2026-12-01T24:00:00Z"`, `"2026-12-01T06:00:00.123456789-07:00"`, `null`, `1`, `{}`, `[]`, `true`,
	`"x"`, `{"x":[1e400]}`, `[{"a":1e-400}]`, `1e400`, `123456789012345678901234567890`,
}

// TestRawCheckIsCheck: on JSON a decoder accepts, rawCheck accepts exactly
// what decoding into any and Check accept, for every schema here (the fast
// path is then sound without leaning on the strict decode, and complete).
func TestRawCheckIsCheck(t *testing.T) {
	inputs := append(append([]string(nil), rawInputs...), tableInputs...)
	for _, s := range rawSchemas() {
		inputs = append(inputs, generatedInputs(s, 500)...)
	}
	for name, s := range rawSchemas() {
		c := compileRaw(s)
		if c == nil {
			t.Fatalf("%s: not compiled", name)
		}
		for _, in := range inputs {
			if diff := diffRawCheck(c, s, []byte(in)); diff != "" {
				t.Errorf("%s: input %s: %s", name, in, diff)
			}
		}
	}
}

// FuzzRawCheck holds rawCheck to decoding into any and Check over fuzzed
// JSON.
func FuzzRawCheck(f *testing.F) {
	for _, in := range append(append([]string(nil), rawInputs...), tableInputs...) {
		f.Add([]byte(in))
	}
	schemas := rawSchemas()
	checks := map[string]*rawCheck{}
	for name, s := range schemas {
		checks[name] = compileRaw(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for name, s := range schemas {
			if diff := diffRawCheck(checks[name], s, data); diff != "" {
				t.Errorf("%s: input %q: %s", name, data, diff)
			}
		}
	})
}

func diffRawCheck(c *rawCheck, s *Schema, data []byte) string {
	if json.Unmarshal(data, new(jsontext.Value)) != nil {
		return "" // rawCheck is only asked about JSON a decoder accepted
	}
	var generic any
	err := json.Unmarshal(data, &generic)
	if err == nil {
		err = s.Check(generic)
	}
	if got := c.accepts(data); got != (err == nil) {
		return fmt.Sprintf("rawCheck %v, Check %v", got, err)
	}
	return ""
}

// TestRawCheckDoesNotAllocate: proving a plain input costs no allocation.
func TestRawCheckDoesNotAllocate(t *testing.T) {
	c := compileRaw(SchemaOf[richIn]())
	in := []byte(richJSON(map[string]string{"l": `["a","b"]`, "ins": `[{"name":"x"}]`, "any": `{"k":[1,2]}`}))
	if !c.accepts(in) {
		t.Fatalf("not accepted: %s", in)
	}
	if n := testing.AllocsPerRun(100, func() { c.accepts(in) }); n != 0 {
		t.Fatalf("%v allocations per check", n)
	}
}
