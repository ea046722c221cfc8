package pebblekv

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
)

// Route decision states.
const (
	// RoutePending: the Event waits for its first routing.
	RoutePending = "pending"
	// RouteRouted: a route matched and the Event reached a Work.
	RouteRouted = "routed"
	// RouteUnmatched: every route said no; Reasons say why.
	RouteUnmatched = "unmatched"
	// RouteFailed: a route erred or timed out; the Event stays pending and
	// is retried.
	RouteFailed = "failed"
)

var routeStates = []string{RoutePending, RouteRouted, RouteUnmatched, RouteFailed}

// RouteDecision is how one Event was routed: the answer of
// GET /v1/events/{id}/route.
type RouteDecision struct {
	Event string `json:"event_id"`
	Scope string `json:"scope_id"`
	State string `json:"state"`
	// Work is the Work the Event was routed to.
	Work string `json:"work_id,omitempty"`
	// Created says the match created the Work rather than joined it.
	Created bool `json:"created,omitzero"`
	// Route is the index of the matching route in the scope's routes.
	Route int `json:"route,omitzero"`
	// Reasons are each asked route's verdict, in route order.
	Reasons []RouteReason `json:"reasons,omitempty"`
	// DisplayRefused says why the match's display was dropped ("" when it
	// was kept or there was none).
	DisplayRefused string `json:"display_refused,omitempty"`
	// Attempts counts the routings tried, failed ones included.
	Attempts int       `json:"attempts,omitzero"`
	Updated  time.Time `json:"updated"`
}

// RouteReason is one route's verdict on an Event.
type RouteReason struct {
	Route   int    `json:"route"`
	Handler string `json:"handler"`
	Match   bool   `json:"match,omitzero"`
	// Reason is the handler's explanation; it never changes the verdict.
	Reason string `json:"reason,omitempty"`
	// Error is why the route could not answer (an error, a timeout).
	Error string `json:"error,omitempty"`
}

func routeRecKey(eventID string) []byte { return famKey(famRouteRec, eventID) }

// PutRouteDecision writes d, replacing the Event's earlier decision. A
// decision without an Event ID or in an unknown state is
// protocol.ErrInvalid.
func (tx *Tx) PutRouteDecision(d RouteDecision) error {
	if d.Event == "" {
		return protocol.Errorf(protocol.ErrInvalid, "a route decision needs its event's ID")
	}
	if !slices.Contains(routeStates, d.State) {
		return protocol.Errorf(protocol.ErrInvalid, "route decision of %s has state %q; use pending, routed, unmatched or failed", d.Event, d.State)
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("pebblekv: encode route decision of %s: %w", d.Event, err)
	}
	return tx.set(routeRecKey(d.Event), raw)
}

// RouteDecision reads an Event's routing; found false means none was
// recorded.
func (r *Reader) RouteDecision(eventID string) (d RouteDecision, found bool, err error) {
	if eventID == "" {
		return RouteDecision{}, false, nil
	}
	raw, found, err := r.get(routeRecKey(eventID))
	if err != nil || !found {
		return RouteDecision{}, false, err
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return RouteDecision{}, false, fmt.Errorf("pebblekv: decode route decision of %s: %w", eventID, err)
	}
	return d, true, nil
}

// SetRouteCursor records the sequence of the last Event the router took
// from the log: it reads on after it.
func (tx *Tx) SetRouteCursor(seq uint64) error {
	return tx.set(metaRouteCur, appendSeq(nil, seq))
}

// RouteCursor is the sequence SetRouteCursor recorded; 0 when none was.
func (r *Reader) RouteCursor() (uint64, error) {
	v, found, err := r.get(metaRouteCur)
	if err != nil || !found {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("pebblekv: the route cursor is %d bytes, not 8", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// PendingRoute names an Event whose routing is owed: its scope and log
// sequence.
type PendingRoute struct {
	Scope string `json:"scope_id"`
	Seq   uint64 `json:"seq"`
}

func pendingKey(scope string, seq uint64) []byte {
	return appendSeq(indexPrefix(famPending, scope), seq)
}

// AddPendingRoute records that the Event at seq of scope still needs
// routing. Adding it again is not an error.
func (tx *Tx) AddPendingRoute(scope string, seq uint64) error {
	return tx.set(pendingKey(scope, seq), nil)
}

// DeletePendingRoute records that the Event at seq of scope needs no more
// routing. Deleting an absent one is not an error.
func (tx *Tx) DeletePendingRoute(scope string, seq uint64) error {
	return tx.delete(pendingKey(scope, seq))
}

// PendingRoutes reads up to limit owed routings (limit <= 0 or over
// MaxEvents is MaxEvents), by scope, then by sequence.
func (r *Reader) PendingRoutes(limit int) ([]PendingRoute, error) {
	return r.pendingRoutes([]byte{famPending}, limit)
}

// PendingRoutesOf reads up to limit owed routings of one scope (limit <= 0
// or over MaxEvents is MaxEvents), by sequence: a scope's oldest first, so
// one scope's backlog never hides another's.
func (r *Reader) PendingRoutesOf(scope string, limit int) ([]PendingRoute, error) {
	return r.pendingRoutes(indexPrefix(famPending, scope), limit)
}

func (r *Reader) pendingRoutes(prefix []byte, limit int) ([]PendingRoute, error) {
	if limit <= 0 || limit > MaxEvents {
		limit = MaxEvents
	}
	out := []PendingRoute{}
	err := r.scan(prefix, prefixEnd(prefix), func(k, _ []byte) (bool, error) {
		n, size := binary.Uvarint(k[1:])
		if size <= 0 || uint64(len(k)) != 1+uint64(size)+n+8 {
			return false, fmt.Errorf("pebblekv: pending route key %x is malformed", k)
		}
		out = append(out, PendingRoute{Scope: string(k[1+size : 1+size+int(n)]), Seq: binary.BigEndian.Uint64(k[len(k)-8:])})
		return len(out) < limit, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PendingScopes lists the scopes with owed routings, in order: the router
// takes each one's oldest without reading another's backlog.
func (r *Reader) PendingScopes() ([]string, error) {
	var out []string
	lower := []byte{famPending}
	end := prefixEnd(lower)
	for {
		var scope string
		found := false
		err := r.scan(lower, end, func(k, _ []byte) (bool, error) {
			n, size := binary.Uvarint(k[1:])
			if size <= 0 || uint64(len(k)) < 1+uint64(size)+n {
				return false, fmt.Errorf("pebblekv: pending route key %x is malformed", k)
			}
			scope, found = string(k[1+size:1+size+int(n)]), true
			return false, nil
		})
		if err != nil {
			return nil, err
		}
		if !found {
			return out, nil
		}
		out = append(out, scope)
		lower = prefixEnd(indexPrefix(famPending, scope))
	}
}
