package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// gatedPackages answers as fakePackages does, except that route.match of
// handler waits until the gate opens: a package slow to answer. It waits
// past the call's deadline (so how long the test takes changes nothing),
// and ends early only when the engine stops.
type gatedPackages struct {
	*fakePackages
	handler string
	gate    chan struct{}
	// entered gets each gated call's Event ID as the call starts waiting.
	entered  chan string
	inFlight atomic.Int64
	// most is the most gated calls seen waiting at once.
	most atomic.Int64
	once sync.Once
}

func newGated(pkgs *fakePackages, handler string) *gatedPackages {
	return &gatedPackages{fakePackages: pkgs, handler: handler, gate: make(chan struct{}), entered: make(chan string, 1024)}
}

// open lets every gated call, waiting or to come, through.
func (g *gatedPackages) open() { g.once.Do(func() { close(g.gate) }) }

func (g *gatedPackages) Call(ctx context.Context, pkg, method string, params, result any) error {
	if p, ok := params.(protocol.RouteMatchParams); ok && method == protocol.MethodRouteMatch && p.Route.Handler == g.handler {
		n := g.inFlight.Add(1)
		for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
		}
		g.entered <- p.Event.ID
		defer g.inFlight.Add(-1)
		select {
		case <-g.gate:
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return ctx.Err()
			}
			<-g.gate
		}
	}
	return g.fakePackages.Call(ctx, pkg, method, params, result)
}

// restart stops the engine and starts a new one on the same store calling
// the packages through as, as a daemon restarted.
func (r *rig) restart(as Packages) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := r.e.Stop(ctx); err != nil {
		r.t.Fatalf("stopping the engine: %v", err)
	}
	r.e = New(Deps{DB: r.db, Packages: as, Generation: func() *config.Generation { return r.gen },
		Accepted: func() { r.accepted.Add(1) }})
	r.e.Start(context.Background())
}

// waitEntered waits for the gated route.match of the Event id.
func (g *gatedPackages) waitEntered(t *testing.T, id string) {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case got := <-g.entered:
			if got == id {
				return
			}
		case <-deadline:
			t.Fatalf("route.match was never asked about %s", id)
		}
	}
}

// pendingSeqs is the store's pending set of scope, by sequence.
func (r *rig) pendingSeqs(scope string) []uint64 {
	r.t.Helper()
	var pend []pebblekv.PendingRoute
	if err := r.db.View(func(rd *pebblekv.Reader) (err error) {
		pend, err = rd.PendingRoutesOf(scope, 0)
		return err
	}); err != nil {
		r.t.Fatal(err)
	}
	var out []uint64
	for _, p := range pend {
		out = append(out, p.Seq)
	}
	return out
}

// TestSlowRouteHoldsUpOnlyItsScope: while a route.match of scope slow is
// unanswered, scope fast's Events route; slow's Events wait pending, in
// the store, and route in log order, exactly once, after a restart.
func TestSlowRouteHoldsUpOnlyItsScope(t *testing.T) {
	pkgs := newFakePackages()
	pkgs.declare("tracker", []protocol.Route{{Handler: "tracker.slow"}, {Handler: "tracker.issues"}}, protocol.WorkKind{Kind: "issue"})
	pkgs.setMatch("tracker.slow", keyed("tracker.issue", "issue"))
	pkgs.setMatch("tracker.issues", keyed("tracker.issue", "issue"))
	gated := newGated(pkgs, "tracker.slow")
	r := newRigOn(t, pkgs, gated, false,
		config.Scope{ID: "slow", Routes: []config.Route{{Handler: "tracker.slow"}}},
		config.Scope{ID: "fast", Routes: []config.Route{{Handler: "tracker.issues"}}})
	t.Cleanup(gated.open)

	first := r.accept("slow", "tracker.issue", map[string]string{"key": "k"})
	gated.waitEntered(t, first.ID)
	behind := r.accept("slow", "tracker.issue", map[string]string{"key": "k"})
	for i := range 3 {
		ev := r.accept("fast", "tracker.issue", map[string]string{"key": fmt.Sprint("f", i)})
		if d, _ := r.routed(ev); !d.Created {
			t.Errorf("fast's Event %d: %+v", i, d)
		}
	}
	r.decision(behind, pebblekv.RoutePending)
	if d := r.decision(first, pebblekv.RoutePending, pebblekv.RouteFailed); d.Work != "" {
		t.Errorf("the held Event reached a Work: %+v", d)
	}
	// Negative control: the held scope's Events are owed, in the store.
	waitUntil(t, "both of slow's Events in its pending set", func() bool {
		got := r.pendingSeqs("slow")
		return len(got) == 2 && got[0] == first.Seq && got[1] == behind.Seq
	})
	if got := r.pendingSeqs("fast"); len(got) != 0 {
		t.Errorf("fast still owes %v", got)
	}

	gated.open()
	r.restart(pkgs)
	d1, w := r.routed(first)
	d2, w2 := r.routed(behind)
	if !d1.Created || d2.Created || w2.ID != w.ID || len(w2.Inputs) != 2 || w2.Inputs[0] != first.ID || w2.Inputs[1] != behind.ID {
		t.Errorf("after the restart: %+v %+v, Work %+v", d1, d2, w2)
	}
	var slow []pebblekv.Work
	for _, w := range r.works() {
		if w.Scope == "slow" {
			slow = append(slow, w)
		}
	}
	if len(slow) != 1 {
		t.Errorf("scope slow has %d Works, want 1: %+v", len(slow), slow)
	}
}

// TestScopesRouteAtOnceUpToTheWorkerBound: route.match is asked in as
// many scopes at once as there are workers, and never in more.
func TestScopesRouteAtOnceUpToTheWorkerBound(t *testing.T) {
	pkgs := newFakePackages()
	pkgs.declare("tracker", []protocol.Route{{Handler: "tracker.slow"}}, protocol.WorkKind{Kind: "issue"})
	pkgs.setMatch("tracker.slow", keyed("tracker.issue", "issue"))
	gated := newGated(pkgs, "tracker.slow")
	n := maxRouteWorkers + 4
	var scopes []config.Scope
	for i := range n {
		scopes = append(scopes, config.Scope{ID: fmt.Sprint("s", i), Routes: []config.Route{{Handler: "tracker.slow"}}})
	}
	r := newRigOn(t, pkgs, gated, false, scopes...)
	t.Cleanup(gated.open)
	var evs []pebblekv.Event
	for i := range n {
		evs = append(evs, r.accept(fmt.Sprint("s", i), "tracker.issue", map[string]string{"key": "k"}))
	}
	waitUntil(t, "a route.match waiting in every worker", func() bool { return gated.inFlight.Load() == maxRouteWorkers })
	gated.open()
	for _, ev := range evs {
		r.routed(ev)
	}
	if most := gated.most.Load(); most != maxRouteWorkers {
		t.Errorf("at most %d route.match calls waited at once, want %d", most, maxRouteWorkers)
	}
}

// waitUntil polls cond until it holds, failing the test after waitFor.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, waitFor)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
