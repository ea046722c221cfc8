package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// ToolbeltCallPath is the toolbelt's one method: a call of an operation.
const ToolbeltCallPath = "/v1/call"

// MaxToolbeltRequest bounds a toolbelt request's body; the toolbelt
// refuses a longer one too_large.
const MaxToolbeltRequest = 1 << 20

// MaxToolbeltRequestID bounds a request ID, which is printable ASCII
// without spaces.
const MaxToolbeltRequestID = 128

// MaxToolbeltAnswer bounds a toolbelt answer, as the protocol bounds a
// message.
const MaxToolbeltAnswer = protocol.MaxMessageBytes

// ToolbeltRequest is POST /v1/call: an execution calls an operation its
// binding grants. RequestID is the call's idempotency key: a retry that
// carries the same one is answered the committed result of the first.
type ToolbeltRequest struct {
	Operation string         `json:"operation"`
	Input     jsontext.Value `json:"input,omitzero"`
	RequestID string         `json:"request_id,omitempty"`
}

// ToolbeltAnswer is the toolbelt's answer: the operation's output, or the
// error that refused or failed the call (never both).
type ToolbeltAnswer struct {
	Output jsontext.Value `json:"output,omitzero"`
	// Schema is the output's schema, when the operation's package named
	// one.
	Schema string `json:"schema,omitempty"`
	// Replayed says the output is the committed result of an earlier call
	// with the same request ID, and the handler was not called again.
	Replayed bool   `json:"replayed,omitzero"`
	Error    *Error `json:"error,omitempty"`
}

// ErrNoToolbelt is returned when the toolbelt's environment variables are
// not set: the program is not run by an executor of a running Work.
var ErrNoToolbelt = errors.New("no toolbelt")

// Toolbelt is the client a program run by an executor uses to call
// operations as its execution: the toolbelt's socket and the execution's
// bearer token.
type Toolbelt struct {
	socket string
	token  string
	http   *http.Client
	// backoff is the wait before each retry of a transport failure.
	backoff []time.Duration
}

// NewToolbelt returns a client of the toolbelt at socket, calling as the
// execution whose token is token.
func NewToolbelt(socket, token string) *Toolbelt {
	return &Toolbelt{
		socket: socket,
		token:  token,
		http: &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				if err := checkSocket(socket); err != nil {
					return nil, err
				}
				var d net.Dialer
				return d.DialContext(ctx, "unix", socket)
			},
			IdleConnTimeout: 30 * time.Second,
		}},
		backoff: []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second},
	}
}

// ToolbeltFromEnv is the toolbelt of the execution whose environment
// getenv reads (protocol.EnvToolbelt and protocol.EnvToken), or
// ErrNoToolbelt saying which variable is missing.
func ToolbeltFromEnv(getenv func(string) string) (*Toolbelt, error) {
	socket, token := getenv(protocol.EnvToolbelt), getenv(protocol.EnvToken)
	switch {
	case socket == "":
		return nil, fmt.Errorf("%w: $%s is not set; only a program an executor runs for a Work can call operations, and it finds the toolbelt's socket there (to call an operation as the operator, use 'open-conduit extension call')",
			ErrNoToolbelt, protocol.EnvToolbelt)
	case token == "":
		return nil, fmt.Errorf("%w: $%s is set but $%s is not; the execution's token comes with the socket, so keep the environment the executor gave the program",
			ErrNoToolbelt, protocol.EnvToolbelt, protocol.EnvToken)
	}
	return NewToolbelt(socket, token), nil
}

// Socket is the toolbelt socket the client dials.
func (t *Toolbelt) Socket() string { return t.socket }

// NewRequestID returns a fresh request ID: "rq_" and 26 base32 characters
// of 128 random bits.
func NewRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "rq_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// Call calls an operation as the execution. A request without a request ID
// is given one (NewRequestID), and a call that fails in transport (no
// answer, or the operation's package unavailable or gone mid-call) is
// retried with the same one, so a handler's effect happens once; the
// answer says the ID used. A refusal or a failed operation is an *Error
// with the toolbelt's code.
func (t *Toolbelt) Call(ctx context.Context, req ToolbeltRequest) (ToolbeltAnswer, string, error) {
	if req.RequestID == "" {
		req.RequestID = NewRequestID()
	}
	body, err := json.Marshal(req)
	if err != nil {
		return ToolbeltAnswer{}, req.RequestID, err
	}
	for attempt := 0; ; attempt++ {
		ans, err := t.post(ctx, body)
		if err == nil || !retryable(err) || attempt >= len(t.backoff) {
			return ans, req.RequestID, err
		}
		select {
		case <-ctx.Done():
			return ans, req.RequestID, err
		case <-time.After(t.backoff[attempt]):
		}
	}
}

// transportError is a call that got no answer.
type transportError struct{ err error }

func (e transportError) Error() string { return e.err.Error() }
func (e transportError) Unwrap() error { return e.err }

// retryable reports whether a call may be tried again with its request ID:
// it got no answer, or the operation's package could not answer it.
func retryable(err error) bool {
	var te transportError
	if errors.As(err, &te) {
		return !errors.Is(err, ErrUntrustedSocket)
	}
	var e *Error
	return errors.As(err, &e) && (e.Code == protocol.CodeUnavailable || e.Code == protocol.CodeTransport)
}

func (t *Toolbelt) post(ctx context.Context, body []byte) (ToolbeltAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://toolbelt"+ToolbeltCallPath, bytes.NewReader(body))
	if err != nil {
		return ToolbeltAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+t.token)
	resp, err := t.http.Do(req)
	if err != nil {
		if errors.Is(err, ErrUntrustedSocket) {
			return ToolbeltAnswer{}, errors.Unwrap(err)
		}
		if errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("no toolbelt answers at %s: the daemon is not running, or the execution ended", t.socket)
		}
		return ToolbeltAnswer{}, transportError{err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxToolbeltAnswer+1))
	if err != nil {
		return ToolbeltAnswer{}, transportError{err}
	}
	var ans ToolbeltAnswer
	if err := json.Unmarshal(data, &ans); err != nil {
		return ToolbeltAnswer{}, fmt.Errorf("the toolbelt answered %s with what is not its answer: %v", resp.Status, err)
	}
	if ans.Error != nil {
		return ToolbeltAnswer{}, ans.Error
	}
	if resp.StatusCode/100 != 2 {
		return ToolbeltAnswer{}, fmt.Errorf("the toolbelt answered %s without an error", resp.Status)
	}
	return ans, nil
}
