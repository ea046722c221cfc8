package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

// recorder is a Daemon that records what the adapter passed it and answers
// with err. Methods it does not override panic through the nil interface,
// so a route that calls the wrong method fails the test.
type recorder struct {
	Daemon
	err     error
	events  client.EventsQuery
	restart time.Duration
	applied []byte
}

func (r *recorder) Events(_ context.Context, q client.EventsQuery) (client.Events, error) {
	r.events = q
	return client.Events{}, r.err
}

func (r *recorder) Restart(_ context.Context, _ string, wait time.Duration) (client.RestartResult, error) {
	r.restart = wait
	return client.RestartResult{}, r.err
}

func (r *recorder) Apply(_ context.Context, text []byte) (client.Applied, error) {
	r.applied = text
	return client.Applied{Applied: true}, r.err
}

func do(t *testing.T, d Daemon, method, path, body string) (*httptest.ResponseRecorder, client.Error) {
	t.Helper()
	w := httptest.NewRecorder()
	Handler(d).ServeHTTP(w, httptest.NewRequest(method, path, strings.NewReader(body)))
	var e client.Error
	if w.Code/100 != 2 {
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
			t.Fatalf("%s %s: a non-2xx answer that is not an error: %s", method, path, w.Body)
		}
	}
	return w, e
}

func TestAnErrorsCodePicksItsHTTPStatus(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{protocol.Errorf(protocol.ErrNotFound, "x"), http.StatusNotFound, protocol.CodeNotFound},
		{protocol.Errorf(protocol.ErrInvalid, "x"), http.StatusBadRequest, protocol.CodeInvalid},
		{protocol.Errorf(protocol.ErrUndeclared, "x"), http.StatusForbidden, protocol.CodeUndeclared},
		{protocol.Errorf(protocol.ErrUnavailable, "x"), http.StatusServiceUnavailable, protocol.CodeUnavailable},
		{context.DeadlineExceeded, http.StatusInternalServerError, protocol.CodeInternal},
	} {
		w, e := do(t, &recorder{err: tc.err}, "GET", "/v1/events", "")
		if w.Code != tc.status || e.Code != tc.code {
			t.Errorf("%v: %d %+v, want %d %s", tc.err, w.Code, e, tc.status, tc.code)
		}
	}
	if w, _ := do(t, &recorder{}, "GET", "/v1/events", ""); w.Code != http.StatusOK {
		t.Errorf("negative control, no error: %d", w.Code)
	}
}

func TestQueriesAreCheckedAndBounded(t *testing.T) {
	r := &recorder{}
	if w, e := do(t, r, "GET", "/v1/events?after=x", ""); w.Code != http.StatusBadRequest || !strings.Contains(e.Message, "after") {
		t.Errorf("a bad cursor: %d %+v", w.Code, e)
	}
	do(t, r, "GET", "/v1/events?after=7&limit=5000&scope=demo&wait=3600", "")
	if r.events.After != 7 || r.events.Limit != protocol.StateEventsMax || r.events.Scope != "demo" || r.events.Wait != MaxWait {
		t.Errorf("the query reached the daemon as %+v", r.events)
	}
	do(t, r, "POST", "/v1/extensions/hello/restart", `{"wait_seconds": 600}`)
	if r.restart != MaxWait {
		t.Errorf("a restart's wait was not capped: %v", r.restart)
	}
	if w, e := do(t, r, "POST", "/v1/extensions/hello/restart", `{"wait": 1}`); w.Code != http.StatusBadRequest || e.Code != protocol.CodeInvalid {
		t.Errorf("an unknown member: %d %+v", w.Code, e)
	}
	if w, _ := do(t, r, "POST", "/v1/config/apply", `{"scopes": [`); w.Code != http.StatusBadRequest || r.applied != nil {
		t.Errorf("a body that is not JSON reached the daemon: %d %q", w.Code, r.applied)
	}
	if w, _ := do(t, r, "POST", "/v1/config/apply", `{"scopes": []}`); w.Code != http.StatusOK || string(r.applied) != `{"scopes": []}` {
		t.Errorf("negative control, a config: %d %q", w.Code, r.applied)
	}
	if w, e := do(t, r, "GET", "/v2/status", ""); w.Code != http.StatusNotFound || !strings.Contains(e.Message, "/v1/") {
		t.Errorf("an unknown path: %d %+v", w.Code, e)
	}
}

// TestEveryErrorAnswerIsTheErrorShape: the router's own answers (no such
// path, a method the path does not take) and the request's bounds come
// back as client.Error JSON with their status, as the daemon's errors do.
func TestEveryErrorAnswerIsTheErrorShape(t *testing.T) {
	huge := strings.Repeat(" ", MaxBody) + "{}"
	for _, tc := range []struct {
		method, path, body string
		status             int
		code, says, allow  string
	}{
		{"GET", "/nope", "", http.StatusNotFound, protocol.CodeNotFound, "/v1/", ""},
		{"GET", "/v1/extensions/hello/call", "", http.StatusMethodNotAllowed, protocol.CodeMethodNotFound, "it takes POST", "POST"},
		{"DELETE", "/v1/status", "", http.StatusMethodNotAllowed, protocol.CodeMethodNotFound, "does not take DELETE", "GET, HEAD"},
		{"POST", "/v1/config/apply", huge, http.StatusRequestEntityTooLarge, protocol.CodeTooLarge, "16 MiB", ""},
		{"POST", "/v1/config/apply", "{", http.StatusBadRequest, protocol.CodeInvalid, "not one JSON value", ""},
	} {
		r := &recorder{}
		w, e := do(t, r, tc.method, tc.path, tc.body)
		if w.Code != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.says) || w.Header().Get("Allow") != tc.allow ||
			w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d %s %+v (Allow %q)", tc.method, tc.path, w.Code, w.Header().Get("Content-Type"), e, w.Header().Get("Allow"))
		}
		if r.applied != nil {
			t.Errorf("%s %s reached the daemon", tc.method, tc.path)
		}
	}
	// Negative control: a good request is answered, JSON too.
	if w, _ := do(t, &recorder{}, "POST", "/v1/config/apply", `{}`); w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
		t.Errorf("a good apply: %d %v", w.Code, w.Header())
	}
}
