package sdk

import (
	"context"
	"reflect"
	"testing"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

const benchText = "the quick brown fox jumps over the lazy dog; the quick brown fox jumps over the lazy dog"

// echoServer is a server of one echo operation, as an extension's serving
// loop holds it, without the connection.
func echoServer() *server {
	x := New("bench", Version("1.0.0")).
		Operation("bench.echo", Handler(func(_ context.Context, _ *Request, in echoIn) (echoIn, error) { return in, nil }))
	return &server{x: x, host: newHost(x.Manifest.Name)}
}

// BenchmarkOperationCallEcho is the SDK's own part of serving an echo:
// operationCall from decoded params to the result the answer carries.
func BenchmarkOperationCallEcho(b *testing.B) {
	s := echoServer()
	p := protocol.OperationCallParams{Operation: "bench.echo",
		Input: protocol.Payload{Schema: "bench.echo.v1", Data: jsontext.Value(`{"text":"` + benchText + `"}`)}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.operationCall(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeInputEcho compares the one-pass decode of an echo's input
// with the two passes it replaces.
func BenchmarkDecodeInputEcho(b *testing.B) {
	data := jsontext.Value(`{"text":"` + benchText + `"}`)
	d := newInputDecoder(SchemaOf[echoIn](), reflect.TypeFor[echoIn]())
	b.Run("one-pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var in echoIn
			if err := decodeInput(d, data, &in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("two-pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var in echoIn
			if err := decodeInputChecked(d.schema, data, &in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRawCheckEcho is the in-place check of an echo's input.
func BenchmarkRawCheckEcho(b *testing.B) {
	data := []byte(`{"text":"` + benchText + `"}`)
	c := compileRaw(SchemaOf[echoIn]())
	b.ReportAllocs()
	for b.Loop() {
		if !c.accepts(data) {
			b.Fatal("refused")
		}
	}
}

// TestOperationCallStartsFromAZeroInput: each call decodes into a zero
// input, whatever the call before it decoded, failed or answered.
func TestOperationCallStartsFromAZeroInput(t *testing.T) {
	type in struct {
		A string   `json:"a"`
		B string   `json:"b,omitempty"`
		L []string `json:"l,omitempty"`
	}
	var seen []in
	x := New("bench", Version("1.0.0")).
		Operation("t.op", Handler(func(_ context.Context, _ *Request, v in) (in, error) {
			seen = append(seen, v)
			return v, nil
		}))
	s := &server{x: x, host: newHost(x.Manifest.Name)}
	ctx := context.Background()
	for _, data := range []string{`{"a":"x","b":"y","l":["1"]}`, `{"a":"x"}`, `{"a":"x","b":"y","l":["1"],"z":1}`, `{"a":"x"}`} {
		p := protocol.OperationCallParams{Operation: "t.op", Input: protocol.Payload{Data: jsontext.Value(data)}}
		_, _ = s.operationCall(ctx, p)
	}
	want := []in{{A: "x", B: "y", L: []string{"1"}}, {A: "x"}, {A: "x"}}
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("handler saw %+v, want %+v", seen, want)
	}
}

// ptrMarshaler marshals itself through a pointer receiver.
type ptrMarshaler struct{ N int }

func (p *ptrMarshaler) MarshalJSON() ([]byte, error) { return []byte(`"custom"`), nil }

// TestEncodeOutputIsMarshalOfTheValue: encoding the output by pointer gives
// the bytes json.Marshal gives the value itself, and a Payload (static or
// in an interface) is sent as it is.
func TestEncodeOutputIsMarshalOfTheValue(t *testing.T) {
	payload := protocol.Payload{Schema: "own.v1", Data: jsontext.Value(`{"a":1}`)}
	check := func(name string, out any, res protocol.OperationCallResult, err error) {
		t.Helper()
		if p, ok := out.(protocol.Payload); ok {
			if err != nil || !reflect.DeepEqual(res.Output, p) {
				t.Errorf("%s: %+v %v, want the payload as it is", name, res.Output, err)
			}
			return
		}
		want, wantErr := json.Marshal(out)
		if (err == nil) != (wantErr == nil) || (err == nil && string(res.Output.Data) != string(want)) || (err == nil && res.Output.Schema != "s.v1") ||
			(err != nil && err.Error() != "encoding output: "+wantErr.Error()) {
			t.Errorf("%s: %s %q %v, want %s %v", name, res.Output.Data, res.Output.Schema, err, want, wantErr)
		}
	}
	// flatOf is the codec Handler would give the output's type.
	flatOf := func(v any) *flatCodec { return newFlatCodec(reflect.TypeOf(v).Elem()) }
	echo := echoIn{Text: "a\u2028<b>"}
	res, err := encodeOutput("s.v1", flatOf(&echo), &echo)
	check("struct", echo, res, err)
	var nilPtr *echoIn
	res, err = encodeOutput("s.v1", flatOf(&nilPtr), &nilPtr)
	check("nil pointer", nilPtr, res, err)
	pm := ptrMarshaler{N: 1}
	res, err = encodeOutput("s.v1", flatOf(&pm), &pm)
	check("pointer-receiver marshaler", pm, res, err)
	var nothing any
	res, err = encodeOutput("s.v1", flatOf(&nothing), &nothing)
	check("nil any", nothing, res, err)
	var inAny any = payload
	res, err = encodeOutput("s.v1", flatOf(&inAny), &inAny)
	check("payload in any", inAny, res, err)
	res, err = encodeOutput("s.v1", flatOf(&payload), &payload)
	check("payload", payload, res, err)
	bad := echoIn{Text: "\xff"}
	res, err = encodeOutput("s.v1", flatOf(&bad), &bad)
	check("flat, not UTF-8", bad, res, err)
	ch := make(chan int)
	res, err = encodeOutput("s.v1", flatOf(&ch), &ch)
	check("unencodable", ch, res, err)
}
