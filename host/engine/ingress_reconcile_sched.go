package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
)

// reconcileRetryFirst is the first delay before a failed scan is tried
// again; it doubles up to the interval.
const reconcileRetryFirst = 5 * time.Second

// reconciler scans every registered source of each running package that
// declares ingress, on the engine's clock: each source every interval, a
// failed scan sooner, backing off.
type reconciler struct {
	e *Engine
	// interval, pageDeadline and limits are the protocol's defaults; tests
	// narrow them.
	interval     time.Duration
	pageDeadline time.Duration
	limits       protocol.ReconcileLimits

	// scanMu keeps scans one at a time, scheduled or asked for.
	scanMu sync.Mutex

	mu   sync.Mutex
	due  map[string]reconcileDue // by source
	last map[string]ScanOutcome  // by source, this run's last scan
}

// reconcileDue is when a source is scanned next, and the delay that led
// there after a failure (zero after a success).
type reconcileDue struct {
	at    time.Time
	delay time.Duration
}

func newReconciler(e *Engine) *reconciler {
	return &reconciler{
		e:            e,
		interval:     protocol.ReconcileIntervalMillis * time.Millisecond,
		pageDeadline: protocol.ReconcilePageDeadlineMillis * time.Millisecond,
		limits:       protocol.ReconcileLimits{Items: protocol.ReconcilePageItems, Bytes: protocol.ReconcilePageBytes},
		due:          map[string]reconcileDue{},
		last:         map[string]ScanOutcome{},
	}
}

// run scans due sources until ctx ends, sleeping until the next is due (or
// an interval, for sources registered meanwhile).
func (rc *reconciler) run(ctx context.Context) {
	for {
		next := rc.pass(ctx)
		wait := max(next.Sub(rc.e.d.Clock.Now()), 0)
		select {
		case <-ctx.Done():
			return
		case <-rc.e.d.Clock.After(wait):
		}
	}
}

// reconcileTarget is one source to scan.
type reconcileTarget struct {
	pkg string
	src protocol.Source
}

// targets are the registered sources of running packages that declare
// ingress, in package and source order.
func (rc *reconciler) targets() []reconcileTarget {
	var out []reconcileTarget
	for _, t := range rc.registered() {
		if m, running := rc.e.d.Packages.Manifest(t.pkg); running && t.src.Reconcile && m.Enabled(protocol.MethodIngressReconcile) {
			out = append(out, t)
		}
	}
	return out
}

// pass scans each source that is due and answers when the next one is.
func (rc *reconciler) pass(ctx context.Context) time.Time {
	now := rc.e.d.Clock.Now()
	next := now.Add(rc.interval)
	targets := rc.targets()
	rc.forget(targets)
	for _, t := range targets {
		if ctx.Err() != nil {
			return now
		}
		d := rc.dueOf(t.src.Name)
		if d.at.After(now) {
			next = earlier(next, d.at)
			continue
		}
		_, err := rc.scan(ctx, t.pkg, t.src)
		if ctx.Err() != nil {
			return now
		}
		d = rc.scanned(t, rc.e.d.Clock.Now(), err, d)
		next = earlier(next, d.at)
	}
	return next
}

// scanned schedules t's next scan after one ended with err.
func (rc *reconciler) scanned(t reconcileTarget, now time.Time, err error, d reconcileDue) reconcileDue {
	switch {
	case err == nil:
		d = reconcileDue{at: now.Add(rc.interval)}
	case errors.Is(err, protocol.ErrMethodNotFound) || errors.Is(err, protocol.ErrUnsupported):
		// The package marked the source scanned but answers no
		// reconcile: ask again only at the interval, in case a new
		// release does.
		d = reconcileDue{at: now.Add(rc.interval)}
		rc.e.d.Logger.Warn("a source marked reconcile answers no ingress.reconcile", "package", t.pkg, "source", t.src.Name, "err", err)
	default:
		d.delay = min(max(2*d.delay, reconcileRetryFirst), rc.interval)
		d.at = now.Add(d.delay)
		rc.e.d.Logger.Warn("reconcile scan incomplete; the checkpoint stays and the scan is retried",
			"package", t.pkg, "source", t.src.Name, "retry_in", d.delay, "err", err)
	}
	rc.mu.Lock()
	rc.due[t.src.Name] = d
	rc.mu.Unlock()
	return d
}

func (rc *reconciler) dueOf(source string) reconcileDue {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.due[source]
}

// forget drops the schedule of sources no longer scanned (unregistered, or
// their package not running), so one that comes back is scanned at once,
// and the last scans of sources no longer registered.
func (rc *reconciler) forget(targets []reconcileTarget) {
	keep := make(map[string]bool, len(targets))
	for _, t := range targets {
		keep[t.src.Name] = true
	}
	registered := map[string]bool{}
	for _, t := range rc.registered() {
		registered[t.src.Name] = true
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for s := range rc.due {
		if !keep[s] {
			delete(rc.due, s)
		}
	}
	for s := range rc.last {
		if !registered[s] {
			delete(rc.last, s)
		}
	}
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
