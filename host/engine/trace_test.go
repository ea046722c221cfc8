package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// TestTraceExplainsWithoutWriting: a trace asks every route, says which
// would win and which open Work it would join, and writes nothing.
func TestTraceExplainsWithoutWriting(t *testing.T) {
	pkgs := newFakePackages()
	pkgs.declare("tracker", []protocol.Route{{Handler: "tracker.issues"}, {Handler: "tracker.broken"}}, protocol.WorkKind{Kind: "issue"})
	pkgs.setMatch("tracker.issues", keyed("tracker.issue", "issue"))
	pkgs.setMatch("tracker.broken", func(protocol.RouteMatchParams) (protocol.RouteMatchResult, error) {
		return protocol.RouteMatchResult{}, errBroken
	})
	r := newRig(t, pkgs, false,
		config.Scope{ID: "s", Routes: []config.Route{{Handler: "manual"}, {Handler: "tracker.issues"}, {Handler: "tracker.broken"}}},
		config.Scope{ID: "b", Routes: []config.Route{{Handler: "tracker.broken"}, {Handler: "tracker.issues"}}})
	_, open := r.routed(r.accept("s", "tracker.issue", map[string]string{"key": "k"}))
	var seq uint64
	_ = r.db.View(func(rd *pebblekv.Reader) (err error) { seq, err = rd.LatestSequence(); return err })
	ctx := context.Background()
	issue := TraceEvent{Type: "tracker.issue", Payload: protocol.Payload{Data: jsontext.Value(`{"key":"k","title":"T"}`)}}

	tr, err := r.e.Trace(ctx, "s", issue)
	if err != nil {
		t.Fatal(err)
	}
	d := tr.Decision
	if len(tr.Routes) != 3 || tr.Routes[0].Match || !tr.Routes[1].Match || tr.Routes[2].Error == "" {
		t.Errorf("routes %+v", tr.Routes)
	}
	if !d.Match || d.Route != 1 || d.Kind != "issue" || d.Work != open.ID || d.Create || d.Display.Title != "T" || d.Refused != "" {
		t.Errorf("decision %+v", d)
	}
	fresh, err := r.e.Trace(ctx, "s", TraceEvent{Type: "tracker.issue", Payload: protocol.Payload{Data: jsontext.Value(`{"key":"new"}`)}})
	if err != nil || !fresh.Decision.Create || fresh.Decision.Work != "" {
		t.Errorf("a new key: %+v, %v", fresh.Decision, err)
	}
	held, err := r.e.Trace(ctx, "b", issue)
	if err != nil || held.Decision.Match || !strings.Contains(held.Decision.Refused, "pending") {
		t.Errorf("a failing first route: %+v, %v", held.Decision, err)
	}
	if _, err := r.e.Trace(ctx, "nowhere", issue); !errors.Is(err, protocol.ErrNotFound) {
		t.Errorf("unknown scope: %v", err)
	}
	var after uint64
	var ws []pebblekv.Work
	_ = r.db.View(func(rd *pebblekv.Reader) (err error) {
		if after, err = rd.LatestSequence(); err != nil {
			return err
		}
		ws, _, err = rd.Works(pebblekv.WorkQuery{})
		return err
	})
	if after != seq || len(ws) != 1 {
		t.Errorf("a trace wrote: sequence %d -> %d, %d Works", seq, after, len(ws))
	}
}

// TestSamplesListFailingHandlersError: samples of each handler declaring
// them; a failing one is listed with its error, a handler without samples
// is not asked.
func TestSamplesListFailingHandlersError(t *testing.T) {
	pkgs := newFakePackages()
	pkgs.declare("tracker", []protocol.Route{{Handler: "tracker.issues", Samples: true}, {Handler: "tracker.broken", Samples: true}, {Handler: "tracker.plain"}})
	pkgs.samples["tracker.issues"] = func() (protocol.RouteSamplesResult, error) {
		return protocol.RouteSamplesResult{Samples: []protocol.RouteSample{{ID: "opened", Title: "An issue opened",
			Event: protocol.SampleEvent{Type: "tracker.issue", Payload: protocol.Payload{Data: jsontext.Value(`{"key":"k"}`)}}},
			{ID: "foreign", Event: protocol.SampleEvent{Type: "x", Payload: protocol.Payload{Schema: "other.thing.v1", Data: jsontext.Value(`{}`)}}}}}, nil
	}
	pkgs.samples["tracker.broken"] = func() (protocol.RouteSamplesResult, error) { return protocol.RouteSamplesResult{}, errBroken }
	pkgs.samples["tracker.plain"] = func() (protocol.RouteSamplesResult, error) {
		t.Error("a handler without samples was asked")
		return protocol.RouteSamplesResult{}, nil
	}
	r := newRig(t, pkgs, false, config.Scope{ID: "s", Routes: []config.Route{
		{Handler: "manual"}, {Handler: "tracker.issues"}, {Handler: "tracker.broken"}, {Handler: "tracker.plain"}}})
	ss, err := r.e.Samples(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 3 || ss[0].Route != 1 || ss[0].ID != "opened" || ss[0].Event.Type != "tracker.issue" || ss[0].Error != "" ||
		ss[1].ID != "foreign" || ss[1].Event != nil || !strings.Contains(ss[1].Error, "dropped") ||
		ss[2].Route != 2 || ss[2].Event != nil || !strings.Contains(ss[2].Error, "broken") {
		t.Errorf("samples %+v", ss)
	}
}

// TestEmitRoutesAndSignalsChanges: an operator's Event is accepted with
// source operator, routed by the manual route, and wakes Changes; a bad
// scope or data is refused, naming what to change.
func TestEmitRoutesAndSignalsChanges(t *testing.T) {
	r := newRig(t, newFakePackages(), false, config.Scope{ID: "s", Routes: []config.Route{{Handler: "manual"}}},
		config.Scope{ID: "off", Disabled: true})
	ctx := context.Background()
	changed := r.e.Changes()
	before := r.accepted.Load()
	ev, err := r.e.Emit(ctx, "s", ManualRequest, jsontext.Value(`{"title":"By hand"}`))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(waitFor):
		t.Fatal("Changes was not signalled")
	}
	if r.accepted.Load() == before {
		t.Error("Emit did not tell Deps.Accepted")
	}
	if ev.Source != OperatorSource || ev.Payload.Schema != ManualRequest+".v1" || ev.Scope != "s" {
		t.Errorf("event %+v", ev)
	}
	if _, w := r.routed(ev); w.Display.Title != "By hand" || w.Kind != ManualKind {
		t.Errorf("Work %+v", w)
	}
	for _, tc := range []struct {
		name, scope, typ, data string
		want                   error
	}{
		{"unknown scope", "nowhere", ManualRequest, `{}`, protocol.ErrNotFound},
		{"disabled scope", "off", ManualRequest, `{}`, protocol.ErrInvalid},
		{"no type", "s", "", `{}`, protocol.ErrInvalid},
		{"bad data", "s", ManualRequest, `{`, protocol.ErrInvalid},
	} {
		if _, err := r.e.Emit(ctx, tc.scope, tc.typ, jsontext.Value(tc.data)); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestTriggerKindAsksWorkKindTrigger: a trigger kind's new Work takes the
// trigger work_kind.trigger names; a failing call falls back to the first
// input.
func TestTriggerKindAsksWorkKindTrigger(t *testing.T) {
	pkgs := newFakePackages()
	pkgs.declare("sched", []protocol.Route{{Handler: "sched.jobs"}}, protocol.WorkKind{Kind: "job", Trigger: true})
	pkgs.setMatch("sched.jobs", keyed("sched.fired", "job"))
	asked := make(chan protocol.WorkKindTriggerParams, 4)
	pkgs.trigger = func(p protocol.WorkKindTriggerParams) (protocol.WorkKindTriggerResult, error) {
		asked <- p
		if strings.Contains(string(p.Inputs[0].Payload.Data), "fail") {
			return protocol.WorkKindTriggerResult{}, errBroken
		}
		return protocol.WorkKindTriggerResult{Trigger: p.Inputs[0].ID}, nil
	}
	r := newRig(t, pkgs, false, config.Scope{ID: "s", Routes: []config.Route{{Handler: "sched.jobs"}}})
	ev := r.accept("s", "sched.fired", map[string]string{"key": "j"})
	_, w := r.routed(ev)
	p := <-asked
	if p.Kind != "job" || p.Work.ID != w.ID || len(p.Inputs) != 1 || p.Inputs[0].ID != ev.ID || w.Trigger != ev.ID {
		t.Errorf("asked %+v, Work %+v", p, w)
	}
	failing := r.accept("s", "sched.fired", map[string]string{"key": "j2", "title": "fail"})
	if _, w := r.routed(failing); w.Trigger != failing.ID {
		t.Errorf("fallback trigger %q", w.Trigger)
	}
}

// sessionLikePackages answers as the daemon's packages do: a plain call
// of an in-transaction method is refused, CallInTx makes it.
type sessionLikePackages struct{ *fakePackages }

func (s sessionLikePackages) Call(ctx context.Context, pkg, method string, params, result any) error {
	if method == protocol.MethodWorkKindTrigger || method == protocol.MethodRecurrenceNext {
		return fmt.Errorf("%s is an in-transaction method: use CallInTx", method)
	}
	return s.fakePackages.Call(ctx, pkg, method, params, result)
}

func (s sessionLikePackages) CallInTx(ctx context.Context, pkg, method string, params, result any) error {
	return s.fakePackages.Call(ctx, pkg, method, params, result)
}

// TestTriggerGoesThroughTheInTransactionCall: work_kind.trigger is an
// in-transaction method, which the daemon's sessions refuse as a plain
// call; the router asks it through CallInTx, so the package is asked.
func TestTriggerGoesThroughTheInTransactionCall(t *testing.T) {
	pkgs := newFakePackages()
	pkgs.declare("sched", []protocol.Route{{Handler: "sched.jobs"}}, protocol.WorkKind{Kind: "job", Trigger: true})
	pkgs.setMatch("sched.jobs", keyed("sched.fired", "job"))
	asked := make(chan protocol.WorkKindTriggerParams, 1)
	pkgs.trigger = func(p protocol.WorkKindTriggerParams) (protocol.WorkKindTriggerResult, error) {
		asked <- p
		return protocol.WorkKindTriggerResult{Trigger: p.Inputs[0].ID}, nil
	}
	r := newRigOn(t, pkgs, sessionLikePackages{pkgs}, false, config.Scope{ID: "s", Routes: []config.Route{{Handler: "sched.jobs"}}})
	ev := r.accept("s", "sched.fired", map[string]string{"key": "j"})
	r.routed(ev)
	select {
	case p := <-asked:
		if p.Kind != "job" || len(p.Inputs) != 1 || p.Inputs[0].ID != ev.ID {
			t.Errorf("asked %+v", p)
		}
	default:
		t.Fatal("the package was never asked work_kind.trigger: a plain call of an in-transaction method is refused")
	}
}
