package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// verdicts is what a scope's routes said of one Event.
type verdicts struct {
	// reasons are each asked route's verdict, in route order.
	reasons []pebblekv.RouteReason
	// matched is the index of the first matching route; -1 for none.
	matched int
	route   config.Route
	res     protocol.RouteMatchResult
	// owner is the package of the matching route's handler ("" for the
	// builtin manual route).
	owner string
	// failed is the first route that could not answer (an error, a
	// timeout, its package not running): routing must wait and retry.
	failed error
	// refused says why the scope routes nothing ("" when it routes).
	refused string
}

// Scope-level reasons an Event routes to nothing.
const (
	reasonNoScope       = "no scope: an Event without a scope is not routed"
	reasonScopeDisabled = "scope disabled: a disabled scope routes nothing new; enable it in the config"
	reasonNoRoutes      = "the scope has no routes"
)

// evaluate asks the scope's routes, in order, about ev: until the first
// match or failure, or every route when all is set (a trace). Nothing is
// written; each call is bounded by protocol.RouteMatchDeadline.
func (e *Engine) evaluate(ctx context.Context, g *config.Generation, ev protocol.Event, work *protocol.WorkView, all bool) verdicts {
	v := verdicts{matched: -1}
	if ev.Scope == "" {
		v.refused = reasonNoScope
		return v
	}
	sc, ok := scopeOf(g, ev.Scope)
	switch {
	case !ok:
		v.refused = fmt.Sprintf("scope %q is not configured", ev.Scope)
		return v
	case sc.Disabled:
		v.refused = reasonScopeDisabled
		return v
	case len(sc.Routes) == 0:
		v.refused = reasonNoRoutes
		return v
	}
	for i, rt := range sc.Routes {
		res, owner, err := e.ask(ctx, ev.Scope, i, rt, ev, work)
		rr := pebblekv.RouteReason{Route: i, Handler: rt.Handler, Match: err == nil && res.Match, Reason: res.Reason}
		if err != nil {
			rr.Error = err.Error()
			if v.failed == nil && v.matched < 0 {
				v.failed = fmt.Errorf("route %d (%s): %w", i, rt.Handler, err)
			}
		}
		v.reasons = append(v.reasons, rr)
		if rr.Match && v.matched < 0 && v.failed == nil {
			v.matched, v.route, v.res, v.owner = i, rt, res, owner
		}
		if !all && (v.matched >= 0 || v.failed != nil) {
			break
		}
	}
	return v
}

// ask is one route's verdict on ev: the builtin manual route, or
// route.match on the package declaring the handler.
func (e *Engine) ask(ctx context.Context, scope string, i int, rt config.Route, ev protocol.Event, work *protocol.WorkView) (protocol.RouteMatchResult, string, error) {
	if isManual(rt) {
		return matchManual(ev), "", nil
	}
	owner := e.d.Packages.RouteHandlerOwner(rt.Handler)
	if owner == "" {
		return protocol.RouteMatchResult{}, "", protocol.Errorf(protocol.ErrUnavailable,
			"no running package declares route handler %q; start or install the package that does", rt.Handler)
	}
	ctx, cancel := context.WithTimeout(ctx, protocol.RouteMatchDeadline)
	defer cancel()
	var res protocol.RouteMatchResult
	err := e.d.Packages.Call(ctx, owner, protocol.MethodRouteMatch, protocol.RouteMatchParams{
		Scope: scope,
		Route: protocol.RouteRef{Index: i, Handler: rt.Handler, Binding: rt.Binding, Config: rt.Config},
		Event: ev, Work: work, Now: e.d.Clock.Now(),
	}, &res)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("%s did not answer route.match within %s", owner, protocol.RouteMatchDeadline)
		}
		return protocol.RouteMatchResult{}, owner, err
	}
	return res, owner, nil
}

// policy is the Work kind a match names, checked against the handler's
// package: a kind it does not declare routes to nothing. The manual route
// creates kind manual, whose policy is the default.
func (e *Engine) policy(v verdicts) (protocol.WorkKind, error) {
	if v.owner == "" {
		return protocol.WorkKind{Kind: ManualKind}, nil
	}
	if v.res.Kind == "" {
		return protocol.WorkKind{}, fmt.Errorf("route %d (%s) matched without a Work kind; the handler must name one %s declares", v.matched, v.route.Handler, v.owner)
	}
	owner, k := e.d.Packages.WorkKindOwner(v.res.Kind)
	if owner != v.owner {
		return protocol.WorkKind{}, fmt.Errorf("route %d (%s) matched with Work kind %q, which %s does not declare; declare it in its manifest's work_kinds", v.matched, v.route.Handler, v.res.Kind, v.owner)
	}
	return k, nil
}

// scopeOf finds a scope of g.
func scopeOf(g *config.Generation, id string) (*config.Scope, bool) {
	if g == nil || g.Config == nil {
		return nil, false
	}
	return g.Config.Scope(id)
}
