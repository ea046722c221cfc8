package engine

import (
	"context"
	"fmt"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// TraceEvent is a hypothetical Event an operator traces.
type TraceEvent struct {
	Type    string           `json:"type"`
	Payload protocol.Payload `json:"payload"`
}

// Trace is how a scope's routes would decide a hypothetical Event: every
// route's verdict, in order, and what the first match would do.
type Trace struct {
	Scope string `json:"scope_id"`
	// Event is the Event as the routes saw it.
	Event    protocol.Event         `json:"event"`
	Routes   []pebblekv.RouteReason `json:"routes"`
	Decision TraceDecision          `json:"decision"`
}

// TraceDecision is what routing would make of the traced Event.
type TraceDecision struct {
	// Match says a route matched; Route is its index (-1 for none).
	Match   bool              `json:"match"`
	Route   int               `json:"route"`
	Handler string            `json:"handler,omitempty"`
	Kind    string            `json:"kind,omitempty"`
	Keys    []string          `json:"keys,omitempty"`
	Display *protocol.Display `json:"display,omitempty"`
	// DisplayRefused says why the match's display would be dropped.
	DisplayRefused string `json:"display_refused,omitempty"`
	// Work is the open Work the Event would join; Create says it would
	// create one instead.
	Work   string `json:"work_id,omitempty"`
	Create bool   `json:"create,omitzero"`
	// Refused says why the Event would reach no Work: the scope routes
	// nothing, a route fails (the Event would wait and be retried), or the
	// match names an undeclared kind, a run-once key already used, a timed
	// kind in a dry run.
	Refused string `json:"refused,omitempty"`
}

// traceID is the ID the traced Event carries: it is never in the log.
const traceID = "trace"

// Trace asks every route of scope how it would decide ev (route.match, as
// routing asks it) and what the first match would do. Nothing is written.
func (e *Engine) Trace(ctx context.Context, scope string, ev TraceEvent) (Trace, error) {
	g := e.d.Generation()
	if _, ok := scopeOf(g, scope); !ok {
		return Trace{}, protocol.Errorf(protocol.ErrNotFound, "scope %q is not configured; 'open-conduit config show' lists the scopes", scope)
	}
	if ev.Type == "" {
		return Trace{}, protocol.Errorf(protocol.ErrInvalid, "a traced Event needs a type, such as %s", ManualRequest)
	}
	now := e.d.Clock.Now()
	wire := protocol.Event{ID: traceID, Scope: scope, Source: OperatorSource, Type: ev.Type, DeliveryID: traceID,
		Root: traceID, Time: now, Payload: ev.Payload}
	v := e.evaluate(ctx, g, wire, nil, true)
	t := Trace{Scope: scope, Event: wire, Routes: v.reasons, Decision: TraceDecision{Route: -1, Refused: v.refused}}
	if t.Routes == nil {
		t.Routes = []pebblekv.RouteReason{}
	}
	switch {
	case v.failed != nil:
		t.Decision.Refused = fmt.Sprintf("%v; the Event would stay pending and be retried", v.failed)
		return t, nil
	case v.matched < 0:
		return t, nil
	}
	d := &t.Decision
	d.Match, d.Route, d.Handler, d.Kind, d.Keys = true, v.matched, v.route.Handler, v.res.Kind, v.res.Keys
	if v.owner == "" {
		d.Kind = ManualKind
	}
	p := plan{}
	p.kind, p.kindErr = e.policy(v)
	if v.res.Display != nil {
		if err := v.res.Display.Check(); err != nil {
			d.DisplayRefused = err.Error()
		} else {
			d.Display = v.res.Display
		}
	}
	if p.kindErr != nil {
		d.Refused = p.kindErr.Error()
		return t, nil
	}
	err := e.d.DB.View(func(rd *pebblekv.Reader) error {
		w, found, err := findOpen(rd, scope, v.res.Keys)
		if err != nil || found {
			d.Work = w.ID
			return err
		}
		why, err := e.refusal(rd, scope, v, p)
		d.Refused, d.Create = why, why == "" && err == nil
		return err
	})
	return t, err
}

// Sample is one route's named sample Event, or, with Error set, why that
// route's handler gave none.
type Sample struct {
	Route   int                   `json:"route"`
	Handler string                `json:"handler"`
	ID      string                `json:"id,omitempty"`
	Title   string                `json:"title,omitempty"`
	Event   *protocol.SampleEvent `json:"event,omitempty"`
	Error   string                `json:"error,omitempty"`
}

// Samples asks each route of scope whose handler declares samples for its
// sample Events (route.samples). A handler that fails has its samples left
// out and its error listed, so the operator may ask again.
func (e *Engine) Samples(ctx context.Context, scope string) ([]Sample, error) {
	sc, ok := scopeOf(e.d.Generation(), scope)
	if !ok {
		return nil, protocol.Errorf(protocol.ErrNotFound, "scope %q is not configured; 'open-conduit config show' lists the scopes", scope)
	}
	out := []Sample{}
	for i, rt := range sc.Routes {
		if isManual(rt) {
			continue
		}
		owner := e.d.Packages.RouteHandlerOwner(rt.Handler)
		if owner == "" {
			out = append(out, Sample{Route: i, Handler: rt.Handler, Error: fmt.Sprintf("no running package declares route handler %q", rt.Handler)})
			continue
		}
		if !e.offersSamples(owner, rt.Handler) {
			continue
		}
		out = append(out, e.samplesOf(ctx, scope, i, owner, rt.Handler, protocol.RouteRef{Index: i, Handler: rt.Handler, Binding: rt.Binding, Config: rt.Config})...)
	}
	return out, nil
}

// offersSamples says the handler is declared with samples.
func (e *Engine) offersSamples(owner, handler string) bool {
	m, ok := e.d.Packages.Manifest(owner)
	if !ok {
		return false
	}
	for _, r := range m.Provides.Routes {
		if r.Handler == handler {
			return r.Samples
		}
	}
	return false
}

func (e *Engine) samplesOf(ctx context.Context, scope string, i int, owner, handler string, ref protocol.RouteRef) []Sample {
	ctx, cancel := context.WithTimeout(ctx, protocol.RouteMatchDeadline)
	defer cancel()
	var res protocol.RouteSamplesResult
	if err := e.d.Packages.Call(ctx, owner, protocol.MethodRouteSamples, protocol.RouteSamplesParams{Scope: scope, Route: ref, Now: e.d.Clock.Now()}, &res); err != nil {
		return []Sample{{Route: i, Handler: handler, Error: err.Error()}}
	}
	out := make([]Sample, 0, len(res.Samples))
	for _, s := range res.Samples {
		ev := s.Event
		out = append(out, Sample{Route: i, Handler: handler, ID: s.ID, Title: s.Title, Event: &ev})
	}
	return out
}
