package api

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

// WorkDaemon is the part of the facade that serves Work, routing, timers
// and the changes a dashboard follows.
type WorkDaemon interface {
	// Works reads one page of Work (q.Limit within 1..client.MaxWorkPage),
	// newest first when q.Newest.
	Works(ctx context.Context, q client.WorkQuery) (client.WorkList, error)
	// Work reads one Work with its latest inputs; unknown is
	// protocol.ErrNotFound.
	Work(ctx context.Context, id string) (client.WorkDetail, error)
	// WorkInputs reads one page of a Work's inputs (q.Limit within
	// 1..client.MaxWorkInputsPage, 0 for the largest); unknown is
	// protocol.ErrNotFound.
	WorkInputs(ctx context.Context, id string, q client.WorkInputsQuery) (client.WorkInputsPage, error)
	// CancelWork cancels an open Work; a finished one is
	// protocol.ErrConflict.
	CancelWork(ctx context.Context, id, reason string) (client.Work, error)
	// Emit accepts an operator's Event.
	Emit(ctx context.Context, req client.EmitRequest) (protocol.Event, error)
	// EventRoute is an Event's route decision, waiting up to wait while it
	// is pending.
	EventRoute(ctx context.Context, id string, wait time.Duration) (client.RouteDecision, error)
	// RouteTrace asks a scope's routes about a hypothetical Event.
	RouteTrace(ctx context.Context, scope string, ev client.TraceEvent) (client.Trace, error)
	// RouteSamples collects the sample Events of a scope's route handlers.
	RouteSamples(ctx context.Context, scope string) (client.Samples, error)
	// Timers reads one page of the armed timers.
	Timers(ctx context.Context, q client.TimersQuery) (client.Timers, error)
	// Changes waits up to q.Wait for Events after q.After or a change tick
	// past q.Tick.
	Changes(ctx context.Context, q client.ChangesQuery) (client.Changes, error)
}

// routeWork registers the routes of Work, routing, timers and changes.
func routeWork(mux *http.ServeMux, a adapter) {
	mux.HandleFunc("GET /v1/work", a.works)
	mux.HandleFunc("GET /v1/work/{id}", a.work)
	mux.HandleFunc("GET /v1/work/{id}/inputs", a.workInputs)
	mux.HandleFunc("POST /v1/work/{id}/cancel", a.cancelWork)
	mux.HandleFunc("POST /v1/events", a.emit)
	mux.HandleFunc("GET /v1/events/{id}/route", a.eventRoute)
	mux.HandleFunc("POST /v1/scopes/{id}/route/trace", a.routeTrace)
	mux.HandleFunc("GET /v1/scopes/{id}/route/samples", a.routeSamples)
	mux.HandleFunc("GET /v1/timers", a.timers)
	mux.HandleFunc("GET /v1/changes", a.changes)
}

// limit reads a page's limit: absent is max; 0 or over max is refused.
func (p *params) limit(max int) int {
	s := p.r.URL.Query().Get("limit")
	if s == "" || p.err != nil {
		return max
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > max {
		p.err = protocol.Errorf(protocol.ErrInvalid, "limit must be between 1 and %d, not %q", max, s)
	}
	return n
}

// duration reads a wait as whole seconds ("5") or a Go duration ("5s"),
// capped at MaxWait.
func (p *params) duration(name string) time.Duration {
	s := p.r.URL.Query().Get(name)
	if s == "" || p.err != nil {
		return 0
	}
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return min(time.Duration(n)*time.Second, MaxWait)
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		p.err = protocol.Errorf(protocol.ErrInvalid, "%s must be seconds (30) or a duration (30s), not %q", name, s)
	}
	return min(d, MaxWait)
}

func (a adapter) works(w http.ResponseWriter, r *http.Request) {
	p := params{r: r}
	qs := r.URL.Query()
	q := client.WorkQuery{Scope: qs.Get("scope"), State: qs.Get("state"), After: qs.Get("after"), Limit: p.limit(client.MaxWorkPage)}
	if p.err == nil && q.State != "" && !slices.Contains(client.WorkStates, q.State) {
		p.err = protocol.Errorf(protocol.ErrInvalid, "state must be one of %s, not %q", strings.Join(client.WorkStates, ", "), q.State)
	}
	switch order := qs.Get("order"); order {
	case "", "oldest":
	case "newest":
		q.Newest = true
	default:
		if p.err == nil {
			p.err = protocol.Errorf(protocol.ErrInvalid, "order must be oldest (the default) or newest, not %q", order)
		}
	}
	if p.err != nil {
		writeError(w, p.err)
		return
	}
	res, err := a.d.Works(r.Context(), q)
	answer(w, res, err)
}

func (a adapter) work(w http.ResponseWriter, r *http.Request) {
	res, err := a.d.Work(r.Context(), r.PathValue("id"))
	answer(w, res, err)
}

func (a adapter) workInputs(w http.ResponseWriter, r *http.Request) {
	p := params{r: r}
	q := client.WorkInputsQuery{After: p.uint("after"), Limit: p.limit(client.MaxWorkInputsPage)}
	if p.err != nil {
		writeError(w, p.err)
		return
	}
	res, err := a.d.WorkInputs(r.Context(), r.PathValue("id"), q)
	answer(w, res, err)
}

func (a adapter) cancelWork(w http.ResponseWriter, r *http.Request) {
	var req client.CancelRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	res, err := a.d.CancelWork(r.Context(), r.PathValue("id"), req.Reason)
	answer(w, res, err)
}

func (a adapter) emit(w http.ResponseWriter, r *http.Request) {
	var req client.EmitRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Scope == "" {
		writeError(w, protocol.Errorf(protocol.ErrInvalid, "scope_id is required: name the configured scope the Event belongs to"))
		return
	}
	if req.Type == "" {
		req.Type = client.DefaultEmitType
	}
	res, err := a.d.Emit(r.Context(), req)
	answer(w, res, err)
}

func (a adapter) eventRoute(w http.ResponseWriter, r *http.Request) {
	p := params{r: r}
	wait := p.duration("wait")
	if p.err != nil {
		writeError(w, p.err)
		return
	}
	res, err := a.d.EventRoute(r.Context(), r.PathValue("id"), wait)
	answer(w, res, err)
}

func (a adapter) routeTrace(w http.ResponseWriter, r *http.Request) {
	var req client.TraceRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Event.Type == "" {
		writeError(w, protocol.Errorf(protocol.ErrInvalid, "event.type is required: name the type of the Event to trace"))
		return
	}
	res, err := a.d.RouteTrace(r.Context(), r.PathValue("id"), req.Event)
	answer(w, res, err)
}

func (a adapter) routeSamples(w http.ResponseWriter, r *http.Request) {
	res, err := a.d.RouteSamples(r.Context(), r.PathValue("id"))
	answer(w, res, err)
}

func (a adapter) timers(w http.ResponseWriter, r *http.Request) {
	p := params{r: r}
	q := client.TimersQuery{After: r.URL.Query().Get("after"), Limit: p.limit(client.MaxWorkPage)}
	if p.err != nil {
		writeError(w, p.err)
		return
	}
	res, err := a.d.Timers(r.Context(), q)
	answer(w, res, err)
}

func (a adapter) changes(w http.ResponseWriter, r *http.Request) {
	p := params{r: r}
	q := client.ChangesQuery{After: p.uint("after"), Tick: p.uint("tick"), Wait: p.duration("wait")}
	if p.err != nil {
		writeError(w, p.err)
		return
	}
	res, err := a.d.Changes(r.Context(), q)
	answer(w, res, err)
}
