package toolbelt

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/engine"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// deadline bounds every wait of these tests: generous, for a loaded box.
const deadline = 60 * time.Second

// fakeEngine is the Engine the toolbelt declares: executions by token, and
// the builtins it records.
type fakeEngine struct {
	mu       sync.Mutex
	byToken  map[string]pebblekv.Execution
	waits    []declaredWait
	outcomes []declaredOutcome
	// waitErr, when set, refuses DeclareWait.
	waitErr error
	// emission is the Emitter's state (emit_test.go).
	emission
}

type declaredWait struct {
	exec  string
	owner string
	plan  protocol.WaitPlan
}

type declaredOutcome struct {
	exec, state, reason string
}

func (e *fakeEngine) ExecutionByToken(token string) (pebblekv.Execution, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.byToken[token]
	if !ok {
		return pebblekv.Execution{}, protocol.Errorf(protocol.ErrUnauthorized, "no running execution has this token")
	}
	return x, nil
}

func (e *fakeEngine) ReadContext(x pebblekv.Execution) (engine.ToolContext, error) {
	return engine.ToolContext{Work: protocol.WorkView{ID: x.Work, Scope: x.Scope}, Context: jsontext.Value(`{"model":"m1"}`)}, nil
}

func (e *fakeEngine) DeclareWait(_ context.Context, x pebblekv.Execution, owner string, p protocol.WaitPlan) (pebblekv.Wait, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.waitErr != nil {
		return pebblekv.Wait{}, e.waitErr
	}
	e.waits = append(e.waits, declaredWait{exec: x.ID, owner: owner, plan: p})
	return pebblekv.Wait{ID: "wt_" + x.ID, Work: x.Work, Owner: owner, Description: p.Description, State: "active"}, nil
}

func (e *fakeEngine) DeclareOutcome(_ context.Context, x pebblekv.Execution, state, reason string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.outcomes = append(e.outcomes, declaredOutcome{exec: x.ID, state: state, reason: reason})
	return nil
}

func (e *fakeEngine) setWaitErr(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.waitErr = err
}

func (e *fakeEngine) declaredWaits() []declaredWait {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]declaredWait(nil), e.waits...)
}

func (e *fakeEngine) declaredOutcomes() []declaredOutcome {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]declaredOutcome(nil), e.outcomes...)
}

// fakePackages is the Packages the toolbelt declares: a table of declared
// operations and the calls it was given.
type fakePackages struct {
	// entered is sent each call as it starts, when set (before the rig
	// serves).
	entered chan struct{}

	mu  sync.Mutex
	ops map[string]ownedOp
	// handle answers operation.call; nil echoes the input.
	handle func(ctx context.Context, p protocol.OperationCallParams) (protocol.OperationCallResult, error)
	// plan answers operation.wait.
	plan protocol.WaitPlan
	// draft answers operation.emit; without a type the package does not
	// serve it (method_not_found).
	draft protocol.EmitDraft
	calls []pkgCall
}

func (p *fakePackages) setHandler(h func(ctx context.Context, p protocol.OperationCallParams) (protocol.OperationCallResult, error)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.handle = h
}

func (p *fakePackages) setPlan(plan protocol.WaitPlan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.plan = plan
}

func (p *fakePackages) declare(pkg string, op protocol.Operation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ops[op.Name] = ownedOp{pkg, op}
}

type ownedOp struct {
	pkg string
	op  protocol.Operation
}

type pkgCall struct {
	pkg, method string
	params      protocol.OperationCallParams
}

func (p *fakePackages) OperationOwner(name string) (string, protocol.Operation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	o, ok := p.ops[name]
	if !ok {
		return "", protocol.Operation{}
	}
	return o.pkg, o.op
}

func (p *fakePackages) Call(ctx context.Context, pkg, method string, params, result any) error {
	cp := params.(protocol.OperationCallParams)
	p.mu.Lock()
	p.calls = append(p.calls, pkgCall{pkg: pkg, method: method, params: cp})
	handle, plan, draft := p.handle, p.plan, p.draft
	p.mu.Unlock()
	if p.entered != nil {
		p.entered <- struct{}{}
	}
	switch method {
	case protocol.MethodOperationCall:
		res := protocol.OperationCallResult{Output: protocol.Payload{Data: cp.Input.Data}}
		if handle != nil {
			var err error
			if res, err = handle(ctx, cp); err != nil {
				return err
			}
		}
		*result.(*protocol.OperationCallResult) = res
	case protocol.MethodOperationWait:
		*result.(*protocol.OperationWaitResult) = protocol.OperationWaitResult{Wait: plan}
	case protocol.MethodOperationEmit:
		if draft.Type == "" {
			return protocol.Errorf(protocol.ErrMethodNotFound, "%s serves no %s", pkg, method)
		}
		*result.(*protocol.OperationEmitResult) = protocol.OperationEmitResult{Event: draft}
	default:
		return errors.New("unexpected method " + method)
	}
	return nil
}

// callsOf is the calls of method made so far.
func (p *fakePackages) callsOf(method string) []pkgCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []pkgCall
	for _, c := range p.calls {
		if c.method == method {
			out = append(out, c)
		}
	}
	return out
}

// rig is a toolbelt serving on a real Unix socket over a real store.
type rig struct {
	t      testing.TB
	eng    *fakeEngine
	pkgs   *fakePackages
	db     *pebblekv.DB
	socket string
	srv    *Server

	mu     sync.Mutex
	grants map[string]Grant
}

// setGrant configures binding's grant; ok false takes the binding out.
func (r *rig) setGrant(binding string, g Grant, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ok {
		r.grants[binding] = g
	} else {
		delete(r.grants, binding)
	}
}

// Executions the rig knows: two of one Work, one of another, each by its
// token.
var (
	execA  = pebblekv.Execution{ID: "x_a", Work: "w_1", Scope: "s", Binding: "agent", Package: "shell", Executor: "shell", Epoch: 1}
	execA2 = pebblekv.Execution{ID: "x_a2", Work: "w_1", Scope: "s", Binding: "agent", Package: "shell", Executor: "shell", Epoch: 2}
	execB  = pebblekv.Execution{ID: "x_b", Work: "w_2", Scope: "s", Binding: "agent", Package: "shell", Executor: "shell", Epoch: 1}
	execN  = pebblekv.Execution{ID: "x_n", Work: "w_3", Scope: "s", Binding: "quiet", Package: "shell", Executor: "shell", Epoch: 1}
)

// Tokens of the rig's executions.
const (
	tokenA  = "tok-a"
	tokenA2 = "tok-a2"
	tokenB  = "tok-b"
	tokenN  = "tok-n"
)

// newRig serves a toolbelt whose binding "agent" grants the builtins,
// notes.add (a handler of package notes) and gh.wait (a wait operation of
// package gh), but not notes.delete; binding "quiet" has toolbelt none.
func newRig(t testing.TB) *rig {
	t.Helper()
	dir := shortDir(t)
	db, err := pebblekv.Open(filepath.Join(dir, "db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{
		t: t,
		eng: &fakeEngine{byToken: map[string]pebblekv.Execution{
			tokenA: execA, tokenA2: execA2, tokenB: execB, tokenN: execN,
		}},
		pkgs: &fakePackages{ops: map[string]ownedOp{
			"notes.add":    {"notes", protocol.Operation{Name: "notes.add", Kind: protocol.OperationHandler}},
			"notes.delete": {"notes", protocol.Operation{Name: "notes.delete", Kind: protocol.OperationHandler}},
			"gh.wait":      {"gh", protocol.Operation{Name: "gh.wait", Kind: protocol.OperationWait}},
			"gh.emit":      {"gh", protocol.Operation{Name: "gh.emit", Kind: protocol.OperationEmit}},
		}},
		grants: map[string]Grant{
			"agent": {Operations: []string{"read_context", "wait", "declare_outcome", "notes.add", "gh.wait", "gh.emit", "gone.op"}, Connection: "bot", Toolbelt: "cli"},
			"quiet": {Operations: []string{"read_context", "notes.add"}, Toolbelt: "none"},
		},
		db:     db,
		socket: filepath.Join(dir, "state", SocketName),
	}
	r.eng.db = db
	r.srv = New(Deps{
		Engine:   r.eng,
		Packages: r.pkgs,
		Grant: func(scope, binding string) (Grant, bool) {
			r.mu.Lock()
			defer r.mu.Unlock()
			g, ok := r.grants[binding]
			return g, ok && scope == "s"
		},
		DB: db,
	})
	ln, err := Listen(r.socket)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- r.srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		if err := r.srv.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve ended with %v, want ErrServerClosed", err)
		}
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// shortDir is a fresh owner-only directory with a short path: a Unix
// socket's path must fit in 108 bytes, which a test's TempDir may not.
func shortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// client is the real client, calling as the execution whose token is token.
func (r *rig) client(token string) *client.Toolbelt { return client.NewToolbelt(r.socket, token) }

// call calls operation with input as token's execution.
func (r *rig) call(token, operation, input, requestID string) (client.ToolbeltAnswer, error) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	req := client.ToolbeltRequest{Operation: operation, RequestID: requestID}
	if input != "" {
		req.Input = jsontext.Value(input)
	}
	ans, _, err := r.client(token).Call(ctx, req)
	return ans, err
}

// codeOf is the toolbelt's error code of err ("" for none).
func codeOf(err error) string {
	var e *client.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// decode reads an output into v.
func decode(t *testing.T, out jsontext.Value, v any) {
	t.Helper()
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("output %s: %v", out, err)
	}
}

// holders is how many calls hold or await key's lock.
func (k *keyLocks) holders(key string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if l := k.m[key]; l != nil {
		return l.refs
	}
	return 0
}
