package jsonrpc

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"unicode/utf8"

	json "github.com/go-json-experiment/json"
	"go.lsp.dev/jsonrpc2"

	"github.com/open-conduit/open-conduit/protocol"
)

// errorData is the data member of every error this package writes.
type errorData struct {
	Code    string `json:"code"`
	ResetAt string `json:"reset_at,omitempty"`
}

// toWire turns a handler's error into the JSON-RPC error that crosses. An
// authored error (one that is or wraps a *protocol.Error with a wire code)
// crosses with its code and message; anything else crosses as internal with
// no detail, and unauthored reports whether the caller should log it.
func toWire(err error) (wire *jsonrpc2.Error, unauthored bool) {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		if entry, ok := protocol.LookupCode(pe.Code); !ok || entry.Wire {
			data, _ := json.Marshal(errorData{Code: pe.Code, ResetAt: pe.ResetAt})
			return &jsonrpc2.Error{
				Code:    jsonrpc2.Code(protocol.RPCCode(pe.Code)),
				Message: capMessage(err.Error()),
				Data:    data,
			}, false
		}
	}
	return internalError, true
}

// maxErrorMessage bounds an error's message on the wire: it is for a
// person, and an answer must stay under the message bound whatever a
// handler put in it.
const maxErrorMessage = 64 << 10

// capMessage cuts a message longer than maxErrorMessage, at a character
// boundary, and says so.
func capMessage(m string) string {
	if len(m) <= maxErrorMessage {
		return m
	}
	cut := maxErrorMessage
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return m[:cut] + " … (cut at 64 KiB)"
}

var internalError = &jsonrpc2.Error{
	Code:    protocol.RPCInternal,
	Message: "internal error",
	Data:    jsonrpc2.RawMessage(`{"code":"internal"}`),
}

// fromWire turns a JSON-RPC error answer into a *protocol.Error: data.code
// when the peer authored one, otherwise the name of the reserved code.
func fromWire(e *jsonrpc2.Error) *protocol.Error {
	var data errorData
	if len(e.Data) > 0 {
		_ = json.Unmarshal(e.Data, &data)
	}
	code := data.Code
	if !protocol.ValidCode(code) {
		code = protocol.CodeForRPC(int(e.Code))
	}
	if code == "" {
		code = protocol.CodeInternal
	}
	return &protocol.Error{Code: code, Message: e.Message, ResetAt: data.ResetAt}
}

// transportError wraps a broken connection as protocol.ErrTransport, naming
// why it broke when the streams know.
func (c *Conn) transportError(method string, err error) error {
	reason := c.closeReason()
	if reason == "" {
		reason = describe(err)
	}
	return protocol.Errorf(protocol.ErrTransport, "%s: connection to %s broke: %s", method, c.Peer(), reason)
}

// malformed is the error of a call whose answer came back malformed: it
// fails that call alone, and the connection stays up.
func (c *Conn) malformed(method, what string) error {
	c.opts.Logger.Warn("malformed answer", "peer", c.opts.Peer, "method", method, "what", what)
	return protocol.Errorf(protocol.ErrInvalid,
		"%s: %s answered with %s; the call failed and the connection stays up", method, c.opts.Peer, what)
}

// stray logs an answer no call waits for, and drops it. A late answer to a
// call given up on is expected; anything else the peer got wrong is logged.
func (c *Conn) stray(v *jsonrpc2.MessageView) {
	id, isNum := v.ID.Number()
	if isNum && c.out.wasAbandoned(id) {
		c.opts.Logger.Debug("late answer to a cancelled call, ignored", "peer", c.opts.Peer, "id", id)
		return
	}
	switch {
	case !v.ID.IsValid() && v.Kind == jsonrpc2.MessageViewResponseError:
		c.strayLog(fmt.Sprintf("an error with a null id: the peer could not read a message from this side: %.200s", v.Error.MessageBytes))
	case !v.ID.IsValid():
		c.strayLog("an answer with a null id")
	case !isNum || id <= 0 || id > c.out.lastID.Load():
		c.strayLog(fmt.Sprintf("an answer to an id this side never sent (%s)", v.IDRaw))
	default:
		c.strayLog(fmt.Sprintf("a second answer to id %d, which was already answered", id))
	}
}

// strayLog logs an ignored answer sparsely (the 1st, 2nd, 4th, 8th … on a
// connection), so a flood of them cannot flood the log.
func (c *Conn) strayLog(what string) {
	if n := c.out.strays.Add(1); n&(n-1) == 0 {
		c.opts.Logger.Warn("ignored an answer", "peer", c.opts.Peer, "what", what, "ignored_so_far", n)
	}
}

// describe says in words what a transport error means.
func describe(err error) string {
	switch {
	case err == nil:
		return "closed"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.EPIPE):
		return "the peer closed the connection (exited or crashed)"
	case errors.Is(err, ErrMessageTooLarge), errors.Is(err, errWriteBlocked):
		return err.Error()
	case errors.As(err, new(*badLine)):
		return err.Error()
	case errors.Is(err, jsonrpc2.ErrParse), errors.Is(err, jsonrpc2.ErrInvalidRequest):
		return "the peer sent a line that is not a JSON-RPC message"
	case errors.Is(err, os.ErrClosed), errors.Is(err, net.ErrClosed), errors.Is(err, io.ErrClosedPipe),
		errors.Is(err, jsonrpc2.ErrClientClosing), errors.Is(err, jsonrpc2.ErrServerClosing):
		return "the connection is closed"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "a write blocked past its deadline: " + errWriteBlocked.Error()
	}
	return err.Error()
}
