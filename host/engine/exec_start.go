package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// errNotRunnable: the Work changed between the scheduler's read and its
// start transaction; the next pass sees it as it is.
var errNotRunnable = errors.New("the Work is no longer runnable")

// startRunnable starts an attempt of each runnable pending Work, in ID
// order, while its executor's pool is under its limit. A Work whose last
// attempts failed waits out its retry backoff first.
func (s *scheduler) startRunnable(ctx context.Context, running []pebblekv.Execution, now time.Time, soon func(time.Time)) error {
	g := s.e.d.Generation()
	if !hasExecutors(g) {
		return nil
	}
	xs := s.e.executors()
	busy := map[string]int{}
	for _, x := range running {
		_, d := xs.ExecutorOwner(x.Executor)
		busy[d.Pool]++
	}
	for after := ""; ctx.Err() == nil; {
		var ws []pebblekv.Work
		var more bool
		if err := s.e.d.DB.View(func(rd *pebblekv.Reader) (err error) {
			ws, more, err = rd.Works(pebblekv.WorkQuery{State: pebblekv.WorkPending, After: after, Limit: execBatch})
			return err
		}); err != nil {
			return err
		}
		for _, w := range ws {
			after = w.ID
			b, ok := bindingOf(g, w.Scope, w.Binding)
			if !ok || b.Executor == "" {
				continue
			}
			pkg, xd := xs.ExecutorOwner(b.Executor)
			if pkg == "" || busy[xd.Pool] >= poolLimit(g, xd.Pool) {
				continue
			}
			hist, err := s.e.history(w.ID)
			if err != nil {
				return err
			}
			if at := retryTime(hist); now.Before(at) {
				soon(at)
				continue
			}
			if len(hist) == 0 && !s.admitted(ctx, w, b, now, soon) {
				continue
			}
			if err := s.start(ctx, w, b, pkg, now); err != nil {
				if !errors.Is(err, errNotRunnable) {
					s.e.d.Logger.Warn("starting an attempt", "work", w.ID, "err", err)
				}
				continue
			}
			busy[xd.Pool]++
		}
		if !more {
			return nil
		}
	}
	return ctx.Err()
}

// history is a Work's executions by attempt.
func (e *Engine) history(work string) ([]pebblekv.Execution, error) {
	var hist []pebblekv.Execution
	err := e.d.DB.View(func(rd *pebblekv.Reader) (err error) {
		hist, err = rd.ExecutionsOf(work)
		return err
	})
	return hist, err
}

// failedInRow counts the settled attempts that failed at the end of hist.
func failedInRow(hist []pebblekv.Execution) int {
	n := 0
	for i := len(hist) - 1; i >= 0; i-- {
		x := hist[i]
		if x.State != pebblekv.ExecSettled || x.Outcome != protocol.OutcomeFailed {
			break
		}
		n++
	}
	return n
}

// retryTime is when the next attempt of a Work may start: after n failed
// attempts in a row, retryBase doubled n-1 times after the last one
// settled; zero after none.
func retryTime(hist []pebblekv.Execution) time.Time {
	n := failedInRow(hist)
	if n == 0 {
		return time.Time{}
	}
	return hist[len(hist)-1].Settled.Add(retryBase << (n - 1))
}

// start starts one attempt of w: in one transaction the execution record
// (a new unguessable ID, the next attempt number, lease epoch 1, the hash
// of a fresh token) and the Work running; then executor.run and the
// observation, in the execution's own goroutine.
func (s *scheduler) start(ctx context.Context, w pebblekv.Work, b config.Binding, pkg string, now time.Time) error {
	token, hash := pebblekv.NewToken()
	x := pebblekv.Execution{ID: pebblekv.NewExecutionID(), Work: w.ID, Scope: w.Scope, Package: pkg,
		Executor: b.Executor, Binding: b.Name, Epoch: 1, TokenHash: hash, State: pebblekv.ExecRunning, Started: now}
	err := s.e.d.DB.Update(func(tx *pebblekv.Tx) error {
		cur, found, err := tx.Work(w.ID)
		if err != nil {
			return err
		}
		if !found || cur.State != pebblekv.WorkPending || cur.Binding != w.Binding || cur.Hold.Held() {
			return errNotRunnable
		}
		hist, err := tx.ExecutionsOf(w.ID)
		if err != nil {
			return err
		}
		x.Attempt = len(hist) + 1
		if x.Woke, err = wokeBy(tx.Reader, hist); err != nil {
			return err
		}
		if err := tx.PutExecution(x); err != nil {
			return err
		}
		cur.State, cur.Reason, cur.Updated = pebblekv.WorkRunning, "", now
		return tx.PutWork(cur)
	})
	if err != nil {
		return err
	}
	s.e.changes.broadcast()
	s.observe(ctx, x.ID, func(ctx context.Context) { s.launch(ctx, x, token) })
	return nil
}

// wokeBy is what woke the Wait the last attempt ended on, for the next
// attempt; nil when the last attempt did not end waiting.
func wokeBy(rd *pebblekv.Reader, hist []pebblekv.Execution) (*protocol.Wake, error) {
	if len(hist) == 0 {
		return nil, nil
	}
	last := hist[len(hist)-1]
	if last.Outcome != protocol.OutcomeWaiting || last.Wait == "" {
		return nil, nil
	}
	wt, found, err := rd.Wait(last.Wait)
	if err != nil || !found || wt.State != pebblekv.WaitWoken {
		return nil, err
	}
	return wt.Wake, nil
}

// launch calls executor.run for x, with the run's environment layers
// merged in (an error there fails the attempt before executor.run), then
// observes it. A package that went away leaves x running, for a recovery
// once it runs again; any other refusal fails the attempt.
func (s *scheduler) launch(ctx context.Context, x pebblekv.Execution, token string) {
	p, err := s.e.runParams(x, token)
	if err == nil {
		err = s.e.layerEnv(ctx, x, &p)
	}
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		s.settle(x, failedResult(fmt.Sprintf("preparing %s: %v", protocol.MethodExecutorRun, err)))
		return
	}
	var res protocol.ExecutorRunResult
	err = s.e.d.Packages.Call(ctx, x.Package, protocol.MethodExecutorRun, p, &res)
	switch {
	case ctx.Err() != nil:
		return
	case gone(err):
		s.e.d.Logger.Warn("the executor's package went away while starting an attempt; it is recovered when the package runs again",
			"execution", x.ID, "package", x.Package, "err", err)
		s.backOff(x.ID)
		return
	case err != nil:
		s.settle(x, failedResult(fmt.Sprintf("%s: %v", protocol.MethodExecutorRun, err)))
		return
	}
	if len(res.Recovery) > 0 {
		if err := s.e.storeRecovery(x.ID, x.Epoch, res.Recovery); err != nil {
			s.e.d.Logger.Warn("keeping the recovery metadata of a started attempt", "execution", x.ID, "err", err)
		}
	}
	s.await(ctx, x)
}

// await observes x with executor.wait, one waitRound at a time (the
// observation is asked again after each; cancelling it never touches the
// execution), and settles it with the answer. A package that went away
// leaves x running, for a recovery.
func (s *scheduler) await(ctx context.Context, x pebblekv.Execution) {
	for {
		var res protocol.ExecutorWaitResult
		rctx, cancel := context.WithTimeout(ctx, waitRound)
		err := s.e.d.Packages.Call(rctx, x.Package, protocol.MethodExecutorWait,
			protocol.ExecutionRef{Execution: x.ID, Epoch: x.Epoch, Executor: x.Executor}, &res)
		round := rctx.Err() != nil
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case round && err != nil && !gone(err):
			continue
		case gone(err):
			s.e.d.Logger.Warn("the executor's package went away while an attempt ran; it is recovered when the package runs again",
				"execution", x.ID, "package", x.Package, "err", err)
			// The broken connection is seen before the package is known
			// to be down: a recovery now would be sent to the dying
			// process, spending a lease epoch for nothing.
			s.backOff(x.ID)
			return
		case err != nil:
			res = failedResult(fmt.Sprintf("%s: %v", protocol.MethodExecutorWait, err))
		}
		s.settle(x, res)
		return
	}
}

func failedResult(reason string) protocol.ExecutorWaitResult {
	return protocol.ExecutorWaitResult{State: protocol.OutcomeFailed, Reason: reason}
}

// runParams are x's executor.run params with token as its toolbelt token:
// the Work, its inputs (the record's tail), what woke it, its context,
// its binding as the executor sees it and the environment.
func (e *Engine) runParams(x pebblekv.Execution, token string) (protocol.ExecutorRunParams, error) {
	tc, err := e.ReadContext(x)
	if err != nil {
		return protocol.ExecutorRunParams{}, err
	}
	b, _ := bindingOf(e.d.Generation(), x.Scope, x.Binding)
	env := map[string]string{}
	for _, name := range b.PassEnv {
		if e.d.Getenv == nil {
			break
		}
		if v, ok := e.d.Getenv(name); ok {
			env[name] = v
		}
	}
	env[protocol.EnvWork], env[protocol.EnvExecution] = x.Work, x.ID
	if token != "" {
		env[protocol.EnvToken] = token
	}
	if e.d.Toolbelt != "" {
		env[protocol.EnvToolbelt] = e.d.Toolbelt
	}
	if e.d.Binary != "" {
		env[protocol.EnvBinary] = e.d.Binary
	}
	return protocol.ExecutorRunParams{
		Execution: x.ID, Epoch: x.Epoch, Executor: x.Executor, Attempt: x.Attempt,
		Work: tc.Work, Inputs: tc.Inputs, Woke: tc.Woke, Context: tc.Context,
		Binding:  protocol.RunBinding{Name: x.Binding, Config: b.Config, Toolbelt: b.Toolbelt},
		Env:      env,
		Toolbelt: protocol.Toolbelt{Socket: e.d.Toolbelt, Token: token},
	}, nil
}

// readContext is what an execution sees of its Work: the Work, its
// inputs (the record's tail, oldest first), its context and what woke
// the attempt.
func readContext(rd *pebblekv.Reader, x pebblekv.Execution) (ToolContext, error) {
	w, found, err := rd.Work(x.Work)
	if err != nil {
		return ToolContext{}, err
	}
	if !found {
		return ToolContext{}, protocol.Errorf(protocol.ErrNotFound, "the Work %s of execution %s is gone", x.Work, x.ID)
	}
	tc := ToolContext{Work: *workView(w), Inputs: []protocol.Event{}, Context: w.Context, Woke: x.Woke}
	for _, id := range w.Inputs {
		ev, found, err := rd.Event(id)
		if err != nil {
			return ToolContext{}, err
		}
		if found {
			tc.Inputs = append(tc.Inputs, ev.Wire())
		}
	}
	return tc, nil
}
