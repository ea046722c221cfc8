package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/open-conduit/open-conduit/protocol"
)

// RenderedGeneric is EventRender.RenderedBy when no package rendered the
// Event and the daemon's generic rendering stands in.
const RenderedGeneric = "generic"

// EventRender is GET /v1/events/{id}/render: one Event with its route
// decision and its rendering, as a prompt or an operator reads it.
type EventRender struct {
	Event protocol.Event `json:"event"`
	// Route is the Event's route decision (state pending until the router
	// decides).
	Route RouteDecision `json:"route"`
	// Work is the Work the Event was routed to, which it was rendered for.
	Work string `json:"work,omitempty"`
	// Text is the rendering: Markdown-ish plain text.
	Text string `json:"text"`
	// RenderedBy names the package that rendered it, or RenderedGeneric.
	RenderedBy string `json:"rendered_by"`
	// Fallback says why the rendering is generic ("" when a package
	// rendered it).
	Fallback string `json:"fallback,omitempty"`
}

// RenderEvent reads one Event with its route decision and its rendering by
// the package that owns its family, or the generic rendering and why.
func (c *Client) RenderEvent(ctx context.Context, id string) (EventRender, error) {
	var r EventRender
	return r, c.do(ctx, http.MethodGet, "/v1/events/"+url.PathEscape(id)+"/render", nil, &r)
}
