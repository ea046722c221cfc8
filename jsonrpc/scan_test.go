package jsonrpc

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"go.lsp.dev/jsonrpc2"
)

// scanSeeds are request lines of every shape the scanner claims or leaves
// to the library, and broken ones.
var scanSeeds = []string{
	`{"jsonrpc":"2.0","method":"echo","params":{"text":"hi"},"id":1}`,
	`{"jsonrpc":"2.0","method":"echo","params":{"text":"hi"}}`,
	`{"jsonrpc":"2.0","method":"echo"}`,
	`{"jsonrpc":"2.0","method":"echo","id":"abc"}`,
	`{"jsonrpc":"2.0","method":"echo","params":null,"id":-9223372036854775808}`,
	`{"jsonrpc":"2.0","method":"echo","id":"a\"bc"}`,
	`{"jsonrpc":"2.0","method":"echo","id":9223372036854775808}`,
	`{"jsonrpc":"2.0","method":"echo","id":1.5}`,
	`{"jsonrpc":"2.0","method":"echo","id":null}`,
	`{"jsonrpc":"2.0","method":"echo","id":true}`,
	`{"jsonrpc":"2.0","method":"e\u0063ho","id":1}`,
	`{"jsonrpc":"2.0","method":"echo","id":1,"id":2}`,
	`{"jsonrpc":"2.0","method":"echo","jsonrpc":"1.0","id":2}`,
	`{"jsonrpc":"2.0","method":"echo","result":{},"id":2}`,
	`{"jsonrpc":"2.0","method":"echo","params":{]}, "id" : 3 } `,
	`{"jsonrpc":"2.0","method":"echo","params":"abc,"id":1}`,
	`{"jsonrpc":"2.0","method":"echo","params":["a\\",{"b":"\\\""}],"id":1}`,
	`{"jsonrpc":"2.0","method":"echo","params":{"a":1e+5,"b":-0.5,"c":[true,false,null]},"x":{},"id":4}`,
	`{"jsonrpc":"2.0","method":"echo","params":{"data":"` + strings.Repeat("QUJD", 64) + `"},"id":5}`,
	`{"jsonrpc":"2.0","method":"echo","params":{"text":"hi"},"id":1}x`,
	`{"jsonrpc":"2.0","method":"echo","params":{"text":"hi\`,
	`{"jsonrpc":"2.0","method":"echo\`,
	`{"jsonrpc":"2.0","method":"`,
	`{"jsonrpc":"2.0","method":"echo",}`,
}

// TestScanRequestLineClaimsThePlainShapes is the negative control of the
// fuzz test below: the lines a Go peer writes take the scanner's path, so
// the comparison is not vacuous.
func TestScanRequestLineClaimsThePlainShapes(t *testing.T) {
	for _, line := range scanSeeds[:5] {
		if _, ok := scanRequestLine([]byte(line)); !ok {
			t.Errorf("the scanner left %s to the library", line)
		}
	}
	r, _ := scanRequestLine([]byte(scanSeeds[0]))
	if string(r.method) != "echo" || string(r.params) != `{"text":"hi"}` || !r.isCall || r.id != jsonrpc2.NewNumberID(1) {
		t.Errorf("scanned %+v", r)
	}
	if _, ok := scanRequestLine([]byte(scanSeeds[len(scanSeeds)-1])); ok {
		t.Error("the scanner claimed a line with a trailing comma")
	}
}

// FuzzScanRequestLine holds the request scanner to the library's: a line it
// claims, the library reads as the same request (kind, method, params, id),
// and a line the library refuses it never claims.
func FuzzScanRequestLine(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if !bytes.HasPrefix(line, requestPrefix) {
			line = append(append([]byte(nil), requestPrefix...), line...)
		}
		r, ok := scanRequestLine(line)
		if !ok {
			return
		}
		v, err := jsonrpc2.ScanMessageView(line)
		if err != nil {
			t.Fatalf("claimed a line the library refuses (%v): %q", err, line)
		}
		wantKind := jsonrpc2.MessageViewNotification
		if r.isCall {
			wantKind = jsonrpc2.MessageViewCall
		}
		if v.Kind != wantKind {
			t.Fatalf("kind %v, the library says %v: %q", wantKind, v.Kind, line)
		}
		if v.MethodEscaped || !bytes.Equal(v.MethodBytes, r.method) {
			t.Fatalf("method %q, the library says %q: %q", r.method, v.MethodBytes, line)
		}
		if !bytes.Equal(v.Params, r.params) || (v.Params == nil) != (r.params == nil) {
			t.Fatalf("params %q, the library says %q: %q", r.params, v.Params, line)
		}
		if r.nullID != (v.Kind == jsonrpc2.MessageViewNotification && v.IDRaw != nil) {
			t.Fatalf("null id %v, the library's id %q: %q", r.nullID, v.IDRaw, line)
		}
		id, idOK := v.ID.ID()
		if !idOK || id != r.id {
			t.Fatalf("id %v, the library says %v: %q", r.id, id, line)
		}
	})
}

// answerSeeds are answer lines of every shape scanAnswerLine claims or
// leaves to the library, and broken ones; answerClaimed lists the ones it
// claims.
var answerSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"output":{"data":{"text":"hi"}}}}`,
	`{"jsonrpc":"2.0","id":9223372036854775807,"result":null}`,
	`{"jsonrpc":"2.0","id":-4,"result":"a\"}b"} `,
	`{"jsonrpc":"2.0","id":7,"result":[1,{"a":[true,false]},-0.5e+3]}`,
	`{"jsonrpc":"2.0","id":007,"result":1}`,
	`{"jsonrpc":"2.0","id":9223372036854775808,"result":1}`,
	`{"jsonrpc":"2.0","id":1.5,"result":1}`,
	`{"jsonrpc":"2.0","id":"1","result":1}`,
	`{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`,
	`{"jsonrpc":"2.0","id":1, "result":1}`,
	`{"jsonrpc":"2.0","id":1,"result":1 }`,
	`{"jsonrpc":"2.0","id":1,"result":{]}`,
	`{"jsonrpc":"2.0","id":1,"result":"abc}`,
	`{"jsonrpc":"2.0","id":1,"result":1}x`,
	`{"jsonrpc":"2.0","id":1,"result":1`,
	`{"jsonrpc":"2.0","id":1,"result":tru}`,
	`{"jsonrpc":"2.0","id":`,
	`{"jsonrpc":"2.0","id":1,"result":{"data":"` + strings.Repeat("QUJD", 64) + `"}}`,
}

// answerClaimed are the indexes of answerSeeds the scanner claims. A result
// of {]} is one: like the library's, the scan balances brackets and leaves
// the grammar inside to the decoder.
var answerClaimed = []int{0, 1, 2, 3, 12, 18}

// TestScanAnswerLineClaimsThePlainShapes is the negative control of the
// fuzz test below: the answers a Go peer writes take the scanner's path, so
// the comparison is not vacuous, and the broken ones do not.
func TestScanAnswerLineClaimsThePlainShapes(t *testing.T) {
	for i, line := range answerSeeds {
		_, _, ok := scanAnswerLine([]byte(line))
		if want := slices.Contains(answerClaimed, i); ok != want {
			t.Errorf("claimed %v, want %v: %s", ok, want, line)
		}
	}
	id, result, _ := scanAnswerLine([]byte(answerSeeds[0]))
	if id != 1 || string(result) != `{"output":{"data":{"text":"hi"}}}` {
		t.Errorf("scanned id %d, result %s", id, result)
	}
	line := jsonrpc2.AppendResponse(nil, jsonrpc2.NewNumberID(42), jsonrpc2.RawMessage(`{"text":"x"}`), nil)
	if id, result, ok := scanAnswerLine(line); !ok || id != 42 || string(result) != `{"text":"x"}` {
		t.Errorf("the library's own answer %s scanned as %d, %s, %v", line, id, result, ok)
	}
}

// FuzzScanAnswerLine holds the answer scanner to the library's: a line it
// claims, the library reads as a successful answer with the same id and
// result, and a line the library refuses it never claims.
func FuzzScanAnswerLine(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if !bytes.HasPrefix(line, answerPrefix) {
			line = append(append([]byte(nil), answerPrefix...), line...)
		}
		id, result, ok := scanAnswerLine(line)
		if !ok {
			return
		}
		v, err := jsonrpc2.ScanMessageView(line)
		if err != nil {
			t.Fatalf("claimed a line the library refuses (%v): %q", err, line)
		}
		if v.Kind != jsonrpc2.MessageViewResponseResult {
			t.Fatalf("claimed as a result, the library says kind %v: %q", v.Kind, line)
		}
		if n, isNum := v.ID.Number(); !isNum || n != id {
			t.Fatalf("id %d, the library says %q: %q", id, v.IDRaw, line)
		}
		if !bytes.Equal(v.Result, result) {
			t.Fatalf("result %q, the library says %q: %q", result, v.Result, line)
		}
	})
}
