package toolbelt

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/api"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// strict reads the toolbelt's requests and the builtins' inputs: exact
// names, nothing unknown.
var strict = json.JoinOptions(json.RejectUnknownMembers(true), json.MatchCaseInsensitiveNames(false))

// Handler is the toolbelt's HTTP API: POST /v1/call, with the execution's
// bearer token. Every answer is a client.ToolbeltAnswer; an error carries
// its code and the HTTP status the management API gives that code, but a
// missing or dead token is 401.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path != client.ToolbeltCallPath:
			s.fail(w, protocol.Errorf(protocol.ErrNotFound, "the toolbelt serves only POST %s", client.ToolbeltCallPath))
			return
		case r.Method != http.MethodPost:
			s.write(w, http.StatusMethodNotAllowed, client.ToolbeltAnswer{Error: &client.Error{Code: protocol.CodeBadRequest,
				Message: "the toolbelt serves only POST " + client.ToolbeltCallPath}})
			return
		}
		x, err := s.authenticate(r)
		switch {
		case protocol.CodeOf(err) == protocol.CodeUnauthorized:
			w.Header().Set("WWW-Authenticate", `Bearer realm="open-conduit toolbelt"`)
			s.write(w, http.StatusUnauthorized, client.ToolbeltAnswer{Error: &client.Error{Code: protocol.CodeUnauthorized, Message: err.Error()}})
			return
		case err != nil:
			s.fail(w, err)
			return
		}
		req, err := readCall(r)
		if err != nil {
			s.fail(w, err)
			return
		}
		// The request is in: from here the call's own bound applies, and a
		// read deadline left running would cancel the call's context.
		_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
		ans, err := s.call(r.Context(), x, req)
		if err != nil {
			s.fail(w, err)
			return
		}
		s.write(w, http.StatusOK, ans)
	})
}

// authenticate resolves the request's bearer token to its running
// execution. The token itself is never logged or answered.
func (s *Server) authenticate(r *http.Request) (pebblekv.Execution, error) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		return pebblekv.Execution{}, protocol.Errorf(protocol.ErrUnauthorized,
			"the call carries no bearer token: send the execution's $%s as 'Authorization: Bearer TOKEN'", protocol.EnvToken)
	}
	x, err := s.deps.Engine.ExecutionByToken(token)
	switch {
	case protocol.CodeOf(err) == protocol.CodeUnauthorized:
		return pebblekv.Execution{}, protocol.Errorf(protocol.ErrUnauthorized,
			"the token is not a running execution's: its execution settled, and a token dies with its execution")
	case err != nil:
		return pebblekv.Execution{}, err
	}
	return x, nil
}

// readCall reads and checks the call's body.
func readCall(r *http.Request) (client.ToolbeltRequest, error) {
	data, err := io.ReadAll(io.LimitReader(r.Body, client.MaxToolbeltRequest+1))
	var req client.ToolbeltRequest
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return req, protocol.Errorf(protocol.ErrBadRequest, "the request did not arrive whole within %s; send it at once", ReadTimeout)
	case err != nil:
		return req, protocol.Errorf(protocol.ErrBadRequest, "reading the request: %v", err)
	case len(data) > client.MaxToolbeltRequest:
		return req, protocol.Errorf(protocol.ErrTooLarge, "the request is over %d bytes (1 MiB); send a smaller input", client.MaxToolbeltRequest)
	}
	if err := json.Unmarshal(data, &req, strict); err != nil {
		return req, protocol.Errorf(protocol.ErrInvalid, "the request is not {\"operation\", \"input\", \"request_id\"}: %v", err)
	}
	switch {
	case req.Operation == "":
		return req, protocol.Errorf(protocol.ErrInvalid, "the request names no operation")
	case len(req.RequestID) > client.MaxToolbeltRequestID:
		return req, protocol.Errorf(protocol.ErrInvalid, "the request ID is over %d bytes; use a shorter one", client.MaxToolbeltRequestID)
	case strings.ContainsFunc(req.RequestID, func(r rune) bool { return r < 0x21 || r > 0x7e }):
		return req, protocol.Errorf(protocol.ErrInvalid, "the request ID must be printable ASCII without spaces")
	}
	if len(req.Input) == 0 {
		req.Input = []byte("{}")
	}
	if req.Input.Kind() != '{' {
		return req, protocol.Errorf(protocol.ErrInvalid, "the input must be a JSON object, such as {\"text\":\"hi\"}; pass {} for none")
	}
	return req, nil
}

// fail answers err with its code; an error without one is internal.
func (s *Server) fail(w http.ResponseWriter, err error) {
	code := protocol.CodeOf(err)
	if code == "" {
		s.deps.Logger.Error("toolbelt call failed", "err", err)
		code = protocol.CodeInternal
	}
	s.write(w, api.StatusOf(code), client.ToolbeltAnswer{Error: &client.Error{Code: code, Message: err.Error()}})
}

// write answers ans within WriteTimeout; an answer over the protocol's
// message bound is refused too_large instead.
func (s *Server) write(w http.ResponseWriter, status int, ans client.ToolbeltAnswer) {
	b, err := json.Marshal(ans, json.Deterministic(true))
	switch {
	case err != nil:
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"encoding the answer failed"}}`)
	case len(b) > client.MaxToolbeltAnswer:
		status = api.StatusOf(protocol.CodeTooLarge)
		b, _ = json.Marshal(client.ToolbeltAnswer{Error: &client.Error{Code: protocol.CodeTooLarge,
			Message: "the answer is over 16 MiB, the toolbelt's bound; ask the operation for less"}})
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(WriteTimeout))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
