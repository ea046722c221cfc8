package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// errSuperseded: the execution settled or took another epoch meanwhile.
var errSuperseded = errors.New("the execution settled or was recovered meanwhile")

// recover adopts x, which runs in the store with nothing observing it (the
// daemon restarted, or its package died): first a new lease epoch is
// written, which fences the old observer out (its persist_recovery is
// conflict); then executor.recover with the last persisted recovery metadata, and on
// success executor.wait again. A refusal (not_adoptable or any other)
// stops the execution and settles it failed, for the retry policy; a
// package that went away again is retried later.
func (s *scheduler) recover(ctx context.Context, x pebblekv.Execution) {
	x, err := s.e.newEpoch(x.ID)
	if err != nil {
		if !errors.Is(err, errSuperseded) && ctx.Err() == nil {
			s.e.d.Logger.Warn("taking a new lease to recover an execution", "execution", x.ID, "err", err)
			s.backOff(x.ID)
		}
		return
	}
	// The execution keeps its token: the program the executor runs holds
	// it in its environment and goes on calling the toolbelt with it, so
	// recover carries none.
	p, err := s.e.runParams(x, "")
	if err != nil {
		s.settle(x, failedResult(fmt.Sprintf("preparing %s: %v", protocol.MethodExecutorRecover, err)))
		return
	}
	err = s.e.d.Packages.Call(ctx, x.Package, protocol.MethodExecutorRecover,
		protocol.ExecutorRecoverParams{ExecutorRunParams: p, Recovery: x.Recovery}, &protocol.ExecutorRecoverResult{})
	switch {
	case ctx.Err() != nil:
		return
	case gone(err):
		s.e.d.Logger.Warn("the executor's package went away while recovering an execution; retrying", "execution", x.ID, "err", err)
		s.backOff(x.ID)
		return
	case err != nil:
		s.abandon(ctx, x, err)
		return
	}
	s.e.d.Logger.Info("recovered an execution", "execution", x.ID, "work", x.Work, "lease_epoch", x.Epoch)
	s.await(ctx, x)
}

// abandon stops x, which its executor would not adopt, with the last
// recovery metadata (when the executor declares stop), then settles it
// failed saying why, for the retry policy.
func (s *scheduler) abandon(ctx context.Context, x pebblekv.Execution, refused error) {
	reason := "not adoptable: " + refused.Error()
	if !errors.Is(refused, protocol.ErrNotAdoptable) {
		reason = fmt.Sprintf("not adoptable: %s refused: %v", protocol.MethodExecutorRecover, refused)
	}
	_, d := s.e.executors().ExecutorOwner(x.Executor)
	if slices.Contains(d.Controls, protocol.ControlStop) {
		res, err := s.e.stop(ctx, x)
		switch {
		case ctx.Err() != nil:
			return
		case gone(err):
			s.backOff(x.ID)
			return
		case err != nil:
			reason += fmt.Sprintf("; %s failed: %v", protocol.MethodExecutorStop, err)
		default:
			reason += "; " + evidence(res)
		}
	}
	s.settle(x, failedResult(reason))
}

// newEpoch writes x's next lease epoch, and answers the execution as it
// now is. Its token stays: a token dies with its execution, not with an
// observer.
func (e *Engine) newEpoch(id string) (pebblekv.Execution, error) {
	var x pebblekv.Execution
	err := e.d.DB.Update(func(tx *pebblekv.Tx) error {
		var found bool
		var err error
		if x, found, err = tx.Execution(id); err != nil {
			return err
		}
		if !found || x.State != pebblekv.ExecRunning {
			return errSuperseded
		}
		x.Epoch++
		return tx.PutExecution(x)
	})
	if err != nil {
		x.ID = id
		return x, err
	}
	return x, nil
}

// storeRecovery writes recovery metadata on execution id, fenced by epoch:
// another epoch is conflict, a settled execution too.
func (e *Engine) storeRecovery(id string, epoch uint64, meta jsontext.Value) error {
	if len(meta) > protocol.MaxRecoveryBytes {
		return protocol.Errorf(protocol.ErrTooLarge, "recovery metadata of %d bytes is over the %d-byte bound: keep only what finding the work again needs",
			len(meta), protocol.MaxRecoveryBytes)
	}
	if !meta.IsValid() {
		return protocol.Errorf(protocol.ErrInvalid, "recovery metadata is not valid JSON")
	}
	return e.d.DB.Update(func(tx *pebblekv.Tx) error {
		x, found, err := tx.Execution(id)
		if err != nil {
			return err
		}
		if err := fenced(x, found, id, epoch); err != nil {
			return err
		}
		x.Recovery = append(jsontext.Value(nil), meta...)
		return tx.PutExecution(x)
	})
}

// fenced answers whether a call naming execution id at epoch may act on
// x: not_found for none, conflict for a settled one or another epoch.
func fenced(x pebblekv.Execution, found bool, id string, epoch uint64) error {
	switch {
	case !found:
		return protocol.Errorf(protocol.ErrNotFound, "no execution %q", id)
	case x.State != pebblekv.ExecRunning:
		return protocol.Errorf(protocol.ErrConflict, "execution %s has settled; nothing more is kept for it", id)
	case x.Epoch != epoch:
		return protocol.Errorf(protocol.ErrConflict, "execution %s runs under lease epoch %d, not %d: a newer observer took it over", id, x.Epoch, epoch)
	}
	return nil
}
