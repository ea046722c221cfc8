package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// Work states, as Work.State reports them.
const (
	WorkPending   = "pending"
	WorkRunning   = "running"
	WorkWaiting   = "waiting"
	WorkCompleted = "completed"
	WorkFailed    = "failed"
	WorkCancelled = "cancelled"
)

// WorkStates are the Work states, in their order of life.
var WorkStates = []string{WorkPending, WorkRunning, WorkWaiting, WorkCompleted, WorkFailed, WorkCancelled}

// Route decision states, as RouteDecision.State reports them.
const (
	// RoutePending: the router has not decided yet (or a route erred and
	// the Event waits for its retry).
	RoutePending = "pending"
	// RouteRouted: a route matched; Work names the Work.
	RouteRouted = "routed"
	// RouteUnmatched: no route matched; Reasons say why each did not.
	RouteUnmatched = "unmatched"
	// RouteFailed: a route erred or timed out; the Event is retried.
	RouteFailed = "failed"
)

// MaxWorkPage is the largest page of GET /v1/work.
const MaxWorkPage = 1000

// MaxWorkInputs bounds the inputs GET /v1/work/{id} shows with their
// Events and route decisions: the latest ones, of those the Work's record
// keeps (its tail).
const MaxWorkInputs = 100

// MaxWorkInputsPage is the largest page of GET /v1/work/{id}/inputs.
const MaxWorkInputsPage = 1000

// Display says what a Work is in the words of its source.
type Display struct {
	Title     string `json:"title,omitempty"`
	Ref       string `json:"ref,omitempty"`
	Requester string `json:"requester,omitempty"`
	Links     []Link `json:"links,omitempty"`
}

// Link is one of a display's links: an http or https URL with its label.
type Link struct {
	Label string `json:"label"`
	URL   string `json:"url"`
}

// Work is one Work record.
type Work struct {
	ID    string `json:"id"`
	Scope string `json:"scope_id"`
	// Kind is the Work kind of the package that declared it, or "manual".
	Kind string `json:"kind"`
	// Keys are its correlation keys: a later Event a route gives one of
	// them joins this Work while it is open.
	Keys    []string       `json:"keys,omitempty"`
	State   string         `json:"state"`
	Display *Display       `json:"display,omitempty"`
	Binding string         `json:"binding,omitempty"`
	Context jsontext.Value `json:"context,omitzero"`
	Grants  []string       `json:"grants,omitempty"`
	Created time.Time      `json:"created"`
	Updated time.Time      `json:"updated"`
	// Inputs are the IDs of the latest Events routed to it, oldest first:
	// the tail the record keeps (GET /v1/work/{id}/inputs pages them all).
	Inputs []string `json:"inputs,omitempty"`
	// InputCount is how many Events were routed to it in all.
	InputCount int `json:"input_count"`
	// Trigger is the input that started it.
	Trigger string `json:"trigger,omitempty"`
	// Reason says why the state is what it is (who cancelled it, and why).
	Reason string `json:"reason,omitempty"`
	// Hold is a start gate's hold: while Held, the pending Work does not
	// start until the gate's package settles it.
	Hold *WorkHold `json:"hold,omitempty"`
	// Attempt is the number of its latest execution (0 before its first
	// attempt starts); Executor names that execution's package and
	// executor as "package/executor".
	Attempt  int    `json:"attempt,omitzero"`
	Executor string `json:"executor,omitempty"`
}

// WorkHold is a start gate's hold on a Work: the package that placed it,
// why, since when, and once settled, whether it admitted the Work.
type WorkHold struct {
	Package string    `json:"package"`
	Reason  string    `json:"reason,omitempty"`
	Since   time.Time `json:"since"`
	Held    bool      `json:"held"`
	Admit   bool      `json:"admit,omitzero"`
}

// Label is what a view calls the Work: its display's title or ref, else
// its kind.
func (w Work) Label() string {
	switch {
	case w.Display != nil && w.Display.Title != "":
		return w.Display.Title
	case w.Display != nil && w.Display.Ref != "":
		return w.Display.Ref
	}
	return w.Kind
}

// Open reports whether the Work is not finished (completed, failed or
// cancelled), so a matching Event still joins it.
func (w Work) Open() bool {
	return w.State != WorkCompleted && w.State != WorkFailed && w.State != WorkCancelled
}

// WorkQuery pages GET /v1/work.
type WorkQuery struct {
	// Scope and State keep only the Work of one scope, in one state.
	Scope string
	State string
	// After is the cursor: Work with a greater ID (a page's Next).
	After string
	// Limit bounds the page (the daemon caps it at MaxWorkPage).
	Limit int
	// Newest pages newest first (descending ID): After is then the cursor
	// of Work with a smaller ID.
	Newest bool
}

// WorkList is GET /v1/work: one page of Work in ID order.
type WorkList struct {
	Work []Work `json:"work"`
	// Next, when set, is the cursor of the page that follows.
	Next string `json:"next,omitempty"`
}

// WorkInput is one input of a Work: its number, its Event and how it was
// routed.
type WorkInput struct {
	// N is its number among the Work's inputs: 1 for the first.
	N     uint64         `json:"n,omitzero"`
	Event protocol.Event `json:"event"`
	Route *RouteDecision `json:"route,omitempty"`
}

// WorkDetail is GET /v1/work/{id}: the Work with its latest inputs, its
// attempts and its active Wait.
type WorkDetail struct {
	Work Work `json:"work"`
	// Inputs are the Work's latest inputs (at most MaxWorkInputs, within
	// a page's bytes), oldest first; Omitted counts the earlier ones left
	// out.
	Inputs  []WorkInput `json:"inputs"`
	Omitted int         `json:"omitted,omitzero"`
	// Executions are its attempts, first to last (GET
	// /v1/work/{id}/executions reads them alone).
	Executions []Execution `json:"executions"`
	// Wait is its active Wait, if it waits.
	Wait *Wait `json:"wait,omitempty"`
}

// WorkInputsQuery pages GET /v1/work/{id}/inputs.
type WorkInputsQuery struct {
	// After is the cursor: inputs numbered after it (a page's Next).
	After uint64
	// Limit bounds the page (the daemon caps it at MaxWorkInputsPage).
	Limit int
}

// WorkInputsPage is GET /v1/work/{id}/inputs: one page of a Work's inputs
// in the order they were routed to it, by count and by bytes.
type WorkInputsPage struct {
	Work string `json:"work_id"`
	// InputCount is how many inputs the Work has in all.
	InputCount int         `json:"input_count"`
	Inputs     []WorkInput `json:"inputs"`
	// Next, when set, is the cursor of the page that follows.
	Next uint64 `json:"next,omitzero"`
}

// CancelRequest is POST /v1/work/{id}/cancel.
type CancelRequest struct {
	Reason string `json:"reason,omitempty"`
}

// RouteReason is one route's verdict on an Event.
type RouteReason struct {
	// Route is the route's index in its scope's routes.
	Route   int    `json:"route"`
	Handler string `json:"handler"`
	Match   bool   `json:"match"`
	Reason  string `json:"reason,omitempty"`
	// Error is set when the route erred or timed out.
	Error string `json:"error,omitempty"`
}

// RouteDecision is GET /v1/events/{id}/route: how one Event was routed.
type RouteDecision struct {
	Event string `json:"event"`
	Scope string `json:"scope_id"`
	// State is RoutePending, RouteRouted, RouteUnmatched or RouteFailed.
	State string `json:"state"`
	// Work is the Work the Event was routed to, and Created says the match
	// created it.
	Work    string `json:"work,omitempty"`
	Created bool   `json:"created,omitzero"`
	// Route is the index of the route that matched.
	Route   int           `json:"route,omitzero"`
	Reasons []RouteReason `json:"reasons,omitempty"`
	// DisplayRefused says why a match's display was dropped.
	DisplayRefused string    `json:"display_refused,omitempty"`
	Attempts       int       `json:"attempts,omitzero"`
	Updated        time.Time `json:"updated,omitzero"`
}

// EventRoute is where an Event went, as GET /v1/events lists it beside the
// Event.
type EventRoute struct {
	State   string `json:"state"`
	Work    string `json:"work,omitempty"`
	Created bool   `json:"created,omitzero"`
}

// EmitRequest is POST /v1/events: an operator's Event.
type EmitRequest struct {
	Scope string `json:"scope_id"`
	// Type defaults to manual.request.
	Type string         `json:"type,omitempty"`
	Data jsontext.Value `json:"data,omitzero"`
}

// DefaultEmitType is the type of an operator's Event when none is given:
// the builtin route handler manual makes Work of it.
const DefaultEmitType = "manual.request"

// TraceEvent is a hypothetical Event a trace asks the routes about.
type TraceEvent struct {
	Type    string           `json:"type"`
	Payload protocol.Payload `json:"payload,omitzero"`
}

// TraceRequest is POST /v1/scopes/{id}/route/trace.
type TraceRequest struct {
	Event TraceEvent `json:"event"`
}

// TraceDecision is what routing would do with a traced Event.
type TraceDecision struct {
	// Match says a route matched: Route is its index (-1 for none), with
	// its handler.
	Match   bool     `json:"match"`
	Route   int      `json:"route"`
	Handler string   `json:"handler,omitempty"`
	Kind    string   `json:"kind,omitempty"`
	Keys    []string `json:"keys,omitempty"`
	Display *Display `json:"display,omitempty"`
	// DisplayRefused says why the match's display would be dropped.
	DisplayRefused string `json:"display_refused,omitempty"`
	// Join is the open Work the Event would join; Create says the match
	// would create one instead.
	Join   string `json:"join,omitempty"`
	Create bool   `json:"create,omitzero"`
	// Refused says why the Event would reach no Work: the scope routes
	// nothing, a route fails (the Event would wait and be retried), or the
	// match names an undeclared kind, a run-once key already used, a timed
	// kind in a dry run.
	Refused string `json:"refused,omitempty"`
}

// Trace is POST /v1/scopes/{id}/route/trace: every route's verdict on a
// hypothetical Event, in order, and the decision. Nothing is written.
type Trace struct {
	Scope string `json:"scope_id"`
	// Event is the Event as the routes saw it.
	Event    protocol.Event `json:"event"`
	Routes   []RouteReason  `json:"routes"`
	Decision TraceDecision  `json:"decision"`
}

// Sample is a named sample Event a route handler offers for a trace.
type Sample struct {
	Route   int        `json:"route"`
	Handler string     `json:"handler"`
	ID      string     `json:"id"`
	Title   string     `json:"title,omitempty"`
	Event   TraceEvent `json:"event"`
}

// SampleError is a handler whose samples could not be had.
type SampleError struct {
	Route   int    `json:"route"`
	Handler string `json:"handler"`
	Error   string `json:"error"`
}

// Samples is GET /v1/scopes/{id}/route/samples.
type Samples struct {
	Scope   string        `json:"scope_id"`
	Samples []Sample      `json:"samples"`
	Errors  []SampleError `json:"errors,omitempty"`
}

// Recurrence is how a timer rearms after it fires.
type Recurrence struct {
	Kind string         `json:"kind"`
	Rule jsontext.Value `json:"rule,omitzero"`
}

// Timer is one armed timer.
type Timer struct {
	ID     string    `json:"id"`
	Owner  string    `json:"owner"`
	Scope  string    `json:"scope_id"`
	Due    time.Time `json:"due"`
	Family string    `json:"family"`
	// Payload is the Event's payload when it fires.
	Payload    protocol.Payload `json:"payload,omitzero"`
	Recurrence *Recurrence      `json:"recurrence,omitempty"`
	// Fired counts its firings.
	Fired int `json:"fired"`
}

// TimersQuery pages GET /v1/timers.
type TimersQuery struct {
	// After is the cursor: timers with a greater ID (a page's Next).
	After string
	Limit int
}

// Timers is GET /v1/timers: one page of timers in ID order.
type Timers struct {
	Timers []Timer `json:"timers"`
	Next   string  `json:"next,omitempty"`
}

// ChangesQuery is GET /v1/changes: a dashboard's long poll.
type ChangesQuery struct {
	// After is the last Event sequence the follower has.
	After uint64
	// Tick is the last answer's Tick (0 at first).
	Tick uint64
	// Wait is how long the answer may wait for a change (capped at
	// MaxWait).
	Wait time.Duration
}

// Changes answers a long poll: the Events after the cursor (one page), and
// a tick that moves whenever Events are accepted or Work changes, so a
// follower that sees it move reads the Work it shows again.
type Changes struct {
	Events []protocol.Event `json:"events"`
	// Next is the last listed Event's sequence: ask after it.
	Next   uint64 `json:"next,omitzero"`
	Latest uint64 `json:"latest"`
	// Tick counts the changes this daemon has seen since it started; pass
	// it back. Any other value (a daemon restarted) answers at once.
	Tick uint64 `json:"tick"`
	// Changed says the tick moved past the one asked with: something
	// (Events or Work) changed.
	Changed bool `json:"changed"`
	// Routes says, by Event ID, where each listed Event in a scope was
	// routed so far (pending until the router decides).
	Routes map[string]EventRoute `json:"routes,omitempty"`
}

// Works reads one page of Work.
func (c *Client) Works(ctx context.Context, q WorkQuery) (WorkList, error) {
	v := url.Values{}
	setNonEmpty(v, "scope", q.Scope)
	setNonEmpty(v, "state", q.State)
	setNonEmpty(v, "after", q.After)
	if q.Newest {
		v.Set("order", "newest")
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var l WorkList
	return l, c.do(ctx, http.MethodGet, "/v1/work?"+v.Encode(), nil, &l)
}

// WorkDetail reads one Work with its inputs and their route decisions.
func (c *Client) WorkDetail(ctx context.Context, id string) (WorkDetail, error) {
	var d WorkDetail
	return d, c.do(ctx, http.MethodGet, "/v1/work/"+url.PathEscape(id), nil, &d)
}

// WorkInputs reads one page of a Work's inputs, each with its Event and
// route decision.
func (c *Client) WorkInputs(ctx context.Context, id string, q WorkInputsQuery) (WorkInputsPage, error) {
	v := url.Values{}
	if q.After > 0 {
		v.Set("after", strconv.FormatUint(q.After, 10))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var p WorkInputsPage
	return p, c.do(ctx, http.MethodGet, "/v1/work/"+url.PathEscape(id)+"/inputs?"+v.Encode(), nil, &p)
}

// CancelWork cancels an open Work, with the operator's reason. A finished
// Work is a conflict error naming its state.
func (c *Client) CancelWork(ctx context.Context, id, reason string) (Work, error) {
	body, err := json.Marshal(CancelRequest{Reason: reason})
	if err != nil {
		return Work{}, err
	}
	var w Work
	return w, c.do(ctx, http.MethodPost, "/v1/work/"+url.PathEscape(id)+"/cancel", body, &w)
}

// Emit accepts an operator's Event into a scope.
func (c *Client) Emit(ctx context.Context, req EmitRequest) (protocol.Event, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return protocol.Event{}, err
	}
	var e protocol.Event
	return e, c.do(ctx, http.MethodPost, "/v1/events", body, &e)
}

// EventRoute reads how an Event was routed; with wait, a pending decision
// waits up to that long to be made.
func (c *Client) EventRoute(ctx context.Context, id string, wait time.Duration) (RouteDecision, error) {
	path := "/v1/events/" + url.PathEscape(id) + "/route"
	if wait > 0 {
		path += "?wait=" + waitParam(wait)
	}
	var d RouteDecision
	return d, c.do(ctx, http.MethodGet, path, nil, &d)
}

// RouteTrace asks every route of a scope how it would decide ev; nothing is
// written.
func (c *Client) RouteTrace(ctx context.Context, scope string, ev TraceEvent) (Trace, error) {
	body, err := json.Marshal(TraceRequest{Event: ev})
	if err != nil {
		return Trace{}, err
	}
	var t Trace
	return t, c.do(ctx, http.MethodPost, "/v1/scopes/"+url.PathEscape(scope)+"/route/trace", body, &t)
}

// RouteSamples reads the sample Events a scope's route handlers offer.
func (c *Client) RouteSamples(ctx context.Context, scope string) (Samples, error) {
	var s Samples
	return s, c.do(ctx, http.MethodGet, "/v1/scopes/"+url.PathEscape(scope)+"/route/samples", nil, &s)
}

// Timers reads one page of the armed timers.
func (c *Client) Timers(ctx context.Context, q TimersQuery) (Timers, error) {
	v := url.Values{}
	setNonEmpty(v, "after", q.After)
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var t Timers
	return t, c.do(ctx, http.MethodGet, "/v1/timers?"+v.Encode(), nil, &t)
}

// Changes waits up to q.Wait for Events after q.After or a tick past
// q.Tick.
func (c *Client) Changes(ctx context.Context, q ChangesQuery) (Changes, error) {
	v := url.Values{}
	v.Set("after", strconv.FormatUint(q.After, 10))
	v.Set("tick", strconv.FormatUint(q.Tick, 10))
	if q.Wait > 0 {
		v.Set("wait", waitParam(q.Wait))
	}
	var ch Changes
	return ch, c.do(ctx, http.MethodGet, "/v1/changes?"+v.Encode(), nil, &ch)
}

func setNonEmpty(v url.Values, name, value string) {
	if value != "" {
		v.Set(name, value)
	}
}
