package api

import (
	"context"
	"net/http"

	"github.com/open-conduit/open-conduit/client"
)

// RenderDaemon is the part of the facade that renders Events.
type RenderDaemon interface {
	// RenderEvent renders one Event of the log, by its family's owner or
	// generically; an unknown Event is protocol.ErrNotFound.
	RenderEvent(ctx context.Context, id string) (client.EventRender, error)
}

// routeRender registers the rendering routes.
func routeRender(mux *http.ServeMux, a adapter) {
	mux.HandleFunc("GET /v1/events/{id}/render", a.renderEvent)
}

func (a adapter) renderEvent(w http.ResponseWriter, r *http.Request) {
	res, err := a.d.RenderEvent(r.Context(), r.PathValue("id"))
	answer(w, res, err)
}
