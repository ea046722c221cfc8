package engine

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
)

// DefaultWebhookAddr is where the webhook listener listens unless the
// operator names another address: loopback, on a port the system picks, so
// nothing outside the machine reaches a package's webhook unless the
// operator says so (or a tunnel forwards to it).
const DefaultWebhookAddr = "127.0.0.1:0"

// WebhookRoutes says which package registered each webhook path in its
// last configure. The daemon implements it; the listener reads it on every
// request, so a configure takes effect at once.
type WebhookRoutes interface {
	// WebhookPaths maps each registered path to its package. The caller
	// does not modify it.
	WebhookPaths() map[string]string
}

// SourceRoutes is what a WebhookRoutes may also say: whether a package's
// last configure registered a source. When the routes say it, a delivery
// from any other source is refused; otherwise any source in the package's
// namespace is taken.
type SourceRoutes interface {
	RegisteredSource(pkg, source string) bool
}

// ingress takes webhook requests and deliveries in: each becomes Events,
// accepted durably before anyone is told so.
type ingress struct {
	e *Engine

	mu     sync.Mutex
	routes WebhookRoutes
	srv    *http.Server
	ended  bool
}

func newIngress(e *Engine) *ingress { return &ingress{e: e} }

// SetWebhookRoutes gives the listener the registered webhook paths. Until
// it is set, every request is answered 404.
func (e *Engine) SetWebhookRoutes(w WebhookRoutes) {
	e.ingress.mu.Lock()
	e.ingress.routes = w
	e.ingress.mu.Unlock()
}

// ListenWebhooks starts the webhook listener on addr (DefaultWebhookAddr
// when empty) and returns the address it listens on. It serves until ctx
// ends or the engine stops, whichever comes first. An address the operator
// gives is taken as given, so one that is not loopback exposes the
// packages' webhooks to whoever reaches it; the default never does.
func (e *Engine) ListenWebhooks(ctx context.Context, addr string) (net.Addr, error) {
	if addr == "" {
		addr = DefaultWebhookAddr
	}
	i := e.ingress
	i.mu.Lock()
	defer i.mu.Unlock()
	switch {
	case i.ended:
		return nil, protocol.Errorf(protocol.ErrUnavailable, "the engine has stopped; the webhook listener does not start again")
	case i.srv != nil:
		return nil, protocol.Errorf(protocol.ErrConflict, "the webhook listener is already listening")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, protocol.Errorf(protocol.ErrInvalid, "the webhook listener cannot listen on %s: %v; pass another --webhook-addr", addr, err)
	}
	i.srv = &http.Server{
		Handler:           e.WebhookHandler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	go func(srv *http.Server) {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.d.Logger.Error("the webhook listener stopped", "err", err)
		}
	}(i.srv)
	go func() {
		<-ctx.Done()
		i.shutdown()
	}()
	return ln.Addr(), nil
}

// run waits for the engine's end, then stops the listener.
func (i *ingress) run(ctx context.Context) {
	<-ctx.Done()
	i.shutdown()
}

// shutdown stops the listener for good: requests in flight get a few
// seconds to finish (each is bounded anyway).
func (i *ingress) shutdown() {
	i.mu.Lock()
	srv := i.srv
	i.ended = true
	i.mu.Unlock()
	if srv == nil {
		return
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
}

// webhookRoutes is the current routes, or nil.
func (i *ingress) webhookRoutes() WebhookRoutes {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.routes
}
