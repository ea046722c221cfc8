package daemon

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/engine"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// maxCancelReason bounds the reason an operator gives a cancel: it is
// stored on the Work and shown in one line.
const maxCancelReason = 1 << 10

// routePoll is how often a wait for a route decision looks again when no
// signal came: a decision that creates no Work (unmatched) wakes nothing.
const routePoll = 250 * time.Millisecond

// Works reads one page of Work in ID order (descending when q.Newest), at
// most q.Limit and, past the first, at most protocol.MaxPageBytes of them,
// each with its latest attempt and executor (one bounded seek per Work).
// A scope filter naming no configured scope that holds no Work is
// protocol.ErrNotFound, so a typo is not an empty list.
func (d *Daemon) Works(_ context.Context, q client.WorkQuery) (client.WorkList, error) {
	res := client.WorkList{Work: []client.Work{}}
	var (
		ws     []pebblekv.Work
		latest []pebblekv.Execution
		more   bool
	)
	err := d.db.View(func(r *pebblekv.Reader) (err error) {
		ws, more, err = r.Works(pebblekv.WorkQuery{Scope: q.Scope, State: q.State, After: q.After, Limit: q.Limit, Newest: q.Newest})
		if err != nil {
			return err
		}
		ids := make([]string, len(ws))
		for i, w := range ws {
			ids[i] = w.ID
		}
		latest, err = r.LatestExecutions(ids)
		return err
	})
	if err != nil {
		return client.WorkList{}, fmt.Errorf("reading Work: %w", err)
	}
	if len(ws) == 0 && q.Scope != "" && q.After == "" && !d.scopeConfigured(q.Scope) {
		return client.WorkList{}, errUnknownScope(q.Scope)
	}
	for i, w := range ws {
		res.Work = append(res.Work, workView(w, latest[i]))
	}
	if more && len(ws) > 0 {
		res.Next = ws[len(ws)-1].ID
	}
	return res, nil
}

// Work reads one Work with its latest inputs (of those its record keeps, at
// most client.MaxWorkInputs, within a page's bytes), each with its Event
// and route decision (WorkInputs pages them all), its attempts and its
// active Wait.
func (d *Daemon) Work(_ context.Context, id string) (client.WorkDetail, error) {
	var res client.WorkDetail
	err := d.db.View(func(r *pebblekv.Reader) error {
		w, found, err := r.Work(id)
		if err != nil || !found {
			return err
		}
		if res.Inputs, res.Omitted, err = workInputs(r, w); err != nil {
			return err
		}
		xs, err := r.ExecutionsOf(id)
		if err != nil {
			return err
		}
		var latest pebblekv.Execution
		if len(xs) > 0 {
			latest = xs[len(xs)-1]
		}
		res.Work = workView(w, latest)
		res.Executions = make([]client.Execution, 0, len(xs))
		for _, x := range xs {
			res.Executions = append(res.Executions, executionView(x))
		}
		wt, waiting, err := r.ActiveWait(id)
		if waiting {
			v := waitView(wt)
			res.Wait = &v
		}
		return err
	})
	switch {
	case err != nil:
		return client.WorkDetail{}, fmt.Errorf("reading Work %s: %w", id, err)
	case res.Work.ID == "":
		return client.WorkDetail{}, errUnknownWork(id)
	}
	return res, nil
}

// workInputs reads the latest of w's inputs that fit a page, newest
// first, and returns them oldest first with how many were left out.
func workInputs(r *pebblekv.Reader, w pebblekv.Work) ([]client.WorkInput, int, error) {
	page := protocol.NewPageBudget(client.MaxWorkInputs, client.MaxWorkInputs)
	first := uint64(w.InputCount - len(w.Inputs))
	var out []client.WorkInput
	for i := len(w.Inputs) - 1; i >= 0 && !page.Full(); i-- {
		in, err := inputView(r, first+uint64(i)+1, w.Inputs[i])
		if err != nil {
			return nil, 0, err
		}
		if !page.Add(in.Event.WireSize()) {
			break
		}
		out = append(out, in)
	}
	slices.Reverse(out)
	if out == nil {
		out = []client.WorkInput{}
	}
	return out, w.InputCount - len(out), nil
}

// inputView is input n of a Work, the Event id, with the Event and its
// route decision when the store has them.
func inputView(r *pebblekv.Reader, n uint64, id string) (client.WorkInput, error) {
	in := client.WorkInput{N: n, Event: protocol.Event{ID: id}}
	ev, found, err := r.Event(id)
	if err != nil {
		return in, err
	}
	if found {
		in.Event = ev.Wire()
	}
	dec, found, err := r.RouteDecision(id)
	if err != nil {
		return in, err
	}
	if found {
		v := decisionView(dec)
		in.Route = &v
	}
	return in, nil
}

// CancelWork cancels an open Work with the operator's reason; a finished
// one is protocol.ErrConflict naming its state.
func (d *Daemon) CancelWork(ctx context.Context, id, reason string) (client.Work, error) {
	if len(reason) > maxCancelReason {
		return client.Work{}, protocol.Errorf(protocol.ErrInvalid, "the reason is %d bytes; give one of at most %d", len(reason), maxCancelReason)
	}
	eng, err := d.engineReady()
	if err != nil {
		return client.Work{}, err
	}
	w, err := eng.CancelWork(ctx, id, reason)
	if err != nil {
		return client.Work{}, err
	}
	var latest []pebblekv.Execution
	if err := d.db.View(func(r *pebblekv.Reader) (err error) {
		latest, err = r.LatestExecutions([]string{w.ID})
		return err
	}); err != nil {
		return client.Work{}, fmt.Errorf("Work %s is cancelled, but reading its attempts failed: %w", w.ID, err)
	}
	return workView(w, latest[0]), nil
}

// Emit accepts an operator's Event into a configured scope; the engine
// wakes the router and the log's long polls.
func (d *Daemon) Emit(ctx context.Context, req client.EmitRequest) (protocol.Event, error) {
	eng, err := d.engineReady()
	if err != nil {
		return protocol.Event{}, err
	}
	ev, err := eng.Emit(ctx, req.Scope, req.Type, req.Data)
	if err != nil {
		return protocol.Event{}, err
	}
	return ev.Wire(), nil
}

// EventRoute is an Event's route decision; while it is pending it waits up
// to wait for the router to decide. An Event the router has not looked at
// yet is pending.
func (d *Daemon) EventRoute(ctx context.Context, id string, wait time.Duration) (client.RouteDecision, error) {
	deadline := time.Now().Add(wait)
	for {
		var changed <-chan struct{}
		if eng := d.engine; eng != nil {
			changed = eng.Changes()
		}
		dec, err := d.eventRoute(id)
		if err != nil || dec.State != client.RoutePending || !time.Now().Before(deadline) {
			return dec, err
		}
		t := time.NewTimer(min(routePoll, time.Until(deadline)))
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return dec, nil
		case <-d.closed:
			t.Stop()
			return dec, nil
		}
		t.Stop()
	}
}

func (d *Daemon) eventRoute(id string) (client.RouteDecision, error) {
	var (
		ev           pebblekv.Event
		dec          pebblekv.RouteDecision
		found, known bool
	)
	err := d.db.View(func(r *pebblekv.Reader) (err error) {
		if ev, known, err = r.Event(id); err != nil || !known {
			return err
		}
		dec, found, err = r.RouteDecision(id)
		return err
	})
	switch {
	case err != nil:
		return client.RouteDecision{}, fmt.Errorf("reading the route of Event %s: %w", id, err)
	case !known:
		return client.RouteDecision{}, protocol.Errorf(protocol.ErrNotFound, "no Event %q in the log; 'open-conduit events list' lists them", id)
	case !found:
		return client.RouteDecision{Event: id, Scope: ev.Scope, State: client.RoutePending}, nil
	}
	return decisionView(dec), nil
}

// RouteTrace asks every route of a configured scope how it would decide a
// hypothetical Event; nothing is written.
func (d *Daemon) RouteTrace(ctx context.Context, scope string, ev client.TraceEvent) (client.Trace, error) {
	eng, err := d.engineReady()
	if err != nil {
		return client.Trace{}, err
	}
	t, err := eng.Trace(ctx, scope, engine.TraceEvent{Type: ev.Type, Payload: ev.Payload})
	if err != nil {
		return client.Trace{}, err
	}
	return traceView(t), nil
}

// RouteSamples collects the sample Events of a configured scope's route
// handlers; a handler that fails is listed with its error.
func (d *Daemon) RouteSamples(ctx context.Context, scope string) (client.Samples, error) {
	eng, err := d.engineReady()
	if err != nil {
		return client.Samples{}, err
	}
	ss, err := eng.Samples(ctx, scope)
	if err != nil {
		return client.Samples{}, err
	}
	return samplesView(scope, ss), nil
}

// Timers reads one page of the armed timers in ID order, by count and
// bytes.
func (d *Daemon) Timers(_ context.Context, q client.TimersQuery) (client.Timers, error) {
	res := client.Timers{Timers: []client.Timer{}}
	var (
		ts   []pebblekv.Timer
		more bool
	)
	err := d.db.View(func(r *pebblekv.Reader) (err error) {
		ts, more, err = r.Timers(pebblekv.TimerQuery{After: q.After, Limit: q.Limit})
		return err
	})
	if err != nil {
		return client.Timers{}, fmt.Errorf("reading timers: %w", err)
	}
	for _, t := range ts {
		res.Timers = append(res.Timers, timerView(t))
	}
	if more && len(ts) > 0 {
		res.Next = ts[len(ts)-1].ID
	}
	return res, nil
}

// Changes answers a dashboard's long poll: at once when Events follow
// q.After or the change tick is not q.Tick, else when either happens within
// q.Wait, else empty after it.
func (d *Daemon) Changes(ctx context.Context, q client.ChangesQuery) (client.Changes, error) {
	ticks := d.changeTicks()
	var deadline <-chan time.Time
	if q.Wait > 0 {
		t := time.NewTimer(q.Wait)
		defer t.Stop()
		deadline = t.C
	}
	for {
		grew, moved := d.events.wait(), ticks.wait()
		evs, err := d.eventsPage(client.EventsQuery{After: q.After}, protocol.StateEventsMax)
		if err != nil {
			return client.Changes{}, err
		}
		tick := ticks.n.Load()
		res := client.Changes{Events: evs.Events, Next: evs.Next, Latest: evs.Latest, Tick: tick, Changed: tick != q.Tick, Routes: evs.Routes}
		if len(res.Events) > 0 || res.Changed || deadline == nil {
			return res, nil
		}
		select {
		case <-grew:
		case <-moved:
		case <-deadline:
			return res, nil
		case <-ctx.Done():
			return res, nil
		case <-d.closed:
			return res, nil
		}
	}
}

// changeTicker counts the engine's change signals for this daemon run, so
// a follower that missed one between two polls still sees the count moved.
type changeTicker struct {
	once   sync.Once
	n      atomic.Uint64
	signal eventsSignal
}

func (t *changeTicker) wait() <-chan struct{} { return t.signal.wait() }

// changeTicks is the daemon's change ticker, started at its first use: it
// follows the engine's changes and the log until the daemon closes.
func (d *Daemon) changeTicks() *changeTicker {
	t := &d.changes
	t.once.Do(func() {
		t.signal.init()
		go func() {
			for {
				var changed <-chan struct{}
				if d.engine != nil {
					changed = d.engine.Changes()
				}
				select {
				case <-changed:
				case <-d.events.wait():
				case <-d.closed:
					return
				}
				t.n.Add(1)
				t.signal.broadcast()
			}
		}()
	})
	return t
}

// engineReady is the engine once the configuration is live.
func (d *Daemon) engineReady() (*engine.Engine, error) {
	if d.engine == nil || d.gen.Load() == nil || d.Phase() != client.PhaseRunning {
		return nil, errStarting()
	}
	return d.engine, nil
}

// scopeConfigured reports whether the live generation has the scope.
func (d *Daemon) scopeConfigured(id string) bool {
	g := d.gen.Load()
	if g == nil {
		return false
	}
	_, ok := g.Config.Scope(id)
	return ok
}

func errUnknownScope(id string) error {
	return protocol.Errorf(protocol.ErrNotFound, "scope %q is not configured; 'open-conduit config show' lists the scopes", id)
}

func errUnknownWork(id string) error {
	return protocol.Errorf(protocol.ErrNotFound, "no Work %q; 'open-conduit work list' lists the Work", id)
}
