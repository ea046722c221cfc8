package daemon

import (
	"context"
	"sync"

	"github.com/open-conduit/open-conduit/protocol"
)

// ingressRoutes keeps what each package's last successful configure
// registered: its webhook paths, which the engine's listener mounts, and its
// sources, the only ones it may deliver from. A configure replaces its
// package's registrations whole, so a path an apply drops is unmounted at
// once. The session has already checked both stay in the package's
// namespace, so no two packages share a path.
type ingressRoutes struct {
	mu      sync.Mutex
	byPkg   map[string]protocol.ConfigureResult
	paths   map[string]string // path → package, rebuilt on every change
	sources map[string]map[string]bool
	// registered is each package's sources as configure named them.
	registered map[string][]protocol.Source
}

func newIngressRoutes() *ingressRoutes {
	return &ingressRoutes{byPkg: map[string]protocol.ConfigureResult{}, paths: map[string]string{}, sources: map[string]map[string]bool{}}
}

// record replaces pkg's registrations with res's.
func (r *ingressRoutes) record(pkg string, res protocol.ConfigureResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byPkg[pkg] = res
	r.rebuild()
}

// drop forgets pkg's registrations (its package left the set).
func (r *ingressRoutes) drop(pkg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byPkg, pkg)
	r.rebuild()
}

// rebuild makes a new path map (readers keep the one they hold).
func (r *ingressRoutes) rebuild() {
	paths := map[string]string{}
	sources := map[string]map[string]bool{}
	registered := map[string][]protocol.Source{}
	for pkg, res := range r.byPkg {
		registered[pkg] = res.Sources
		for _, p := range res.WebhookPaths {
			paths[p] = pkg
		}
		sources[pkg] = map[string]bool{}
		for _, s := range res.Sources {
			sources[pkg][s.Name] = true
		}
	}
	r.paths, r.sources, r.registered = paths, sources, registered
}

// WebhookPaths maps each registered webhook path to its package; the map
// is never changed afterwards.
func (r *ingressRoutes) WebhookPaths() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.paths
}

// IngressSources maps each package to the sources its last configure
// registered, which the engine reconciles; the map is never changed
// afterwards.
func (r *ingressRoutes) IngressSources() map[string][]protocol.Source {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.registered
}

// RegisteredSource reports whether pkg's last configure registered source.
func (r *ingressRoutes) RegisteredSource(pkg, source string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sources[pkg][source]
}

// configured is what a package's session is told after each configure:
// its KV layout is recorded, and what it registered replaces its webhook
// paths and sources.
func (d *Daemon) configured(m *protocol.Manifest) func(protocol.ConfigureParams, protocol.ConfigureResult) {
	return func(p protocol.ConfigureParams, res protocol.ConfigureResult) {
		d.recordLayout(m, p)
		d.webhooks.record(m.Name, res)
	}
}

// listenWebhooks mounts what packages register on the engine's webhook
// listener and starts it on the operator's address, for the daemon's life.
// An address it cannot listen on refuses the start, naming it.
func (d *Daemon) listenWebhooks() error {
	d.engine.SetWebhookRoutes(d.webhooks)
	addr, err := d.engine.ListenWebhooks(d.ctx, d.opts.WebhookAddr)
	if err != nil {
		return err
	}
	a := addr.String()
	d.webhookAddr.Store(&a)
	d.logger.Info("webhooks listening", "addr", a)
	return nil
}

// deliver takes a package's ingress.deliver to the engine.
func (d *Daemon) deliver(ctx context.Context, pkg string, p protocol.IngressDeliverParams) (protocol.IngressDeliverResult, error) {
	return d.engine.Deliver(ctx, pkg, p)
}
