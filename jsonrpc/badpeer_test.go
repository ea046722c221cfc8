package jsonrpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// wireAnswer is one answer line as a peer reads it.
type wireAnswer struct {
	ID     jsontext.Value `json:"id"`
	Result jsontext.Value `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Code string `json:"code"`
		} `json:"data"`
	} `json:"error"`
}

func readWireAnswer(t *testing.T, line string) wireAnswer {
	t.Helper()
	var a wireAnswer
	if err := json.Unmarshal([]byte(line), &a); err != nil {
		t.Fatalf("answer %q: %v", line, err)
	}
	return a
}

// countingTable serves echo and counts the calls that ran, so a test can
// tell a refused message from one that ran.
func countingTable(ran *atomic.Int32) *Table {
	tbl := NewTable()
	Handle(tbl, "echo", func(ctx context.Context, p echoParams) (echoParams, error) {
		ran.Add(1)
		return p, nil
	})
	return tbl
}

// TestBadIncomingMessagesGetTheirDocumentedTreatment sends each kind of bad
// message a peer can send unasked and checks what the receiver does: the
// answer (or none), whether anything ran, what it logged, and whether the
// connection lives on.
func TestBadIncomingMessagesGetTheirDocumentedTreatment(t *testing.T) {
	for _, tc := range []struct {
		name    string
		line    string
		answer  string // a part of the error message answered with id null; "" for no answer
		logged  string
		breaks  string // the close reason, when the rule ends the connection
		ranNone bool
	}{
		{name: "batch of calls is refused with one null-id error and runs nothing",
			line:   `[{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"a"}},{"jsonrpc":"2.0","id":2,"method":"echo","params":{"text":"b"}}]`,
			answer: "batch", logged: "batch", ranNone: true},
		{name: "empty batch is refused the same way", line: `[]`, answer: "batch", logged: "batch", ranNone: true},
		{name: "batch of notifications is refused too", line: `[{"jsonrpc":"2.0","method":"echo","params":{"text":"a"}}]`, answer: "batch", ranNone: true},
		{name: "request with a null id is refused and not run",
			line:   `{"jsonrpc":"2.0","id":null,"method":"echo","params":{"text":"a"}}`,
			answer: "never null", logged: "never null", ranNone: true},
		{name: "request with a null id written as a Go peer orders its members is refused too",
			line:   `{"jsonrpc":"2.0","method":"echo","params":{"text":"a"},"id":null}`,
			answer: "never null", ranNone: true},
		{name: "request with a null id in another member order is refused too",
			line:   `{"id":null,"method":"echo","jsonrpc":"2.0","params":{"text":"a"}}`,
			answer: "never null", ranNone: true},
		{name: "answer to an id never sent is ignored and logged", line: `{"jsonrpc":"2.0","id":99,"result":{}}`, logged: "never sent"},
		{name: "malformed answer to an id never sent is ignored and logged",
			line: `{"jsonrpc":"2.0","id":99,"result":{},"error":{"code":1,"message":"x"}}`, logged: "both a result and an error"},
		{name: "null-id error is logged as the peer not reading this side",
			line: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"unreadable"}}`, logged: "could not read a message from this side: unreadable"},
		{name: "a request with a fractional id breaks the connection", line: `{"jsonrpc":"2.0","id":1.5,"method":"echo"}`, breaks: `\"id\":1.5`, ranNone: true},
		{name: "a line that is not JSON breaks the connection", line: `{"jsonrpc":"2.0","id":`, breaks: `\"id\":"`, ranNone: true},
		{name: "a message without jsonrpc 2.0 breaks the connection", line: `{"id":3,"result":{}}`, breaks: `{\"id\":3`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logged bytes.Buffer
			var mu sync.Mutex
			var ran atomic.Int32
			peer := rawPeer(t, Options{Handlers: countingTable(&ran), Logger: testLogger(&logged, &mu)})
			peer.send(tc.line)
			if tc.breaks != "" {
				waitFor(t, func() bool {
					select {
					case <-peer.conn.Done():
						return true
					default:
						return false
					}
				})
				if err := peer.conn.Err(); !errors.Is(err, protocol.ErrTransport) || !strings.Contains(err.Error(), tc.breaks) ||
					!strings.Contains(err.Error(), "not a JSON-RPC message") {
					t.Fatalf("close reason %v, want it to quote %s", err, tc.breaks)
				}
				return
			}
			if tc.answer != "" {
				a := readWireAnswer(t, peer.recv())
				if string(a.ID) != "null" || a.Error == nil || a.Error.Code != protocol.RPCInvalidRequest ||
					a.Error.Data.Code != protocol.CodeParse || !strings.Contains(a.Error.Message, tc.answer) {
					t.Fatalf("answer %+v %+v, want a null-id -32600 parse_error naming %q", a, a.Error, tc.answer)
				}
			}
			// The connection lives on: a good call after it is answered, and
			// it is the next line the peer reads.
			peer.send(`{"jsonrpc":"2.0","id":77,"method":"echo","params":{"text":"after"}}`)
			if a := readWireAnswer(t, peer.recv()); string(a.ID) != "77" || a.Error != nil {
				t.Fatalf("the call after it: %+v", a)
			}
			if tc.ranNone && ran.Load() != 1 {
				t.Fatalf("%d handlers ran; only the call after it should have", ran.Load())
			}
			mu.Lock()
			defer mu.Unlock()
			if !strings.Contains(logged.String(), tc.logged) {
				t.Fatalf("the log does not say %q:\n%s", tc.logged, logged.String())
			}
		})
	}
}

// TestBadAnswersFailTheirCallAloneAndSayWhat has the peer answer a call
// badly, each way, and checks that the call fails saying what happened
// while the connection stays up.
func TestBadAnswersFailTheirCallAloneAndSayWhat(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer string // %d is the call's id
		code   string
		says   string
	}{
		{name: "result and error both", answer: `{"jsonrpc":"2.0","id":%d,"result":{"text":"x"},"error":{"code":-32000,"message":"no","data":{"code":"conflict"}}}`,
			code: protocol.CodeInvalid, says: "both a result and an error"},
		{name: "result that does not decode", answer: `{"jsonrpc":"2.0","id":%d,"result":5}`,
			code: protocol.CodeInvalid, says: "a result that does not decode"},
		{name: "large result that does not decode", answer: `{"jsonrpc":"2.0","id":%d,"result":"` + strings.Repeat("x", directDecodeMax+1) + `"}`,
			code: protocol.CodeInvalid, says: "a result that does not decode"},
		{name: "error that is not an error object", answer: `{"jsonrpc":"2.0","id":%d,"error":5}`,
			code: protocol.CodeInvalid, says: "not a JSON-RPC error object"},
		{name: "negative control: a well-formed error crosses with its code", answer: `{"jsonrpc":"2.0","id":%d,"error":{"code":-32000,"message":"changed","data":{"code":"conflict"}}}`,
			code: protocol.CodeConflict, says: "changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			peer := rawPeer(t, Options{Peer: "the test peer"})
			errc := make(chan error, 1)
			go func() { errc <- peer.conn.Call(context.Background(), "echo", echoParams{Text: "hi"}, new(echoParams)) }()
			var req struct{ ID int64 }
			if err := json.Unmarshal([]byte(peer.recv()), &req, json.MatchCaseInsensitiveNames(true)); err != nil {
				t.Fatal(err)
			}
			peer.send(fmt.Sprintf(tc.answer, req.ID))
			err := <-errc
			if protocol.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v (%s), want %s saying %q", err, protocol.CodeOf(err), tc.code, tc.says)
			}
			if tc.code == protocol.CodeInvalid && (!strings.Contains(err.Error(), "echo") || !strings.Contains(err.Error(), "the test peer") ||
				strings.Contains(err.Error(), "broke")) {
				t.Fatalf("the report must name the method and the peer, and not say the connection broke: %v", err)
			}
			// The connection is still up: the next call is answered.
			go func() {
				var out echoParams
				errc <- peer.conn.Call(context.Background(), "echo", echoParams{Text: "again"}, &out)
			}()
			if err := json.Unmarshal([]byte(peer.recv()), &req, json.MatchCaseInsensitiveNames(true)); err != nil {
				t.Fatal(err)
			}
			peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"text":"again"}}`, req.ID))
			if err := <-errc; err != nil {
				t.Fatalf("the call after it: %v", err)
			}
		})
	}
}

// TestSecondAnswerToACallIsIgnoredAndLogged answers one call twice: the
// first answer counts, the second is logged and changes nothing.
func TestSecondAnswerToACallIsIgnoredAndLogged(t *testing.T) {
	var logged bytes.Buffer
	var mu sync.Mutex
	peer := rawPeer(t, Options{Logger: testLogger(&logged, &mu)})
	errc := make(chan error, 1)
	var out echoParams
	go func() { errc <- peer.conn.Call(context.Background(), "echo", echoParams{Text: "hi"}, &out) }()
	peer.recv()
	peer.send(`{"jsonrpc":"2.0","id":1,"result":{"text":"first"}}`)
	if err := <-errc; err != nil || out.Text != "first" {
		t.Fatalf("first answer: %v %q", err, out.Text)
	}
	peer.send(`{"jsonrpc":"2.0","id":1,"result":{"text":"second"}}`)
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(logged.String(), "a second answer to id 1")
	})
	if out.Text != "first" {
		t.Fatalf("the second answer changed the first call's result: %q", out.Text)
	}
	select {
	case <-peer.conn.Done():
		t.Fatal("the connection ended")
	default:
	}
}

// TestStalledReaderFailsTheConnectionAtTheWriteDeadline stops reading on
// one end while several large calls queue to write to it. The first write
// that blocks past the deadline ends the connection: every queued call fails
// with that one write's reason, none waits a deadline of its own, and what
// the stalled reader finds when it reads again is whole lines and at most a
// cut-off last one, never a torn line followed by more.
func TestStalledReaderFailsTheConnectionAtTheWriteDeadline(t *testing.T) {
	r, w, peerR, peerW := pipePair(t)
	defer peerW.Close()
	defer peerR.Close()
	c := New(r, w, Options{WriteTimeout: 300 * time.Millisecond})
	defer c.Close()

	const calls = 4
	errs := make(chan error, calls)
	for i := 0; i < calls; i++ {
		go func() {
			errs <- c.Call(context.Background(), "echo", echoParams{Text: strings.Repeat("x", 256<<10)}, nil)
		}()
	}
	next := func() error {
		t.Helper()
		select {
		case err := <-errs:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("a queued call is still waiting after the connection's write failed")
			return nil
		}
	}
	first := next()
	if !errors.Is(first, protocol.ErrTransport) || !strings.Contains(first.Error(), "blocked") {
		t.Fatalf("the first call: %v", first)
	}
	// The stalled reader reads again; what it finds must end.
	got := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(peerR); got <- b }()
	for i := 1; i < calls; i++ {
		err := next()
		if err == nil || err.Error() != first.Error() {
			t.Fatalf("a queued call failed otherwise than by the one blocked write:\n%v\nnot\n%v", err, first)
		}
	}
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the connection did not end")
	}
	if err := c.Err(); !errors.Is(err, protocol.ErrTransport) || !strings.Contains(err.Error(), "blocked for 300ms") {
		t.Fatalf("close reason: %v", err)
	}
	var data []byte
	select {
	case data = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the stream to the stalled reader was never closed")
	}
	lines := bytes.Split(data, []byte("\n"))
	for i, line := range lines[:len(lines)-1] {
		if !jsontext.Value(line).IsValid() {
			t.Fatalf("line %d is torn: %.80q…", i+1, line)
		}
	}
	t.Logf("the stalled reader found %d whole lines and %d bytes of a cut-off one", len(lines)-1, len(lines[len(lines)-1]))
}

// TestProtocolErrorEndsTheConnectionAtOnce breaks the protocol while a
// handler is still running and a call still waits: the connection ends at
// once, the call fails naming the line, and the handler's context is
// cancelled, rather than everything waiting for the handler to finish.
func TestProtocolErrorEndsTheConnectionAtOnce(t *testing.T) {
	entered := make(chan struct{})
	tbl := NewTable()
	Handle(tbl, "hang", func(ctx context.Context, _ struct{}) (struct{}, error) {
		close(entered)
		<-ctx.Done()
		return struct{}{}, nil
	})
	peer := rawPeer(t, Options{Handlers: tbl})
	peer.send(`{"jsonrpc":"2.0","id":1,"method":"hang"}`)
	<-entered
	errc := make(chan error, 1)
	go func() { errc <- peer.conn.Call(context.Background(), "echo", nil, nil) }()
	peer.recv() // the call reached the peer
	peer.send("a stray print")
	select {
	case err := <-errc:
		if !errors.Is(err, protocol.ErrTransport) || !strings.Contains(err.Error(), "a stray print") {
			t.Fatalf("the waiting call: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting call was not failed")
	}
	select {
	case <-peer.conn.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the connection waited for its running handler instead of ending")
	}
}
