package engine

import (
	"context"
	"sort"
	"time"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// ScanOutcome is how one reconcile scan of a source ended: its report, and
// the error that cut it short (nil for a complete scan).
type ScanOutcome struct {
	Started time.Time
	Ended   time.Time
	Report  ReconcileReport
	Err     error
}

// SourceStatus is one registered source as an operator sees it: whose it
// is, its families, the checkpoint of its last complete scan (Found false
// before one), this daemon run's last scan (nil before one) and when the
// scheduler scans it next (zero when it has not planned one).
type SourceStatus struct {
	Package  string
	Source   string
	Families []string
	// Reconcile says the package scans the source; a push-only one is
	// never scanned.
	Reconcile  bool
	Checkpoint pebblekv.Checkpoint
	Found      bool
	LastScan   *ScanOutcome
	NextScan   time.Time
}

// ended keeps a scan's outcome as its source's last.
func (rc *reconciler) ended(o ScanOutcome) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.last[o.Report.Source] = o
}

// registered is every source each package's last configure registered,
// running or not, in package and source order.
func (rc *reconciler) registered() []reconcileTarget {
	rs, ok := rc.e.ingress.webhookRoutes().(ReconcileSources)
	if !ok {
		return nil
	}
	var out []reconcileTarget
	for pkg, srcs := range rs.IngressSources() {
		for _, s := range srcs {
			out = append(out, reconcileTarget{pkg, s})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].pkg != out[j].pkg {
			return out[i].pkg < out[j].pkg
		}
		return out[i].src.Name < out[j].src.Name
	})
	return out
}

// Sources lists every registered source with its checkpoint and scans.
func (e *Engine) Sources() ([]SourceStatus, error) {
	rc := e.reconcile
	targets := rc.registered()
	out := make([]SourceStatus, len(targets))
	err := e.d.DB.View(func(r *pebblekv.Reader) error {
		for n, t := range targets {
			cp, found, err := r.Checkpoint(t.src.Name)
			if err != nil {
				return err
			}
			out[n] = SourceStatus{Package: t.pkg, Source: t.src.Name, Families: t.src.Families, Reconcile: t.src.Reconcile, Checkpoint: cp, Found: found}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for n := range out {
		if o, ok := rc.last[out[n].Source]; ok {
			out[n].LastScan = &o
		}
		out[n].NextScan = rc.due[out[n].Source].at
	}
	return out, nil
}

// ReconcileSource scans source now, whichever package registered it (see
// Reconcile): what an operator asks for after mending a source, rather
// than wait for its interval. A source no package registered is
// protocol.ErrNotFound.
func (e *Engine) ReconcileSource(ctx context.Context, source string) (ReconcileReport, error) {
	for _, t := range e.reconcile.registered() {
		if t.src.Name == source {
			return e.Reconcile(ctx, t.pkg, source)
		}
	}
	return ReconcileReport{Source: source}, protocol.Errorf(protocol.ErrNotFound,
		"no package registered a source %q in its last configure; `open-conduit ingress sources` lists those that are", source)
}
