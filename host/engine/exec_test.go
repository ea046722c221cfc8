package engine

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

var (
	completed = protocol.ExecutorWaitResult{State: protocol.OutcomeCompleted}
	failed    = protocol.ExecutorWaitResult{State: protocol.OutcomeFailed, Reason: "exit status 1"}
)

// TestRunGetsCommittedExecutionBindingEnvAndToolbelt: executor.run comes
// after the execution is committed (running, epoch 1, the token's hash),
// with the Work, its inputs, the binding, the toolbelt endpoint and token,
// and the toolbelt variables plus only the pass_env names the binding
// lists that the daemon has; the Work runs.
func TestRunGetsCommittedExecutionBindingEnvAndToolbelt(t *testing.T) {
	r := newExecRig(t, execOpts{})
	w := r.accept("k1")
	p := r.run()
	if r.fx.unstored != 0 {
		t.Fatalf("executor.run came before its execution was committed")
	}
	if p.Epoch != 1 || p.Attempt != 1 || p.Executor != execName || p.Work.ID != w.ID || len(p.Inputs) != 1 || p.Woke != nil {
		t.Errorf("run params %+v", p)
	}
	if p.Binding.Name != "b" || string(p.Binding.Config) != `{"command":"make"}` || p.Binding.Toolbelt != "cli" {
		t.Errorf("binding %+v", p.Binding)
	}
	if p.Toolbelt.Socket != "/state/toolbelt.sock" || len(p.Toolbelt.Token) < 32 {
		t.Errorf("toolbelt %+v", p.Toolbelt)
	}
	want := map[string]string{
		protocol.EnvToolbelt: "/state/toolbelt.sock", protocol.EnvToken: p.Toolbelt.Token, protocol.EnvWork: w.ID,
		protocol.EnvExecution: p.Execution, protocol.EnvBinary: "/usr/bin/open-conduit", "GRANTED": "yes",
	}
	if len(p.Env) != len(want) {
		t.Errorf("env %v, want %v (SECRET is not listed, UNSET is not set)", p.Env, want)
	}
	for k, v := range want {
		if p.Env[k] != v {
			t.Errorf("env %s = %q, want %q", k, p.Env[k], v)
		}
	}
	if r.work(w.ID).State != pebblekv.WorkRunning {
		t.Errorf("Work is %s, want running", r.work(w.ID).State)
	}
	x := r.byToken(p.Toolbelt.Token)
	if x.ID != p.Execution || x.Work != w.ID {
		t.Errorf("token resolves to %+v", x)
	}
	tc, err := r.e.ReadContext(x)
	if err != nil || tc.Work.ID != w.ID || len(tc.Inputs) != 1 {
		t.Errorf("read_context %+v, %v", tc, err)
	}
	// Negative controls: a wrong token, an empty one.
	for _, tok := range []string{"", strings.Repeat("0", 43), p.Toolbelt.Token + "x"} {
		_, err := r.e.ExecutionByToken(tok)
		wantCode(t, "token "+tok, err, protocol.ErrUnauthorized)
	}
	r.fx.finish(p.Execution, completed)
	r.workIn(w.ID, pebblekv.WorkCompleted)
	_, err = r.e.ExecutionByToken(p.Toolbelt.Token)
	wantCode(t, "token of a settled execution", err, protocol.ErrUnauthorized)
}

// TestStartWaitsForThePoolLimit: with concurrency 1, a second runnable
// Work stays pending while the first runs, and starts once it settles;
// never more than one runs at once.
func TestStartWaitsForThePoolLimit(t *testing.T) {
	r := newExecRig(t, execOpts{limit: 1})
	first := r.accept("k1")
	p1 := r.run()
	second := r.accept("k2")
	r.noRun(second.ID, 0)
	if st := r.work(second.ID).State; st != pebblekv.WorkPending {
		t.Fatalf("second Work is %s while the first runs, want pending", st)
	}
	r.fx.finish(p1.Execution, completed)
	p2 := r.run()
	if p2.Work.ID != second.ID {
		t.Fatalf("second run is of %s, want %s", p2.Work.ID, second.ID)
	}
	r.workIn(first.ID, pebblekv.WorkCompleted)
	r.fx.finish(p2.Execution, completed)
	r.workIn(second.ID, pebblekv.WorkCompleted)
	if r.fx.maxFlight != 1 {
		t.Errorf("%d executions ran at once, want 1", r.fx.maxFlight)
	}
}

// TestOutcomeMapsToTheWorksNextState: what the executor answers, what the
// execution declared through the toolbelt and whether it declared a Wait
// decide the execution's outcome and the Work's next state.
func TestOutcomeMapsToTheWorksNextState(t *testing.T) {
	for _, c := range []struct {
		name     string
		declared string
		wait     bool
		answer   protocol.ExecutorWaitResult
		outcome  string
		work     string
	}{
		{name: "completed", answer: completed, outcome: protocol.OutcomeCompleted, work: pebblekv.WorkCompleted},
		{name: "failed retries", answer: failed, outcome: protocol.OutcomeFailed, work: pebblekv.WorkPending},
		{name: "handoff", answer: protocol.ExecutorWaitResult{State: protocol.OutcomeHandoff}, outcome: protocol.OutcomeHandoff, work: pebblekv.WorkRunning},
		{name: "completed after a Wait waits", wait: true, answer: completed, outcome: protocol.OutcomeWaiting, work: pebblekv.WorkWaiting},
		{name: "waiting with a Wait", wait: true, answer: protocol.ExecutorWaitResult{State: protocol.OutcomeWaiting}, outcome: protocol.OutcomeWaiting, work: pebblekv.WorkWaiting},
		{name: "waiting without a Wait fails", answer: protocol.ExecutorWaitResult{State: protocol.OutcomeWaiting}, outcome: protocol.OutcomeFailed, work: pebblekv.WorkPending},
		{name: "failed after a Wait fails", wait: true, answer: failed, outcome: protocol.OutcomeFailed, work: pebblekv.WorkPending},
		{name: "no outcome state fails", answer: protocol.ExecutorWaitResult{State: "done"}, outcome: protocol.OutcomeFailed, work: pebblekv.WorkPending},
		{name: "declared failed wins over completed", declared: protocol.OutcomeFailed, answer: completed, outcome: protocol.OutcomeFailed, work: pebblekv.WorkPending},
		{name: "declared completed wins over failed", declared: protocol.OutcomeCompleted, answer: failed, outcome: protocol.OutcomeCompleted, work: pebblekv.WorkCompleted},
		{name: "declared handoff wins over failed", declared: protocol.OutcomeHandoff, answer: failed, outcome: protocol.OutcomeHandoff, work: pebblekv.WorkRunning},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newExecRig(t, execOpts{})
			w := r.accept("k")
			p := r.run()
			x := r.byToken(p.Toolbelt.Token)
			if c.wait {
				if _, err := r.e.DeclareWait(context.Background(), x, "", protocol.WaitPlan{Description: "review"}); err != nil {
					t.Fatal(err)
				}
			}
			if c.declared != "" {
				if err := r.e.DeclareOutcome(context.Background(), x, c.declared, "said so"); err != nil {
					t.Fatal(err)
				}
			}
			r.fx.finish(p.Execution, c.answer)
			got := r.settled(p.Execution)
			if got.Outcome != c.outcome || got.TokenHash != "" {
				t.Fatalf("execution settled %s (%s), token hash %q; want %s", got.Outcome, got.Reason, got.TokenHash, c.outcome)
			}
			if c.work == pebblekv.WorkRunning {
				// A handoff starts the next attempt at once.
				if next := r.run(); next.Attempt != 2 || next.Woke != nil {
					t.Fatalf("after a handoff: %+v", next)
				}
			}
			r.workIn(w.ID, c.work)
			if wt, has, _ := activeWait(r, w.ID); has != (c.work == pebblekv.WorkWaiting) {
				t.Errorf("active Wait %+v (%v) with Work %s", wt, has, c.work)
			}
		})
	}
}

func activeWait(r *execRig, work string) (wt pebblekv.Wait, found bool, err error) {
	err = r.db.View(func(rd *pebblekv.Reader) error {
		wt, found, err = rd.ActiveWait(work)
		return err
	})
	return wt, found, err
}

// TestFailedAttemptsRetryWithBackoffThenFailTheWork: a failed attempt is
// retried after retryBase, the next after twice that, and the third failure
// in a row fails the Work; no attempt starts before its backoff ends.
func TestFailedAttemptsRetryWithBackoffThenFailTheWork(t *testing.T) {
	r := newExecRig(t, execOpts{})
	w := r.accept("k")
	p := r.run()
	for attempt := 1; attempt < maxFailedInRow; attempt++ {
		r.fx.finish(p.Execution, failed)
		r.settled(p.Execution)
		if got := r.workIn(w.ID, pebblekv.WorkPending); !strings.Contains(got.Reason, "retrying") {
			t.Errorf("pending Work's reason %q", got.Reason)
		}
		backoff := retryBase << (attempt - 1)
		r.advance(backoff / 2)
		r.noRun(w.ID, attempt)
		r.advance(backoff - backoff/2)
		if p = r.run(); p.Attempt != attempt+1 {
			t.Fatalf("attempt %d, want %d", p.Attempt, attempt+1)
		}
	}
	r.fx.finish(p.Execution, failed)
	got := r.workIn(w.ID, pebblekv.WorkFailed)
	if !strings.Contains(got.Reason, "3 attempts failed in a row") || !strings.Contains(got.Reason, "exit status 1") {
		t.Errorf("failed Work's reason %q", got.Reason)
	}
	r.advance(retryBase << maxFailedInRow)
	r.noRun(w.ID, maxFailedInRow)
}

// TestWaitTimeoutWakesTheWorkAndTheNextAttemptGetsWoke: a Wait declared
// with a timeout parks the Work waiting (its description cut to one line
// within the bound); it is still waiting a second before its due time, and
// at it the Work's next attempt starts with the timeout as its woke.
func TestWaitTimeoutWakesTheWorkAndTheNextAttemptGetsWoke(t *testing.T) {
	r := newExecRig(t, execOpts{})
	w := r.accept("k")
	p := r.run()
	x := r.byToken(p.Toolbelt.Token)
	long := strings.Repeat("é", protocol.MaxWaitDescription) + "\nsecond line"
	wt, err := r.e.DeclareWait(context.Background(), x, "", protocol.WaitPlan{Description: long, TimeoutSeconds: 30})
	if err != nil {
		t.Fatal(err)
	}
	if len(wt.Description) > protocol.MaxWaitDescription || strings.Contains(wt.Description, "\n") || !strings.HasPrefix(long, wt.Description) {
		t.Errorf("description %q", wt.Description)
	}
	if !wt.Due.Equal(t0.Add(30e9)) {
		t.Errorf("due %v", wt.Due)
	}
	// A second Wait on the same Work is conflict; a timeout over the
	// bound is invalid.
	_, err = r.e.DeclareWait(context.Background(), x, "", protocol.WaitPlan{Description: "again"})
	wantCode(t, "second Wait", err, protocol.ErrConflict)
	_, err = r.e.DeclareWait(context.Background(), x, "", protocol.WaitPlan{TimeoutSeconds: protocol.MaxWaitTimeoutSeconds + 1})
	wantCode(t, "timeout over the bound", err, protocol.ErrInvalid)

	r.fx.finish(p.Execution, completed)
	r.workIn(w.ID, pebblekv.WorkWaiting)
	r.advance(29e9)
	r.noRun(w.ID, 1)
	if st := r.work(w.ID).State; st != pebblekv.WorkWaiting {
		t.Fatalf("Work is %s before its Wait is due", st)
	}
	r.advance(1e9)
	next := r.run()
	if next.Attempt != 2 || next.Woke == nil || next.Woke.Reason != protocol.WakeTimeout || next.Woke.Wait != wt.ID || next.Woke.Event != nil {
		t.Fatalf("second attempt %d woke %+v", next.Attempt, next.Woke)
	}
	if _, has, _ := activeWait(r, w.ID); has {
		t.Errorf("the woken Wait is still active")
	}
	r.fx.finish(next.Execution, completed)
	r.workIn(w.ID, pebblekv.WorkCompleted)
}

// TestJoinedEventWakesTheWaitingWork: an Event joining a waiting Work wakes
// its Wait in the routing transaction; the next attempt's woke carries the
// Event. An Event of another key wakes nothing.
func TestJoinedEventWakesTheWaitingWork(t *testing.T) {
	r := newExecRig(t, execOpts{kind: protocol.WorkKind{Standing: true}})
	w := r.accept("k")
	p := r.run()
	x := r.byToken(p.Toolbelt.Token)
	wt, err := r.e.DeclareWait(context.Background(), x, "", protocol.WaitPlan{Description: "a reply"})
	if err != nil {
		t.Fatal(err)
	}
	r.fx.finish(p.Execution, completed)
	r.workIn(w.ID, pebblekv.WorkWaiting)
	other := r.accept("other")
	if other.ID == w.ID || r.work(w.ID).State != pebblekv.WorkWaiting {
		t.Fatalf("an Event of another key woke the Work")
	}
	otherRun := r.run()
	joined := r.accept("k")
	if joined.ID != w.ID {
		t.Fatalf("the Event did not join: %s", joined.ID)
	}
	next := r.run()
	if next.Work.ID != w.ID || next.Attempt != 2 || next.Woke == nil || next.Woke.Reason != protocol.WakeEvent ||
		next.Woke.Wait != wt.ID || next.Woke.Event == nil || next.Woke.Event.ID != joined.Inputs[len(joined.Inputs)-1] {
		t.Fatalf("second attempt of %s woke %+v", next.Work.ID, next.Woke)
	}
	r.fx.finish(otherRun.Execution, completed)
	r.fx.finish(next.Execution, completed)
	r.workIn(w.ID, pebblekv.WorkCompleted)
}

// TestRecoveryAfterARestartTakesANewEpochAndKeepsTheToken: an execution
// left running by an engine that stopped is recovered by the next one on
// the same store: executor.recover under epoch 2 with the last persisted
// metadata and no token; the program still running keeps calling with its
// token until the execution settles, when the token is refused; the old
// epoch's persist_recovery is conflict.
func TestRecoveryAfterARestartTakesANewEpochAndKeepsTheToken(t *testing.T) {
	decl := protocol.Executor{Controls: []string{protocol.ControlStop}}
	r := newExecRig(t, execOpts{decl: decl})
	w := r.accept("k")
	p := r.run()
	meta := jsontext.Value(`{"pid":4242,"start":"t"}`)
	ref := protocol.ExecutionRef{Execution: p.Execution, Epoch: 1, Executor: execName}
	if err := r.e.PersistRecovery(context.Background(), execPkg, protocol.ExecutionPersistRecoveryParams{ExecutionRef: ref, Recovery: meta}); err != nil {
		t.Fatal(err)
	}
	r.restart(newFakeExec(r.pkgs, r.db, decl))
	rec := <-r.fx.recovers
	if rec.Execution != p.Execution || rec.Epoch != 2 || string(rec.Recovery) != string(meta) || rec.Work.ID != w.ID {
		t.Fatalf("recover params %+v", rec)
	}
	if _, has := rec.Env[protocol.EnvToken]; rec.Toolbelt.Token != "" || has {
		t.Fatalf("recover was handed a token: %q, env %v", rec.Toolbelt.Token, rec.Env)
	}
	if x := r.byToken(p.Toolbelt.Token); x.Epoch != 2 {
		t.Errorf("the execution's token resolves to epoch %d after the recovery, want 2", x.Epoch)
	}
	err := r.e.PersistRecovery(context.Background(), execPkg, protocol.ExecutionPersistRecoveryParams{ExecutionRef: ref, Recovery: jsontext.Value(`{}`)})
	wantCode(t, "persist_recovery at the old epoch", err, protocol.ErrConflict)
	if got := r.execution(p.Execution); string(got.Recovery) != string(meta) {
		t.Errorf("the stale write changed the metadata to %s", got.Recovery)
	}
	if r.fx.called(protocol.MethodExecutorStop) != 0 {
		t.Errorf("an adopted execution was stopped")
	}
	r.fx.finish(p.Execution, completed)
	r.workIn(w.ID, pebblekv.WorkCompleted)
	_, err = r.e.ExecutionByToken(p.Toolbelt.Token)
	wantCode(t, "the token of the settled execution", err, protocol.ErrUnauthorized)
}

// TestNotAdoptableIsStoppedThenRetried: an execution its executor will not
// adopt is stopped with the last metadata (after the recover, under the
// new epoch), settled failed with the stop's evidence, and the Work's next
// attempt starts after the retry backoff.
func TestNotAdoptableIsStoppedThenRetried(t *testing.T) {
	decl := protocol.Executor{Controls: []string{protocol.ControlStop}}
	r := newExecRig(t, execOpts{decl: decl})
	w := r.accept("k")
	p := r.run()
	meta := jsontext.Value(`{"pid":1}`)
	if err := r.e.PersistRecovery(context.Background(), execPkg, protocol.ExecutionPersistRecoveryParams{
		ExecutionRef: protocol.ExecutionRef{Execution: p.Execution, Epoch: 1}, Recovery: meta}); err != nil {
		t.Fatal(err)
	}
	fx := newFakeExec(r.pkgs, r.db, decl)
	fx.recoverErr = protocol.Errorf(protocol.ErrNotAdoptable, "pid 1 is not the process it started")
	r.restart(fx)
	stop := <-fx.stops
	if stop.Execution != p.Execution || stop.Epoch != 2 || string(stop.Recovery) != string(meta) {
		t.Fatalf("stop params %+v", stop)
	}
	if log := fx.callLog(); !slices.Equal(log[:2], []string{protocol.MethodExecutorRecover, protocol.MethodExecutorStop}) {
		t.Errorf("calls %v, want recover then stop", log)
	}
	x := r.settled(p.Execution)
	if x.Outcome != protocol.OutcomeFailed || !strings.Contains(x.Reason, "not adoptable") || !strings.Contains(x.Reason, "process group gone") {
		t.Errorf("settled %s: %s", x.Outcome, x.Reason)
	}
	r.workIn(w.ID, pebblekv.WorkPending)
	r.noRun(w.ID, 1)
	r.advance(retryBase)
	if next := r.run(); next.Attempt != 2 || next.Epoch != 1 {
		t.Fatalf("retry %+v", next)
	}
}

// TestPackageCrashIsRecoveredWhenItRuns: a package that crashes while an
// attempt runs leaves the execution running (not failed); while it is
// down nothing is called, and once it runs again the execution is
// recovered under a new epoch and settles.
func TestPackageCrashIsRecoveredWhenItRuns(t *testing.T) {
	r := newExecRig(t, execOpts{})
	w := r.accept("k")
	p := r.run()
	r.fx.kill()
	r.advance(execPoll)
	r.advance(execPoll)
	if x := r.execution(p.Execution); x.State != pebblekv.ExecRunning || x.Epoch != 1 {
		t.Fatalf("after the crash the execution is %s at epoch %d", x.State, x.Epoch)
	}
	if n := r.fx.called(protocol.MethodExecutorRecover); n != 0 {
		t.Fatalf("%d recovers while the package is down", n)
	}
	r.fx.revive()
	r.e.PackageStarted()
	rec := <-r.fx.recovers
	if rec.Execution != p.Execution || rec.Epoch != 2 {
		t.Fatalf("recover %+v", rec)
	}
	r.fx.finish(p.Execution, completed)
	r.workIn(w.ID, pebblekv.WorkCompleted)
}

// TestBrokenConnectionHoldsTheRecoveryBack: when an attempt's observation
// breaks as its package dies, the package still looks like the owner of
// the executor for a moment; the recovery is held back (no
// executor.recover to the dying process, no lease epoch spent) until a
// poll later or until a package starts, and then takes epoch 2.
func TestBrokenConnectionHoldsTheRecoveryBack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		release func(r *execRig)
	}{
		{"a poll later", func(r *execRig) { r.advance(execPoll) }},
		{"a package started", func(r *execRig) { r.e.PackageStarted() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newExecRig(t, execOpts{})
			w := r.accept("k")
			p := r.run()
			r.inWait(1)
			r.fx.breakConn()
			r.unobserved(p.Execution)
			r.pass()
			r.pass()
			if n := r.fx.called(protocol.MethodExecutorRecover); n != 0 {
				t.Fatalf("%d recovers sent right after the connection broke", n)
			}
			if x := r.execution(p.Execution); x.State != pebblekv.ExecRunning || x.Epoch != 1 {
				t.Fatalf("after the broken connection the execution is %s at epoch %d, want running at 1", x.State, x.Epoch)
			}
			tc.release(r)
			if rec := <-r.fx.recovers; rec.Execution != p.Execution || rec.Epoch != 2 {
				t.Fatalf("recover %+v, want epoch 2", rec)
			}
			r.fx.finish(p.Execution, completed)
			r.workIn(w.ID, pebblekv.WorkCompleted)
			if x := r.execution(p.Execution); x.Epoch != 2 {
				t.Fatalf("settled at epoch %d, want 2", x.Epoch)
			}
		})
	}
}

// TestPersistRecoveryIsFencedAndBounded: only the running package at the
// current epoch persists recovery metadata, within the bound.
func TestPersistRecoveryIsFencedAndBounded(t *testing.T) {
	r := newExecRig(t, execOpts{})
	r.accept("k")
	p := r.run()
	ref := func(epoch uint64) protocol.ExecutionRef {
		return protocol.ExecutionRef{Execution: p.Execution, Epoch: epoch}
	}
	for _, c := range []struct {
		name string
		pkg  string
		p    protocol.ExecutionPersistRecoveryParams
		code *protocol.Error
	}{
		{"current epoch", execPkg, protocol.ExecutionPersistRecoveryParams{ExecutionRef: ref(1), Recovery: jsontext.Value(`{"pid":7}`)}, nil},
		{"another epoch", execPkg, protocol.ExecutionPersistRecoveryParams{ExecutionRef: ref(2), Recovery: jsontext.Value(`{}`)}, protocol.ErrConflict},
		{"another package", "src", protocol.ExecutionPersistRecoveryParams{ExecutionRef: ref(1), Recovery: jsontext.Value(`{}`)}, protocol.ErrUnauthorized},
		{"over the bound", execPkg, protocol.ExecutionPersistRecoveryParams{ExecutionRef: ref(1),
			Recovery: jsontext.Value(`"` + strings.Repeat("x", protocol.MaxRecoveryBytes) + `"`)}, protocol.ErrTooLarge},
		{"unknown execution", execPkg, protocol.ExecutionPersistRecoveryParams{ExecutionRef: protocol.ExecutionRef{Execution: "x_nope", Epoch: 1}, Recovery: jsontext.Value(`{}`)}, protocol.ErrNotFound},
	} {
		err := r.e.PersistRecovery(context.Background(), c.pkg, c.p)
		if c.code == nil {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		wantCode(t, c.name, err, c.code)
	}
	if got := r.execution(p.Execution); string(got.Recovery) != `{"pid":7}` {
		t.Errorf("metadata %s after the refused writes", got.Recovery)
	}
	r.fx.finish(p.Execution, completed)
	r.settled(p.Execution)
	err := r.e.PersistRecovery(context.Background(), execPkg, protocol.ExecutionPersistRecoveryParams{ExecutionRef: ref(1), Recovery: jsontext.Value(`{}`)})
	wantCode(t, "settled execution", err, protocol.ErrConflict)
}

// TestControlUndeclaredIsUnsupportedWithoutACall: a control the executor
// does not declare answers unsupported and never reaches the package; a
// declared one is called with the execution's lease, and an operator's
// stop fails the Work without a retry.
func TestControlUndeclaredIsUnsupportedWithoutACall(t *testing.T) {
	r := newExecRig(t, execOpts{})
	w := r.accept("k")
	p := r.run()
	for _, c := range []string{ControlInterrupt, ControlInject, ControlStop} {
		wantCode(t, c, r.e.Control(context.Background(), w.ID, c, "hello"), protocol.ErrUnsupported)
	}
	_, err := r.e.Live(context.Background(), w.ID, 100)
	wantCode(t, "live", err, protocol.ErrUnsupported)
	for _, m := range []string{protocol.MethodExecutorInterrupt, protocol.MethodExecutorInject, protocol.MethodExecutorStop, protocol.MethodExecutorLive} {
		if n := r.fx.called(m); n != 0 {
			t.Fatalf("an undeclared control reached the package: %d calls of %s", n, m)
		}
	}
	wantCode(t, "unknown Work", r.e.Control(context.Background(), "w_nope", ControlStop, ""), protocol.ErrNotFound)
	r.fx.finish(p.Execution, completed)
	r.workIn(w.ID, pebblekv.WorkCompleted)
	wantCode(t, "completed Work", r.e.Control(context.Background(), w.ID, ControlStop, ""), protocol.ErrConflict)
}

// TestDeclaredControlsReachTheExecution: interrupt, inject, live and stop,
// declared, are called; the operator's stop settles the attempt failed
// with the evidence and fails the Work for good.
func TestDeclaredControlsReachTheExecution(t *testing.T) {
	decl := protocol.Executor{Capabilities: protocol.Capabilities{Interrupt: true, Inject: true},
		Controls: []string{protocol.ControlStop, protocol.ControlLive}}
	r := newExecRig(t, execOpts{decl: decl})
	w := r.accept("k")
	p := r.run()
	for _, c := range []string{ControlInterrupt, ControlInject} {
		if err := r.e.Control(context.Background(), w.ID, c, "hello"); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
	}
	if a, b := <-r.fx.controls, <-r.fx.controls; a != protocol.MethodExecutorInterrupt || b != protocol.MethodExecutorInject {
		t.Errorf("controls %s, %s", a, b)
	}
	live, err := r.e.Live(context.Background(), w.ID, 100)
	if err != nil || len(live.Outputs) != 1 || string(live.Outputs[0].Tail) != "hi" {
		t.Errorf("live %+v, %v", live, err)
	}
	if err := r.e.Control(context.Background(), w.ID, ControlStop, ""); err != nil {
		t.Fatal(err)
	}
	if stop := <-r.fx.stops; stop.Execution != p.Execution || stop.Epoch != 1 {
		t.Errorf("stop %+v", stop)
	}
	got := r.workIn(w.ID, pebblekv.WorkFailed)
	if !strings.Contains(got.Reason, "stopped by the operator") {
		t.Errorf("reason %q", got.Reason)
	}
	r.advance(retryBase)
	r.noRun(w.ID, 1)
}

// TestCancellingRunningWorkStopsItsExecutionAndCancelsItsWait: an operator
// cancelling a running Work cancels its Wait at once and has the
// execution stopped and settled; the Work stays cancelled.
func TestCancellingRunningWorkStopsItsExecutionAndCancelsItsWait(t *testing.T) {
	decl := protocol.Executor{Controls: []string{protocol.ControlStop}}
	r := newExecRig(t, execOpts{decl: decl})
	w := r.accept("k")
	p := r.run()
	wt, err := r.e.DeclareWait(context.Background(), r.byToken(p.Toolbelt.Token), "", protocol.WaitPlan{TimeoutSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.e.CancelWork(context.Background(), w.ID, "not needed"); err != nil {
		t.Fatal(err)
	}
	if _, has, _ := activeWait(r, w.ID); has {
		t.Errorf("the cancelled Work's Wait %s is still active", wt.ID)
	}
	if stop := <-r.fx.stops; stop.Execution != p.Execution {
		t.Errorf("stop %+v", stop)
	}
	x := r.settled(p.Execution)
	if x.Outcome != protocol.OutcomeFailed || !strings.Contains(x.Reason, "cancelled") {
		t.Errorf("settled %s: %s", x.Outcome, x.Reason)
	}
	if st := r.work(w.ID).State; st != pebblekv.WorkCancelled {
		t.Errorf("Work is %s", st)
	}
	_, err = r.e.ExecutionByToken(p.Toolbelt.Token)
	wantCode(t, "token of the stopped execution", err, protocol.ErrUnauthorized)
}

// TestWaitProgressIsTheOwnersOnly: the package whose operation declared
// the Wait sets its progress (cut to one line within the bound); another
// package, or anyone for a builtin Wait, is unauthorized, and a Work with
// no active Wait is not found.
func TestWaitProgressIsTheOwnersOnly(t *testing.T) {
	r := newExecRig(t, execOpts{kind: protocol.WorkKind{Standing: true}})
	w := r.accept("k")
	p := r.run()
	x := r.byToken(p.Toolbelt.Token)
	wantCode(t, "no Wait yet", r.e.WaitProgress(context.Background(), "gh", protocol.WaitProgressParams{Work: w.ID, Progress: "x"}), protocol.ErrNotFound)
	if _, err := r.e.DeclareWait(context.Background(), x, "gh", protocol.WaitPlan{Description: "checks"}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", protocol.MaxWaitProgress+10) + "\nmore"
	if err := r.e.WaitProgress(context.Background(), "gh", protocol.WaitProgressParams{Work: w.ID, Progress: long}); err != nil {
		t.Fatal(err)
	}
	wt, _, _ := activeWait(r, w.ID)
	if wt.Progress != strings.Repeat("a", protocol.MaxWaitProgress) {
		t.Errorf("progress %q", wt.Progress)
	}
	wantCode(t, "another package", r.e.WaitProgress(context.Background(), "other", protocol.WaitProgressParams{Work: w.ID, Progress: "x"}), protocol.ErrUnauthorized)
	wantCode(t, "no package", r.e.WaitProgress(context.Background(), "", protocol.WaitProgressParams{Work: w.ID, Progress: "x"}), protocol.ErrUnauthorized)
	if wt, _, _ := activeWait(r, w.ID); !strings.HasPrefix(wt.Progress, "aaa") {
		t.Errorf("a refused write changed the progress to %q", wt.Progress)
	}
	r.fx.finish(p.Execution, completed)
	r.workIn(w.ID, pebblekv.WorkWaiting)
}
