package engine

import (
	"context"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// TEMPORARY stub until wt-router lands.
type TraceEvent struct {
	Type    string
	Payload protocol.Payload
}
type TraceDecision struct {
	Route         int
	Handler, Kind string
	Keys          []string
	Display       *protocol.Display
	Join, Refused string
}
type Trace struct {
	Scope    string
	Routes   []pebblekv.RouteReason
	Decision *TraceDecision
}
type Sample struct {
	Route            int
	Handler, ID      string
	Title, Error     string
	Event            TraceEvent
}

func (e *Engine) Emit(ctx context.Context, scope, typ string, data jsontext.Value) (pebblekv.Event, error) {
	return pebblekv.Event{}, nil
}
func (e *Engine) Trace(ctx context.Context, scope string, ev TraceEvent) (Trace, error) { return Trace{}, nil }
func (e *Engine) Samples(ctx context.Context, scope string) ([]Sample, error)             { return nil, nil }
func (e *Engine) CancelWork(ctx context.Context, id, reason string) (pebblekv.Work, error) {
	return pebblekv.Work{}, nil
}
func (e *Engine) Changes() <-chan struct{} { return nil }
