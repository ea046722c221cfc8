package jsonrpc

import (
	"context"
	"errors"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// operationTable serves operation.call by answering the input as the
// output, and keeps the params each call arrived with.
func operationTable(got chan<- protocol.OperationCallParams) *Table {
	t := NewTable()
	Serve(t, protocol.OperationCall, func(ctx context.Context, p protocol.OperationCallParams) (protocol.OperationCallResult, error) {
		if got != nil {
			got <- p
		}
		return protocol.OperationCallResult{Output: protocol.Payload{Schema: p.Input.Schema, Data: p.Input.Data}}, nil
	})
	return t
}

// TestOperationCallEnvelope pins the operation.call envelope's own codecs
// through a connection: data goes out as json.Marshal writes it (compacted
// here), each side's decoded data is its own (the next message through the
// same read buffer leaves it as it was), and data that is not JSON is
// refused before it is sent, either way.
func TestOperationCallEnvelope(t *testing.T) {
	got := make(chan protocol.OperationCallParams, 4)
	a, _ := connPair(t, Options{}, Options{Handlers: operationTable(got)})
	ctx := context.Background()
	first, err := Invoke(ctx, a, protocol.OperationCall, protocol.OperationCallParams{
		Operation: "x.echo", Input: protocol.Payload{Schema: "x.v1", Data: jsontext.Value(`{ "text" : "one" }`)},
		Authority: protocol.Authority{Work: "w1"}, RequestID: "r1",
	})
	if err != nil {
		t.Fatal(err)
	}
	served := <-got
	if served.Operation != "x.echo" || string(served.Input.Data) != `{"text":"one"}` || served.Authority.Work != "w1" || served.RequestID != "r1" {
		t.Fatalf("served %+v", served)
	}
	second, err := Invoke(ctx, a, protocol.OperationCall, protocol.OperationCallParams{
		Operation: "x.echo", Input: protocol.Payload{Data: jsontext.Value(`{"text":"TWO"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	<-got
	if string(first.Output.Data) != `{"text":"one"}` || first.Output.Schema != "x.v1" || string(second.Output.Data) != `{"text":"TWO"}` {
		t.Fatalf("answers %+v then %+v", first, second)
	}
	if string(served.Input.Data) != `{"text":"one"}` {
		t.Fatalf("the first call's params changed with the next message: %s", served.Input.Data)
	}

	_, err = Invoke(ctx, a, protocol.OperationCall, protocol.OperationCallParams{Operation: "x.echo", Input: protocol.Payload{Data: jsontext.Value(`{"text":}`)}})
	if !errors.Is(err, protocol.ErrInvalid) {
		t.Fatalf("params whose data is not JSON: %v, want invalid", err)
	}

	b, _ := connPair(t, Options{}, Options{Handlers: func() *Table {
		t := NewTable()
		Serve(t, protocol.OperationCall, func(ctx context.Context, p protocol.OperationCallParams) (protocol.OperationCallResult, error) {
			return protocol.OperationCallResult{Output: protocol.Payload{Data: jsontext.Value(`{"a":1,"a":2}`)}}, nil
		})
		return t
	}()})
	_, err = Invoke(ctx, b, protocol.OperationCall, protocol.OperationCallParams{Operation: "x.echo"})
	if !errors.Is(err, protocol.ErrInternal) {
		t.Fatalf("an answer whose data json would not write: %v, want internal", err)
	}
}

// BenchmarkInProcessOperationCall is an operation.call echo through our
// Conn on both ends of real pipes: the envelope's codecs on both sides.
func BenchmarkInProcessOperationCall(b *testing.B) {
	a, _ := connPair(b, Options{}, Options{Handlers: operationTable(nil)})
	ctx := context.Background()
	in := protocol.OperationCallParams{Operation: "bench.echo", Input: protocol.Payload{Data: jsontext.Value(`{"text":"a short message of about the size the seed measured, give or take"}`)}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Invoke(ctx, a, protocol.OperationCall, in); err != nil {
			b.Fatal(err)
		}
	}
}

// TestNilPointersThatAppendTheirOwnJSONGoAsNull holds the codec hooks to
// json for a nil pointer to a type that appends its own JSON: a nil answer
// goes as a null result and nil params as none, where calling the value
// method AppendJSON through the pointer would panic, and a nil result
// pointer is refused as json refuses it.
func TestNilPointersThatAppendTheirOwnJSONGoAsNull(t *testing.T) {
	table := NewTable()
	params := make(chan jsontext.Value, 1)
	Handle(table, "nil.answer", func(ctx context.Context, p jsontext.Value) (*protocol.OperationCallResult, error) {
		params <- p
		return nil, nil
	})
	a, _ := connPair(t, Options{}, Options{Handlers: table})
	ctx := context.Background()
	out := protocol.OperationCallResult{Output: protocol.Payload{Schema: "kept"}}
	if err := a.Call(ctx, "nil.answer", (*protocol.OperationCallParams)(nil), &out); err != nil {
		t.Fatal(err)
	}
	if p := <-params; len(p) != 0 {
		t.Errorf("nil params arrived as %s, want none", p)
	}
	if out.Output.Schema != "kept" {
		t.Errorf("a null result changed the result to %+v", out)
	}
	if err := decodeResult([]byte(`{"output":{}}`), (*protocol.OperationCallResult)(nil)); err == nil {
		t.Error("decoding into a nil result pointer was not refused")
	}
}
