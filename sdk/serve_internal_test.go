package sdk

import (
	"context"
	"reflect"
	"testing"

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
