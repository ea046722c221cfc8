package engine

import (
	"context"
	"sync"
	"testing"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// gatedExec is fakeExec plus start gates: the packages gates names per
// scope answer work.admit with their admit function (a package without
// one is not running), and every work.admit is recorded.
type gatedExec struct {
	*fakeExec

	mu    sync.Mutex
	gates map[string][]string
	admit map[string]func(p protocol.WorkAdmitParams) (protocol.WorkAdmitResult, error)
	asked []protocol.WorkAdmitParams
}

func (g *gatedExec) StartGates(scope string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gates[scope]
}

func (g *gatedExec) Call(ctx context.Context, pkg, method string, params, result any) error {
	if method != protocol.MethodWorkAdmit {
		return g.fakeExec.Call(ctx, pkg, method, params, result)
	}
	var p protocol.WorkAdmitParams
	if err := roundTrip(params, &p); err != nil {
		return err
	}
	g.mu.Lock()
	g.asked = append(g.asked, p)
	fn := g.admit[pkg]
	g.mu.Unlock()
	if fn == nil {
		return protocol.Errorf(protocol.ErrUnavailable, "%s is not running", pkg)
	}
	res, err := fn(p)
	if err != nil {
		return err
	}
	return roundTrip(res, result)
}

func (g *gatedExec) timesAsked() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.asked)
}

// newGatedRig is an execRig whose engine sees the start gates of g.
func newGatedRig(t *testing.T, gates map[string][]string,
	admit map[string]func(p protocol.WorkAdmitParams) (protocol.WorkAdmitResult, error)) (*execRig, *gatedExec) {
	var g *gatedExec
	r := newExecRig(t, execOpts{wrap: func(fx *fakeExec) Packages {
		g = &gatedExec{fakeExec: fx, gates: gates, admit: admit}
		return g
	}})
	return r, g
}

func holding(reason string) func(protocol.WorkAdmitParams) (protocol.WorkAdmitResult, error) {
	return func(protocol.WorkAdmitParams) (protocol.WorkAdmitResult, error) {
		return protocol.WorkAdmitResult{Hold: &protocol.WorkHoldPlan{Reason: reason}}, nil
	}
}

func letThrough(protocol.WorkAdmitParams) (protocol.WorkAdmitResult, error) {
	return protocol.WorkAdmitResult{}, nil
}

// held waits until Work id is held.
func (r *execRig) held(id string) pebblekv.Work {
	r.t.Helper()
	var w pebblekv.Work
	r.until("Work "+id+" held", func(rd *pebblekv.Reader) (bool, error) {
		var found bool
		var err error
		w, found, err = rd.Work(id)
		return found && w.Hold.Held(), err
	})
	return w
}

// TestStartGateHoldsUntilSettledAdmitThenStartsOnce: a start gate's hold
// keeps the Work pending with the reason shown and no attempt; it is
// asked with the Work, its binding and first input; another package's
// settle is unauthorized; the gate's admit starts the Work, its later
// attempts never ask the gate again, and a repeated settle with the same
// key is answered again while another is conflict.
func TestStartGateHoldsUntilSettledAdmitThenStartsOnce(t *testing.T) {
	r, g := newGatedRig(t, map[string][]string{"s": {"gate"}},
		map[string]func(protocol.WorkAdmitParams) (protocol.WorkAdmitResult, error){"gate": holding("needs approval\nsecond line")})
	w := r.accept("k1")
	h := r.held(w.ID)
	if h.State != pebblekv.WorkPending || h.Hold.Package != "gate" || h.Hold.Reason != "needs approval" ||
		h.Reason != "held by gate's start gate: needs approval" {
		t.Fatalf("held Work %+v, hold %+v", h, h.Hold)
	}
	r.noRun(w.ID, 0)
	g.mu.Lock()
	p := g.asked[0]
	g.mu.Unlock()
	if p.Work.ID != w.ID || p.Binding.Name != "b" || p.Executor != execName || p.Input == nil || p.Input.Type != "src.task" {
		t.Errorf("work.admit params %+v", p)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		pkg  string
		p    protocol.WorkSettleHoldParams
		want *protocol.Error
	}{
		{"another package", "other", protocol.WorkSettleHoldParams{Work: w.ID, Admit: true}, protocol.ErrUnauthorized},
		{"no work_id", "gate", protocol.WorkSettleHoldParams{Admit: true}, protocol.ErrInvalid},
		{"unknown Work", "gate", protocol.WorkSettleHoldParams{Work: "w_nope", Admit: true}, protocol.ErrNotFound},
	} {
		wantCode(t, c.name, r.e.SettleHold(ctx, c.pkg, c.p), c.want)
	}
	r.noRun(w.ID, 0)
	if err := r.e.SettleHold(ctx, "gate", protocol.WorkSettleHoldParams{Work: w.ID, Admit: true, Key: "k-1"}); err != nil {
		t.Fatal(err)
	}
	run := r.run()
	if run.Work.ID != w.ID || run.Attempt != 1 {
		t.Fatalf("run %+v", run)
	}
	if err := r.e.SettleHold(ctx, "gate", protocol.WorkSettleHoldParams{Work: w.ID, Admit: true, Key: "k-1"}); err != nil {
		t.Errorf("the same settle repeated with its key: %v", err)
	}
	wantCode(t, "a settle with another key", r.e.SettleHold(ctx, "gate", protocol.WorkSettleHoldParams{Work: w.ID, Admit: true, Key: "k-2"}), protocol.ErrConflict)
	r.fx.finish(run.Execution, failed)
	r.settled(run.Execution)
	r.advance(retryBase)
	again := r.run()
	if again.Attempt != 2 {
		t.Fatalf("second run %+v", again)
	}
	if n := g.timesAsked(); n != 1 {
		t.Errorf("the gate was asked %d times, want once (before the first attempt only)", n)
	}
}

// TestStartGateSettleRefuseCancelsTheWork: settling without admit cancels
// the held Work with the gate's reason, and nothing runs.
func TestStartGateSettleRefuseCancelsTheWork(t *testing.T) {
	r, _ := newGatedRig(t, map[string][]string{"s": {"gate"}},
		map[string]func(protocol.WorkAdmitParams) (protocol.WorkAdmitResult, error){"gate": holding("out of hours")})
	w := r.accept("k1")
	r.held(w.ID)
	if err := r.e.SettleHold(context.Background(), "gate", protocol.WorkSettleHoldParams{Work: w.ID, Reason: "denied by alice"}); err != nil {
		t.Fatal(err)
	}
	c := r.workIn(w.ID, pebblekv.WorkCancelled)
	if c.Reason != "cancelled by gate's start gate: denied by alice" {
		t.Errorf("reason %q", c.Reason)
	}
	r.noRun(w.ID, 0)
	wantCode(t, "settling a settled hold", r.e.SettleHold(context.Background(), "gate", protocol.WorkSettleHoldParams{Work: w.ID, Admit: true}), protocol.ErrConflict)
}

// TestStartGateErrorRetriesWithBackoff: an error from work.admit (and a
// gate that is not running) refuses the start for now; the gate is asked
// again after the backoff and its admission starts the Work.
func TestStartGateErrorRetriesWithBackoff(t *testing.T) {
	var mu sync.Mutex
	n := 0
	flaky := func(protocol.WorkAdmitParams) (protocol.WorkAdmitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n == 1 {
			return protocol.WorkAdmitResult{}, protocol.Errorf(protocol.ErrInternal, "the approvals service is down")
		}
		return protocol.WorkAdmitResult{}, nil
	}
	r, g := newGatedRig(t, map[string][]string{"s": {"gate", "later"}},
		map[string]func(protocol.WorkAdmitParams) (protocol.WorkAdmitResult, error){"gate": flaky})
	w := r.accept("k1")
	r.until("the gate asked", func(*pebblekv.Reader) (bool, error) { return g.timesAsked() >= 1, nil })
	r.noRun(w.ID, 0)
	// The second gate, "later", is not running: the admission fails
	// closed and is retried too.
	r.advance(admitRetryMax)
	r.until("both gates asked", func(*pebblekv.Reader) (bool, error) { return g.timesAsked() >= 3, nil })
	r.noRun(w.ID, 0)
	if st := r.work(w.ID); st.State != pebblekv.WorkPending || st.Hold != nil || st.Admitted {
		t.Fatalf("Work after failed admissions: %+v", st)
	}
	g.mu.Lock()
	g.admit["later"] = letThrough
	g.mu.Unlock()
	r.advance(admitRetryMax)
	if run := r.run(); run.Work.ID != w.ID {
		t.Fatalf("run %+v", run)
	}
	if !r.work(w.ID).Admitted {
		t.Errorf("the admitted Work is not marked admitted")
	}
}

// TestStartGateOfAnotherScopeIsNeverAsked: a gate configured for another
// scope is not asked, and the Work starts at once.
func TestStartGateOfAnotherScopeIsNeverAsked(t *testing.T) {
	r, g := newGatedRig(t, map[string][]string{"elsewhere": {"gate"}},
		map[string]func(protocol.WorkAdmitParams) (protocol.WorkAdmitResult, error){"gate": holding("never")})
	w := r.accept("k1")
	if run := r.run(); run.Work.ID != w.ID {
		t.Fatalf("run %+v", run)
	}
	if n := g.timesAsked(); n != 0 {
		t.Errorf("a gate of another scope was asked %d times", n)
	}
}
