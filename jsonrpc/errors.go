package jsonrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

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
				Message: err.Error(),
				Data:    data,
			}, false
		}
	}
	return internalError, true
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

// mapCallError classifies what Call got back: an answer's error, the
// connection breaking, or the caller's own context.
func (c *Conn) mapCallError(ctx context.Context, method string, err error) error {
	var we *jsonrpc2.Error
	if errors.As(err, &we) && we != jsonrpc2.ErrParse && we != jsonrpc2.ErrInvalidRequest {
		// The library fails pending calls with its own parse sentinels when
		// the peer sends a line it cannot read; those are not answers.
		return fromWire(we)
	}
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return ctxErr
	}
	return c.transportError(method, err)
}

// transportError wraps a broken connection as protocol.ErrTransport, naming
// why it broke when the read side knows.
func (c *Conn) transportError(method string, err error) error {
	reason := c.closeReason()
	if reason == "" {
		reason = describe(err)
		if errors.Is(err, jsonrpc2.ErrParse) || errors.Is(err, jsonrpc2.ErrInvalidRequest) {
			if _, bad := c.guard.state(); bad != nil {
				reason = fmt.Sprintf("%s: %q", reason, bad)
			}
		}
	}
	return protocol.Errorf(protocol.ErrTransport, "%s: connection to %s broke: %s", method, c.Peer(), reason)
}

// describe says in words what a transport error means.
func describe(err error) string {
	switch {
	case err == nil:
		return "closed"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the peer closed the connection (exited or crashed)"
	case errors.Is(err, ErrMessageTooLarge):
		return err.Error()
	case errors.Is(err, jsonrpc2.ErrParse), errors.Is(err, jsonrpc2.ErrInvalidRequest):
		return "the peer sent a line that is not a JSON-RPC message"
	case errors.Is(err, os.ErrClosed), errors.Is(err, net.ErrClosed), errors.Is(err, io.ErrClosedPipe),
		errors.Is(err, jsonrpc2.ErrClientClosing), errors.Is(err, jsonrpc2.ErrServerClosing):
		return "the connection is closed"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "a write blocked past its deadline: the peer is not reading"
	}
	return err.Error()
}
