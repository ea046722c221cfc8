package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// Routing's pace.
const (
	// pollInterval is the backstop: the router reads the log this often
	// even when no Notify came.
	pollInterval = 3 * time.Second
	// retryFirst and retryMax bound the backoff of a scope whose oldest
	// pending Event a route failed on.
	retryFirst = time.Second
	retryMax   = 30 * time.Second
	// routeBatch is how many Events the router reads at once.
	routeBatch = 256
)

// router routes each accepted Event through its scope's routes, in log
// order per scope. An Event whose route fails stays pending and is retried
// with backoff; later Events of its scope queue behind it, so a scope's
// Events route in order, and other scopes go on.
type router struct {
	e *Engine

	mu sync.Mutex
	// held are the scopes whose oldest pending Event waits for a retry.
	held map[string]hold
}

// hold is when a held scope is retried and its current backoff.
type hold struct {
	until   time.Time
	backoff time.Duration
}

func newRouter(e *Engine) *router { return &router{e: e, held: map[string]hold{}} }

func (r *router) run(ctx context.Context) {
	for {
		wait := r.pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-r.e.notify:
		case <-r.e.d.Clock.After(wait):
		}
	}
}

// pass routes what is owed now: first the pending Events whose retry is
// due, then the log after the cursor. It returns how long the router may
// sleep before the next retry falls due.
func (r *router) pass(ctx context.Context) time.Duration {
	if err := r.retryPending(ctx); err != nil && ctx.Err() == nil {
		r.e.d.Logger.Error("routing pending events", "err", err)
	}
	for ctx.Err() == nil {
		n, err := r.readLog(ctx)
		if err != nil {
			if ctx.Err() == nil {
				r.e.d.Logger.Error("routing events", "err", err)
			}
			break
		}
		if n < routeBatch {
			break
		}
	}
	return r.nextWake()
}

// nextWake is the time to the earliest retry, at most pollInterval.
func (r *router) nextWake() time.Duration {
	now := r.e.d.Clock.Now()
	wait := pollInterval
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.held {
		if d := h.until.Sub(now); d < wait {
			wait = max(d, 10*time.Millisecond)
		}
	}
	return wait
}

// isHeld says scope has Events pending, so a new one queues behind them.
func (r *router) isHeld(scope string) (hold, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.held[scope]
	return h, ok
}

// failedOn holds scope with the next backoff.
func (r *router) failedOn(scope string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.held[scope]
	h.backoff = min(max(h.backoff*2, retryFirst), retryMax)
	h.until = r.e.d.Clock.Now().Add(h.backoff)
	r.held[scope] = h
}

func (r *router) release(scope string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.held, scope)
}

// retryPending routes each held scope's pending Events, oldest first,
// until one fails again or none is left. A scope whose retry is not due
// yet is left alone. Pending Events found at start (a restart) are due at
// once.
func (r *router) retryPending(ctx context.Context) error {
	var scopes []string
	if err := r.e.d.DB.View(func(rd *pebblekv.Reader) (err error) {
		scopes, err = rd.PendingScopes()
		return err
	}); err != nil {
		return err
	}
	now := r.e.d.Clock.Now()
	for _, scope := range scopes {
		if h, ok := r.isHeld(scope); ok && now.Before(h.until) {
			continue
		}
		if err := r.drainScope(ctx, scope); err != nil {
			return err
		}
	}
	return nil
}

// drainScope routes scope's pending Events in order until one fails.
func (r *router) drainScope(ctx context.Context, scope string) error {
	for ctx.Err() == nil {
		var pend []pebblekv.PendingRoute
		if err := r.e.d.DB.View(func(rd *pebblekv.Reader) (err error) {
			pend, err = rd.PendingRoutesOf(scope, routeBatch)
			return err
		}); err != nil {
			return err
		}
		if len(pend) == 0 {
			r.release(scope)
			return nil
		}
		for _, p := range pend {
			ev, found, err := r.eventAt(p.Seq)
			if err != nil {
				return err
			}
			if !found {
				if err := r.e.d.DB.Update(func(tx *pebblekv.Tx) error { return tx.DeletePendingRoute(p.Scope, p.Seq) }); err != nil {
					return err
				}
				continue
			}
			routed, err := r.route(ctx, ev, false)
			if err != nil {
				return err
			}
			if !routed {
				r.failedOn(scope)
				return nil
			}
		}
	}
	return ctx.Err()
}

// eventAt reads the Event at seq.
func (r *router) eventAt(seq uint64) (pebblekv.Event, bool, error) {
	var evs []pebblekv.Event
	err := r.e.d.DB.View(func(rd *pebblekv.Reader) (err error) {
		evs, err = rd.Events(seq-1, 1)
		return err
	})
	if err != nil || len(evs) == 0 || evs[0].Seq != seq {
		return pebblekv.Event{}, false, err
	}
	return evs[0], true, nil
}

// readLog routes a batch of the log after the cursor and says how many
// Events it took.
func (r *router) readLog(ctx context.Context) (int, error) {
	var evs []pebblekv.Event
	err := r.e.d.DB.View(func(rd *pebblekv.Reader) error {
		cur, err := rd.RouteCursor()
		if err != nil {
			return err
		}
		evs, err = rd.Events(cur, routeBatch)
		return err
	})
	if err != nil {
		return 0, err
	}
	for i, ev := range evs {
		if ctx.Err() != nil {
			return i, ctx.Err()
		}
		if _, held := r.isHeld(ev.Scope); held && ev.Scope != "" {
			if err := r.queue(ev); err != nil {
				return i, err
			}
			continue
		}
		routed, err := r.route(ctx, ev, true)
		if err != nil {
			return i, err
		}
		if !routed {
			r.failedOn(ev.Scope)
		}
	}
	return len(evs), nil
}

// queue records ev as pending behind its scope's held Events and moves the
// cursor past it.
func (r *router) queue(ev pebblekv.Event) error {
	now := r.e.d.Clock.Now()
	return r.e.d.DB.Update(func(tx *pebblekv.Tx) error {
		if err := tx.AddPendingRoute(ev.Scope, ev.Seq); err != nil {
			return err
		}
		if err := tx.PutRouteDecision(pebblekv.RouteDecision{Event: ev.ID, Scope: ev.Scope, State: pebblekv.RoutePending, Updated: now}); err != nil {
			return err
		}
		return tx.SetRouteCursor(ev.Seq)
	})
}

// route routes one Event and records the outcome with the cursor (an Event
// from the log) or the pending set (a retry) in one Update. It says false
// when a route failed and the Event stays pending; err is the store's.
func (r *router) route(ctx context.Context, ev pebblekv.Event, fromLog bool) (bool, error) {
	wire := ev.Wire()
	work, err := r.e.namedWork(ev)
	if err != nil {
		return false, err
	}
	v := r.e.evaluate(ctx, r.e.d.Generation(), wire, work, false)
	if v.failed != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		r.e.d.Logger.Warn("route failed; the event stays pending", "event", ev.ID, "scope", ev.Scope, "err", v.failed)
		return false, r.recordFailure(ev, v, fromLog)
	}
	var plan plan
	if v.matched >= 0 {
		plan = r.e.plan(ctx, ev, v)
	}
	err = r.e.d.DB.Update(func(tx *pebblekv.Tx) error {
		d, err := r.e.decide(tx, ev, v, plan)
		if err != nil {
			return err
		}
		if err := putAttempt(tx, d); err != nil {
			return err
		}
		if fromLog {
			return tx.SetRouteCursor(ev.Seq)
		}
		return tx.DeletePendingRoute(ev.Scope, ev.Seq)
	})
	if err != nil {
		return false, fmt.Errorf("routing event %s: %w", ev.ID, err)
	}
	r.e.changes.broadcast()
	return true, nil
}

// putAttempt writes d as the Event's newest routing attempt: the count of
// attempts goes on from the decision it replaces.
func putAttempt(tx *pebblekv.Tx, d pebblekv.RouteDecision) error {
	prev, found, err := tx.RouteDecision(d.Event)
	if err != nil {
		return err
	}
	if found {
		d.Attempts = prev.Attempts
	}
	d.Attempts++
	return tx.PutRouteDecision(d)
}

// recordFailure keeps ev pending with its decision failed: each route's
// verdict so far and the error.
func (r *router) recordFailure(ev pebblekv.Event, v verdicts, fromLog bool) error {
	now := r.e.d.Clock.Now()
	return r.e.d.DB.Update(func(tx *pebblekv.Tx) error {
		d := pebblekv.RouteDecision{Event: ev.ID, Scope: ev.Scope, State: pebblekv.RouteFailed, Reasons: v.reasons, Updated: now}
		if err := putAttempt(tx, d); err != nil {
			return err
		}
		if !fromLog {
			return nil
		}
		if err := tx.AddPendingRoute(ev.Scope, ev.Seq); err != nil {
			return err
		}
		return tx.SetRouteCursor(ev.Seq)
	})
}

// namedWork is the open Work the Event already names, as route.match shows
// it to the handler (its current display); nil for none.
func (e *Engine) namedWork(ev pebblekv.Event) (*protocol.WorkView, error) {
	if len(ev.Works) == 0 {
		return nil, nil
	}
	var view *protocol.WorkView
	err := e.d.DB.View(func(rd *pebblekv.Reader) error {
		for _, id := range ev.Works {
			w, found, err := rd.Work(id)
			if err != nil {
				return err
			}
			if found && w.Open() {
				view = workView(w)
				return nil
			}
		}
		return nil
	})
	return view, err
}

// workView is w as a package sees it.
func workView(w pebblekv.Work) *protocol.WorkView {
	return &protocol.WorkView{ID: w.ID, Scope: w.Scope, Kind: w.Kind, Keys: w.Keys, State: w.State, Display: w.Display}
}
