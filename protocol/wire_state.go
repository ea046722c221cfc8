package protocol

import "time"

// Event is an accepted Event as the state reads and event.accept answer it.
type Event struct {
	ID         string    `json:"id"`
	Sequence   uint64    `json:"sequence"`
	Scope      string    `json:"scope_id"`
	Source     string    `json:"source"`
	Type       string    `json:"type"`
	DeliveryID string    `json:"delivery_id"`
	Parent     string    `json:"parent,omitempty"`
	Root       string    `json:"root"`
	Depth      int       `json:"depth"`
	Time       time.Time `json:"time"`
	Payload    Payload   `json:"payload"`
	Works      []string  `json:"works,omitempty"`
}

// StateSequenceResult is the log's latest sequence: a cursor for
// state.events that says how far the log reaches and nothing of what is in
// it.
type StateSequenceResult struct {
	Sequence uint64 `json:"sequence"`
}

// StateEventParams names one Event.
type StateEventParams struct {
	ID string `json:"id"`
}

// StateEventsMax is the largest state.events page.
const StateEventsMax = 1000

// StateEventsParams pages the Events of the extension's scopes after a
// sequence. Scope, when set, narrows to one of them.
type StateEventsParams struct {
	After uint64 `json:"after,omitzero"`
	Limit int    `json:"limit,omitzero"`
	Scope string `json:"scope_id,omitempty"`
}

// StateEventsResult is one page: at most the asked count of Events and,
// past the first, at most MaxPageBytes of them. Next is the cursor for the
// next page (the last Event's sequence); More says another Event follows it
// now, so a reader asks again at once rather than later.
type StateEventsResult struct {
	Events []Event `json:"events"`
	Next   uint64  `json:"next,omitzero"`
	More   bool    `json:"more,omitzero"`
}

// StateWorkEventsParams pages one Work's Events.
type StateWorkEventsParams struct {
	ID    string `json:"id"`
	After uint64 `json:"after,omitzero"`
	Limit int    `json:"limit,omitzero"`
}

// StateScopeParams names one scope.
type StateScopeParams struct {
	ID string `json:"id"`
}

// ScopeView is a scope as an extension may read it: no secret references,
// only its own entries.
type ScopeView struct {
	ID       string        `json:"id"`
	Disabled bool          `json:"disabled,omitzero"`
	Entries  []Entry       `json:"entries,omitempty"`
	Routes   []RouteView   `json:"routes,omitempty"`
	Bindings []BindingView `json:"bindings,omitempty"`
}

// RouteView is one of a scope's routes.
type RouteView struct {
	Handler string `json:"handler"`
	Binding string `json:"binding,omitempty"`
}

// BindingView is one of a scope's bindings, without its secrets.
type BindingView struct {
	Name       string   `json:"name"`
	Executor   string   `json:"executor,omitempty"`
	Toolbelt   string   `json:"toolbelt,omitempty"`
	Operations []string `json:"operations,omitempty"`
	Connection string   `json:"connection,omitempty"`
}

// StateScopesResult lists the scopes that use the extension.
type StateScopesResult struct {
	Scopes []ScopeView `json:"scopes"`
}

// EventAcceptParams derives an Event of one of the extension's families
// from an accepted parent in the same scope. Records are KV writes (in the
// extension's namespaces) that commit with the Event, only when it is new.
type EventAcceptParams struct {
	Scope      string          `json:"scope_id"`
	Source     string          `json:"source"`
	DeliveryID string          `json:"delivery_id"`
	Type       string          `json:"type"`
	Parent     string          `json:"parent"`
	Payload    Payload         `json:"payload"`
	Records    *KVCommitParams `json:"records,omitempty"`
}

// EventAcceptResult is the accepted Event and whether it was new.
type EventAcceptResult struct {
	Event Event `json:"event"`
	Added bool  `json:"added"`
}

// SecretResolveParams asks for secret values in one scope: the names the
// extension's own entries select there (all of them when Names is empty),
// or, with Connection, that connection's secrets.
type SecretResolveParams struct {
	Scope      string   `json:"scope_id"`
	Names      []string `json:"names,omitempty"`
	Connection string   `json:"connection,omitempty"`
}

// SecretResolveResult maps each resolved name to its value.
type SecretResolveResult struct {
	Secrets map[string]string `json:"secrets"`
}
