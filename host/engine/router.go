package engine

import (
	"context"
	"fmt"
	"slices"
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
// order per scope, each scope on its own. The log reader moves each new
// Event into its scope's pending set and the cursor past it, in one
// Update per batch, and queues the scope; one worker per scope with
// pending Events (at most maxRouteWorkers at once) routes them oldest
// first. An Event whose route fails stays pending and its scope is retried
// with backoff; later Events of that scope wait behind it, so a scope's
// Events route in order, and other scopes go on meanwhile, however slow
// one scope's routes are.
type router struct {
	e *Engine
	// wg counts the workers: the reader waits for them before it returns.
	wg sync.WaitGroup

	mu sync.Mutex
	// held are the scopes whose oldest pending Event waits for a retry.
	held map[string]hold
	// active are the scopes a worker routes now; true says new Events
	// came meanwhile, so the scope is queued again when its turn ends.
	active map[string]bool
	// ready queues the scopes waiting for a worker, oldest first; queued
	// is the same set, for lookups.
	ready   []string
	queued  map[string]bool
	workers int
}

func newRouter(e *Engine) *router {
	return &router{e: e, held: map[string]hold{}, active: map[string]bool{}, queued: map[string]bool{}}
}

// run reads the log until ctx ends, then waits for the workers. It first
// queues what a restart left pending, and sweeps again whenever it wakes
// on the clock (a retry falls due, or the poll backstop).
func (r *router) run(ctx context.Context) {
	defer r.wg.Wait()
	r.sweep(ctx)
	for {
		r.readAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-r.e.notify:
		case <-r.e.d.Clock.After(r.nextWake()):
			r.sweep(ctx)
		}
	}
}

// readAll takes the log after the cursor, batch by batch, to its end.
func (r *router) readAll(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := r.readLog(ctx)
		if err != nil {
			if ctx.Err() == nil {
				r.e.d.Logger.Error("reading events to route", "err", err)
			}
			return
		}
		if n < routeBatch {
			return
		}
	}
}

// readLog takes a batch of the log after the cursor in one Update: each
// Event goes into its scope's pending set, its decision pending, and the
// cursor past it; an Event without a scope is decided at once (it routes
// nothing). Then the batch's scopes are queued for their workers. It says
// how many Events it took.
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
	if err != nil || len(evs) == 0 {
		return 0, err
	}
	var scopes []string
	unscoped := false
	now := r.e.d.Clock.Now()
	err = r.e.d.DB.Update(func(tx *pebblekv.Tx) error {
		for _, ev := range evs {
			if ev.Scope == "" {
				unscoped = true
				d, err := r.e.decide(ctx, tx, ev, verdicts{matched: -1, refused: reasonNoScope}, plan{})
				if err != nil {
					return err
				}
				if err := putAttempt(tx, d); err != nil {
					return err
				}
				continue
			}
			if !slices.Contains(scopes, ev.Scope) {
				scopes = append(scopes, ev.Scope)
			}
			if err := tx.AddPendingRoute(ev.Scope, ev.Seq); err != nil {
				return err
			}
			if err := tx.PutRouteDecision(pebblekv.RouteDecision{Event: ev.ID, Scope: ev.Scope, State: pebblekv.RoutePending, Updated: now}); err != nil {
				return err
			}
		}
		return tx.SetRouteCursor(evs[len(evs)-1].Seq)
	})
	if err != nil {
		return 0, err
	}
	if unscoped {
		r.e.changes.broadcast()
	}
	r.kick(ctx, scopes...)
	return len(evs), nil
}

// route routes one pending Event and records the outcome, its Work and its
// leaving the pending set in one Update. It says false when a route failed
// and the Event stays pending; err is the store's (or ctx's).
func (r *router) route(ctx context.Context, ev pebblekv.Event) (bool, error) {
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
		return false, r.recordFailure(ev, v)
	}
	var p plan
	if v.matched >= 0 {
		p = r.e.plan(v, work)
		if err := r.e.askAgain(ctx, wire, v, &p); err != nil {
			return false, err
		}
	}
	err = r.e.d.DB.Update(func(tx *pebblekv.Tx) error {
		d, err := r.e.decide(ctx, tx, ev, v, p)
		if err != nil {
			return err
		}
		if err := putAttempt(tx, d); err != nil {
			return err
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

// recordFailure records ev's decision failed: each route's verdict so
// far and the error. The Event stays in its scope's pending set.
func (r *router) recordFailure(ev pebblekv.Event, v verdicts) error {
	now := r.e.d.Clock.Now()
	return r.e.d.DB.Update(func(tx *pebblekv.Tx) error {
		return putAttempt(tx, pebblekv.RouteDecision{Event: ev.ID, Scope: ev.Scope, State: pebblekv.RouteFailed, Reasons: v.reasons, Updated: now})
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
