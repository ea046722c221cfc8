package daemon

import (
	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/engine"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// The store's and the engine's records as the management API shows them.

// workView is w with latest, its latest execution (the zero Execution
// before its first attempt).
func workView(w pebblekv.Work, latest pebblekv.Execution) client.Work {
	v := client.Work{
		ID: w.ID, Scope: w.Scope, Kind: w.Kind, Keys: w.Keys, State: w.State, Display: displayView(w.Display),
		Binding: w.Binding, Context: w.Context, Grants: w.Grants, Created: w.Created, Updated: w.Updated,
		Inputs: w.Inputs, InputCount: w.InputCount, Trigger: w.Trigger, Reason: w.Reason, Hold: holdView(w.Hold),
	}
	if latest.Attempt > 0 {
		v.Attempt, v.Executor = latest.Attempt, latest.Package+"/"+latest.Executor
	}
	return v
}

func holdView(h *protocol.WorkHold) *client.WorkHold {
	if h == nil {
		return nil
	}
	return &client.WorkHold{Package: h.Package, Reason: h.Reason, Since: h.Since, Held: h.Held(), Admit: h.Admit}
}

func displayView(d *protocol.Display) *client.Display {
	if d == nil {
		return nil
	}
	v := &client.Display{Title: d.Title, Ref: d.Ref, Requester: d.Requester}
	for _, l := range d.Links {
		v.Links = append(v.Links, client.Link{Label: l.Label, URL: l.URL})
	}
	return v
}

func decisionView(d pebblekv.RouteDecision) client.RouteDecision {
	return client.RouteDecision{
		Event: d.Event, Scope: d.Scope, State: d.State, Work: d.Work, Created: d.Created, Route: d.Route,
		Reasons: reasonsView(d.Reasons), DisplayRefused: d.DisplayRefused, Attempts: d.Attempts, Updated: d.Updated,
	}
}

func reasonsView(rs []pebblekv.RouteReason) []client.RouteReason {
	out := make([]client.RouteReason, 0, len(rs))
	for _, r := range rs {
		out = append(out, client.RouteReason{Route: r.Route, Handler: r.Handler, Match: r.Match, Reason: r.Reason, Error: r.Error})
	}
	return out
}

// routeSummary is where an Event went, for a page of the log; an Event the
// router has not decided yet is pending.
func routeSummary(d pebblekv.RouteDecision, found bool) client.EventRoute {
	if !found {
		return client.EventRoute{State: client.RoutePending}
	}
	return client.EventRoute{State: d.State, Work: d.Work, Created: d.Created}
}

func timerView(t pebblekv.Timer) client.Timer {
	v := client.Timer{ID: t.ID, Owner: t.Owner, Scope: t.Scope, Due: t.Due, Family: t.Family, Payload: t.Payload, Fired: t.Fired}
	if t.Recurrence != nil {
		v.Recurrence = &client.Recurrence{Kind: t.Recurrence.Kind, Rule: t.Recurrence.Rule}
	}
	return v
}

func traceView(t engine.Trace) client.Trace {
	d := t.Decision
	return client.Trace{Scope: t.Scope, Event: t.Event, Routes: reasonsView(t.Routes), Decision: client.TraceDecision{
		Match: d.Match, Route: d.Route, Handler: d.Handler, Kind: d.Kind, Keys: d.Keys, Display: displayView(d.Display),
		DisplayRefused: d.DisplayRefused, Join: d.Work, Create: d.Create, Refused: d.Refused,
	}}
}

func samplesView(scope string, ss []engine.Sample) client.Samples {
	v := client.Samples{Scope: scope, Samples: []client.Sample{}}
	for _, s := range ss {
		if s.Error != "" || s.Event == nil {
			v.Errors = append(v.Errors, client.SampleError{Route: s.Route, Handler: s.Handler, Error: s.Error})
			continue
		}
		v.Samples = append(v.Samples, client.Sample{Route: s.Route, Handler: s.Handler, ID: s.ID, Title: s.Title,
			Event: client.TraceEvent{Type: s.Event.Type, Payload: s.Event.Payload}})
	}
	return v
}
