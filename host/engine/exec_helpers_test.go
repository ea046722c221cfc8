package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// fakeExec is fakePackages plus one package, "runner", declaring one
// executor, "sh": it answers executor.* from the test's tables and
// channels, and records every executor call it gets.
type fakeExec struct {
	*fakePackages
	db *pebblekv.DB

	mu    sync.Mutex
	decl  protocol.Executor
	down  bool
	crash chan struct{}
	calls []string
	// ends holds each execution's executor.wait answer until the test
	// gives it (finish).
	ends       map[string]chan protocol.ExecutorWaitResult
	inflight   int
	maxFlight  int
	recoverErr error
	// unstored counts executor.run calls whose execution was not in the
	// store, running under the token's hash, when the call came.
	unstored int
	// unsettled counts executor.forget calls whose execution was not
	// settled in the store when the call came.
	unsettled int

	runs     chan protocol.ExecutorRunParams
	recovers chan protocol.ExecutorRecoverParams
	stops    chan protocol.ExecutorStopParams
	controls chan string
	forgets  chan protocol.ExecutorForgetParams
}

const (
	execPkg  = "runner"
	execName = "sh"
)

func newFakeExec(pkgs *fakePackages, db *pebblekv.DB, decl protocol.Executor) *fakeExec {
	decl.Name = execName
	return &fakeExec{fakePackages: pkgs, db: db, decl: decl, crash: make(chan struct{}),
		ends:     map[string]chan protocol.ExecutorWaitResult{},
		runs:     make(chan protocol.ExecutorRunParams, 16),
		recovers: make(chan protocol.ExecutorRecoverParams, 16),
		stops:    make(chan protocol.ExecutorStopParams, 16),
		controls: make(chan string, 16),
		forgets:  make(chan protocol.ExecutorForgetParams, 16)}
}

// ExecutorOwner names runner for sh while runner runs.
func (f *fakeExec) ExecutorOwner(executor string) (string, protocol.Executor) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down || executor != f.decl.Name {
		return "", protocol.Executor{}
	}
	return execPkg, f.decl
}

func (f *fakeExec) end(id string) chan protocol.ExecutorWaitResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch, ok := f.ends[id]
	if !ok {
		ch = make(chan protocol.ExecutorWaitResult, 1)
		f.ends[id] = ch
	}
	return ch
}

// finish makes execution id's executor.wait answer res.
func (f *fakeExec) finish(id string, res protocol.ExecutorWaitResult) { f.end(id) <- res }

// kill takes runner down: its executor.wait calls fail as a crash does,
// and the engine sees no owner of sh.
func (f *fakeExec) kill() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = true
	close(f.crash)
	f.crash = make(chan struct{})
	f.inflight = 0
}

// breakConn fails runner's executor.wait calls as a crash does while the
// engine still sees runner as the owner of sh: the daemon reads the broken
// pipe before it reaps the process.
func (f *fakeExec) breakConn() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.crash)
	f.crash = make(chan struct{})
	f.inflight = 0
}

// revive brings runner back.
func (f *fakeExec) revive() {
	f.mu.Lock()
	f.down = false
	f.mu.Unlock()
}

func (f *fakeExec) called(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == method {
			n++
		}
	}
	return n
}

func (f *fakeExec) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeExec) Call(ctx context.Context, pkg, method string, params, result any) error {
	if pkg != execPkg {
		return f.fakePackages.Call(ctx, pkg, method, params, result)
	}
	f.mu.Lock()
	down, crash := f.down, f.crash
	f.calls = append(f.calls, method)
	f.mu.Unlock()
	if down {
		return protocol.Errorf(protocol.ErrUnavailable, "%s is not running", pkg)
	}
	var out any
	switch method {
	case protocol.MethodExecutorRun:
		var p protocol.ExecutorRunParams
		if err := roundTrip(params, &p); err != nil {
			return err
		}
		f.checkStored(p)
		f.fly()
		f.runs <- p
		out = protocol.ExecutorRunResult{}
	case protocol.MethodExecutorRecover:
		var p protocol.ExecutorRecoverParams
		if err := roundTrip(params, &p); err != nil {
			return err
		}
		f.recovers <- p
		f.mu.Lock()
		err := f.recoverErr
		f.mu.Unlock()
		if err != nil {
			return err
		}
		f.fly()
		out = protocol.ExecutorRecoverResult{}
	case protocol.MethodExecutorWait:
		var p protocol.ExecutionRef
		if err := roundTrip(params, &p); err != nil {
			return err
		}
		select {
		case res := <-f.end(p.Execution):
			f.mu.Lock()
			f.inflight--
			f.mu.Unlock()
			out = res
		case <-crash:
			return protocol.Errorf(protocol.ErrTransport, "%s: the process exited", pkg)
		case <-ctx.Done():
			return ctx.Err()
		}
	case protocol.MethodExecutorStop:
		var p protocol.ExecutorStopParams
		if err := roundTrip(params, &p); err != nil {
			return err
		}
		f.stops <- p
		out = protocol.ExecutorStopResult{Stopped: true, Evidence: "process group gone"}
	case protocol.MethodExecutorInterrupt, protocol.MethodExecutorInject:
		f.controls <- method
		out = protocol.ExecutorControlResult{}
	case protocol.MethodExecutorForget:
		var p protocol.ExecutorForgetParams
		if err := roundTrip(params, &p); err != nil {
			return err
		}
		f.checkSettled(p.Execution)
		f.forgets <- p
		out = protocol.ExecutorControlResult{}
	case protocol.MethodExecutorLive:
		out = protocol.ExecutorLiveResult{Outputs: []protocol.LiveOutput{{Name: "stdout", Size: 2, Tail: []byte("hi")}}}
	default:
		return protocol.Errorf(protocol.ErrMethodNotFound, "%s", method)
	}
	return roundTrip(out, result)
}

// fly counts one more execution running at once.
func (f *fakeExec) fly() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inflight++
	f.maxFlight = max(f.maxFlight, f.inflight)
}

// checkStored counts a run whose execution is not yet committed, running
// under the hash of the token it carries.
func (f *fakeExec) checkStored(p protocol.ExecutorRunParams) {
	var x pebblekv.Execution
	var found bool
	_ = f.db.View(func(rd *pebblekv.Reader) (err error) {
		x, found, err = rd.Execution(p.Execution)
		return err
	})
	if !found || x.State != pebblekv.ExecRunning || x.TokenHash != pebblekv.TokenHash(p.Toolbelt.Token) || x.Epoch != p.Epoch {
		f.mu.Lock()
		f.unstored++
		f.mu.Unlock()
	}
}

// checkSettled counts a forget whose execution is not settled yet.
func (f *fakeExec) checkSettled(id string) {
	var x pebblekv.Execution
	var found bool
	_ = f.db.View(func(rd *pebblekv.Reader) (err error) {
		x, found, err = rd.Execution(id)
		return err
	})
	if !found || x.State != pebblekv.ExecSettled {
		f.mu.Lock()
		f.unsettled++
		f.mu.Unlock()
	}
}

func roundTrip(in, out any) error {
	raw, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// execRig is an engine on a real store and a hand-moved clock, routing
// each "src.task" Event of scope "s" to Work of kind task with binding b,
// which runs on runner's executor sh.
type execRig struct {
	t     *testing.T
	db    *pebblekv.DB
	pkgs  *fakePackages
	fx    *fakeExec
	clock *schedClock
	gen   *config.Generation
	e     *Engine
	stop  func()
	n     int
	// wrap, when set, is the Packages the engine is given around fx.
	wrap func(*fakeExec) Packages
}

// execOpts shape an execRig.
type execOpts struct {
	limit int
	decl  protocol.Executor
	kind  protocol.WorkKind
	// cfg, when set, changes the rig's configuration before it starts.
	cfg func(*config.Config)
	// wrap, when set, makes the Packages the engine is given around fx.
	wrap func(*fakeExec) Packages
}

func newExecRig(t *testing.T, o execOpts) *execRig {
	t.Helper()
	db, err := pebblekv.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	pkgs := newFakePackages()
	o.kind.Kind = "task"
	pkgs.declare("src", []protocol.Route{{Handler: "src.h"}}, o.kind)
	pkgs.setMatch("src.h", keyed("src.task", "task"))
	cfg := &config.Config{Scopes: []config.Scope{{
		ID:     "s",
		Routes: []config.Route{{Handler: "src.h", Binding: "b"}},
		Bindings: []config.Binding{{Name: "b", Executor: execName, Config: jsontext.Value(`{"command":"make"}`),
			Toolbelt: "cli", PassEnv: []string{"GRANTED", "UNSET"}}},
	}}}
	if o.limit > 0 {
		cfg.Settings.Concurrency = &o.limit
	}
	if o.cfg != nil {
		o.cfg(cfg)
	}
	r := &execRig{t: t, db: db, pkgs: pkgs, clock: newSchedClock(t0), gen: &config.Generation{ID: 1, Config: cfg}, wrap: o.wrap}
	r.fx = newFakeExec(pkgs, db, o.decl)
	r.start(r.fx)
	return r
}

// start builds and starts an engine on the rig's store with fx as its
// packages, as a daemon (re)start does.
func (r *execRig) start(fx *fakeExec) {
	r.fx = fx
	var pk Packages = fx
	if r.wrap != nil {
		pk = r.wrap(fx)
	}
	env := map[string]string{"GRANTED": "yes", "SECRET": "never passed"}
	r.e = New(Deps{DB: r.db, Packages: pk, Clock: r.clock, Generation: func() *config.Generation { return r.gen },
		Toolbelt: "/state/toolbelt.sock", Binary: "/usr/bin/open-conduit",
		Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	ctx, cancel := context.WithCancel(context.Background())
	r.e.Start(ctx)
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			if err := r.e.Stop(context.Background()); err != nil {
				r.t.Error(err)
			}
		})
	}
	r.t.Cleanup(r.stop)
}

// restart stops the engine and starts a new one on the same store with a
// new runner process (fx), as a daemon killed and started again.
func (r *execRig) restart(fx *fakeExec) {
	r.stop()
	r.start(fx)
}

// accept accepts a src.task Event with key and waits for its Work.
func (r *execRig) accept(key string) pebblekv.Work {
	r.t.Helper()
	r.n++
	raw, _ := json.Marshal(map[string]string{"key": key, "title": "task " + key})
	var ev pebblekv.Event
	if err := r.db.Update(func(tx *pebblekv.Tx) (err error) {
		ev, _, err = tx.Accept(pebblekv.EventInput{Scope: "s", Source: "test", Type: "src.task",
			DeliveryID: fmt.Sprint(r.n), Payload: protocol.Payload{Data: jsontext.Value(raw)}}, pebblekv.Limits{})
		return err
	}); err != nil {
		r.t.Fatal(err)
	}
	r.e.Notify()
	var d pebblekv.RouteDecision
	r.until("Event "+ev.ID+" routed", func(rd *pebblekv.Reader) (ok bool, err error) {
		var found bool
		d, found, err = rd.RouteDecision(ev.ID)
		return found && d.State == pebblekv.RouteRouted, err
	})
	return r.work(d.Work)
}

// until polls the store until cond holds, for at most waitFor.
func (r *execRig) until(what string, cond func(rd *pebblekv.Reader) (bool, error)) {
	r.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		var ok bool
		if err := r.db.View(func(rd *pebblekv.Reader) (err error) {
			ok, err = cond(rd)
			return err
		}); err != nil {
			r.t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("waited %s for %s", waitFor, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r *execRig) work(id string) pebblekv.Work {
	r.t.Helper()
	return readWork(r.t, r.db, id)
}

// workIn waits until Work id is in state.
func (r *execRig) workIn(id, state string) pebblekv.Work {
	r.t.Helper()
	var w pebblekv.Work
	r.until(fmt.Sprintf("Work %s %s", id, state), func(rd *pebblekv.Reader) (bool, error) {
		var found bool
		var err error
		w, found, err = rd.Work(id)
		return found && w.State == state, err
	})
	return w
}

func (r *execRig) execution(id string) pebblekv.Execution {
	r.t.Helper()
	var x pebblekv.Execution
	var found bool
	if err := r.db.View(func(rd *pebblekv.Reader) (err error) {
		x, found, err = rd.Execution(id)
		return err
	}); err != nil || !found {
		r.t.Fatalf("execution %s: found %v, %v", id, found, err)
	}
	return x
}

// settled waits until execution id settled.
func (r *execRig) settled(id string) pebblekv.Execution {
	r.t.Helper()
	var x pebblekv.Execution
	r.until("execution "+id+" settled", func(rd *pebblekv.Reader) (bool, error) {
		var found bool
		var err error
		x, found, err = rd.Execution(id)
		return found && x.State == pebblekv.ExecSettled, err
	})
	return x
}

// run waits for the next executor.run.
func (r *execRig) run() protocol.ExecutorRunParams {
	r.t.Helper()
	select {
	case p := <-r.fx.runs:
		return p
	case <-time.After(waitFor):
		r.t.Fatalf("waited %s for executor.run; calls %v", waitFor, r.fx.callLog())
	}
	return protocol.ExecutorRunParams{}
}

// inWait waits until the scheduler's executor.wait calls number at least
// n: only a call in flight sees breakConn (a later one waits as usual).
func (r *execRig) inWait(n int) {
	r.t.Helper()
	deadline := time.Now().Add(waitFor)
	for r.fx.called(protocol.MethodExecutorWait) < n {
		if time.Now().After(deadline) {
			r.t.Fatalf("waited %s for executor.wait call %d; calls %v", waitFor, n, r.fx.callLog())
		}
		time.Sleep(time.Millisecond)
	}
}

// noRun fails if Work id has other than attempts executions after a
// scheduler pass that began now (a pass commits each attempt it starts).
func (r *execRig) noRun(id string, attempts int) {
	r.t.Helper()
	r.pass()
	if hist := r.history(id); len(hist) != attempts {
		r.t.Fatalf("Work %s has %d attempts, want %d", id, len(hist), attempts)
	}
}

func (r *execRig) history(id string) []pebblekv.Execution {
	r.t.Helper()
	hist, err := r.e.history(id)
	if err != nil {
		r.t.Fatal(err)
	}
	return hist
}

// pass waits for a look of the scheduler at the store that began after
// the call.
func (r *execRig) pass() {
	r.t.Helper()
	s := r.e.exec
	begun := s.begun.Load()
	s.kick()
	deadline := time.Now().Add(waitFor)
	for s.passed.Load() <= begun {
		if time.Now().After(deadline) {
			r.t.Fatalf("waited %s for a scheduler pass", waitFor)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// advance moves the clock by d and waits for a scheduler pass after it.
func (r *execRig) advance(d time.Duration) {
	r.t.Helper()
	r.clock.advance(d)
	r.pass()
}

// unobserved waits until no goroutine of the scheduler observes
// execution id, or until an executor.recover was sent.
func (r *execRig) unobserved(id string) {
	r.t.Helper()
	s := r.e.exec
	deadline := time.Now().Add(waitFor)
	for {
		s.mu.Lock()
		busy := s.observed[id]
		s.mu.Unlock()
		if !busy || r.fx.called(protocol.MethodExecutorRecover) > 0 {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("execution %s still observed after %s", id, waitFor)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// byToken resolves a run's token, failing the test on a refusal.
func (r *execRig) byToken(token string) pebblekv.Execution {
	r.t.Helper()
	x, err := r.e.ExecutionByToken(token)
	if err != nil {
		r.t.Fatalf("token of a running execution: %v", err)
	}
	return x
}
