package jsonrpc

import (
	"context"
	"errors"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
)

const testBound = 1 << 20

// The library's request envelope, measured independently of encodeRequest.
const (
	callHead  = len(`{"jsonrpc":"2.0","method":`)
	paramsKey = len(`,"params":`)
	idKey     = len(`,"id":`)
)

// callLen is the length of a call's line, without its newline.
func callLen(method string, id int64, params []byte) int {
	return notifyLen(method, params) + idKey + digits(id)
}

// notifyLen is the length of a notification's line, without its newline.
func notifyLen(method string, params []byte) int {
	n := callHead + quotedLen(method) + 1
	if len(params) > 0 {
		n += paramsKey + len(params)
	}
	return n
}

// echoFill is how much text fills an echo request's line to the bound
// exactly: a call's (the first call has id 1) or a notification's.
func echoFill(notify bool) int {
	raw, _ := json.Marshal(echoParams{})
	if notify {
		return testBound - notifyLen("echo", raw)
	}
	return testBound - callLen("echo", 1, raw)
}

// TestOversizedRequestIsRefusedBeforeTheWire sends requests and
// notifications around the bound on both sides: over it they fail at once
// with too_large naming the method and the size, nothing reaches the peer,
// and the connection stays up; at the bound exactly they go.
func TestOversizedRequestIsRefusedBeforeTheWire(t *testing.T) {
	for _, tc := range []struct {
		name   string
		notify bool
		text   string
		tooBig bool
	}{
		{name: "a call over the bound", text: strings.Repeat("a", echoFill(false)+1), tooBig: true},
		{name: "a notification over the bound", notify: true, text: strings.Repeat("a", echoFill(true)+1), tooBig: true},
		{name: "a call under the bound whose escaped line separators pass it", text: strings.Repeat("\u2028", testBound/3-100), tooBig: true},
		{name: "negative control: a call at the bound exactly", text: strings.Repeat("a", echoFill(false))},
		{name: "negative control: a notification at the bound exactly", notify: true, text: strings.Repeat("a", echoFill(true))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{MaxMessageBytes: testBound}
			a, b := connPair(t, opts, Options{Handlers: echoTable(), MaxMessageBytes: testBound})
			var err error
			if tc.notify {
				err = a.Notify(context.Background(), "echo", echoParams{Text: tc.text})
			} else {
				var out echoParams
				err = a.Call(context.Background(), "echo", echoParams{Text: tc.text}, &out)
				if err == nil && out.Text != tc.text {
					t.Fatalf("echoed %d bytes of %d", len(out.Text), len(tc.text))
				}
			}
			if !tc.tooBig {
				if err != nil {
					t.Fatalf("a message at the bound: %v", err)
				}
				return
			}
			if !errors.Is(err, protocol.ErrTooLarge) || !strings.Contains(err.Error(), "echo") ||
				!strings.Contains(err.Error(), "1048576-byte bound") {
				t.Fatalf("got %v, want too_large naming the method, its size and the bound", err)
			}
			// Nothing reached the peer, and both ends live on.
			if err := a.Call(context.Background(), "echo", echoParams{Text: "after"}, nil); err != nil {
				t.Fatalf("the call after it: %v", err)
			}
			if b.Err() != nil || a.Err() != nil {
				t.Fatalf("a connection ended: %v / %v", a.Err(), b.Err())
			}
		})
	}
}

// TestOversizedAnswerIsReplacedByTooLarge has a handler return more than
// fits in one message: the caller gets too_large for its call, naming the
// method and the size, and the connection stays up.
func TestOversizedAnswerIsReplacedByTooLarge(t *testing.T) {
	tbl := echoTable()
	Handle(tbl, "big", func(ctx context.Context, n int) (string, error) { return strings.Repeat("b", n), nil })
	Handle(tbl, "seps", func(ctx context.Context, n int) (string, error) { return strings.Repeat("\u2028", n), nil })
	Handle(tbl, "loud", func(ctx context.Context, n int) (string, error) {
		return "", protocol.Errorf(protocol.ErrConflict, "%s", strings.Repeat("c", n))
	})
	a, _ := connPair(t, Options{MaxMessageBytes: testBound}, Options{Handlers: tbl, MaxMessageBytes: testBound})
	for _, tc := range []struct {
		name   string
		method string
		n      int
		code   string
	}{
		{name: "a result over the bound", method: "big", n: testBound, code: protocol.CodeTooLarge},
		{name: "a result whose escaped line separators pass the bound", method: "seps", n: testBound/3 - 100, code: protocol.CodeTooLarge},
		{name: "an error message over the bound is cut, not sent whole", method: "loud", n: 2 * testBound, code: protocol.CodeConflict},
		{name: "negative control: a result under the bound", method: "big", n: testBound - 100, code: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out string
			err := a.Call(context.Background(), tc.method, tc.n, &out)
			if protocol.CodeOf(err) != tc.code {
				t.Fatalf("got %v, want code %q", err, tc.code)
			}
			if tc.code == protocol.CodeTooLarge && (!strings.Contains(err.Error(), tc.method+": the answer is") || !strings.Contains(err.Error(), "1048576-byte bound")) {
				t.Fatalf("the refusal must name the method, the size and the bound: %v", err)
			}
			if tc.code == "" && len(out) != tc.n {
				t.Fatalf("got %d bytes of %d", len(out), tc.n)
			}
			if err := a.Call(context.Background(), "echo", echoParams{Text: "after"}, nil); err != nil {
				t.Fatalf("the connection did not survive: %v", err)
			}
		})
	}
}
