package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

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
	if why := unreadable(e.d.Packages, owner, ev.Payload.Schema); why != "" {
		return protocol.RouteMatchResult{Reason: why}, owner, nil
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

// displayPick is a display a match gives, within the limits (nil keeps
// the Work's current one), why another was dropped, and the Work the
// handler saw when it gave it.
type displayPick struct {
	display *protocol.Display
	refused string
	seen    *protocol.WorkView
}

// checkDisplay keeps d when it is within the limits, else says why not.
func checkDisplay(d *protocol.Display) (*protocol.Display, string) {
	if d == nil {
		return nil, ""
	}
	if err := d.Check(); err != nil {
		return nil, err.Error()
	}
	return d, ""
}

// askAgain asks the matching route once more when its keys reach an open
// Work whose display is not the one its handler saw: a match's display
// replaces the Work's, so the handler must see the one it replaces (to
// add a link to what it said before). The second call shows that Work, has
// the same deadline, and only its display is used; when it fails or does
// not match, the Work's display is kept and the decision says why. A Work
// without a display is not asked about again: the handler saw that
// nothing is there to replace. The builtin manual route is the host's own,
// and its display replaces the Work's without asking. The error is ctx's.
func (e *Engine) askAgain(ctx context.Context, ev protocol.Event, v verdicts, p *plan) error {
	if p.kindErr != nil || len(v.res.Keys) == 0 {
		return nil
	}
	open, err := e.openWork(ev.Scope, v.res.Keys)
	if err != nil || open == nil || sameDisplay(seenDisplay(p.shown, open.ID), open.Display) {
		return err
	}
	pick := &displayPick{seen: workView(*open)}
	p.again = pick
	if v.owner == "" {
		pick.display, pick.refused = p.display, p.displayRefused
		return nil
	}
	res, _, err := e.ask(ctx, ev.Scope, v.matched, v.route, ev, pick.seen)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		pick.refused = fmt.Sprintf("route %d (%s), asked again seeing Work %s's display, failed, so that display is kept: %v", v.matched, v.route.Handler, open.ID, err)
	case !res.Match:
		pick.refused = fmt.Sprintf("route %d (%s), asked again seeing Work %s's display, did not match, so that display is kept", v.matched, v.route.Handler, open.ID)
	default:
		pick.display, pick.refused = checkDisplay(res.Display)
	}
	return nil
}

// displayFor is the display joining w applies (nil keeps w's) and why the
// match's was not applied: the answer given seeing w, or else the match's
// own, which applies only when the handler saw w's current display (none
// counts when it saw no Work).
func (p plan) displayFor(w pebblekv.Work) (*protocol.Display, string) {
	pick := displayPick{display: p.display, refused: p.displayRefused, seen: p.shown}
	if p.again != nil && p.again.seen.ID == w.ID {
		pick = *p.again
	}
	if pick.display != nil && !sameDisplay(seenDisplay(pick.seen, w.ID), w.Display) {
		return nil, fmt.Sprintf("the handler did not see Work %s's current display, so it is kept", w.ID)
	}
	return pick.display, pick.refused
}

// seenDisplay is the display of Work id as seen shows it; nil when seen
// is another Work or none.
func seenDisplay(seen *protocol.WorkView, id string) *protocol.Display {
	if seen == nil || seen.ID != id {
		return nil
	}
	return seen.Display
}

// sameDisplay says a and b say the same (nil is no display).
func sameDisplay(a, b *protocol.Display) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Title == b.Title && a.Ref == b.Ref && a.Requester == b.Requester && slices.Equal(a.Links, b.Links)
}

// unreadable is the schema gate: why owner is not asked about a payload of
// schema (one of its own it no longer or does not yet read), or "" when it
// reads it. The host answers "no match" for it, so an unreadable payload
// falls through to later routes whatever the package would have done.
func unreadable(pk Packages, owner, schema string) string {
	m, ok := pk.Manifest(owner)
	if !ok {
		return ""
	}
	if st := m.PayloadStatus(schema); !st.Readable() {
		return fmt.Sprintf("%s does not read payload schema %q (%s), so it was not asked: no match", owner, schema, st)
	}
	return ""
}
