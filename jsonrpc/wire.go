package jsonrpc

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.lsp.dev/jsonrpc2"

	"github.com/open-conduit/open-conduit/protocol"
)

// What each incoming line gets, by rule (docs/protocol.md, section 1):
//
//   - a request or notification is served (loop.go);
//   - a request whose id is null is refused: the id must say which request
//     an answer belongs to;
//   - an answer goes to the call waiting for its id, here, on the reader;
//     an answer to an id nobody waits for (answered twice, never sent) is
//     ignored and logged;
//   - an answer that is malformed (a result and an error, an error that is no
//     error object, a result that does not decode) fails the call it names
//     with invalid, and the connection stays up;
//   - a batch (a JSON array) is refused with one answer whose id is null,
//     and nothing in it runs;
//   - anything else (not JSON, not an object, no "jsonrpc": "2.0", an id that
//     is neither a number nor a string) is a protocol error that ends the
//     connection, as the framing rule says.

// requestPrefix is how every request and notification a Go peer writes
// begins. A line that begins so has a method, so it is a request (or a
// malformed one) and never an answer: scanRequestLine reads it.
var requestPrefix = []byte(`{"jsonrpc":"2.0","method":"`)

// answerPrefix and resultMember are how every successful answer a Go peer
// writes begins (the library's AppendResponse): the id, a number for every
// call this side makes, sits between them. scanAnswerLine reads such lines.
var (
	answerPrefix = []byte(`{"jsonrpc":"2.0","id":`)
	resultMember = []byte(`,"result":`)
)

// wire is the reading side's protocol state: how reading ended, and the
// refusals it answered.
type wire struct {
	c *Conn

	refused atomic.Int64

	// stopped is closed when reading ends on an error the wire saw (the
	// stream ended, a line broke the protocol), with the error in stopErr:
	// the connection ends then, without waiting for handlers to finish.
	stopOnce sync.Once
	stopErr  error
	stopped  chan struct{}
}

func newWire(c *Conn) *wire {
	return &wire{c: c, stopped: make(chan struct{})}
}

// stop records why reading ended and signals it.
func (w *wire) stop(err error) error {
	w.stopOnce.Do(func() {
		w.stopErr = err
		close(w.stopped)
	})
	return err
}

// stopReason is why reading ended, or nil while it goes on.
func (w *wire) stopReason() error {
	select {
	case <-w.stopped:
		return w.stopErr
	default:
		return nil
	}
}

// refuse answers a line this side will not serve with an error whose id is
// null (the line has no id this side may answer to), and reads on. It runs
// on the reader, with the reader's lane.
func (w *wire) refuse(l *lane, message string) {
	if n := w.refused.Add(1); n&(n-1) == 0 {
		// Logged sparsely (the 1st, 2nd, 4th … refusal), so a peer that
		// repeats itself cannot flood the log.
		w.c.opts.Logger.Warn("refused a message", "peer", w.c.opts.Peer, "why", message, "refused_so_far", n)
	}
	e := &jsonrpc2.Error{
		Code:    protocol.RPCInvalidRequest,
		Message: message,
		Data:    jsonrpc2.RawMessage(`{"code":"` + protocol.CodeParse + `"}`),
	}
	l.line = w.c.writeAnswer(l.line, w.c.guard.buffered(), jsonrpc2.ID{}, nil, e)
}

// isBatch reports whether a line is a JSON array.
func isBatch(frame []byte) bool {
	frame = bytes.TrimLeft(frame, " \t\r")
	return len(frame) > 0 && frame[0] == '['
}

// badLine is the protocol error of a line that is not a JSON-RPC 2.0
// message: it ends the connection.
type badLine struct {
	err   error
	start []byte
}

func (b *badLine) Error() string {
	return fmt.Sprintf("the peer sent a line that is not a JSON-RPC message: %q", b.start)
}

func (b *badLine) Unwrap() error { return b.err }

// lineStart is the opening of a line, for an error that quotes it.
func lineStart(frame []byte) []byte {
	frame = bytes.TrimLeft(frame, " \t\r")
	return bytes.Clone(frame[:min(len(frame), 80)])
}

// answerShape is a malformed answer, decoded only to say what is wrong
// with it.
type answerShape struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      jsontext.Value `json:"id"`
	Method  jsontext.Value `json:"method"`
	Result  jsontext.Value `json:"result"`
	Error   jsontext.Value `json:"error"`
}

// readAnswer decodes a line the scanner refused as an answer, when it is
// one: a JSON-RPC 2.0 object with a result or an error and no method. It
// says what is wrong with it.
func readAnswer(frame []byte) (a answerShape, what string, ok bool) {
	if json.Unmarshal(frame, &a) != nil || a.JSONRPC != "2.0" || a.Method != nil || (a.Result == nil && a.Error == nil) {
		return a, "", false
	}
	switch {
	case a.Result != nil && a.Error != nil:
		what = "an answer with both a result and an error"
	case a.Error != nil:
		what = "an error that is not a JSON-RPC error object (an integer code and a string message)"
	default:
		what = "an answer this side could not read"
	}
	return a, what, true
}

// answerID is a malformed answer's id when it is a number.
func answerID(raw jsontext.Value) (int64, bool) {
	var id int64
	if raw.Kind() != '0' || json.Unmarshal(raw, &id) != nil {
		return 0, false
	}
	return id, true
}
