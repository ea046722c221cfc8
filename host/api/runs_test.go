package api

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

// runsRecorder answers running Work's routes: controls with err, an
// artifact's content with body.
type runsRecorder struct {
	Daemon
	err      error
	controls []string
	body     string
}

func (r *runsRecorder) ControlWork(_ context.Context, id, control, text string) (client.ControlResult, error) {
	r.controls = append(r.controls, control+":"+text)
	return client.ControlResult{Work: id, Control: control}, r.err
}

func (r *runsRecorder) WorkLive(_ context.Context, id string, _ int) (client.Live, error) {
	return client.Live{Work: id}, r.err
}

func (r *runsRecorder) ArtifactContent(_ context.Context, id string) (client.Artifact, io.ReadCloser, error) {
	if r.err != nil {
		return client.Artifact{}, nil, r.err
	}
	return client.Artifact{ID: id, Size: int64(len(r.body)), Digest: strings.Repeat("ab", 32)}, io.NopCloser(strings.NewReader(r.body)), nil
}

func TestControlBodiesAreJudgedBeforeTheDaemon(t *testing.T) {
	tests := []struct {
		name, path, body string
		status           int
		code             string
	}{
		{"inject with text", "/v1/work/w_1/inject", `{"text":"look again"}`, http.StatusOK, ""},
		{"interrupt without a body", "/v1/work/w_1/interrupt", ``, http.StatusOK, ""},
		{"inject without text", "/v1/work/w_1/inject", `{}`, http.StatusBadRequest, protocol.CodeInvalid},
		{"stop with text", "/v1/work/w_1/stop", `{"text":"x"}`, http.StatusBadRequest, protocol.CodeInvalid},
		{"inject over the bound", "/v1/work/w_1/inject", `{"text":"` + strings.Repeat("x", client.MaxInjectText+1) + `"}`, http.StatusRequestEntityTooLarge, protocol.CodeTooLarge},
		{"an unknown field", "/v1/work/w_1/inject", `{"txt":"x"}`, http.StatusBadRequest, protocol.CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &runsRecorder{}
			w, e := do(t, rec, http.MethodPost, tt.path, tt.body)
			if w.Code != tt.status || e.Code != tt.code {
				t.Fatalf("%d %+v, want %d %q", w.Code, e, tt.status, tt.code)
			}
			if reached := len(rec.controls) > 0; reached != (tt.status == http.StatusOK) {
				t.Fatalf("the daemon was asked: %v (%v)", reached, rec.controls)
			}
		})
	}
}

func TestUnsupportedControlIsNotImplementedWithItsMessage(t *testing.T) {
	rec := &runsRecorder{err: protocol.Errorf(protocol.ErrUnsupported, "work stop: executor shell does not declare stop")}
	w, e := do(t, rec, http.MethodPost, "/v1/work/w_1/stop", "")
	if w.Code != http.StatusNotImplemented || e.Code != protocol.CodeUnsupported || e.Message != "work stop: executor shell does not declare stop" {
		t.Fatalf("%d %+v", w.Code, e)
	}
	w, e = do(t, rec, http.MethodGet, "/v1/work/w_1/live?tail="+"999999", "")
	if w.Code != http.StatusBadRequest || e.Code != protocol.CodeInvalid {
		t.Fatalf("live over its tail bound: %d %+v", w.Code, e)
	}
}

func TestArtifactContentAnnouncesSizeAndDigest(t *testing.T) {
	rec := &runsRecorder{body: "hello"}
	w, _ := do(t, rec, http.MethodGet, "/v1/artifacts/a_1/content", "")
	if w.Code != http.StatusOK || w.Body.String() != "hello" || w.Header().Get("Content-Length") != "5" ||
		w.Header().Get(client.DigestHeader) != client.DigestField(strings.Repeat("ab", 32)) ||
		w.Header().Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("%d %q %v", w.Code, w.Body.String(), w.Header())
	}
	rec.err = protocol.Errorf(protocol.ErrNotFound, "no committed artifact")
	w, e := do(t, rec, http.MethodGet, "/v1/artifacts/a_2/content", "")
	if w.Code != http.StatusNotFound || e.Code != protocol.CodeNotFound || w.Header().Get(client.DigestHeader) != "" {
		t.Fatalf("an unknown artifact: %d %+v %v", w.Code, e, w.Header())
	}
}
