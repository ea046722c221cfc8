package api

import (
	"context"
	"net/http"
	"testing"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

// renderRecorder is a Daemon serving the render route: it records the ID
// it was asked for and answers with err.
type renderRecorder struct {
	recorder
	id string
}

func (r *renderRecorder) RenderEvent(_ context.Context, id string) (client.EventRender, error) {
	r.id = id
	return client.EventRender{Event: protocol.Event{ID: id}, Text: "t", RenderedBy: client.RenderedGeneric, Fallback: "why"}, r.err
}

// TestRenderRoutePassesTheEventAndAnswersItsRendering: GET
// /v1/events/{id}/render passes the unescaped ID and answers the rendering
// with who rendered it and why; an unknown Event is 404 not_found, and
// another method on the path is 405.
func TestRenderRoutePassesTheEventAndAnswersItsRendering(t *testing.T) {
	r := &renderRecorder{}
	w, _ := do(t, r, "GET", "/v1/events/ev%2F1/render", "")
	var got client.EventRender
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &got) != nil || r.id != "ev/1" ||
		got.RenderedBy != client.RenderedGeneric || got.Fallback != "why" || got.Text != "t" {
		t.Fatalf("%d %s (asked for %q)", w.Code, w.Body, r.id)
	}
	r.err = protocol.Errorf(protocol.ErrNotFound, "no Event")
	if w, e := do(t, r, "GET", "/v1/events/e_x/render", ""); w.Code != http.StatusNotFound || e.Code != protocol.CodeNotFound {
		t.Fatalf("an unknown Event: %d %+v", w.Code, e)
	}
	if w, _ := do(t, r, "POST", "/v1/events/e_x/render", ""); w.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", w.Code)
	}
}
