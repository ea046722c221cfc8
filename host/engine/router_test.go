package engine

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// issueRig is one scope "s" routing issue Events through handler
// "tracker.issues" of package tracker, kind "issue" with policy pol.
func issueRig(t *testing.T, pol protocol.WorkKind, dryRun bool) *rig {
	pkgs := newFakePackages()
	pol.Kind = "issue"
	pkgs.declare("tracker", []protocol.Route{{Handler: "tracker.issues"}}, pol)
	pkgs.setMatch("tracker.issues", keyed("tracker.issue", "issue"))
	return newRig(t, pkgs, dryRun, config.Scope{ID: "s", Routes: []config.Route{{Handler: "tracker.issues", Binding: "b"}}})
}

// TestRouteMatchCreatesWorkWithDisplay: a match creates a pending Work of
// its kind, with the display, keys, binding and the Event as its trigger.
func TestRouteMatchCreatesWorkWithDisplay(t *testing.T) {
	r := issueRig(t, protocol.WorkKind{}, false)
	ev := r.accept("s", "tracker.issue", map[string]string{"key": "issue:1", "title": "Fix the build"})
	d, w := r.routed(ev)
	if !d.Created || d.Route != 0 || d.Attempts != 1 {
		t.Errorf("decision %+v", d)
	}
	if w.Kind != "issue" || w.State != pebblekv.WorkPending || w.Binding != "b" || w.Trigger != ev.ID ||
		len(w.Keys) != 1 || w.Keys[0] != "issue:1" || w.Display == nil || w.Display.Title != "Fix the build" {
		t.Errorf("Work %+v", w)
	}
	if len(d.Reasons) != 1 || !d.Reasons[0].Match || d.Reasons[0].Reason != "a tracker.issue" {
		t.Errorf("reasons %+v", d.Reasons)
	}
}

// TestEventWithSameKeyJoinsOpenWork: a later Event with the key joins the
// open Work (its display replacing the Work's); a cancelled Work holds its
// key no more, so the next Event creates a new Work.
func TestEventWithSameKeyJoinsOpenWork(t *testing.T) {
	r := issueRig(t, protocol.WorkKind{Standing: true}, false)
	first := r.accept("s", "tracker.issue", map[string]string{"key": "issue:1", "title": "Fix the build"})
	_, w := r.routed(first)
	second := r.accept("s", "tracker.issue", map[string]string{"key": "issue:1", "title": "Fix the build, again"})
	d, joined := r.routed(second)
	if d.Created || joined.ID != w.ID || len(joined.Inputs) != 2 || joined.Inputs[1] != second.ID ||
		joined.Trigger != first.ID || joined.Display.Title != "Fix the build, again" {
		t.Fatalf("decision %+v, Work %+v", d, joined)
	}
	// Negative control: another key creates another Work.
	other := r.accept("s", "tracker.issue", map[string]string{"key": "issue:2"})
	if d, w2 := r.routed(other); !d.Created || w2.ID == w.ID {
		t.Errorf("another key joined: %+v", d)
	}

	if _, err := r.e.CancelWork(context.Background(), w.ID, "duplicate"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.e.CancelWork(context.Background(), w.ID, "again"); !errors.Is(err, protocol.ErrConflict) || !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("cancelling a cancelled Work: %v", err)
	}
	third := r.accept("s", "tracker.issue", map[string]string{"key": "issue:1"})
	d, w3 := r.routed(third)
	if !d.Created || w3.ID == w.ID {
		t.Errorf("a cancelled Work was joined: %+v", d)
	}
	if got := r.work(w.ID); got.State != pebblekv.WorkCancelled || !strings.Contains(got.Reason, "duplicate") || len(got.Inputs) != 2 {
		t.Errorf("cancelled Work %+v", got)
	}
}

// TestDisplayOverLimitIsDroppedAndRecorded: a display breaking a limit is
// dropped with the reason on the decision; the Event still routes and the
// Work keeps the display it had.
func TestDisplayOverLimitIsDroppedAndRecorded(t *testing.T) {
	r := issueRig(t, protocol.WorkKind{}, false)
	first := r.accept("s", "tracker.issue", map[string]string{"key": "k", "title": "Good title"})
	_, w := r.routed(first)
	long := r.accept("s", "tracker.issue", map[string]string{"key": "k", "title": strings.Repeat("x", protocol.MaxDisplayTitle+1)})
	d, joined := r.routed(long)
	if !strings.Contains(d.DisplayRefused, "title") || joined.ID != w.ID || joined.Display.Title != "Good title" {
		t.Errorf("decision %+v, Work display %+v", d, joined.Display)
	}
	twoLines := r.accept("s", "tracker.issue", map[string]string{"key": "new", "title": "one\ntwo"})
	d, created := r.routed(twoLines)
	if d.DisplayRefused == "" || !d.Created || created.Display != nil {
		t.Errorf("decision %+v, Work display %+v", d, created.Display)
	}
	// Negative control: a display within the limits is not refused.
	if d, _ := r.routed(first); d.DisplayRefused != "" {
		t.Errorf("a good display was refused: %s", d.DisplayRefused)
	}
}

// TestFailingRouteHoldsItsScopeOnly: a route.match that errs leaves the
// Event pending (and a later Event of its scope behind it), while another
// scope routes on; once the handler answers, both route, in order.
func TestFailingRouteHoldsItsScopeOnly(t *testing.T) {
	pkgs := newFakePackages()
	pkgs.declare("tracker", []protocol.Route{{Handler: "tracker.issues"}, {Handler: "tracker.flaky"}}, protocol.WorkKind{Kind: "issue"})
	pkgs.setMatch("tracker.issues", keyed("tracker.issue", "issue"))
	var broken atomic.Bool
	broken.Store(true)
	good := keyed("tracker.issue", "issue")
	pkgs.setMatch("tracker.flaky", func(p protocol.RouteMatchParams) (protocol.RouteMatchResult, error) {
		if broken.Load() {
			return protocol.RouteMatchResult{}, errBroken
		}
		return good(p)
	})
	r := newRig(t, pkgs, false,
		config.Scope{ID: "held", Routes: []config.Route{{Handler: "tracker.flaky"}}},
		config.Scope{ID: "free", Routes: []config.Route{{Handler: "tracker.issues"}}})
	first := r.accept("held", "tracker.issue", map[string]string{"key": "k"})
	d := r.decision(first, pebblekv.RouteFailed)
	if len(d.Reasons) != 1 || !strings.Contains(d.Reasons[0].Error, "broken") {
		t.Errorf("failed decision %+v", d)
	}
	behind := r.accept("held", "tracker.issue", map[string]string{"key": "k"})
	r.decision(behind, pebblekv.RoutePending)
	other := r.accept("free", "tracker.issue", map[string]string{"key": "k"})
	r.routed(other)
	var pending []pebblekv.PendingRoute
	if err := r.db.View(func(rd *pebblekv.Reader) (err error) {
		pending, err = rd.PendingRoutes(0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(pending) != 2 || pending[0].Seq != first.Seq || pending[1].Seq != behind.Seq {
		t.Fatalf("pending %+v", pending)
	}

	broken.Store(false)
	d1, w1 := r.routed(first)
	d2, w2 := r.routed(behind)
	if !d1.Created || d2.Created || w1.ID != w2.ID || d1.Attempts < 2 || w2.Inputs[0] != first.ID {
		t.Errorf("after the retry: %+v %+v, Work %+v", d1, d2, w2)
	}
	if err := r.db.View(func(rd *pebblekv.Reader) (err error) {
		pending, err = rd.PendingRoutes(0)
		return err
	}); err != nil || len(pending) != 0 {
		t.Errorf("still pending: %+v %v", pending, err)
	}
}

// TestRouteDecisions: what each kind of verdict records.
func TestRouteDecisions(t *testing.T) {
	pkgs := newFakePackages()
	pkgs.declare("tracker", []protocol.Route{{Handler: "tracker.issues"}, {Handler: "tracker.never"}, {Handler: "tracker.alien"}},
		protocol.WorkKind{Kind: "issue"}, protocol.WorkKind{Kind: "once", RunOnce: true}, protocol.WorkKind{Kind: "tick", Timed: true})
	pkgs.declare("other", nil, protocol.WorkKind{Kind: "foreign"})
	pkgs.setMatch("tracker.issues", keyed("tracker.issue", "issue"))
	pkgs.setMatch("tracker.never", func(protocol.RouteMatchParams) (protocol.RouteMatchResult, error) {
		return protocol.RouteMatchResult{Reason: "never matches"}, nil
	})
	pkgs.setMatch("tracker.alien", keyed("tracker.alien", "foreign"))
	pkgs.declare("once", []protocol.Route{{Handler: "once.r"}}, protocol.WorkKind{Kind: "oncekind", RunOnce: true})
	pkgs.setMatch("once.r", keyed("once.ev", "oncekind"))
	pkgs.declare("timed", []protocol.Route{{Handler: "timed.r"}}, protocol.WorkKind{Kind: "timedkind", Timed: true})
	pkgs.setMatch("timed.r", keyed("timed.ev", "timedkind"))
	routes := []config.Route{{Handler: "tracker.never"}, {Handler: "manual"}, {Handler: "tracker.issues"}, {Handler: "tracker.alien"}, {Handler: "once.r"}}
	r := newRig(t, pkgs, true,
		config.Scope{ID: "s", Routes: routes},
		config.Scope{ID: "off", Disabled: true, Routes: routes},
		config.Scope{ID: "dry", Routes: []config.Route{{Handler: "timed.r"}}})

	t.Run("manual request creates manual Work", func(t *testing.T) {
		ev := r.accept("s", ManualRequest, map[string]string{"title": "Look at the logs", "key": "m1"})
		d, w := r.routed(ev)
		if d.Route != 1 || w.Kind != ManualKind || w.Display.Title != "Look at the logs" || w.Keys[0] != "m1" {
			t.Errorf("decision %+v, Work %+v", d, w)
		}
		if d.Reasons[0].Match || d.Reasons[0].Reason != "never matches" {
			t.Errorf("first route's verdict %+v", d.Reasons[0])
		}
	})
	t.Run("no match records every route's reason", func(t *testing.T) {
		ev := r.accept("s", "tracker.unknown", map[string]string{})
		d := r.decision(ev, pebblekv.RouteUnmatched)
		if len(d.Reasons) != len(routes) || d.Work != "" {
			t.Fatalf("decision %+v", d)
		}
		for i, rr := range d.Reasons {
			if rr.Route != i || rr.Handler != routes[i].Handler || rr.Match || rr.Reason == "" {
				t.Errorf("route %d: %+v", i, rr)
			}
		}
		if d.Reasons[1].Reason != "manual matches only manual.request Events" {
			t.Errorf("manual's reason: %q", d.Reasons[1].Reason)
		}
	})
	t.Run("a kind the handler's package does not declare is refused", func(t *testing.T) {
		ev := r.accept("s", "tracker.alien", map[string]string{"key": "a"})
		d := r.decision(ev, pebblekv.RouteUnmatched)
		if last := d.Reasons[len(d.Reasons)-1]; !last.Match || !strings.Contains(last.Error, `"foreign"`) {
			t.Errorf("decision %+v", d)
		}
	})
	t.Run("run-once key creates no second Work", func(t *testing.T) {
		first := r.accept("s", "once.ev", map[string]string{"key": "o"})
		_, w := r.routed(first)
		if _, err := r.e.CancelWork(context.Background(), w.ID, ""); err != nil {
			t.Fatal(err)
		}
		again := r.accept("s", "once.ev", map[string]string{"key": "o"})
		d := r.decision(again, pebblekv.RouteUnmatched)
		if last := d.Reasons[len(d.Reasons)-1]; !strings.Contains(last.Error, "run-once") || !strings.Contains(last.Error, w.ID) {
			t.Errorf("decision %+v", d)
		}
		// Negative control: another key still creates one.
		r.routed(r.accept("s", "once.ev", map[string]string{"key": "o2"}))
	})
	t.Run("timed kind in a dry run starts none", func(t *testing.T) {
		ev := r.accept("dry", "timed.ev", map[string]string{"key": "t"})
		d := r.decision(ev, pebblekv.RouteUnmatched)
		if !strings.Contains(d.Reasons[0].Error, "dry run") {
			t.Errorf("decision %+v", d)
		}
	})
	t.Run("disabled scope routes nothing", func(t *testing.T) {
		before := pkgs.called("tracker.never")
		ev := r.accept("off", ManualRequest, map[string]string{})
		d := r.decision(ev, pebblekv.RouteUnmatched)
		if len(d.Reasons) != 1 || !strings.Contains(d.Reasons[0].Reason, "disabled") || pkgs.called("tracker.never") != before {
			t.Errorf("decision %+v", d)
		}
	})
	t.Run("event without scope is not routed", func(t *testing.T) {
		ev := r.accept("", ManualRequest, map[string]string{})
		d := r.decision(ev, pebblekv.RouteUnmatched)
		if len(d.Reasons) != 1 || !strings.Contains(d.Reasons[0].Reason, "no scope") {
			t.Errorf("decision %+v", d)
		}
	})
}

// TestUnreadablePayloadIsNoMatchWithoutAskingTheHandler: the schema gate
// answers "no match" for a payload of the handler's own schema that its
// package no longer reads (retired) or does not read yet (newer), without a
// call; a payload of a version it reads is asked about and routed.
func TestUnreadablePayloadIsNoMatchWithoutAskingTheHandler(t *testing.T) {
	r := issueRig(t, protocol.WorkKind{}, false)
	r.pkgs.mu.Lock()
	r.pkgs.manifests["tracker"].Provides.Schemas = []protocol.Schema{{Base: "tracker.issue", Versions: []int{2, 3}}}
	r.pkgs.mu.Unlock()
	for _, tc := range []struct {
		schema  string
		matched bool
	}{
		{"tracker.issue.v1", false},
		{"tracker.issue.v4", false},
		{"tracker.issue.v2", true},
	} {
		t.Run(tc.schema, func(t *testing.T) {
			before := r.pkgs.called("tracker.issues")
			var ev pebblekv.Event
			err := r.db.Update(func(tx *pebblekv.Tx) (err error) {
				ev, _, err = tx.Accept(pebblekv.EventInput{Scope: "s", Source: "test", Type: "tracker.issue", DeliveryID: tc.schema,
					Payload: protocol.Payload{Schema: tc.schema, Data: []byte(`{"key":"issue:` + tc.schema + `","title":"t"}`)}}, pebblekv.Limits{})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			r.e.Notify()
			d := r.decision(ev, pebblekv.RouteRouted, pebblekv.RouteUnmatched)
			asked := r.pkgs.called("tracker.issues") - before
			if tc.matched {
				if d.State != pebblekv.RouteRouted || asked != 1 {
					t.Errorf("decision %s after %d calls; want routed after one", d.State, asked)
				}
				return
			}
			if d.State != pebblekv.RouteUnmatched || asked != 0 || len(d.Reasons) != 1 || !strings.Contains(d.Reasons[0].Reason, "does not read payload schema") {
				t.Errorf("decision %+v after %d calls; want unmatched by the gate, the handler never asked", d, asked)
			}
		})
	}
}
