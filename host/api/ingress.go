package api

import (
	"context"
	"net/http"

	"github.com/open-conduit/open-conduit/client"
)

// IngressDaemon is the part of the facade that shows the registered
// sources and scans one now.
type IngressDaemon interface {
	// Sources lists the registered sources with their checkpoints and
	// last scans.
	Sources(ctx context.Context) (client.Sources, error)
	// Reconcile scans a source now; a scan cut short is an answer, an
	// unregistered source protocol.ErrNotFound.
	Reconcile(ctx context.Context, source string) (client.Scan, error)
}

// routeIngress registers the routes of the sources. A source's name holds
// '/', so the client escapes it into one path segment.
func routeIngress(mux *http.ServeMux, a adapter) {
	mux.HandleFunc("GET /v1/sources", a.sources)
	mux.HandleFunc("POST /v1/sources/{name}/reconcile", a.reconcile)
}

func (a adapter) sources(w http.ResponseWriter, r *http.Request) {
	res, err := a.d.Sources(r.Context())
	answer(w, res, err)
}

func (a adapter) reconcile(w http.ResponseWriter, r *http.Request) {
	res, err := a.d.Reconcile(r.Context(), r.PathValue("name"))
	answer(w, res, err)
}
