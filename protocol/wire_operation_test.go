package protocol

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

const echoParams = `{"operation":"bench.echo","input":{"data":{"text":"the quick brown fox jumps over the lazy dog, again and again, until the bench is done"}},"authority":{}}`

// operationCases are operation.call params as peers might send them: the
// direct decoder must take the common ones and agree with json.Unmarshal on
// every one.
var operationCases = []struct {
	name   string
	in     string
	direct bool // decoded without json.Unmarshal's help
}{
	{"echo", echoParams, true},
	{"everything", `{"operation":"op","input":{"schema":"x.v1","data":[1,-2.5e+3,true,false,null,"s",{"a":{}},[]]},"authority":{"scope_id":"s","work_id":"w","execution_id":"e","connection":"c","caller":"me"},"request_id":"r1"}`, true},
	{"reordered_spaced", " {\n\"request_id\" : \"r\" ,\t\"authority\":{ } , \"input\" : { \"data\" : { \"a\" : [ 1 , 2 ] , \"b\" : \"x\\/y\\n\" } , \"schema\":\"s\" }, \"operation\":\"op\" } \r\n", true},
	{"no_input", `{"operation":"op"}`, true},
	{"empty", `{}`, true},
	{"empty_input", `{"operation":"op","input":{},"authority":{}}`, true},
	{"utf8", `{"operation":"ö\u2028","input":{"data":"é ` + "\u2028\u2029" + ` 𝄞"}}`, false},
	{"raw_utf8", "{\"operation\":\"ö\u2028\",\"input\":{\"data\":\"é \u2028\u2029 𝄞\"}}", true},
	{"data_scalar", `{"input":{"data":12}}`, true},
	{"data_number_forms", `{"input":{"data":[0,-0,1e5,1E-5,0.5,-12.75e+02]}}`, true},
	{"same_name_other_objects", `{"input":{"data":{"a":{"a":1},"b":{"a":2}}}}`, true},
	{"html_chars", `{"operation":"<&>","input":{"data":"<&>"}}`, true},
	{"data_null", `{"operation":"op","input":{"data":null}}`, false},
	{"operation_null", `{"operation":null}`, false},
	{"escaped_operation", `{"operation":"a\"b"}`, false},
	{"unicode_escape_in_data", `{"input":{"data":"\u00e9"}}`, false},
	{"bad_unicode_escape_in_data", `{"input":{"data":"\ud800"}}`, false},
	{"escaped_name", `{"oper\u0061tion":"op"}`, false},
	{"escaped_data_name", `{"input":{"data":{"\u0061":1,"a":2}}}`, false},
	{"case_variant", `{"Operation":"op"}`, false},
	{"unknown_member", `{"operation":"op","extra":1}`, false},
	{"unknown_payload_member", `{"input":{"data":1,"extra":1}}`, false},
	{"unknown_authority_member", `{"authority":{"work":"w"}}`, false},
	{"operation_twice", `{"operation":"a","operation":"b"}`, false},
	{"data_twice", `{"input":{"data":1,"data":2}}`, false},
	{"duplicate_in_data", `{"input":{"data":{"a":1,"b":2,"a":3}}}`, false},
	{"duplicate_deep_in_data", `{"input":{"data":[{"x":[{"k":1,"k":1}]}]}}`, false},
	{"invalid_utf8_operation", "{\"operation\":\"\xff\"}", false},
	{"invalid_utf8_data", "{\"input\":{\"data\":\"\xc3\"}}", false},
	{"surrogate_utf8_data", "{\"input\":{\"data\":\"\xed\xa0\x80\"}}", false},
	{"control_in_data", "{\"input\":{\"data\":\"a\tb\"}}", false},
	{"bad_escape_in_data", `{"input":{"data":"\x"}}`, false},
	{"bad_number", `{"input":{"data":01}}`, false},
	{"bad_fraction", `{"input":{"data":1.}}`, false},
	{"bad_exponent", `{"input":{"data":1e}}`, false},
	{"minus_only", `{"input":{"data":-}}`, false},
	{"bad_literal", `{"input":{"data":nul}}`, false},
	{"trailing_comma_in_data", `{"input":{"data":[1,]}}`, false},
	{"trailing_comma", `{"operation":"op",}`, false},
	{"trailing_bytes", `{"operation":"op"} {}`, false},
	{"unterminated", `{"operation":"op","input":{"data":[1,2`, false},
	{"operation_number", `{"operation":5}`, false},
	{"input_array", `{"input":[]}`, false},
	{"array", `[]`, false},
	{"deep_data", `{"input":{"data":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}`, false},
}

// TestOperationParamsDecode pins which params the direct decoder takes
// itself and that every one decodes exactly as json.Unmarshal decodes it,
// errors included.
func TestOperationParamsDecode(t *testing.T) {
	for _, tc := range operationCases {
		t.Run(tc.name, func(t *testing.T) {
			var fast OperationCallParams
			if got := fast.decode([]byte(tc.in)); got != tc.direct {
				t.Errorf("decoded directly: %v, want %v", got, tc.direct)
			}
			compareParamsDecode(t, []byte(tc.in))
		})
	}
}

// TestOperationResultDecode does the same for results, from the same
// payloads.
func TestOperationResultDecode(t *testing.T) {
	for _, tc := range operationCases {
		var p OperationCallParams
		if json.Unmarshal([]byte(tc.in), &p) != nil {
			continue
		}
		in := `{"output":` + payloadText(tc.in) + `}`
		t.Run(tc.name, func(t *testing.T) {
			compareResultDecode(t, []byte(in))
		})
	}
	for _, in := range []string{`{"output":{"schema":"s","data":{}}}`, `{"output":{}}`, `{}`, `{"output":null}`, `{"output":{},"output":{}}`, `{"Output":{}}`} {
		compareResultDecode(t, []byte(in))
	}
	var r OperationCallResult
	if !r.decode([]byte(`{"output":{"schema":"s","data":{"text":"hi"}}}`)) {
		t.Fatal("the common result was not decoded directly")
	}
}

// payloadText is the input object of params text as written, or {} when
// it has none.
func payloadText(in string) string {
	var p struct {
		Input jsontext.Value `json:"input"`
	}
	if json.Unmarshal([]byte(in), &p) != nil || p.Input == nil {
		return "{}"
	}
	return string(p.Input)
}

// TestOperationDecodeIntoNonZero pins that decoding into a value that
// already holds something is json.Unmarshal's merge, not a fresh value.
func TestOperationDecodeIntoNonZero(t *testing.T) {
	got := OperationCallParams{RequestID: "kept", Input: Payload{Data: jsontext.Value(`[1,2,3,4]`)}}
	want := got
	want.Input.Data = bytes.Clone(want.Input.Data)
	if err := json.Unmarshal([]byte(echoParams), &want); err != nil {
		t.Fatal(err)
	}
	if err := got.UnmarshalJSONOnePass([]byte(echoParams)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %+v, json.Unmarshal %+v", got, want)
	}
}

// TestOperationDecodeOwnsItsBytes pins that the decoded data is not the
// buffer it was read from, which the connection reuses for the next message.
func TestOperationDecodeOwnsItsBytes(t *testing.T) {
	raw := []byte(echoParams)
	var p OperationCallParams
	if err := p.UnmarshalJSONOnePass(raw); err != nil {
		t.Fatal(err)
	}
	res := []byte(`{"output":{"data":{"text":"hi"}}}`)
	var r OperationCallResult
	if err := r.UnmarshalJSONOnePass(res); err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{raw, res} {
		for i := range b {
			b[i] = 'x'
		}
	}
	if p.Operation != "bench.echo" || !strings.HasPrefix(string(p.Input.Data), `{"text":"the quick`) || string(r.Output.Data) != `{"text":"hi"}` {
		t.Fatalf("the decoded values changed with the buffers they came from: %+v %+v", p, r)
	}
}

// encodeCases are payloads whose encoding must match json.Marshal's: the
// ones marked direct go out as they are, the others through json.
var encodeCases = []struct {
	name   string
	data   jsontext.Value
	direct bool
}{
	{"nil", nil, true},
	{"object", jsontext.Value(`{"text":"hi","n":[1,2.5,-0,1e9],"ok":true,"no":false,"x":null}`), true},
	{"escapes", jsontext.Value(`"a\"b\\c\n\r\t\b\f"`), true},
	{"raw_separators", jsontext.Value("\"a\u2028b\u2029c\""), true},
	{"html", jsontext.Value(`"<a href='x'>&amp;</a>"`), true},
	{"empty", jsontext.Value{}, false},
	{"spaced", jsontext.Value(` { "a" : [ 1 , 2 ] } `), false},
	{"inner_space", jsontext.Value(`{"a": 1}`), false},
	{"escaped_slash", jsontext.Value(`"a\/b"`), false},
	{"unicode_escape", jsontext.Value(`"\u00e9\u2028"`), false},
	{"control_escape", jsontext.Value(`"\u001f"`), false},
	{"duplicate", jsontext.Value(`{"a":1,"a":1}`), false},
	{"invalid_utf8", jsontext.Value("\"\xff\""), false},
	{"invalid", jsontext.Value(`{"a":}`), false},
	{"two_values", jsontext.Value(`1 2`), false},
	{"truncated", jsontext.Value(`[1,2`), false},
}

// TestOperationEncode pins which data go out as they are and that every
// params and result encodes as json.Marshal encodes it.
func TestOperationEncode(t *testing.T) {
	for _, tc := range encodeCases {
		t.Run(tc.name, func(t *testing.T) {
			_, direct := appendPayload(nil, Payload{Data: tc.data})
			if direct != tc.direct {
				t.Errorf("written directly: %v, want %v", direct, tc.direct)
			}
			compareEncode(t, OperationCallParams{Operation: "op", Input: Payload{Schema: "s.v1", Data: tc.data}, Authority: Authority{Work: "w"}})
			compareEncode(t, OperationCallParams{Input: Payload{Data: tc.data}, RequestID: "r"})
		})
	}
	compareEncode(t, OperationCallParams{Operation: "\xff"})
	compareEncode(t, OperationCallParams{Authority: Authority{Caller: "a\xffb"}})
	compareEncode(t, OperationCallParams{Operation: "<\u2028>", Authority: Authority{Scope: "s", Work: "w", Execution: "e", Connection: "c", Caller: "me"}, RequestID: "\x01"})
}

func compareEncode(t *testing.T, p OperationCallParams) {
	t.Helper()
	want, wantErr := json.Marshal(p)
	got, err := p.AppendJSON([]byte("prefix"))
	checkEncoded(t, p, got, err, want, wantErr)
	r := OperationCallResult{Output: p.Input}
	want, wantErr = json.Marshal(r)
	got, err = r.AppendJSON([]byte("prefix"))
	checkEncoded(t, r, got, err, want, wantErr)
}

func checkEncoded(t *testing.T, v any, got []byte, err error, want []byte, wantErr error) {
	t.Helper()
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("%+v: error %v, json.Marshal's %v", v, err, wantErr)
	}
	if err == nil && string(got) != "prefix"+string(want) {
		t.Fatalf("%+v:\n%s\njson.Marshal:\nprefix%s", v, got, want)
	}
}

func compareParamsDecode(t *testing.T, raw []byte) {
	t.Helper()
	var want, got OperationCallParams
	wantErr := json.Unmarshal(raw, &want)
	gotErr := got.UnmarshalJSONOnePass(raw)
	if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
		t.Fatalf("%q: error %v, json.Unmarshal's %v", raw, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decoded %+v, json.Unmarshal %+v", raw, got, want)
	}
}

func compareResultDecode(t *testing.T, raw []byte) {
	t.Helper()
	var want, got OperationCallResult
	wantErr := json.Unmarshal(raw, &want)
	gotErr := got.UnmarshalJSONOnePass(raw)
	if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
		t.Fatalf("%q: error %v, json.Unmarshal's %v", raw, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decoded %+v, json.Unmarshal %+v", raw, got, want)
	}
}

// FuzzOperationDecode holds both direct decoders to json.Unmarshal on
// anything: the text as params, and its input object as a result's output.
func FuzzOperationDecode(f *testing.F) {
	for _, tc := range operationCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		compareParamsDecode(t, raw)
		compareResultDecode(t, raw)
		res := append(append([]byte(`{"output":`), raw...), '}')
		compareResultDecode(t, res)
	})
}

// FuzzOperationDataDecode wraps arbitrary data in the common envelope, so
// the data scanner meets everything json's decoder does.
func FuzzOperationDataDecode(f *testing.F) {
	for _, tc := range encodeCases {
		f.Add(string(tc.data), "s.v1")
	}
	f.Add(`{"a":[{"b":{"c":"\u00e9"}}],"b":1}`, "")
	f.Fuzz(func(t *testing.T, data, schema string) {
		var b []byte
		b = append(b, `{"operation":"op","input":{"schema":`...)
		b, _ = jsontext.AppendQuote(b, schema)
		b = append(b, `,"data":`...)
		b = append(b, data...)
		b = append(b, `},"authority":{}}`...)
		compareParamsDecode(t, b)
		compareResultDecode(t, []byte(`{"output":`+string(b[len(`{"operation":"op","input":`):len(b)-len(`,"authority":{}}`)])+`}`))
	})
}

// FuzzOperationEncode holds both direct encoders to json.Marshal, byte for
// byte, refusals included: it is the wire format every other language's
// extension reads and writes.
func FuzzOperationEncode(f *testing.F) {
	for _, tc := range encodeCases {
		f.Add("op", "s.v1", []byte(tc.data), tc.data == nil, "w", "r")
	}
	f.Add("<\u2028>", "", []byte(`{"a":"\u2029"}`), false, "\xff", "")
	f.Fuzz(func(t *testing.T, op, schema string, data []byte, nilData bool, work, req string) {
		if nilData {
			data = nil
		}
		compareEncode(t, OperationCallParams{Operation: op, Input: Payload{Schema: schema, Data: data}, Authority: Authority{Work: work, Caller: req}, RequestID: req})
	})
}

func BenchmarkOperationParams(b *testing.B) {
	raw := []byte(echoParams)
	var p OperationCallParams
	if err := json.Unmarshal(raw, &p); err != nil {
		b.Fatal(err)
	}
	b.Run("decode/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v OperationCallParams
			if err := json.Unmarshal(raw, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v OperationCallParams
			if err := v.UnmarshalJSONOnePass(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	benchEncode(b, p)
}

func BenchmarkOperationResult(b *testing.B) {
	r := OperationCallResult{Output: Payload{Data: jsontext.Value(`{"text":"the quick brown fox jumps over the lazy dog, again and again, until the bench is done"}`)}}
	raw, err := json.Marshal(r)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decode/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v OperationCallResult
			if err := json.Unmarshal(raw, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v OperationCallResult
			if err := v.UnmarshalJSONOnePass(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	benchEncode(b, r)
}

func benchEncode[T interface{ AppendJSON([]byte) ([]byte, error) }](b *testing.B, v T) {
	var buf bytes.Buffer
	b.Run("encode/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			if err := json.MarshalWrite(&buf, v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode/direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			out, err := v.AppendJSON(buf.AvailableBuffer())
			if err != nil {
				b.Fatal(err)
			}
			buf.Write(out)
		}
	})
}

// BenchmarkPayloadDataCheck compares the data's one scan with
// jsontext.Value.IsValid, which checks less (not that json would write the
// data as it stands) and is the cheapest check json offers.
func BenchmarkPayloadDataCheck(b *testing.B) {
	data := jsontext.Value(`{"text":"the quick brown fox jumps over the lazy dog, again and again, until the bench is done"}`)
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			s := valueScanner{b: data, canonical: true}
			if s.value(0) != len(data) {
				b.Fatal("not taken")
			}
		}
	})
	b.Run("IsValid", func(b *testing.B) {
		for b.Loop() {
			if !data.IsValid() {
				b.Fatal("not valid")
			}
		}
	})
}

// TestPlainWordAgreesWithPlainByte holds the word-at-a-time string test to
// the byte table: every byte value at every position of an otherwise plain
// word, and random words.
func TestPlainWordAgreesWithPlainByte(t *testing.T) {
	word := func(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }
	for c := range 256 {
		for p := range 8 {
			b := []byte("abcdefgh")
			b[p] = byte(c)
			if got := plainWord(word(b)); got != plainByte[c] {
				t.Fatalf("byte %#x at %d: plainWord %v, plainByte %v", c, p, got, plainByte[c])
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		b := make([]byte, 8)
		for i := range b {
			// Mostly printable, so both answers come up.
			b[i] = byte(0x20 + r.IntN(0x60))
			if r.IntN(16) == 0 {
				b[i] = byte(r.IntN(256))
			}
		}
		want := true
		for _, c := range b {
			want = want && plainByte[c]
		}
		if got := plainWord(word(b)); got != want {
			t.Fatalf("%q: plainWord %v, bytes say %v", b, got, want)
		}
	}
}
