package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// waitFor is how long a test waits for the router: generous, for a loaded
// machine.
const waitFor = 60 * time.Second

// matchFunc answers route.match for one handler.
type matchFunc func(p protocol.RouteMatchParams) (protocol.RouteMatchResult, error)

// fakePackages answers the engine's calls from tables: which package
// declares which handler and kind, and each handler's route.match.
type fakePackages struct {
	mu        sync.Mutex
	manifests map[string]*protocol.Manifest
	match     map[string]matchFunc
	samples   map[string]func() (protocol.RouteSamplesResult, error)
	trigger   func(p protocol.WorkKindTriggerParams) (protocol.WorkKindTriggerResult, error)
	// commit answers emit.commit (exec_emit_test.go).
	commit func(ctx context.Context, p protocol.EmitCommitParams) (protocol.EmitCommitResult, error)
	calls  map[string]int
}

func newFakePackages() *fakePackages {
	return &fakePackages{manifests: map[string]*protocol.Manifest{}, match: map[string]matchFunc{},
		samples: map[string]func() (protocol.RouteSamplesResult, error){}, calls: map[string]int{}}
}

// declare adds a running package with route handlers and Work kinds.
func (f *fakePackages) declare(pkg string, routes []protocol.Route, kinds ...protocol.WorkKind) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := &protocol.Manifest{Name: pkg}
	m.Provides.Routes = routes
	m.Provides.WorkKinds = kinds
	f.manifests[pkg] = m
}

func (f *fakePackages) setMatch(handler string, fn matchFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.match[handler] = fn
}

func (f *fakePackages) called(handler string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[handler]
}

func (f *fakePackages) Call(ctx context.Context, pkg, method string, params, result any) error {
	f.mu.Lock()
	m, ok := f.manifests[pkg]
	f.mu.Unlock()
	if !ok {
		return protocol.Errorf(protocol.ErrUnavailable, "%s is not running", pkg)
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	var out any
	switch method {
	case protocol.MethodRouteMatch:
		var p protocol.RouteMatchParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return err
		}
		f.mu.Lock()
		fn := f.match[p.Route.Handler]
		f.calls[p.Route.Handler]++
		f.mu.Unlock()
		if fn == nil || !declares(m, p.Route.Handler) {
			return protocol.Errorf(protocol.ErrMethodNotFound, "%s answers no route.match for %s", pkg, p.Route.Handler)
		}
		out, err = fn(p)
	case protocol.MethodRouteSamples:
		var p protocol.RouteSamplesParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return err
		}
		f.mu.Lock()
		fn := f.samples[p.Route.Handler]
		f.mu.Unlock()
		if fn == nil {
			return protocol.Errorf(protocol.ErrMethodNotFound, "no samples")
		}
		out, err = fn()
	case protocol.MethodWorkKindTrigger:
		var p protocol.WorkKindTriggerParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return err
		}
		if f.trigger == nil {
			return protocol.Errorf(protocol.ErrMethodNotFound, "no trigger")
		}
		out, err = f.trigger(p)
	case protocol.MethodEmitCommit:
		var p protocol.EmitCommitParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return err
		}
		f.mu.Lock()
		fn := f.commit
		f.calls[method]++
		f.mu.Unlock()
		if fn == nil {
			return protocol.Errorf(protocol.ErrMethodNotFound, "no emit.commit")
		}
		out, err = fn(ctx, p)
	default:
		return protocol.Errorf(protocol.ErrMethodNotFound, "%s", method)
	}
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	raw, err = json.Marshal(out)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, result)
}

func declares(m *protocol.Manifest, handler string) bool {
	for _, r := range m.Provides.Routes {
		if r.Handler == handler {
			return true
		}
	}
	return false
}

func (f *fakePackages) Manifest(pkg string) (*protocol.Manifest, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.manifests[pkg]
	return m, ok
}

func (f *fakePackages) RouteHandlerOwner(handler string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, m := range f.manifests {
		if declares(m, handler) {
			return name
		}
	}
	return ""
}

func (f *fakePackages) WorkKindOwner(kind string) (string, protocol.WorkKind) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, m := range f.manifests {
		for _, k := range m.Provides.WorkKinds {
			if k.Kind == kind {
				return name, k
			}
		}
	}
	return "", protocol.WorkKind{}
}

func (f *fakePackages) RecurrenceOwner(string) string { return "" }

// rig is an engine on a real store in a temporary directory.
type rig struct {
	t    *testing.T
	db   *pebblekv.DB
	pkgs *fakePackages
	e    *Engine
	gen  *config.Generation
	n    int
	// accepted counts the engine's Accepted calls.
	accepted atomic.Int64
}

// newRig starts an engine over scopes, with dryRun as the daemon's.
func newRig(t *testing.T, pkgs *fakePackages, dryRun bool, scopes ...config.Scope) *rig {
	t.Helper()
	return newRigOn(t, pkgs, pkgs, dryRun, scopes...)
}

// newRigOn is newRig with the engine calling the packages through as,
// which answers from pkgs.
func newRigOn(t *testing.T, pkgs *fakePackages, as Packages, dryRun bool, scopes ...config.Scope) *rig {
	t.Helper()
	db, err := pebblekv.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, db: db, pkgs: pkgs, gen: &config.Generation{ID: 1, Config: &config.Config{Scopes: scopes}}}
	r.e = New(Deps{DB: db, Packages: as, Generation: func() *config.Generation { return r.gen }, DryRun: dryRun,
		Accepted: func() { r.accepted.Add(1) }})
	ctx, cancel := context.WithCancel(context.Background())
	r.e.Start(ctx)
	t.Cleanup(func() {
		cancel()
		if err := r.e.Stop(context.Background()); err != nil {
			t.Error(err)
		}
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// accept accepts an Event of scope the way a package's emission does, and
// tells the engine.
func (r *rig) accept(scope, typ string, data any) pebblekv.Event {
	r.t.Helper()
	raw, err := json.Marshal(data)
	if err != nil {
		r.t.Fatal(err)
	}
	r.n++
	var ev pebblekv.Event
	err = r.db.Update(func(tx *pebblekv.Tx) (err error) {
		ev, _, err = tx.Accept(pebblekv.EventInput{Scope: scope, Source: "test", Type: typ,
			DeliveryID: fmt.Sprint(r.n), Payload: protocol.Payload{Data: jsontext.Value(raw)}}, pebblekv.Limits{})
		return err
	})
	if err != nil {
		r.t.Fatal(err)
	}
	r.e.Notify()
	return ev
}

// decision waits until ev's route decision is in one of states.
func (r *rig) decision(ev pebblekv.Event, states ...string) pebblekv.RouteDecision {
	r.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		var d pebblekv.RouteDecision
		var found bool
		if err := r.db.View(func(rd *pebblekv.Reader) (err error) {
			d, found, err = rd.RouteDecision(ev.ID)
			return err
		}); err != nil {
			r.t.Fatal(err)
		}
		for _, s := range states {
			if found && d.State == s {
				return d
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("event %s (%s) has decision %+v (found %v), want state %v", ev.ID, ev.Type, d, found, states)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// routed waits until ev is routed and returns its Work.
func (r *rig) routed(ev pebblekv.Event) (pebblekv.RouteDecision, pebblekv.Work) {
	r.t.Helper()
	d := r.decision(ev, pebblekv.RouteRouted, pebblekv.RouteUnmatched)
	if d.State != pebblekv.RouteRouted {
		r.t.Fatalf("event %s was not routed: %+v", ev.ID, d)
	}
	return d, r.work(d.Work)
}

func (r *rig) work(id string) pebblekv.Work {
	r.t.Helper()
	return readWork(r.t, r.db, id)
}

// readWork reads Work id from the store; a Work that is not there fails
// the test.
func readWork(t *testing.T, db *pebblekv.DB, id string) pebblekv.Work {
	t.Helper()
	var w pebblekv.Work
	var found bool
	if err := db.View(func(rd *pebblekv.Reader) (err error) {
		w, found, err = rd.Work(id)
		return err
	}); err != nil || !found {
		t.Fatalf("Work %q: found %v, %v", id, found, err)
	}
	return w
}

func (r *rig) works() []pebblekv.Work {
	r.t.Helper()
	var ws []pebblekv.Work
	if err := r.db.View(func(rd *pebblekv.Reader) (err error) {
		ws, _, err = rd.Works(pebblekv.WorkQuery{})
		return err
	}); err != nil {
		r.t.Fatal(err)
	}
	return ws
}

// keyed is a handler that matches Events of type typ with kind, keyed by
// the payload's key and titled by its title.
func keyed(typ, kind string) matchFunc {
	return func(p protocol.RouteMatchParams) (protocol.RouteMatchResult, error) {
		if p.Event.Type != typ {
			return protocol.RouteMatchResult{Reason: "only " + typ}, nil
		}
		var data struct {
			Key   string `json:"key"`
			Title string `json:"title"`
		}
		if err := json.Unmarshal(p.Event.Payload.Data, &data); err != nil {
			return protocol.RouteMatchResult{}, err
		}
		res := protocol.RouteMatchResult{Match: true, Reason: "a " + typ, Kind: kind}
		if data.Key != "" {
			res.Keys = []string{data.Key}
		}
		if data.Title != "" {
			res.Display = &protocol.Display{Title: data.Title}
		}
		return res, nil
	}
}

var errBroken = errors.New("handler broken")
