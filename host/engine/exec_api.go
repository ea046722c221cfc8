package engine

import (
	"context"
	"slices"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// Executors is what the engine needs of the running packages to run Work:
// who declares an executor. The daemon's Packages implements it; a
// Packages without it runs no Work.
type Executors interface {
	// ExecutorOwner names the package declaring executor, with its
	// declaration ("" for none).
	ExecutorOwner(executor string) (pkg string, x protocol.Executor)
}

// ToolContext is the builtin read_context's answer: the Work an execution
// runs, its inputs, its context and what woke it.
type ToolContext struct {
	Work    protocol.WorkView `json:"work"`
	Inputs  []protocol.Event  `json:"inputs"`
	Context jsontext.Value    `json:"context,omitzero"`
	Woke    *protocol.Wake    `json:"woke,omitempty"`
}

// Controls an operator may apply to a Work's running execution.
const (
	ControlInterrupt = "interrupt"
	ControlInject    = "inject"
	ControlStop      = "stop"
)

// maxReason bounds the reason an execution declares with its outcome.
const maxReason = 1000

// ExecutionByToken resolves a toolbelt bearer token to its running
// execution; any other token (unknown, or its execution settled) is
// protocol.ErrUnauthorized.
func (e *Engine) ExecutionByToken(token string) (pebblekv.Execution, error) {
	var x pebblekv.Execution
	var found bool
	if token != "" {
		if err := e.d.DB.View(func(rd *pebblekv.Reader) (err error) {
			x, found, err = rd.ExecutionByTokenHash(pebblekv.TokenHash(token))
			return err
		}); err != nil {
			return pebblekv.Execution{}, err
		}
	}
	if !found {
		return pebblekv.Execution{}, protocol.Errorf(protocol.ErrUnauthorized,
			"the token names no running execution: it is unknown, or its execution settled")
	}
	return x, nil
}

// ReadContext is the builtin read_context's answer for execution x.
func (e *Engine) ReadContext(x pebblekv.Execution) (ToolContext, error) {
	var tc ToolContext
	err := e.d.DB.View(func(rd *pebblekv.Reader) (err error) {
		tc, err = readContext(rd, x)
		return err
	})
	return tc, err
}

// DeclareWait declares x's Work's Wait (at most one active per Work; a
// second is conflict). Owner is the wait operation's package, "" for the
// builtin wait. The description is cut to its first line within
// protocol.MaxWaitDescription bytes; a timeout over
// protocol.MaxWaitTimeoutSeconds is invalid. x must still run under the
// token it was resolved by (unauthorized otherwise). The attempt settles
// waiting when it ends, and the Wait wakes at its due time or when an
// Event joins the Work.
func (e *Engine) DeclareWait(ctx context.Context, x pebblekv.Execution, owner string, p protocol.WaitPlan) (pebblekv.Wait, error) {
	return e.declareWait(x, owner, p)
}

// DeclareOutcome records the outcome execution x declares for its
// attempt: completed, failed or handoff, with a reason (cut to 1,000
// bytes). It wins over what the executor answers when the attempt ends;
// a later declaration replaces an earlier one. x must still run under the
// token it was resolved by.
func (e *Engine) DeclareOutcome(ctx context.Context, x pebblekv.Execution, state, reason string) error {
	switch state {
	case protocol.OutcomeCompleted, protocol.OutcomeFailed, protocol.OutcomeHandoff:
	default:
		return protocol.Errorf(protocol.ErrInvalid, "an outcome is completed, failed or handoff, not %q (a Wait is declared with wait)", state)
	}
	err := e.d.DB.Update(func(tx *pebblekv.Tx) error {
		cur, found, err := tx.Execution(x.ID)
		if err != nil {
			return err
		}
		if err := live(cur, found, x); err != nil {
			return err
		}
		cur.Declared, cur.DeclaredReason = state, cut(reason, maxReason)
		return tx.PutExecution(cur)
	})
	if err != nil {
		return err
	}
	e.changes.broadcast()
	return nil
}

// PersistRecovery stores an execution's recovery metadata for its
// executor's package pkg, fenced by the lease epoch: an epoch other than
// the current one, or a settled execution, is protocol.ErrConflict; an
// execution another package runs is protocol.ErrUnauthorized; metadata
// over protocol.MaxRecoveryBytes is protocol.ErrTooLarge.
func (e *Engine) PersistRecovery(ctx context.Context, pkg string, p protocol.ExecutionPersistRecoveryParams) error {
	if p.Execution == "" {
		return protocol.Errorf(protocol.ErrInvalid, "execution_id is required: the execution executor.run named")
	}
	var x pebblekv.Execution
	var found bool
	if err := e.d.DB.View(func(rd *pebblekv.Reader) (err error) {
		x, found, err = rd.Execution(p.Execution)
		return err
	}); err != nil {
		return err
	}
	if found && x.Package != pkg {
		return protocol.Errorf(protocol.ErrUnauthorized, "execution %s is not run by package %s; only its executor's package persists its recovery", p.Execution, pkg)
	}
	return e.storeRecovery(p.Execution, p.Epoch, p.Recovery)
}

// WaitProgress sets the progress line of a Work's active Wait, for the
// package that owns it (its wait operation declared it), cut to one line
// within protocol.MaxWaitProgress bytes; "" clears it. A Work with no
// active Wait is protocol.ErrNotFound; one whose Wait another package or
// the builtin wait declared is protocol.ErrUnauthorized.
func (e *Engine) WaitProgress(ctx context.Context, pkg string, p protocol.WaitProgressParams) error {
	err := e.d.DB.Update(func(tx *pebblekv.Tx) error {
		wt, found, err := tx.ActiveWait(p.Work)
		switch {
		case err != nil:
			return err
		case !found:
			return protocol.Errorf(protocol.ErrNotFound, "Work %q has no active Wait", p.Work)
		case wt.Owner == "" || wt.Owner != pkg:
			return protocol.Errorf(protocol.ErrUnauthorized, "the active Wait of Work %s was not declared by an operation of package %s; only its owner sets its progress", p.Work, pkg)
		}
		wt.Progress, wt.Updated = protocol.CutLine(p.Progress, protocol.MaxWaitProgress), e.d.Clock.Now()
		return tx.PutWait(wt)
	})
	if err != nil {
		return err
	}
	e.changes.broadcast()
	return nil
}

// Control applies an operator's control (ControlInterrupt, ControlInject
// with text, ControlStop) to a Work's running execution; one its executor
// does not declare is protocol.ErrUnsupported without a call, and a Work
// with no running execution is protocol.ErrConflict. A stop waits for the
// executor's physical-stop evidence and fails the Work for good (no retry:
// the operator stopped it).
func (e *Engine) Control(ctx context.Context, workID, control, text string) error {
	x, d, err := e.runningOf(workID)
	if err != nil {
		return err
	}
	ref := protocol.ExecutionRef{Execution: x.ID, Epoch: x.Epoch, Executor: x.Executor}
	switch control {
	case ControlInterrupt:
		if !d.Capabilities.Interrupt {
			return undeclared(x, control)
		}
		return e.d.Packages.Call(ctx, x.Package, protocol.MethodExecutorInterrupt, ref, &protocol.ExecutorControlResult{})
	case ControlInject:
		if !d.Capabilities.Inject {
			return undeclared(x, control)
		}
		return e.d.Packages.Call(ctx, x.Package, protocol.MethodExecutorInject,
			protocol.ExecutorInjectParams{ExecutionRef: ref, Text: text}, &protocol.ExecutorControlResult{})
	case ControlStop:
		if !slices.Contains(d.Controls, protocol.ControlStop) {
			return undeclared(x, control)
		}
		res, err := e.stop(ctx, x)
		if err != nil {
			return err
		}
		e.exec.settleFinal(x, failedResult("stopped by the operator: "+evidence(res)))
		return nil
	}
	return protocol.Errorf(protocol.ErrInvalid, "no control %q; use %s, %s or %s", control, ControlInterrupt, ControlInject, ControlStop)
}

// Live is a Work's running execution's output so far, at most tail bytes
// of each output: protocol.ErrUnsupported without a call when its
// executor declares no live control, protocol.ErrConflict when the Work
// runs nothing.
func (e *Engine) Live(ctx context.Context, workID string, tail int) (protocol.ExecutorLiveResult, error) {
	x, d, err := e.runningOf(workID)
	if err != nil {
		return protocol.ExecutorLiveResult{}, err
	}
	if !slices.Contains(d.Controls, protocol.ControlLive) {
		return protocol.ExecutorLiveResult{}, undeclared(x, "live")
	}
	var res protocol.ExecutorLiveResult
	err = e.d.Packages.Call(ctx, x.Package, protocol.MethodExecutorLive, protocol.ExecutorLiveParams{
		ExecutionRef: protocol.ExecutionRef{Execution: x.ID, Epoch: x.Epoch, Executor: x.Executor}, Tail: max(tail, 0),
	}, &res)
	return res, err
}

// runningOf is the running execution of Work workID with its executor's
// declaration.
func (e *Engine) runningOf(workID string) (pebblekv.Execution, protocol.Executor, error) {
	var w pebblekv.Work
	var found bool
	var hist []pebblekv.Execution
	err := e.d.DB.View(func(rd *pebblekv.Reader) (err error) {
		if w, found, err = rd.Work(workID); err != nil || !found {
			return err
		}
		hist, err = rd.ExecutionsOf(workID)
		return err
	})
	switch {
	case err != nil:
		return pebblekv.Execution{}, protocol.Executor{}, err
	case !found:
		return pebblekv.Execution{}, protocol.Executor{}, protocol.Errorf(protocol.ErrNotFound, "no Work %q; 'open-conduit work list' lists them", workID)
	}
	for i := len(hist) - 1; i >= 0; i-- {
		if x := hist[i]; x.State == pebblekv.ExecRunning {
			var d protocol.Executor
			if xs := e.executors(); xs != nil {
				_, d = xs.ExecutorOwner(x.Executor)
			}
			return x, d, nil
		}
	}
	return pebblekv.Execution{}, protocol.Executor{}, protocol.Errorf(protocol.ErrConflict, "Work %s is %s and runs no execution now", workID, w.State)
}

// undeclared refuses a control x's executor does not declare.
func undeclared(x pebblekv.Execution, control string) error {
	return protocol.Errorf(protocol.ErrUnsupported, "executor %s (package %s) does not declare %s", x.Executor, x.Package, control)
}

// cut is s cut to at most n bytes on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
