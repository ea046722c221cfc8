package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

// sourceRecorder is a Daemon serving the source routes: it records the
// source a scan was asked for and answers with err.
type sourceRecorder struct {
	recorder
	calls  int
	source string
}

func (r *sourceRecorder) Sources(context.Context) (client.Sources, error) {
	r.calls++
	return client.Sources{Sources: []client.Source{{Package: "feed", Name: "feed/a", Checkpoint: "cp1"}}}, r.err
}

func (r *sourceRecorder) Reconcile(_ context.Context, source string) (client.Scan, error) {
	r.calls++
	r.source = source
	return client.Scan{Source: source, Complete: true, Checkpoint: "cp2"}, r.err
}

func TestSourceRoutesPassTheSourceNameWithItsSlashes(t *testing.T) {
	for _, tc := range []struct {
		method, path, source, answer string
	}{
		{"GET", "/v1/sources", "", `"checkpoint":"cp1"`},
		{"POST", "/v1/sources/feed%2Facme%2Fin/reconcile", "feed/acme/in", `"checkpoint":"cp2"`},
		{"POST", "/v1/sources/feed/reconcile", "feed", `"complete":true`},
	} {
		t.Run(tc.method+tc.path, func(t *testing.T) {
			r := &sourceRecorder{}
			w, e := do(t, r, tc.method, tc.path, "")
			if w.Code != http.StatusOK || r.calls != 1 || r.source != tc.source {
				t.Fatalf("%d %+v: the daemon was called %d times for source %q, want once for %q", w.Code, e, r.calls, r.source, tc.source)
			}
			if !strings.Contains(w.Body.String(), tc.answer) {
				t.Errorf("the answer lacks %s: %s", tc.answer, w.Body)
			}
		})
	}
	// Negative controls: an unescaped name with '/' is no route, and an
	// unregistered source is the daemon's 404.
	r := &sourceRecorder{}
	if w, _ := do(t, r, "POST", "/v1/sources/feed/acme/reconcile", ""); w.Code != http.StatusNotFound || r.calls != 0 {
		t.Fatalf("an unescaped source path: %d, daemon called %d times", w.Code, r.calls)
	}
	r.err = protocol.Errorf(protocol.ErrNotFound, "no package registered a source")
	if w, e := do(t, r, "POST", "/v1/sources/nope/reconcile", ""); w.Code != http.StatusNotFound || e.Code != protocol.CodeNotFound {
		t.Fatalf("an unregistered source: %d %+v", w.Code, e)
	}
}
