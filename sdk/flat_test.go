package sdk

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"
)

// flatAll has every kind and tag option the flat codec takes.
type flatAll struct {
	S      string `json:"s"`
	Opt    string `json:"opt,omitempty"`
	Zero   string `json:"zero,omitzero"`
	B      bool   `json:"b"`
	BZero  bool   `json:"b_zero,omitzero"`
	BEmpty bool   `json:"b_empty,omitempty"`
	I      int    `json:"i"`
	I8     int8   `json:"i8,omitempty"`
	I64    int64  `json:"i64,omitzero"`
	U      uint   `json:"u"`
	U8     uint8  `json:"u8"`
	U64    uint64 `json:"u64"`
	Plain  string
	Skip   string `json:"-"`
	hidden string
}

type (
	flatNamed    string
	flatEmbedded struct{ echoIn }
	flatFloat    struct {
		F float64 `json:"f"`
	}
	flatStringOpt struct {
		N int `json:"n,string"`
	}
	flatQuoted struct {
		N int `json:"'n'"`
	}
	flatNamedField struct {
		N flatNamed `json:"n"`
	}
	flatMarshaler struct {
		N int `json:"n"`
	}
	flatEmpty struct{}
)

func (flatMarshaler) MarshalJSON() ([]byte, error) { return []byte(`{}`), nil }

// TestFlatCodecTakesOnlyFlatStructs: a struct whose every JSON field is a
// predeclared string, bool or integer, tagged with no option but omitempty
// and omitzero, gets a codec; anything else is left to the JSON package.
func TestFlatCodecTakesOnlyFlatStructs(t *testing.T) {
	// Two fields of one name (go vet refuses the type written out).
	twice := reflect.StructOf([]reflect.StructField{
		{Name: "A", Type: reflect.TypeFor[string](), Tag: `json:"x"`},
		{Name: "B", Type: reflect.TypeFor[string](), Tag: `json:"x"`},
	})
	cases := []struct {
		typ  reflect.Type
		flat bool
	}{
		{reflect.TypeFor[flatAll](), true},
		{reflect.TypeFor[echoIn](), true},
		{reflect.TypeFor[flatEmpty](), true},
		{reflect.TypeFor[flatEmbedded](), false},
		{reflect.TypeFor[flatFloat](), false},
		{reflect.TypeFor[flatStringOpt](), false},
		{reflect.TypeFor[flatQuoted](), false},
		{twice, false},
		{reflect.TypeFor[flatNamedField](), false},
		{reflect.TypeFor[flatMarshaler](), false},
		{reflect.TypeFor[time.Time](), false},
		{reflect.TypeFor[string](), false},
	}
	for _, tc := range cases {
		if got := newFlatCodec(tc.typ) != nil; got != tc.flat {
			t.Errorf("%s: flat %v, want %v", tc.typ, got, tc.flat)
		}
	}
}

// flatInputs are inputs for flatAll: the codec must take the common ones
// and agree with json.Unmarshal (strictInput) on all it takes.
var flatInputs = []struct {
	in     string
	direct bool
}{
	{`{"s":"a","i":1,"u":2,"b":true}`, true},
	{` { "s" : "é 𝄞 <&>" , "b" : false , "i" : -9223372036854775808 , "u64" : 18446744073709551615 } `, true},
	{`{}`, true},
	{`{"Plain":"p","opt":"","zero":"z","b_zero":true,"b_empty":false,"i8":-128,"i64":0,"u8":255}`, true},
	{`{"i":0,"u":0}`, true},
	{`{"s":"a\"b"}`, false},
	{`{"s":"\u00e9"}`, false},
	{"{\"s\":\"\xff\"}", false},
	{"{\"s\":\"a\tb\"}", false},
	{`{"s":null}`, false},
	{`{"s":1}`, false},
	{`{"b":"true"}`, false},
	{`{"b":tru}`, false},
	{`{"i":1.0}`, false},
	{`{"i":1e2}`, false},
	{`{"i":-0}`, false},
	{`{"i":01}`, false},
	{`{"i":-}`, false},
	{`{"i8":128}`, false},
	{`{"u":-1}`, false},
	{`{"u8":256}`, false},
	{`{"i":99999999999999999999}`, false},
	{`{"S":"case"}`, false},
	{`{"skip":"x"}`, false},
	{`{"Skip":"x"}`, false},
	{`{"hidden":"x"}`, false},
	{`{"s":"a","s":"b"}`, false},
	{`{"unknown":1}`, false},
	{`{"\u0073":"a"}`, false},
	{`{"s":"a",}`, false},
	{`{"s":"a"} x`, false},
	{`{"s":"a"`, false},
	{`[]`, false},
	{`"s"`, false},
}

// TestFlatDecodeAgreesWithJSON pins which inputs the flat codec decodes
// itself and that each it decodes is what json.Unmarshal decodes.
func TestFlatDecodeAgreesWithJSON(t *testing.T) {
	c := newFlatCodec(reflect.TypeFor[flatAll]())
	for _, tc := range flatInputs {
		var got flatAll
		if direct := c.decode([]byte(tc.in), reflect.ValueOf(&got).Elem()); direct != tc.direct {
			t.Errorf("%s: decoded directly %v, want %v", tc.in, direct, tc.direct)
		}
		compareFlatDecode(t, c, []byte(tc.in))
	}
}

// FuzzFlatDecode holds the flat decoder to json.Unmarshal on anything.
func FuzzFlatDecode(f *testing.F) {
	for _, tc := range flatInputs {
		f.Add([]byte(tc.in))
	}
	c := newFlatCodec(reflect.TypeFor[flatAll]())
	f.Fuzz(func(t *testing.T, data []byte) { compareFlatDecode(t, c, data) })
}

func compareFlatDecode(t *testing.T, c *flatCodec, data []byte) {
	t.Helper()
	var got, want flatAll
	if !c.decode(data, reflect.ValueOf(&got).Elem()) {
		return
	}
	if err := json.Unmarshal(data, &want, strictInput); err != nil {
		t.Fatalf("%q: decoded directly, json.Unmarshal refuses it: %v", data, err)
	}
	if got != want {
		t.Fatalf("%q: decoded %+v, json.Unmarshal %+v", data, got, want)
	}
}

// TestFlatEncodeWritesWhatMarshalWrites holds the flat encoder to
// json.Marshal, byte for byte, over random values, refusals included.
func TestFlatEncodeWritesWhatMarshalWrites(t *testing.T) {
	c := newFlatCodec(reflect.TypeFor[flatAll]())
	r := rand.New(rand.NewPCG(7, 1))
	strs := []string{"", "a", "é", "<&>", "\u2028\u2029", "\x00\x1f", `"q\`, "\t\n", "\xff"}
	ints := []int64{0, 1, -1, math.MaxInt64, math.MinInt64}
	refused := 0
	for i := range 3000 {
		v := flatAll{
			S: strs[r.IntN(len(strs))], Opt: strs[r.IntN(len(strs))], Zero: strs[r.IntN(len(strs))], Plain: strs[r.IntN(len(strs))],
			B: r.IntN(2) == 0, BZero: r.IntN(2) == 0, BEmpty: r.IntN(2) == 0,
			I: int(ints[r.IntN(len(ints))]), I8: int8(ints[r.IntN(len(ints))]), I64: ints[r.IntN(len(ints))],
			U: uint(r.Uint64() >> r.IntN(64)), U8: uint8(r.Uint64()), U64: r.Uint64() >> r.IntN(64),
			Skip: "never", hidden: "never",
		}
		want, wantErr := json.Marshal(&v)
		got, ok := c.encode([]byte("prefix"), reflect.ValueOf(&v).Elem())
		if ok != (wantErr == nil) {
			t.Fatalf("case %d %+v: encoded %v, json.Marshal error %v", i, v, ok, wantErr)
		}
		if !ok {
			refused++
			continue
		}
		if string(got) != "prefix"+string(want) {
			t.Fatalf("case %d:\nflat         %s\njson.Marshal prefix%s", i, got, want)
		}
	}
	if refused == 0 || refused > 2000 {
		t.Fatalf("%d of 3000 refused: the cases do not cover both outcomes", refused)
	}
}
