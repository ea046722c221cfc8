package jsonrpc

import (
	"bytes"
	"context"
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
//   - a request or notification goes on to the library, which dispatches it;
//   - a request whose id is null is refused (the preempter answers it): the
//     id must say which request an answer belongs to;
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
// malformed one the library refuses) and never an answer: it goes on to the
// library without a scan of its own.
var requestPrefix = []byte(`{"jsonrpc":"2.0","method":"`)

// frameWriter is the library's framer as the wire writes through it: whole
// frames, each under the framer's own write lock.
type frameWriter interface {
	WriteFrame(ctx context.Context, data []byte) (int64, error)
}

// wire is the stream the library reads and writes through: its own NDJSON
// framer over the guard, with every incoming frame screened first. Answers
// never reach the library: the connection matches them to its own calls, so
// it knows which ids it waits for and can say what a bad answer did.
type wire struct {
	jsonrpc2.Stream
	frames frameWriter
	c      *Conn

	// current is the frame last handed to the library, valid until the
	// next read. Only the goroutine holding the reader role touches it.
	current []byte

	refused atomic.Int64

	// stopped is closed when reading ends on an error the wire saw (the
	// stream ended, a line broke the protocol), with the error in stopErr:
	// the connection ends then, without waiting for handlers to finish.
	stopOnce sync.Once
	stopErr  error
	stopped  chan struct{}
}

func newWire(c *Conn, s jsonrpc2.Stream) *wire {
	return &wire{Stream: s, frames: s.(frameWriter), c: c, stopped: make(chan struct{})}
}

// ReadFrame implements the library's frame reader: it returns the next
// request, handling everything else on the way.
func (w *wire) ReadFrame(ctx context.Context) ([]byte, int64, error) {
	for {
		frame, err := w.c.guard.readFrame(ctx)
		if err != nil {
			return nil, 0, w.stop(err)
		}
		n := int64(len(frame) + 1)
		w.current = frame
		if o := w.c.opts.Observer; o != nil {
			o.Observe(false, frame)
		}
		if bytes.HasPrefix(frame, requestPrefix) {
			return frame, n, nil
		}
		pass, err := w.screen(ctx, frame)
		if err != nil {
			return nil, 0, w.stop(err)
		}
		if pass {
			return frame, n, nil
		}
	}
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

// Read implements jsonrpc2.Stream through the same screening.
func (w *wire) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	frame, n, err := w.ReadFrame(ctx)
	if err != nil {
		return nil, 0, err
	}
	msg, err := jsonrpc2.DecodeMessage(frame)
	return msg, n, err
}

// WriteFrame implements the library's frame writer.
func (w *wire) WriteFrame(ctx context.Context, data []byte) (int64, error) {
	return w.frames.WriteFrame(ctx, data)
}

// screen handles one frame that does not begin as a Go peer's request: it
// reports whether the library should have it, or the protocol error that
// ends the connection.
func (w *wire) screen(ctx context.Context, frame []byte) (pass bool, err error) {
	v, err := jsonrpc2.ScanMessageView(frame)
	switch {
	case err == nil && (v.Kind == jsonrpc2.MessageViewCall || v.Kind == jsonrpc2.MessageViewNotification):
		return true, nil
	case err == nil:
		w.c.out.deliver(w.c, &v)
		return false, nil
	case isBatch(frame):
		w.refuse(ctx, fmt.Sprintf("a JSON-RPC batch (an array, %d bytes) is not accepted: this protocol takes one JSON object per line; send each request on its own line. Nothing in the batch was run", len(frame)))
		return false, nil
	}
	if w.c.out.deliverMalformed(w.c, frame) {
		return false, nil
	}
	return false, &badLine{err: err, start: lineStart(frame)}
}

// refuse answers a line this side will not serve with an error whose id is
// null (the line has no id this side may answer to), and reads on.
func (w *wire) refuse(ctx context.Context, message string) {
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
	_, _ = w.Write(ctx, jsonrpc2.NewResponse(jsonrpc2.ID{}, nil, e))
}

// nullID reports whether the notification the library is dispatching was
// in fact a request with "id": null. Only the preempter asks, on the reader,
// before the next read.
func (w *wire) nullID() bool {
	v, err := jsonrpc2.ScanMessageView(w.current)
	return err == nil && v.Kind == jsonrpc2.MessageViewNotification && v.IDRaw != nil
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
