package toolbelt

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
)

type gateFunc func(ctx context.Context, p protocol.OperationGateParams) (protocol.OperationGateResult, error)

// gatedPackages is fakePackages plus operation gates: the packages gates
// names per scope answer operation.gate with their function (one without
// is not running), and every operation.gate is recorded.
type gatedPackages struct {
	*fakePackages

	mu     sync.Mutex
	gates  map[string][]string
	answer map[string]gateFunc
	asked  []askedGate
}

type askedGate struct {
	pkg string
	p   protocol.OperationGateParams
}

func (g *gatedPackages) OperationGates(scope string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gates[scope]
}

func (g *gatedPackages) Call(ctx context.Context, pkg, method string, params, result any) error {
	if method != protocol.MethodOperationGate {
		return g.fakePackages.Call(ctx, pkg, method, params, result)
	}
	p := params.(protocol.OperationGateParams)
	g.mu.Lock()
	g.asked = append(g.asked, askedGate{pkg, p})
	fn := g.answer[pkg]
	g.mu.Unlock()
	if fn == nil {
		return protocol.Errorf(protocol.ErrUnavailable, "%s is not running", pkg)
	}
	res, err := fn(ctx, p)
	if err != nil {
		return err
	}
	*result.(*protocol.OperationGateResult) = res
	return nil
}

func (g *gatedPackages) askedGates() []askedGate {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]askedGate(nil), g.asked...)
}

// gateRig is the toolbelt rig served a second time, on a socket of its
// own, with gates over its packages and a short gate timeout.
func gateRig(t *testing.T, gates map[string][]string, answer map[string]gateFunc) (*rig, *gatedPackages) {
	t.Helper()
	r := newRig(t)
	g := &gatedPackages{fakePackages: r.pkgs, gates: gates, answer: answer}
	srv := New(Deps{
		Engine:   r.eng,
		Packages: g,
		Grant: func(scope, binding string) (Grant, bool) {
			r.mu.Lock()
			defer r.mu.Unlock()
			gr, ok := r.grants[binding]
			return gr, ok && scope == "s"
		},
		DB:          r.db,
		GateTimeout: 200 * time.Millisecond,
	})
	r.socket = filepath.Join(shortDir(t), SocketName)
	ln, err := Listen(r.socket)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve ended with %v", err)
		}
	})
	return r, g
}

func gateAnswers(res protocol.OperationGateResult, err error) gateFunc {
	return func(context.Context, protocol.OperationGateParams) (protocol.OperationGateResult, error) {
		return res, err
	}
}

// TestOperationGateDecidesTheCall: what the scope's operation gate answers
// decides whether the operation is called: nothing lets it through, a Wait
// parks it (the Work's Wait, owned by the gate, answered as wait answers),
// an operation error refuses it with that code, and a gate that crashes,
// fails unauthored, is not running, times out or plans a Wait the host
// cannot keep refuses it gate_failed. The operation is called only when
// the call goes through.
func TestOperationGateDecidesTheCall(t *testing.T) {
	blocks := func(ctx context.Context, _ protocol.OperationGateParams) (protocol.OperationGateResult, error) {
		<-ctx.Done()
		return protocol.OperationGateResult{}, ctx.Err()
	}
	for _, c := range []struct {
		name   string
		gate   gateFunc
		code   string
		called bool
		parked bool
	}{
		{"lets through", gateAnswers(protocol.OperationGateResult{}, nil), "", true, false},
		{"parks", gateAnswers(protocol.OperationGateResult{Wait: &protocol.WaitPlan{Description: "approval", TimeoutSeconds: 60}}, nil), "", false, true},
		{"refuses", gateAnswers(protocol.OperationGateResult{}, protocol.Errorf(protocol.ErrUnauthorized, "no deploys on friday")), protocol.CodeUnauthorized, false, false},
		{"refuses with its own code", gateAnswers(protocol.OperationGateResult{}, &protocol.Error{Code: "frozen", Message: "change freeze"}), "frozen", false, false},
		{"crashes", gateAnswers(protocol.OperationGateResult{}, protocol.Errorf(protocol.ErrTransport, "the process exited")), protocol.CodeGateFailed, false, false},
		{"fails unauthored", gateAnswers(protocol.OperationGateResult{}, protocol.Errorf(protocol.ErrInternal, "nil map")), protocol.CodeGateFailed, false, false},
		{"not running", nil, protocol.CodeGateFailed, false, false},
		{"times out", blocks, protocol.CodeGateFailed, false, false},
		{"plans a bad Wait", gateAnswers(protocol.OperationGateResult{Wait: &protocol.WaitPlan{TimeoutSeconds: -1}}, nil), protocol.CodeGateFailed, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			answers := map[string]gateFunc{}
			if c.gate != nil {
				answers["gate"] = c.gate
			}
			r, g := gateRig(t, map[string][]string{"s": {"gate"}}, answers)
			ans, err := r.call(tokenA, "notes.add", `{"text":"hi"}`, "rq-1")
			if codeOf(err) != c.code {
				t.Fatalf("answer %+v, %v; want code %q", ans, err, c.code)
			}
			if called := len(r.pkgs.callsOf(protocol.MethodOperationCall)) > 0; called != c.called {
				t.Errorf("operation called %v, want %v", called, c.called)
			}
			asked := g.askedGates()
			if len(asked) != 1 || asked[0].pkg != "gate" {
				t.Fatalf("gates asked %+v, want gate once", asked)
			}
			p := asked[0].p
			if p.Operation != "notes.add" || p.Owner != "notes" || string(p.Input) != `{"text":"hi"}` || p.RequestID != "rq-1" ||
				p.Authority.Scope != "s" || p.Authority.Work != execA.Work || p.Authority.Execution != execA.ID ||
				p.Authority.Caller != "execution:"+execA.ID || p.Authority.Connection != "bot" {
				t.Errorf("operation.gate params %+v", p)
			}
			waits := r.eng.declaredWaits()
			if c.parked {
				var w WaitAnswer
				decode(t, ans.Output, &w)
				if len(waits) != 1 || waits[0].owner != "gate" || w.Owner != "gate" || w.Description != "approval" || w.Work != execA.Work {
					t.Errorf("parked: answer %+v, waits %+v", w, waits)
				}
			} else if len(waits) != 0 {
				t.Errorf("a Wait was declared: %+v", waits)
			}
		})
	}
}

// TestOperationGateIsNotAskedOutsideItsCalls: a gate of another scope, a
// gate over its own package's operation and the builtins never ask it;
// and a call replayed from its committed output is not put to the gate.
func TestOperationGateIsNotAskedOutsideItsCalls(t *testing.T) {
	refuse := gateAnswers(protocol.OperationGateResult{}, protocol.Errorf(protocol.ErrUnauthorized, "refused"))
	t.Run("another scope", func(t *testing.T) {
		r, g := gateRig(t, map[string][]string{"other": {"gate"}}, map[string]gateFunc{"gate": refuse})
		if _, err := r.call(tokenA, "notes.add", `{}`, ""); err != nil {
			t.Fatal(err)
		}
		if n := len(g.askedGates()); n != 0 {
			t.Errorf("a gate of another scope was asked %d times", n)
		}
	})
	t.Run("its own operation and the builtins", func(t *testing.T) {
		r, g := gateRig(t, map[string][]string{"s": {"notes"}}, map[string]gateFunc{"notes": refuse})
		if _, err := r.call(tokenA, "notes.add", `{}`, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := r.call(tokenA, "read_context", "", ""); err != nil {
			t.Fatal(err)
		}
		if n := len(g.askedGates()); n != 0 {
			t.Errorf("the gate was asked %d times", n)
		}
	})
	t.Run("a replay", func(t *testing.T) {
		r, g := gateRig(t, map[string][]string{"s": {"gate"}}, map[string]gateFunc{"gate": gateAnswers(protocol.OperationGateResult{}, nil)})
		if _, err := r.call(tokenA, "notes.add", `{"n":1}`, "rq-once"); err != nil {
			t.Fatal(err)
		}
		g.mu.Lock()
		g.answer["gate"] = refuse
		g.mu.Unlock()
		ans, err := r.call(tokenA, "notes.add", `{"n":1}`, "rq-once")
		if err != nil || !ans.Replayed {
			t.Fatalf("retry: %+v, %v; want the replay", ans, err)
		}
		if n := len(g.askedGates()); n != 1 {
			t.Errorf("the gate was asked %d times, want once (not for the replay)", n)
		}
		// Negative control: a new request ID is put to the gate, which
		// now refuses it.
		_, err = r.call(tokenA, "notes.add", `{"n":1}`, "rq-new")
		if codeOf(err) != protocol.CodeUnauthorized {
			t.Errorf("a new call: %v, want the gate's refusal", err)
		}
	})
}
