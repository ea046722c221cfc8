package protocol

import (
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// RouteMatchDeadline bounds one route.match call: routing waits no longer
// for a handler, and a handler that has not answered by then leaves the
// Event pending, to be retried.
const RouteMatchDeadline = 5 * time.Second

// RouteRef is one configured route as its handler sees it: its place in the
// scope's routes, the handler, the binding it binds and its own config.
type RouteRef struct {
	Index   int            `json:"index"`
	Handler string         `json:"handler"`
	Binding string         `json:"binding,omitempty"`
	Config  jsontext.Value `json:"config,omitzero"`
}

// RouteMatchParams asks a route handler whether an Event matches one of its
// routes. The call runs outside any transaction and must be free of side
// effects: a route trace asks it about Events that never happen.
type RouteMatchParams struct {
	Scope string   `json:"scope_id"`
	Route RouteRef `json:"route"`
	Event Event    `json:"event"`
	// Work is the open Work the Event's keys already reach, when the host
	// knows one: the handler sees its current display and may add to it.
	Work *WorkView `json:"work,omitempty"`
	// Now is the host's clock, so a decision traces the same under a test
	// clock.
	Now time.Time `json:"now"`
}

// RouteMatchResult is a handler's verdict. Reason explains it in a trace and
// never changes it. On a match, Kind is one of the handler's package's Work
// kinds, Keys are the correlation keys (an open Work holding any of them is
// joined, else a Work is created), Display replaces the Work's display, and
// Context and Grants apply only to a Work the match creates.
type RouteMatchResult struct {
	Match   bool           `json:"match"`
	Reason  string         `json:"reason,omitempty"`
	Kind    string         `json:"kind,omitempty"`
	Keys    []string       `json:"keys,omitempty"`
	Display *Display       `json:"display,omitempty"`
	Context jsontext.Value `json:"context,omitzero"`
	Grants  []string       `json:"grants,omitempty"`
}

// RouteSamplesParams asks a handler declared with samples for named sample
// Events of one route, written as of Now.
type RouteSamplesParams struct {
	Scope string    `json:"scope_id"`
	Route RouteRef  `json:"route"`
	Now   time.Time `json:"now"`
}

// SampleEvent is a hypothetical Event: its type and payload.
type SampleEvent struct {
	Type    string  `json:"type"`
	Payload Payload `json:"payload"`
}

// RouteSample is one named sample an operator may trace.
type RouteSample struct {
	ID    string      `json:"id"`
	Title string      `json:"title,omitempty"`
	Event SampleEvent `json:"event"`
}

// RouteSamplesResult lists a route's samples.
type RouteSamplesResult struct {
	Samples []RouteSample `json:"samples"`
}

// Routing methods whose wire types exist.
var (
	// RouteMatch asks a route handler for its verdict on one Event.
	RouteMatch = Desc[RouteMatchParams, RouteMatchResult]{Name: MethodRouteMatch}
	// RouteSamples asks a route handler for named sample Events.
	RouteSamples = Desc[RouteSamplesParams, RouteSamplesResult]{Name: MethodRouteSamples}
)
