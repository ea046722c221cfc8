package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// outcomes are the states an executor may answer executor.wait with.
var outcomes = []string{protocol.OutcomeCompleted, protocol.OutcomeFailed, protocol.OutcomeWaiting, protocol.OutcomeHandoff}

// outcome is how x settles given what its executor answered: the outcome
// it declared through the toolbelt first; else waiting when a Wait was
// declared during it and the executor said completed; else the executor's
// state. Waiting without an active Wait, or a state that is no outcome,
// is failed (the Work would wait for nothing).
func outcome(x pebblekv.Execution, res protocol.ExecutorWaitResult, hasWait bool) (state, reason string) {
	switch {
	case x.Declared != "":
		state, reason = x.Declared, x.DeclaredReason
	case hasWait && res.State == protocol.OutcomeCompleted:
		state, reason = protocol.OutcomeWaiting, res.Reason
	default:
		state, reason = res.State, res.Reason
	}
	switch {
	case !slices.Contains(outcomes, state):
		return protocol.OutcomeFailed, fmt.Sprintf("the executor answered state %q, which is not an outcome (completed, failed, waiting, handoff)", state)
	case state == protocol.OutcomeWaiting && !hasWait:
		return protocol.OutcomeFailed, "the executor answered waiting, but no Wait was declared during the attempt"
	}
	return state, reason
}

// settle records how x (at its epoch) ended, in one transaction: the
// execution settled with its outcome and its token dead, and its Work
// completed, waiting, pending again (handoff, or failed with retries
// left) or failed. An execution no longer running at that epoch (settled,
// or superseded by a recovery) is left alone; so is a Work that is no
// longer running (cancelled meanwhile), apart from its Wait.
func (s *scheduler) settle(x pebblekv.Execution, res protocol.ExecutorWaitResult) {
	s.settleWith(x, res, false)
}

// settleFinal settles x as settle does, but a failed outcome fails its
// Work for good, without a retry (the operator stopped it).
func (s *scheduler) settleFinal(x pebblekv.Execution, res protocol.ExecutorWaitResult) {
	s.settleWith(x, res, true)
}

func (s *scheduler) settleWith(x pebblekv.Execution, res protocol.ExecutorWaitResult, final bool) {
	now := s.e.d.Clock.Now()
	settled := false
	err := s.e.d.DB.Update(func(tx *pebblekv.Tx) error {
		settled = false
		cur, found, err := tx.Execution(x.ID)
		if err != nil || !found || cur.State != pebblekv.ExecRunning || cur.Epoch != x.Epoch {
			return err
		}
		wt, hasWait, err := tx.ActiveWait(cur.Work)
		if err != nil {
			return err
		}
		hasWait = hasWait && wt.Execution == cur.ID
		cur.Outcome, cur.Reason = outcome(cur, res, hasWait)
		cur.State, cur.TokenHash, cur.ExitCode, cur.Settled = pebblekv.ExecSettled, "", res.ExitCode, now
		hist, err := tx.ExecutionsOf(cur.Work)
		if err != nil {
			return err
		}
		if err := tx.PutExecution(cur); err != nil {
			return err
		}
		settled = true
		w, found, err := tx.Work(cur.Work)
		if err != nil || !found {
			return err
		}
		if cur.Outcome != protocol.OutcomeWaiting || w.State != pebblekv.WorkRunning {
			if err := cancelWait(tx, wt, hasWait, now); err != nil {
				return err
			}
		}
		if w.State != pebblekv.WorkRunning {
			return nil
		}
		w.Updated = now
		w.State, w.Reason = s.nextState(cur, failedInRow(settledBefore(hist, cur.ID))+1)
		if final && cur.Outcome == protocol.OutcomeFailed {
			w.State, w.Reason = pebblekv.WorkFailed, cur.Reason
		}
		if w.State == pebblekv.WorkWaiting && !wt.Due.IsZero() && !wt.Due.After(now) {
			return wake(tx, wt, &w, protocol.Wake{Wait: wt.ID, Reason: protocol.WakeTimeout, At: now})
		}
		return tx.PutWork(w)
	})
	if err != nil {
		s.e.d.Logger.Error("settling an execution; it is recovered at the next start", "execution", x.ID, "err", err)
		return
	}
	s.forget(x.ID)
	s.e.changes.broadcast()
	if settled {
		s.forgetSettled(x)
	}
}

// nextState is the Work's state after x settled, failed the n-th time in
// a row when its outcome is failed.
func (s *scheduler) nextState(x pebblekv.Execution, n int) (state, reason string) {
	switch x.Outcome {
	case protocol.OutcomeCompleted:
		return pebblekv.WorkCompleted, x.Reason
	case protocol.OutcomeWaiting:
		return pebblekv.WorkWaiting, ""
	case protocol.OutcomeHandoff:
		return pebblekv.WorkPending, ""
	}
	if n >= maxFailedInRow {
		return pebblekv.WorkFailed, fmt.Sprintf("%d attempts failed in a row; the last: %s", n, x.Reason)
	}
	return pebblekv.WorkPending, fmt.Sprintf("attempt %d failed (%s); retrying after %s", x.Attempt, x.Reason, retryBase<<(n-1))
}

// settledBefore is hist without the execution id (the one settling).
func settledBefore(hist []pebblekv.Execution, id string) []pebblekv.Execution {
	return slices.DeleteFunc(slices.Clone(hist), func(x pebblekv.Execution) bool { return x.ID == id })
}

// stopClosed stops x, whose Work closed (cancelled) while it ran, when its
// executor declares stop, and settles it failed with the evidence. Once
// per execution; an executor without stop settles it when it ends.
func (s *scheduler) stopClosed(ctx context.Context, x pebblekv.Execution) {
	s.mu.Lock()
	if s.stopping[x.ID] {
		s.mu.Unlock()
		return
	}
	s.stopping[x.ID] = true
	s.mu.Unlock()
	_, d := s.e.executors().ExecutorOwner(x.Executor)
	if !slices.Contains(d.Controls, protocol.ControlStop) {
		return
	}
	s.e.wg.Add(1)
	go func() {
		defer s.e.wg.Done()
		res, err := s.e.stop(ctx, x)
		if err != nil {
			s.mu.Lock()
			delete(s.stopping, x.ID)
			s.mu.Unlock()
			if ctx.Err() == nil {
				s.e.d.Logger.Warn("stopping the execution of a cancelled Work", "execution", x.ID, "err", err)
			}
			return
		}
		s.settle(x, failedResult("the Work was cancelled: "+evidence(res)))
	}()
}

// stop calls executor.stop for x with its last recovery metadata, and
// waits up to stopWait for the physical stop.
func (e *Engine) stop(ctx context.Context, x pebblekv.Execution) (protocol.ExecutorStopResult, error) {
	ctx, cancel := context.WithTimeout(ctx, stopWait)
	defer cancel()
	var res protocol.ExecutorStopResult
	err := e.d.Packages.Call(ctx, x.Package, protocol.MethodExecutorStop, protocol.ExecutorStopParams{
		ExecutionRef: protocol.ExecutionRef{Execution: x.ID, Epoch: x.Epoch, Executor: x.Executor}, Recovery: x.Recovery,
	}, &res)
	return res, err
}

// evidence says how a stop was confirmed.
func evidence(res protocol.ExecutorStopResult) string {
	switch {
	case !res.Stopped:
		return "the executor did not confirm the stop"
	case res.Evidence == "":
		return "stopped"
	}
	return "stopped (" + res.Evidence + ")"
}
