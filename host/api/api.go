// Package api is the management API: HTTP+JSON on the daemon's Unix
// socket, under /v1/. It is a thin adapter: each handler decodes the
// request, calls one method of the daemon's facade and encodes the answer.
// Domain rules live behind the facade, never here.
package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

// MaxBody bounds a request body, as the protocol bounds a message.
const MaxBody = protocol.MaxMessageBytes

// MaxWait bounds a long poll (events, logs) and a restart's wait.
const MaxWait = client.MaxWait

// Daemon is what the API serves: the daemon's facade. Errors carry a
// protocol code (protocol.Errorf), which picks the HTTP status.
type Daemon interface {
	Status() client.Status
	Extensions() client.Extensions
	Call(ctx context.Context, name string, req client.CallRequest) (client.CallResult, error)
	Restart(ctx context.Context, name string, wait time.Duration) (client.RestartResult, error)
	Rescan(ctx context.Context) (client.Rescan, error)
	Events(ctx context.Context, q client.EventsQuery) (client.Events, error)
	Log(name string, tail int) (client.Log, error)
	LogAfter(ctx context.Context, name string, offset int64, wait time.Duration) (client.Log, error)
	// Wire reads one page of a package's wire tap (its recent JSON-RPC
	// lines), waiting up to q.Wait for one after q.After.
	Wire(ctx context.Context, name string, q client.WireQuery) (client.WirePage, error)
	Doctor(ctx context.Context, opts ...client.DoctorOptions) client.Doctor
	Config() (client.ConfigView, error)
	Validate(ctx context.Context, text []byte) (client.Validation, error)
	Apply(ctx context.Context, text []byte) (client.Applied, error)
	Reload(ctx context.Context) (client.Applied, error)
	WorkDaemon
	RunsDaemon
	RenderDaemon
	IngressDaemon
}

// Handler routes /v1/ to d. Every request is read whole before it is
// routed (within the server's ReadTimeout, at most MaxBody bytes), and
// every answer that is an error has the API's error shape (client.Error),
// the router's own 404 and 405 included.
func Handler(d Daemon) http.Handler {
	a := adapter{d}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", a.status)
	mux.HandleFunc("GET /v1/extensions", a.extensions)
	mux.HandleFunc("POST /v1/extensions/rescan", a.rescan)
	mux.HandleFunc("POST /v1/extensions/{name}/call", a.call)
	mux.HandleFunc("POST /v1/extensions/{name}/restart", a.restart)
	mux.HandleFunc("GET /v1/extensions/{name}/wire", a.wire)
	mux.HandleFunc("GET /v1/events", a.events)
	routeWork(mux, a)
	routeRender(mux, a)
	routeIngress(mux, a)
	routeRuns(mux, a)
	mux.HandleFunc("GET /v1/logs/{name}", a.logs)
	mux.HandleFunc("GET /v1/doctor", a.doctor)
	mux.HandleFunc("GET /v1/config", a.config)
	mux.HandleFunc("POST /v1/config/validate", withText(d.Validate))
	// A refused config is an answer (applied false, with the problems),
	// not a failure of the API.
	mux.HandleFunc("POST /v1/config/apply", withText(d.Apply))
	mux.HandleFunc("POST /v1/config/reload", a.reload)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		jw := &jsonErrors{ResponseWriter: w, r: r}
		rc := http.NewResponseController(w)
		// A deadline left from the connection's last answer must not cut
		// this one; writeJSON sets the answer's own.
		_ = rc.SetWriteDeadline(time.Time{})
		data, err := readRequest(r)
		if err != nil {
			writeError(jw, err)
			return
		}
		// The request is in: from here its handler's own bounds apply.
		_ = rc.SetReadDeadline(time.Time{})
		answering(r, true)
		defer answering(r, false)
		r.Body = io.NopCloser(bytes.NewReader(data))
		mux.ServeHTTP(jw, r)
	})
}

type adapter struct{ d Daemon }

// writeJSON writes one answer, within WriteTimeout.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"code":"internal","message":"encoding the answer failed"}`)
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(WriteTimeout))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Length")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// StatusOf is the HTTP status the management API answers an error code
// with; the toolbelt answers its errors with the same.
func StatusOf(code string) int { return httpStatus(code) }

// httpStatus maps an error's protocol code onto the HTTP status.
func httpStatus(code string) int {
	switch code {
	case protocol.CodeNotFound:
		return http.StatusNotFound
	case protocol.CodeInvalid, protocol.CodeBadRequest, protocol.CodeInvalidParams:
		return http.StatusBadRequest
	case protocol.CodeUndeclared, protocol.CodeUnauthorized:
		return http.StatusForbidden
	case protocol.CodeConflict:
		return http.StatusConflict
	case protocol.CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case protocol.CodeUnavailable, protocol.CodeOverloaded:
		return http.StatusServiceUnavailable
	case protocol.CodeStorageFull:
		return http.StatusInsufficientStorage
	case protocol.CodeUnsupported:
		return http.StatusNotImplemented
	}
	return http.StatusInternalServerError
}

// statusError is an error whose HTTP status is not its code's.
type statusError struct {
	status int
	err    error
}

func (e statusError) Error() string { return e.err.Error() }
func (e statusError) Unwrap() error { return e.err }

// writeError answers err with its code; an error without one is internal.
func writeError(w http.ResponseWriter, err error) {
	code := protocol.CodeOf(err)
	if code == "" {
		code = protocol.CodeInternal
	}
	status := httpStatus(code)
	var se statusError
	if errors.As(err, &se) {
		status = se.status
	}
	writeJSON(w, status, client.Error{Code: code, Message: err.Error()})
}

func answer[T any](w http.ResponseWriter, v T, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// readRequest reads a request's body whole: at most MaxBody bytes, within
// what is left of the server's ReadTimeout.
func readRequest(r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, statusError{http.StatusRequestTimeout, protocol.Errorf(protocol.ErrBadRequest,
			"the request did not arrive whole within %s; send it at once", ReadTimeout)}
	case err != nil:
		return nil, protocol.Errorf(protocol.ErrBadRequest, "reading the request: %v", err)
	case len(data) > MaxBody:
		return nil, protocol.Errorf(protocol.ErrTooLarge, "the request is over %d bytes (16 MiB); send less", MaxBody)
	}
	return data, nil
}

// body is a request's body, which must be one JSON value.
func body(r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, protocol.Errorf(protocol.ErrBadRequest, "reading the request: %v", err)
	}
	if !jsontext.Value(data).IsValid() {
		return nil, protocol.Errorf(protocol.ErrInvalid, "the request body is not one JSON value")
	}
	return data, nil
}

// decode reads a request body strictly into v; no body is an empty
// object.
func decode(r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	data, err := body(r)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v, json.RejectUnknownMembers(true)); err != nil {
		return protocol.Errorf(protocol.ErrInvalid, "the request does not fit: %v", err)
	}
	return nil
}

// params reads a request's query parameters; the first one that does not
// parse is kept as err, and the reads after it answer zero.
type params struct {
	r   *http.Request
	err error
}

// uint reads a non-negative integer (absent: 0).
func (p *params) uint(name string) uint64 {
	s := p.r.URL.Query().Get(name)
	if s == "" || p.err != nil {
		return 0
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		p.err = protocol.Errorf(protocol.ErrInvalid, "%s must be a non-negative integer, not %q", name, s)
	}
	return n
}

// wait reads a long poll's wait in seconds, capped at MaxWait.
func (p *params) wait() time.Duration {
	return min(time.Duration(p.uint("wait"))*time.Second, MaxWait)
}

func (a adapter) status(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, a.d.Status())
}

func (a adapter) extensions(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, a.d.Extensions())
}

func (a adapter) call(w http.ResponseWriter, r *http.Request) {
	var req client.CallRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	res, err := a.d.Call(r.Context(), r.PathValue("name"), req)
	answer(w, res, err)
}

func (a adapter) restart(w http.ResponseWriter, r *http.Request) {
	var req client.RestartRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	wait := min(time.Duration(max(req.WaitSeconds, 0))*time.Second, MaxWait)
	res, err := a.d.Restart(r.Context(), r.PathValue("name"), wait)
	answer(w, res, err)
}

func (a adapter) rescan(w http.ResponseWriter, r *http.Request) {
	res, err := a.d.Rescan(r.Context())
	answer(w, res, err)
}

func (a adapter) events(w http.ResponseWriter, r *http.Request) {
	p := params{r: r}
	q := client.EventsQuery{After: p.uint("after"), Limit: int(min(p.uint("limit"), uint64(protocol.StateEventsMax))),
		Scope: r.URL.Query().Get("scope"), Wait: p.wait()}
	if p.err != nil {
		writeError(w, p.err)
		return
	}
	res, err := a.d.Events(r.Context(), q)
	answer(w, res, err)
}

func (a adapter) logs(w http.ResponseWriter, r *http.Request) {
	name, p := r.PathValue("name"), params{r: r}
	if r.URL.Query().Has("from") {
		from, wait := p.uint("from"), p.wait()
		if p.err != nil {
			writeError(w, p.err)
			return
		}
		res, err := a.d.LogAfter(r.Context(), name, int64(from), wait)
		answer(w, res, err)
		return
	}
	tail := p.uint("tail")
	if p.err != nil {
		writeError(w, p.err)
		return
	}
	if tail == 0 {
		tail = 100
	}
	res, err := a.d.Log(name, int(min(tail, 100_000)))
	answer(w, res, err)
}

func (a adapter) wire(w http.ResponseWriter, r *http.Request) {
	p := params{r: r}
	q := client.WireQuery{After: p.uint("after"), Limit: int(min(p.uint("limit"), client.MaxWirePage)), Wait: p.wait()}
	if p.err != nil {
		writeError(w, p.err)
		return
	}
	res, err := a.d.Wire(r.Context(), r.PathValue("name"), q)
	answer(w, res, err)
}

func (a adapter) doctor(w http.ResponseWriter, r *http.Request) {
	var opts client.DoctorOptions
	if s := r.URL.Query().Get("deep"); s != "" {
		deep, err := strconv.ParseBool(s)
		if err != nil {
			writeError(w, protocol.Errorf(protocol.ErrInvalid, "deep must be true or false, not %q", s))
			return
		}
		opts.Deep = deep
	}
	writeJSON(w, http.StatusOK, a.d.Doctor(r.Context(), opts))
}

func (a adapter) config(w http.ResponseWriter, _ *http.Request) {
	res, err := a.d.Config()
	answer(w, res, err)
}

// withText serves fn on the request's body, a JSON text of at most MaxBody
// bytes.
func withText[T any](fn func(context.Context, []byte) (T, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		text, err := body(r)
		if err != nil {
			writeError(w, err)
			return
		}
		res, err := fn(r.Context(), text)
		answer(w, res, err)
	}
}

func (a adapter) reload(w http.ResponseWriter, r *http.Request) {
	res, err := a.d.Reload(r.Context())
	answer(w, res, err)
}

// jsonErrors turns an error answer written as anything but JSON (the
// router's 404 and 405 are plain text) into the API's error shape, with
// the same status and headers.
type jsonErrors struct {
	http.ResponseWriter
	r *http.Request
	// replaced is set once the answer was written here, so the plain text
	// that follows is dropped.
	replaced bool
}

// WriteHeader implements http.ResponseWriter.
func (w *jsonErrors) WriteHeader(status int) {
	if status < 400 || strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.replaced = true
	code, msg := protocol.CodeBadRequest, http.StatusText(status)
	switch status {
	case http.StatusNotFound:
		code, msg = protocol.CodeNotFound, fmt.Sprintf("no API endpoint %s %s; the API's paths are under /v1/", w.r.Method, w.r.URL.Path)
	case http.StatusMethodNotAllowed:
		code, msg = protocol.CodeMethodNotFound, fmt.Sprintf("%s does not take %s; it takes %s", w.r.URL.Path, w.r.Method, w.Header().Get("Allow"))
	default:
		if status >= 500 {
			code = protocol.CodeInternal
		}
	}
	w.Header().Del("X-Content-Type-Options")
	writeJSON(w.ResponseWriter, status, client.Error{Code: code, Message: msg})
}

// Write implements http.ResponseWriter.
func (w *jsonErrors) Write(p []byte) (int, error) {
	if w.replaced {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *jsonErrors) Unwrap() http.ResponseWriter { return w.ResponseWriter }
