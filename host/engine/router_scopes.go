package engine

import (
	"context"
	"slices"
	"time"

	"github.com/open-conduit/open-conduit/pebblekv"
)

// maxRouteWorkers bounds how many scopes route at once: each has one
// worker while it has pending Events, so a slow route.match in one scope
// holds up only that scope.
const maxRouteWorkers = 16

// hold is when a held scope is retried and its current backoff.
type hold struct {
	until   time.Time
	backoff time.Duration
}

// kick says scopes have pending Events: each is queued for a worker
// unless one routes it now (it then looks again before it stops) or it
// waits out a retry. Workers are started on demand, up to
// maxRouteWorkers; each takes queued scopes until none is left.
func (r *router) kick(ctx context.Context, scopes ...string) {
	now := r.e.d.Clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, scope := range scopes {
		if h, ok := r.held[scope]; ok && now.Before(h.until) {
			continue
		}
		if _, ok := r.active[scope]; ok {
			r.active[scope] = true
			continue
		}
		if r.queued[scope] {
			continue
		}
		r.queued[scope] = true
		r.ready = append(r.ready, scope)
	}
	for n := min(len(r.ready), maxRouteWorkers-r.workers); n > 0; n-- {
		r.workers++
		r.wg.Add(1)
		go r.worker(ctx)
	}
}

// worker routes queued scopes, one at a time, until none is queued.
func (r *router) worker(ctx context.Context) {
	defer r.wg.Done()
	for {
		scope, ok := r.take(ctx)
		if !ok {
			return
		}
		more, failed := r.drain(ctx, scope)
		r.done(scope, more, failed)
	}
}

// take hands the oldest queued scope to a worker; false tells the worker
// to stop (nothing queued, or the router stops).
func (r *router) take(ctx context.Context) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ready) == 0 || ctx.Err() != nil {
		r.workers--
		return "", false
	}
	scope := r.ready[0]
	r.ready = r.ready[1:]
	delete(r.queued, scope)
	r.active[scope] = false
	return scope, true
}

// done ends a worker's turn on scope: a failed scope is held for its
// retry; one with more to route (or kicked meanwhile) goes to the back of
// the queue, so a busy scope takes turns with the others; a drained one
// is released.
func (r *router) done(scope string, more, failed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	kicked := r.active[scope]
	delete(r.active, scope)
	switch {
	case failed:
		h := r.held[scope]
		h.backoff = min(max(h.backoff*2, retryFirst), retryMax)
		h.until = r.e.d.Clock.Now().Add(h.backoff)
		r.held[scope] = h
	case more || kicked:
		r.queued[scope] = true
		r.ready = append(r.ready, scope)
	default:
		delete(r.held, scope)
	}
}

// drain routes up to a batch of scope's pending Events in log order. It
// says more when it routed some (the worker looks again on its next turn)
// and failed when a route failed (the Event stays pending) or the store
// erred.
func (r *router) drain(ctx context.Context, scope string) (more, failed bool) {
	pend, evs, err := r.pendingOf(scope)
	if err != nil {
		r.e.d.Logger.Error("reading pending events", "scope", scope, "err", err)
		return false, true
	}
	for _, p := range pend {
		ev, found := evs[p.Seq]
		if !found {
			if err := r.e.d.DB.Update(func(tx *pebblekv.Tx) error { return tx.DeletePendingRoute(p.Scope, p.Seq) }); err != nil {
				r.e.d.Logger.Error("dropping a pending route", "scope", scope, "err", err)
				return false, true
			}
			continue
		}
		routed, err := r.route(ctx, ev)
		if err != nil && ctx.Err() == nil {
			r.e.d.Logger.Error("routing events", "scope", scope, "err", err)
		}
		if err != nil || !routed {
			return false, true
		}
	}
	return len(pend) > 0, false
}

// pendingOf reads a batch of scope's pending routings, oldest first, and
// their Events by sequence (an Event no longer in the log is absent).
func (r *router) pendingOf(scope string) ([]pebblekv.PendingRoute, map[uint64]pebblekv.Event, error) {
	var pend []pebblekv.PendingRoute
	evs := map[uint64]pebblekv.Event{}
	err := r.e.d.DB.View(func(rd *pebblekv.Reader) (err error) {
		if pend, err = rd.PendingRoutesOf(scope, routeBatch); err != nil {
			return err
		}
		for _, p := range pend {
			got, err := rd.Events(p.Seq-1, 1)
			if err != nil {
				return err
			}
			if len(got) == 1 && got[0].Seq == p.Seq {
				evs[p.Seq] = got[0]
			}
		}
		return nil
	})
	return pend, evs, err
}

// sweep queues every scope with pending Events whose retry is due, and
// forgets the holds of scopes with none: at start it finds what a
// restart left pending, later it retries failed scopes.
func (r *router) sweep(ctx context.Context) {
	var scopes []string
	if err := r.e.d.DB.View(func(rd *pebblekv.Reader) (err error) {
		scopes, err = rd.PendingScopes()
		return err
	}); err != nil {
		if ctx.Err() == nil {
			r.e.d.Logger.Error("reading pending scopes", "err", err)
		}
		return
	}
	r.mu.Lock()
	for scope := range r.held {
		if _, busy := r.active[scope]; !busy && !r.queued[scope] && !slices.Contains(scopes, scope) {
			delete(r.held, scope)
		}
	}
	r.mu.Unlock()
	r.kick(ctx, scopes...)
}

// nextWake is the time to the earliest retry of a scope no worker has, at
// most pollInterval.
func (r *router) nextWake() time.Duration {
	now := r.e.d.Clock.Now()
	wait := pollInterval
	r.mu.Lock()
	defer r.mu.Unlock()
	for scope, h := range r.held {
		if _, busy := r.active[scope]; busy || r.queued[scope] {
			continue
		}
		if d := h.until.Sub(now); d < wait {
			wait = max(d, 10*time.Millisecond)
		}
	}
	return wait
}
